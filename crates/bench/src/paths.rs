//! The paths a user meets besides the warm pool (issue #26), each next to the direct `echo`
//! to server-everything measured in the same run, under the same conditions:
//!
//! - **after idle**: 1 s and 5 s of idle before each trivial execution, and before each direct
//!   call (CPUs asleep, workers idle);
//! - **bursts**: 4 trivial executions sent at once, as a client issuing parallel tool calls
//!   does (p50 of the four, against one direct call after the same pause);
//! - **back to back**: trivial executions one after another (the pool drains, so this is the
//!   cost of starting a worker), and sustained for 10 s with 4 in flight: executions/s, p99.
//!   Issue #26 sets the back-to-back target against *one* direct call (the bursts' baseline:
//!   one `echo` after a pause, about 1 ms here); its own figures (7.9x and 60x for starts of
//!   20 and 70-80 ms, 3x meaning a start of at most 5 ms) only fit that baseline. The direct
//!   calls made back to back (about 0.11 ms: every process and CPU already awake) are reported
//!   next to it with their own, stricter ratio;
//! - **idle memory**: the server's RSS plus its warm pools' process trees (proportional set
//!   size: the pages a worker's helpers share with its engine count once), right after start.
//!
//! Our server runs with its rate limits raised out of the way (a sustained run exceeds the
//! default 600 executions a minute); everything else is as configured.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::measure::{Client, call, round, rss_kib, spawn_unlimited, timed};

/// How long the sustained runs last.
const SUSTAINED: Duration = Duration::from_secs(10);
/// Executions in flight during the sustained runs (the default concurrency limit).
const SUSTAINED_IN_FLIGHT: usize = 4;
/// Executions in a burst.
const BURST: usize = 4;
/// Pause before each burst (and its direct call), so every burst meets full pools.
const BURST_GAP: Duration = Duration::from_millis(300);

/// A summary with median, p90, p99, max and n (milliseconds).
fn percentiles(mut ms: Vec<f64>) -> Value {
    if ms.is_empty() {
        return json!({"n": 0});
    }
    ms.sort_by(f64::total_cmp);
    let pick = |q: f64| round(ms[((ms.len() - 1) as f64 * q).round() as usize]);
    json!({"median": pick(0.5), "p90": pick(0.9), "p99": pick(0.99), "max": pick(1.0), "n": ms.len()})
}

fn med(v: &Value) -> f64 {
    v["median"].as_f64().unwrap_or(f64::NAN)
}

fn ratio(a: f64, b: f64) -> f64 {
    round(a / b)
}

struct Lang {
    name: &'static str,
    tool: &'static str,
    trivial: &'static str,
}

const LANGS: [Lang; 2] = [
    Lang {
        name: "typescript",
        tool: "execute_typescript",
        trivial: "return 1 + 1",
    },
    Lang {
        name: "python",
        tool: "execute_python",
        trivial: "1 + 1",
    },
];

async fn exec(ours: &Client, lang: &Lang) -> anyhow::Result<()> {
    call(ours, lang.tool, json!({ "code": lang.trivial }))
        .await
        .map(|_| ())
}

async fn echo(direct: &Client) -> anyhow::Result<()> {
    call(direct, "echo", json!({"message": "hello"}))
        .await
        .map(|_| ())
}

/// The server's pools from `health`.
async fn pools(ours: &Client) -> anyhow::Result<Value> {
    Ok(call(ours, "health", json!({}))
        .await?
        .structured_content
        .map(|h| h["pools"].clone())
        .unwrap_or(Value::Null))
}

/// Waits (up to 10 s) until every pool holds its target.
async fn settle(ours: &Client) -> anyhow::Result<()> {
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(10) {
        let full = pools(ours)
            .await?
            .as_array()
            .is_some_and(|p| p.iter().all(|p| p["ready"] == p["target"]));
        if full {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Ok(())
}

/// `rounds` rounds of: idle, direct call; idle, TypeScript; idle, Python. Per-round ratios.
async fn after_idle(
    direct: &Client,
    ours: &Client,
    idle: Duration,
    rounds: usize,
) -> anyhow::Result<Value> {
    let mut direct_ms = Vec::new();
    let mut ms: [Vec<f64>; 2] = Default::default();
    let mut ratios: [Vec<f64>; 2] = Default::default();
    for _ in 0..rounds {
        settle(ours).await?;
        tokio::time::sleep(idle).await;
        let d = timed(echo(direct)).await?;
        direct_ms.push(d);
        for (i, lang) in LANGS.iter().enumerate() {
            settle(ours).await?;
            tokio::time::sleep(idle).await;
            let m = timed(exec(ours, lang)).await?;
            ms[i].push(m);
            ratios[i].push(m / d);
        }
    }
    let [ts, py] = ms.map(percentiles);
    let [r_ts, r_py] = ratios.map(percentiles);
    Ok(json!({
        "idle_ms": idle.as_millis() as u64,
        "direct_echo_ms": percentiles(direct_ms),
        "typescript_trivial_ms": ts,
        "python_trivial_ms": py,
        "typescript_vs_direct_per_round": r_ts,
        "python_vs_direct_per_round": r_py,
    }))
}

/// Bursts of [`BURST`] trivial executions sent at once; each burst's latencies all count.
async fn bursts(direct: &Client, ours: &Client, rounds: usize) -> anyhow::Result<Value> {
    let mut direct_ms = Vec::new();
    let mut direct_burst_ms = Vec::new();
    let mut ms: [Vec<f64>; 2] = Default::default();
    for _ in 0..rounds {
        settle(ours).await?;
        tokio::time::sleep(BURST_GAP).await;
        direct_ms.push(timed(echo(direct)).await?);
        tokio::time::sleep(BURST_GAP).await;
        let all = futures::future::try_join_all((0..BURST).map(|_| timed(echo(direct)))).await?;
        direct_burst_ms.extend(all);
        for (i, lang) in LANGS.iter().enumerate() {
            settle(ours).await?;
            tokio::time::sleep(BURST_GAP).await;
            let all =
                futures::future::try_join_all((0..BURST).map(|_| timed(exec(ours, lang)))).await?;
            ms[i].extend(all);
        }
    }
    let direct_one = percentiles(direct_ms);
    let [ts, py] = ms.map(percentiles);
    Ok(json!({
        "burst": BURST,
        "rounds": rounds,
        "direct_echo_ms": direct_one,
        "direct_burst_of_echo_ms": percentiles(direct_burst_ms),
        "typescript_ms": ts,
        "python_ms": py,
        "typescript_p50_vs_direct_echo": ratio(med(&ts), med(&direct_one)),
        "python_p50_vs_direct_echo": ratio(med(&py), med(&direct_one)),
    }))
}

/// `n` calls of `f` one after another.
async fn back_to_back<F, Fut>(n: usize, mut f: F) -> anyhow::Result<Vec<f64>>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<()>>,
{
    let mut ms = Vec::with_capacity(n);
    for _ in 0..n {
        ms.push(timed(f()).await?);
    }
    Ok(ms)
}

/// Executions for [`SUSTAINED`], [`SUSTAINED_IN_FLIGHT`] at a time.
async fn sustained(ours: &Client, lang: &Lang) -> anyhow::Result<Value> {
    let start = Instant::now();
    let lanes = (0..SUSTAINED_IN_FLIGHT).map(|_| async {
        let mut ms = Vec::new();
        let mut failed = 0usize;
        while start.elapsed() < SUSTAINED {
            let t = Instant::now();
            match exec(ours, lang).await {
                Ok(()) => ms.push(t.elapsed().as_secs_f64() * 1e3),
                Err(_) => failed += 1,
            }
        }
        (ms, failed)
    });
    let results = futures::future::join_all(lanes).await;
    let seconds = start.elapsed().as_secs_f64();
    let failed: usize = results.iter().map(|r| r.1).sum();
    let ms: Vec<f64> = results.into_iter().flat_map(|r| r.0).collect();
    let done = ms.len();
    Ok(json!({
        "in_flight": SUSTAINED_IN_FLIGHT,
        "seconds": round(seconds),
        "executions": done,
        "failed": failed,
        "executions_per_second": round(done as f64 / seconds),
        "latency_ms": percentiles(ms),
    }))
}

/// The report of this section. `our_args` start our server with server-everything upstream.
pub(super) async fn report(
    direct: &Client,
    exe: &str,
    our_args: &[String],
    dir: &std::path::Path,
    iterations: usize,
) -> anyhow::Result<Value> {
    let (ours, pid) = spawn_unlimited(exe, our_args, dir, "paths").await?;
    // Idle memory of a server that has just filled its pools (at their floor: nothing ran).
    settle(&ours).await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let server_kib = pid.and_then(rss_kib).unwrap_or(0);
    let pools_at_rest = pools(&ours).await?;
    let pool_bytes: u64 = pools_at_rest
        .as_array()
        .map(|p| p.iter().filter_map(|p| p["memoryBytes"].as_u64()).sum())
        .unwrap_or(0);

    // Warm up both sides (first upstream connection, first Python start).
    for _ in 0..5 {
        echo(direct).await?;
        for lang in &LANGS {
            exec(&ours, lang).await?;
        }
    }

    let idle_1 = after_idle(
        direct,
        &ours,
        Duration::from_secs(1),
        iterations.clamp(3, 10),
    )
    .await?;
    let idle_5 = after_idle(
        direct,
        &ours,
        Duration::from_secs(5),
        iterations.clamp(3, 5),
    )
    .await?;
    let burst = bursts(direct, &ours, iterations.clamp(5, 20)).await?;

    // Back to back, n = 200: the direct baseline the same way, right before.
    settle(&ours).await?;
    let n = 200;
    let direct_b2b = percentiles(back_to_back(n, || echo(direct)).await?);
    let direct_one = med(&burst["direct_echo_ms"]);
    let mut b2b = serde_json::Map::new();
    let mut ratios = serde_json::Map::new();
    for lang in &LANGS {
        settle(&ours).await?;
        let ms = percentiles(back_to_back(n, || exec(&ours, lang)).await?);
        ratios.insert(
            format!("{}_back_to_back_p50_vs_one_direct_call", lang.name),
            json!(ratio(med(&ms), direct_one)),
        );
        ratios.insert(
            format!("{}_back_to_back_p50_vs_direct_back_to_back", lang.name),
            json!(ratio(med(&ms), med(&direct_b2b))),
        );
        b2b.insert(format!("{}_trivial_ms", lang.name), ms);
    }
    let mut sustained_runs = serde_json::Map::new();
    for lang in &LANGS {
        settle(&ours).await?;
        sustained_runs.insert(lang.name.to_string(), sustained(&ours, lang).await?);
    }
    let pools_after = pools(&ours).await?;
    for (key, v) in [("after_1s_idle", &idle_1), ("after_5s_idle", &idle_5)] {
        for lang in ["typescript", "python"] {
            ratios.insert(
                format!("{lang}_{key}_vs_direct"),
                json!(med(&v[format!("{lang}_vs_direct_per_round")])),
            );
        }
    }
    for lang in ["typescript", "python"] {
        ratios.insert(
            format!("{lang}_burst_p50_vs_direct"),
            burst[format!("{lang}_p50_vs_direct_echo")].clone(),
        );
        ratios.insert(
            format!("{lang}_sustained_executions_per_second"),
            sustained_runs[lang]["executions_per_second"].clone(),
        );
    }
    Ok(json!({
        "after_idle": [idle_1, idle_5],
        "bursts": burst,
        "back_to_back": {
            "n": n,
            "one_direct_echo_ms": direct_one,
            "direct_echo_back_to_back_ms": direct_b2b,
            "ours": b2b,
        },
        "sustained": sustained_runs,
        "idle_memory": {
            "server_rss_kib": server_kib,
            "warm_pools_pss_kib": pool_bytes / 1024,
            "total_kib": server_kib + pool_bytes / 1024,
            "pools": pools_at_rest,
        },
        "pools_after_load": pools_after,
        "ratios": ratios,
        "targets": {
            "after_idle_vs_direct": "<= 1.0",
            "burst_p50_vs_direct": "<= 2",
            "typescript_back_to_back_p50_vs_one_direct_call": "<= 3",
            "python_back_to_back_p50_vs_one_direct_call": "<= 5",
            "typescript_sustained_executions_per_second": ">= 150",
            "python_sustained_executions_per_second": ">= 100",
            "idle_memory.total_kib": "< 61440",
        },
    }))
}

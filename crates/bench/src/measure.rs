//! What every section of `bench` measures with: an rmcp client of a spawned server, a timed
//! tool call, and samples summarized as median, p95 and max in milliseconds.

use std::time::{Duration, Instant};

use anyhow::Context;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};

pub(super) type Client = RunningService<RoleClient, ()>;

/// Idle time before each side-by-side measurement, after the pools are full.
pub(super) const SIDE_BY_SIDE_GAP: Duration = Duration::from_millis(25);

/// Longest wait for a pool to be full again between warm-pool samples.
const POOL_REFILL_WAIT: Duration = Duration::from_secs(10);

/// Waits until `language`'s pool holds its target of ready workers (from `health`), and
/// returns how long that took. A worker serves one execution; starting its replacement
/// (interpreter, shim imports, sandbox) costs tens of milliseconds of CPU, which an agent's
/// think time normally hides. Warm-pool samples wait for it (outside the timed part);
/// back-to-back samples, reported next to them, do not.
pub(super) async fn wait_for_pool(client: &Client, language: &str) -> anyhow::Result<Duration> {
    let t = Instant::now();
    loop {
        let health = call(client, "health", json!({})).await?;
        let full = health
            .structured_content
            .as_ref()
            .and_then(|h| h["pools"].as_array().cloned())
            .unwrap_or_default()
            .iter()
            .any(|p| p["language"] == language && p["ready"] == p["target"]);
        if full || t.elapsed() > POOL_REFILL_WAIT {
            return Ok(t.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Waits until every pool, the read grants' included, holds its target of ready workers, then
/// [`SIDE_BY_SIDE_GAP`]: each measurement then starts from the same state, not while the
/// replacements of the measurement before it start.
pub(super) async fn settle_all_pools(client: &Client) -> anyhow::Result<()> {
    let t = Instant::now();
    loop {
        let health = call(client, "health", json!({})).await?;
        let h = health.structured_content.unwrap_or_default();
        let pools = ["pools", "grantPools"]
            .iter()
            .filter_map(|k| h[*k].as_array().cloned())
            .flatten();
        let full = pools.into_iter().all(|p| p["ready"] == p["target"]);
        if full || t.elapsed() > POOL_REFILL_WAIT {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    tokio::time::sleep(SIDE_BY_SIDE_GAP).await;
    Ok(())
}

async fn spawn_client(program: &str, args: &[String]) -> anyhow::Result<(Client, Option<u32>)> {
    spawn_client_with(program, args, &[]).await
}

pub(super) async fn spawn_client_with(
    program: &str,
    args: &[String],
    env: &[(&str, &std::path::Path)],
) -> anyhow::Result<(Client, Option<u32>)> {
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args).kill_on_drop(true);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(std::process::Stdio::null())
        .spawn()
        .with_context(|| format!("cannot start {program}"))?;
    let pid = transport.id();
    Ok((().serve(transport).await?, pid))
}

/// Our server (started with `args`) with the admission limits raised out of the way (its
/// settings file is `dir/<name>-settings.json`), so that only failures and delays of ours count.
pub(super) async fn spawn_unlimited(
    exe: &str,
    args: &[String],
    dir: &std::path::Path,
    name: &str,
) -> anyhow::Result<(Client, Option<u32>)> {
    let settings = dir.join(format!("{name}-settings.json"));
    let limits =
        json!({"limits": {"executionsPerMinute": 1_000_000, "toolCallsPerMinute": 1_000_000}});
    std::fs::write(&settings, serde_json::to_vec(&limits)?)?;
    spawn_client_with(exe, args, &[("CODE_EXECUTOR_CONFIG_PATH", &settings)]).await
}

pub(super) async fn call(
    client: &Client,
    tool: &str,
    args: Value,
) -> anyhow::Result<CallToolResult> {
    let Value::Object(map) = args else {
        anyhow::bail!("arguments must be an object")
    };
    let r = client
        .peer()
        .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(map))
        .await?;
    if r.is_error == Some(true) {
        anyhow::bail!("{tool} failed: {:?}", r.content);
    }
    Ok(r)
}

/// How long `f` takes, in milliseconds.
pub(super) async fn timed(
    f: impl std::future::Future<Output = anyhow::Result<()>>,
) -> anyhow::Result<f64> {
    let t = Instant::now();
    f.await?;
    Ok(t.elapsed().as_secs_f64() * 1e3)
}

/// Median, p95 and max of `n` timed runs of `f`, in milliseconds.
pub(super) async fn sample<F, Fut>(n: usize, mut f: F) -> anyhow::Result<Value>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<()>>,
{
    let mut ms = Vec::with_capacity(n);
    for _ in 0..n {
        ms.push(timed(f()).await?);
    }
    Ok(summarize(ms))
}

/// Min, median, p95, p99 and max of samples in milliseconds.
pub(super) fn summarize(mut ms: Vec<f64>) -> Value {
    if ms.is_empty() {
        return json!({"n": 0});
    }
    ms.sort_by(f64::total_cmp);
    let pick = |q: f64| ms[((ms.len() - 1) as f64 * q).round() as usize];
    json!({"min": round(pick(0.0)), "median": round(pick(0.5)), "p95": round(pick(0.95)), "p99": round(pick(0.99)), "max": round(pick(1.0)), "n": ms.len()})
}

pub(super) fn round(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

pub(super) fn median(v: &Value) -> f64 {
    v["median"].as_f64().unwrap_or(f64::NAN)
}

/// Resident memory of a process, in KiB.
pub(super) fn rss_kib(pid: u32) -> Option<u64> {
    sandbox::process::resident_bytes(sandbox::process::Which::Pid(pid)).map(|b| b / 1024)
}

/// Start-to-first-`tools/list` of a server in ms, the client, and the server's pid.
pub(super) async fn cold_start(
    program: &str,
    args: &[String],
) -> anyhow::Result<(f64, Client, Option<u32>)> {
    let t = Instant::now();
    let (client, pid) = spawn_client(program, args).await?;
    client.peer().list_all_tools().await?;
    Ok((t.elapsed().as_secs_f64() * 1e3, client, pid))
}

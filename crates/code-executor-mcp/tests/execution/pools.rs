//! Worker pools through the built binary and the real sandbox: a worker never serves two
//! executions outside a session (sequential and concurrent, both languages), and a pool
//! grows under a burst and shrinks back when idle, within its bounds, as `health` reports.

use std::collections::HashSet;
use std::time::Duration;

use serde_json::{Value, json};
use test_support::{Harness, TempConfig};

use crate::common;

/// A server with the fixture upstream, room for a burst (queue and rate), and `extra` in its
/// settings file.
async fn server(extra: Value) -> (Harness, TempConfig) {
    let mut settings = json!({
        "limits": {
            "maxConcurrentExecutions": 8,
            "queue": 64,
            "executionsPerMinute": 100000,
        },
    });
    if let (Some(s), Value::Object(extra)) = (settings.as_object_mut(), extra) {
        s.extend(extra);
    }
    common::server(settings).await
}

/// What an execution reports about the process that ran it: whether it was the first
/// execution there (a global left by an earlier one is absent), and tokens drawn from the
/// process's random state (Math.random; Python's random and its per-process hash seed).
const TS_PROBE: &str = "const fresh = globalThis.__ranHere === undefined; \
    globalThis.__ranHere = true; \
    return [fresh, String(Math.random()) + ':' + String(Math.random())];";
const PY_PROBE: &str = "import builtins, random\n\
    fresh = not hasattr(builtins, '_ran_here')\n\
    builtins._ran_here = True\n\
    [fresh, '%r:%d' % (random.random(), hash('token'))]";

async fn probe(h: &Harness, python: bool) -> (bool, String) {
    let (v, is_error) = if python {
        h.exec_python(PY_PROBE).await
    } else {
        h.exec(TS_PROBE).await
    };
    assert!(!is_error, "{v}");
    (
        v["result"][0].as_bool().unwrap(),
        v["result"][1].as_str().unwrap().to_string(),
    )
}

#[tokio::test]
async fn a_worker_never_serves_two_executions_outside_a_session() {
    let (h, _dir) = server(json!({})).await;
    for python in [false, true] {
        let mut tokens = HashSet::new();
        let mut runs = Vec::new();
        // Back to back (the pool drains and refills), then concurrent bursts.
        for _ in 0..30 {
            runs.push(probe(&h, python).await);
        }
        for _ in 0..3 {
            let burst = (0..10).map(|_| probe(&h, python));
            runs.extend(futures::future::join_all(burst).await);
        }
        for (fresh, token) in &runs {
            assert!(
                fresh,
                "an execution found what an earlier one left (python: {python})"
            );
            assert!(
                tokens.insert(token.clone()),
                "two executions drew the same random token {token} (python: {python}): \
                 same process, or a random state copied between workers"
            );
        }
        assert_eq!(tokens.len(), 60);
    }
}

#[tokio::test]
async fn a_pool_grows_under_a_burst_of_50_and_shrinks_back_within_its_bounds() {
    let (h, _dir) = server(json!({"poolMax": 4, "poolShrinkAfterMs": 300})).await;
    let before = h.pool("js").await;
    let (min, max) = (
        before["min"].as_u64().unwrap(),
        before["max"].as_u64().unwrap(),
    );
    assert_eq!(max, 4, "{before}");
    assert!(min < max, "{before}");

    let burst = (0..50).map(|i| h.exec_with(json!({"code": format!("return {i};")})));
    let results = futures::future::join_all(burst).await;
    for (i, (v, is_error)) in results.iter().enumerate() {
        assert!(!is_error, "{v}");
        assert_eq!(v["result"], json!(i));
    }
    let after = h.pool("js").await;
    let peak = after["peakTarget"].as_u64().unwrap();
    assert!(
        peak > min && peak <= max,
        "the pool should grow under the burst, never past its max: {after}"
    );
    assert!(after["grown"].as_u64().unwrap() >= 1, "{after}");
    assert!(after["target"].as_u64().unwrap() <= max, "{after}");
    assert!(after["ready"].as_u64().unwrap() <= max, "{after}");

    // Idle: back to its floor, one step per idle period, never below it.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let now = h.pool("js").await;
        let (target, ready) = (
            now["target"].as_u64().unwrap(),
            now["ready"].as_u64().unwrap(),
        );
        assert!(target >= min && target <= max, "{now}");
        assert!(ready <= max, "{now}");
        if target == min && ready == min {
            assert!(now["shrunk"].as_u64().unwrap() >= 1, "{now}");
            assert_eq!(now["startFailures"], json!(0), "{now}");
            assert!(now["memoryBytes"].as_u64().unwrap() > 0, "{now}");
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the pool never shrank back to {min}: {now}"
        );
        // Polling a condition, not waiting for time to pass.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

//! The `worker_start` section of `code-executor-mcp bench` (`--start-only`): how long a worker
//! takes from the request to start it to its `ready` frame, sandbox included, in each
//! language: what an execution waits for when it finds its pool empty.
//!
//! The workers are started here, in the bench's own process, by the spawners the server
//! builds (`confinement::worker_policy`, `WorkerSpawner::javascript`, the Python runtime's
//! spawner) with the bench's sandbox mode; the languages alternate, and each worker is stopped
//! and reaped before the next starts, so every start meets the same machine.

use std::time::Instant;

use serde_json::{Value, json};

use super::measure::{median, summarize};
use faces::CoreOptions;
use runtime::pool::{MemoryBudget, PoolSizing};
use runtime::python::PythonRuntime;
use runtime::worker::WorkerSpawner;

/// Targets of issue #53: median start to `ready`, in ms.
const TYPESCRIPT_TARGET_MS: f64 = 3.0;
const PYTHON_TARGET_MS: f64 = 8.0;

/// `rounds` starts of each language, alternating.
pub(super) async fn report(opts: &CoreOptions, rounds: usize) -> anyhow::Result<Value> {
    let policy = runtime::confinement::worker_policy(opts.sandbox, &opts.exe, 0);
    let js = WorkerSpawner::javascript(&opts.exe, policy.clone());
    // A runtime without a pool (max 0): only its spawner is used.
    let none = PoolSizing {
        min: 0,
        max: 0,
        shrink_after: std::time::Duration::from_secs(60),
    };
    let python = PythonRuntime::start(opts.python.clone(), policy, none, MemoryBudget::new(0));
    let py = match python.pool().await {
        Ok(pool) => Some(pool.spawner().clone()),
        Err(e) => {
            tools::console::say(&format!("bench: Python start not measured: {e}"));
            None
        }
    };
    // One untimed start each: the view's plan and the libraries' list are made once per
    // spawner, as a server does before its first worker.
    time_start(&js).await?;
    if let Some(py) = &py {
        time_start(py).await?;
    }
    let (mut js_ms, mut py_ms) = (Vec::with_capacity(rounds), Vec::with_capacity(rounds));
    for _ in 0..rounds {
        js_ms.push(time_start(&js).await?);
        if let Some(py) = &py {
            py_ms.push(time_start(py).await?);
        }
    }
    let (js_ms, py_ms) = (summarize(js_ms), summarize(py_ms));
    let (js_median, py_median) = (median(&js_ms), median(&py_ms));
    Ok(json!({
        "typescript_ms": js_ms,
        "python_ms": if py.is_some() { py_ms } else { Value::Null },
        "sandbox": format!("{:?}", opts.sandbox).to_lowercase(),
        "workerStart": runtime::worker::template::start_path(&js.policy),
        "targets": {
            "typescript_median_ms": format!("<= {TYPESCRIPT_TARGET_MS}"),
            "python_median_ms": format!("<= {PYTHON_TARGET_MS}"),
        },
        "met": {
            "typescript": js_median <= TYPESCRIPT_TARGET_MS,
            "python": py.is_some() && py_median <= PYTHON_TARGET_MS,
        },
        "note": "from the request to start a worker to its ready frame (sandbox, engine), in this process; each worker is stopped and reaped before the next start",
    }))
}

/// One start to `ready`, in ms; the worker is stopped and reaped after it.
async fn time_start(spawner: &WorkerSpawner) -> anyhow::Result<f64> {
    let t = Instant::now();
    let worker = spawner.spawn().await?;
    let ms = t.elapsed().as_secs_f64() * 1e3;
    worker.finish().await;
    Ok(ms)
}

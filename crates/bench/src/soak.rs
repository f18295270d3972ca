//! `bench --soak N`: robustness rather than speed, N executions back to back.

use std::time::Instant;

use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};

use super::measure::{call, round, spawn_unlimited, summarize};

/// `runs` executions back to back against our server (started with `args`), alternating
/// TypeScript and Python, each calling the upstream's `echo` once. Admission limits are
/// raised for the run so that only failures of ours are counted.
pub(super) async fn soak(
    exe: &str,
    args: &[String],
    dir: &std::path::Path,
    runs: usize,
) -> anyhow::Result<Value> {
    let (ours, _) = spawn_unlimited(exe, args, dir, "soak").await?;
    let ts = "return await tools.everything.echo({ message: 'soak' });";
    let py = "call_mcp_tool('everything', 'echo', {'message': 'soak'})";
    let mut ms = [
        Vec::with_capacity(runs / 2 + 1),
        Vec::with_capacity(runs / 2 + 1),
    ];
    let mut failures: std::collections::BTreeMap<String, (usize, String)> = Default::default();
    let started = Instant::now();
    for i in 0..runs {
        let (tool, code) = if i % 2 == 0 {
            ("execute_typescript", ts)
        } else {
            ("execute_python", py)
        };
        let t = Instant::now();
        let Value::Object(arguments) = json!({ "code": code }) else {
            anyhow::bail!("arguments must be an object")
        };
        let outcome = ours
            .peer()
            .call_tool(CallToolRequestParams::new(tool).with_arguments(arguments))
            .await;
        ms[i % 2].push(t.elapsed().as_secs_f64() * 1e3);
        let failure = match outcome {
            Ok(r) if r.is_error != Some(true) => None,
            Ok(r) => {
                let v = r.structured_content.unwrap_or(Value::Null);
                Some((
                    format!("{tool}: {}", v["error"]["name"].as_str().unwrap_or("?")),
                    v["error"]["message"].as_str().unwrap_or("").to_string(),
                ))
            }
            Err(e) => Some((format!("{tool}: protocol error"), e.to_string())),
        };
        if let Some((kind, message)) = failure {
            let entry = failures.entry(kind).or_insert((0, message));
            entry.0 += 1;
        }
    }
    let failed: usize = failures.values().map(|f| f.0).sum();
    // Worker starts that failed and were retried (not seen by any execution).
    let pools = call(&ours, "health", json!({}))
        .await?
        .structured_content
        .map(|h| h["pools"].clone())
        .unwrap_or(Value::Null);
    let [ts_ms, py_ms] = ms;
    Ok(json!({
        "soak": {
            "runs": runs,
            "failed": failed,
            "failures": failures.iter().map(|(k, (n, m))| json!({"kind": k, "count": n, "first_message": m})).collect::<Vec<_>>(),
            "seconds": round(started.elapsed().as_secs_f64()),
            "typescript_ms": summarize(ts_ms),
            "python_ms": summarize(py_ms),
            "pools": pools,
        }
    }))
}

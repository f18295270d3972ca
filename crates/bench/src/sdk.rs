//! The `python_sdk` section of `code-executor-mcp bench --python-sdk PYTHON`: back to back as
//! an agent loop calls, measured from the official MCP Python SDK (a client nobody here wrote):
//! 200 sequential trivial executions in each language next to 200 sequential direct `echo`
//! calls from the same client kind, one server of each kind started by the client over stdio.
//! The script is `sdk_back_to_back.py`; PYTHON must have the `mcp` package installed.

use std::path::Path;

use anyhow::Context;
use serde_json::{Value, json};

use super::measure::round;

const SCRIPT: &str = include_str!("sdk_back_to_back.py");
/// Sequential calls per side.
const CALLS: usize = 200;

/// Runs the script with `python`; `direct` and `ours` are the two servers' command lines.
pub(super) async fn report(
    python: &Path,
    dir: &Path,
    direct: &[String],
    ours: &[String],
) -> anyhow::Result<Value> {
    let script = dir.join("sdk_back_to_back.py");
    std::fs::write(&script, SCRIPT)?;
    let out = tokio::process::Command::new(python)
        .arg(&script)
        .arg(CALLS.to_string())
        .arg(serde_json::to_string(direct)?)
        .arg(serde_json::to_string(ours)?)
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .with_context(|| format!("cannot run {}", python.display()))?;
    anyhow::ensure!(
        out.status.success(),
        "the Python SDK client failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
            .lines()
            .rev()
            .take(5)
            .collect::<Vec<_>>()
            .join(" | ")
    );
    let mut v: Value = serde_json::from_slice(&out.stdout).context("the script's JSON")?;
    let m = |k: &str| v[k]["median"].as_f64().unwrap_or(f64::NAN);
    let direct_b2b = m("direct_echo_back_to_back_ms");
    let (ts, py) = (
        m("execute_typescript_back_to_back_ms"),
        m("execute_python_back_to_back_ms"),
    );
    v["ratios"] = json!({
        "typescript_vs_direct_echo_back_to_back": round(ts / direct_b2b),
        "python_vs_direct_echo_back_to_back": round(py / direct_b2b),
        "typescript_vs_direct_echo_after_pause": round(ts / m("direct_echo_after_pause_ms")),
        "python_vs_direct_echo_after_pause": round(py / m("direct_echo_after_pause_ms")),
    });
    v["targets"] = json!({
        "typescript_vs_direct_echo_back_to_back": "<= 2",
        "python_vs_direct_echo_back_to_back": "<= 3",
    });
    Ok(v)
}

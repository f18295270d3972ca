//! The `access` section of `code-executor-mcp bench`: a granted `fetch` of a 1 KB body from a
//! loopback server, from TypeScript and Python, next to the same request made directly from
//! the host in the same rounds; and reading a 10 MB granted file from code next to `cat`.
//!
//! The loopback server is a plain HTTP/1.1 responder on 127.0.0.1 started here; the settings
//! the measured server gets name its address in `permissions.net` and the file's directory in
//! `permissions.read`. A read grant gives the execution a worker of its own (its view holds the
//! granted path), so the file rounds include starting that worker.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::Path;

use anyhow::Context;
use serde_json::{Value, json};

use super::measure::{call, median, round, spawn_client_with, summarize, timed};

/// Bytes of the fetched body.
const BODY_BYTES: usize = 1024;
/// Bytes of the file read.
const FILE_BYTES: usize = 10 << 20;

/// Serves `BODY_BYTES` bytes to every request, one thread per connection.
fn loopback_server() -> anyhow::Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut stream = stream;
                let Ok(clone) = stream.try_clone() else {
                    return;
                };
                let mut reader = BufReader::new(clone);
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).is_err() || line.trim().is_empty() {
                        break;
                    }
                }
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {BODY_BYTES}\r\nConnection: close\r\n\r\n"
                );
                let _ = stream.write_all(head.as_bytes());
                let _ = stream.write_all(&[b'x'; BODY_BYTES]);
            });
        }
    });
    Ok(port)
}

/// Runs the section against a server started from `exe` with `args` (sandbox, pools, python).
pub(super) async fn report(
    exe: &str,
    args: &[String],
    dir: &Path,
    rounds: usize,
) -> anyhow::Result<Value> {
    let port = loopback_server()?;
    let data = dir.join("access-data");
    std::fs::create_dir_all(&data)?;
    let file = data.join("ten-mb.bin");
    std::fs::write(&file, vec![b'z'; FILE_BYTES])?;
    use std::os::unix::fs::PermissionsExt;
    for d in [dir, data.as_path()] {
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755))?;
    }
    let settings = dir.join("access-settings.json");
    std::fs::write(
        &settings,
        serde_json::to_vec(&json!({
            "permissions": {"read": [data], "net": [format!("127.0.0.1:{port}")]}
        }))?,
    )?;
    let (ours, _) = spawn_client_with(
        exe,
        args,
        &[("CODE_EXECUTOR_CONFIG_PATH", settings.as_path())],
    )
    .await?;
    crate::tls::install_tls_provider();
    let direct = reqwest::Client::builder()
        .no_proxy()
        .build()
        .context("HTTP client")?;
    let url = format!("http://127.0.0.1:{port}/kb");
    let net = json!({"net": [format!("127.0.0.1:{port}")]});
    let ts_fetch = format!("return (await (await fetch({url:?})).text()).length");
    let py_fetch = format!("len(fetch({url:?}).content)");
    let path = file.display().to_string();
    let ts_read = format!("return (await fs.readFile({path:?})).length");
    let py_read = format!("len(open({path:?}, 'rb').read())");
    let read = json!({"read": [data]});

    let exec = |tool: &'static str, code: String, permissions: Value| {
        let ours = &ours;
        async move {
            let r = call(
                ours,
                tool,
                json!({"code": code, "permissions": permissions}),
            )
            .await?;
            let got = r
                .structured_content
                .as_ref()
                .map(|v| v["result"].clone())
                .unwrap_or(Value::Null);
            anyhow::ensure!(got.is_u64(), "{tool}: unexpected result {got}");
            Ok(())
        }
    };
    // Warm up both sides once.
    exec("execute_typescript", ts_fetch.clone(), net.clone()).await?;
    exec("execute_python", py_fetch.clone(), net.clone()).await?;
    let direct_fetch = || async {
        let body = direct.get(&url).send().await?.bytes().await?;
        anyhow::ensure!(body.len() == BODY_BYTES, "short body");
        Ok(())
    };
    let cat = || async {
        let status = tokio::process::Command::new("cat")
            .arg(&file)
            .stdout(std::process::Stdio::null())
            .status()
            .await?;
        anyhow::ensure!(status.success(), "cat failed");
        Ok(())
    };
    let mut m: [Vec<f64>; 6] = Default::default();
    let mut ratios: [Vec<f64>; 4] = Default::default();
    for _ in 0..rounds {
        let d = timed(direct_fetch()).await?;
        let t = timed(exec("execute_typescript", ts_fetch.clone(), net.clone())).await?;
        let p = timed(exec("execute_python", py_fetch.clone(), net.clone())).await?;
        let c = timed(cat()).await?;
        let tr = timed(exec("execute_typescript", ts_read.clone(), read.clone())).await?;
        let pr = timed(exec("execute_python", py_read.clone(), read.clone())).await?;
        for (slot, v) in m.iter_mut().zip([d, t, p, c, tr, pr]) {
            slot.push(v);
        }
        for (slot, v) in ratios.iter_mut().zip([t / d, p / d, tr / c, pr / c]) {
            slot.push(v);
        }
    }
    let [direct_ms, ts_ms, py_ms, cat_ms, ts_read_ms, py_read_ms] = m.map(summarize);
    let [r_ts, r_py, r_ts_read, r_py_read] = ratios.map(summarize);
    drop(ours);
    Ok(json!({
        "fetch_1kb": {
            "direct_from_host_ms": direct_ms,
            "typescript_execution_ms": ts_ms,
            "python_execution_ms": py_ms,
            "typescript_vs_direct_per_round": r_ts,
            "python_vs_direct_per_round": r_py,
        },
        "read_10mb": {
            "cat_ms": cat_ms,
            "typescript_execution_ms": ts_read_ms,
            "python_execution_ms": py_read_ms,
            "typescript_vs_cat_per_round": r_ts_read,
            "python_vs_cat_per_round": r_py_read,
        },
        "ratios": {
            "typescript_fetch_vs_direct": round(median(&r_ts)),
            "python_fetch_vs_direct": round(median(&r_py)),
            "typescript_read_10mb_vs_cat": round(median(&r_ts_read)),
            "python_read_10mb_vs_cat": round(median(&r_py_read)),
        },
        "note": "each execution is a whole tools/call (worker, sandbox, answer); a read grant starts a worker of its own, included here",
    }))
}

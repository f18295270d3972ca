//! `code-executor-mcp bench --container-url URL`: a trivial execution inside the container next
//! to the same binary on the host, in the same run (docs/container.md).
//!
//! The server at URL is typically the image of `scripts/build-image.sh` started with the flags
//! of docs/container.md (token in `CODE_EXECUTOR_BENCH_TOKEN`). The host side is this binary,
//! started by the bench with the image's default command (`serve --http`, default pool sizes,
//! one bearer token, no upstreams) on 127.0.0.1. Both are driven by rmcp's streamable HTTP
//! client, one connection each; every sample is one `execute_typescript` (`return 1`) or
//! `execute_python` (`1`), alternating container and host sample by sample so drift on a
//! shared machine hits both alike. Reported: medians, p90, and container/host ratios.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::{Value, json};

use super::args::BenchArgs;
use super::http::{Client, call, connect, served_url, wait_ready};
use tools::console::say;

/// Environment variable holding the container's bearer token.
pub(crate) const TOKEN_ENV: &str = "CODE_EXECUTOR_BENCH_TOKEN";
/// Untimed executions per side and language before the samples.
const WARMUP: usize = 5;
/// Idle time before each sample, so it finds its pool refilled (a Python worker takes tens of
/// ms of CPU to start) as an agent's think time would.
const GAP: Duration = Duration::from_millis(200);

/// The host side: this binary serving HTTP as the image's default command does.
async fn start_host(
    exe: &std::path::Path,
    dir: &std::path::Path,
    token: &str,
) -> anyhow::Result<(tokio::process::Child, String)> {
    let cfg = dir.join("mcp.json");
    std::fs::write(&cfg, r#"{"mcpServers": {}}"#)?;
    let tokens = dir.join("tokens");
    std::fs::write(&tokens, format!("bench={token}\n"))?;
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tokens, std::fs::Permissions::from_mode(0o600))?;
    }
    let log = dir.join("server.log");
    let child = tokio::process::Command::new(exe)
        .arg("--config")
        .arg(&cfg)
        .args([
            "--no-discover",
            "serve",
            "--http",
            "127.0.0.1:0",
            "--tokens-file",
        ])
        .arg(&tokens)
        .env("XDG_STATE_HOME", dir.join("state"))
        .env("RUST_LOG", "info,rmcp=warn")
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log)?)
        .kill_on_drop(true)
        .spawn()
        .context("cannot start the host server")?;
    let url = served_url(&log, "the host server").await?;
    Ok((child, url))
}

fn summary(mut ms: Vec<f64>) -> Value {
    ms.sort_by(f64::total_cmp);
    let pick = |q: f64| ms[((ms.len() - 1) as f64 * q).round() as usize];
    let r3 = |x: f64| (x * 1000.0).round() / 1000.0;
    json!({"median_ms": r3(pick(0.5)), "p90_ms": r3(pick(0.9)), "min_ms": r3(pick(0.0)), "n": ms.len()})
}

fn ratio(a: &Value, b: &Value) -> Value {
    let r =
        a["median_ms"].as_f64().unwrap_or(f64::NAN) / b["median_ms"].as_f64().unwrap_or(f64::NAN);
    json!((r * 1000.0).round() / 1000.0)
}

fn version(c: &Client) -> String {
    c.peer_info()
        .and_then(|i| i.server_info.clone())
        .map(|s| format!("{} {}", s.name, s.version))
        .unwrap_or_default()
}

pub(crate) async fn run(exe: PathBuf, args: &BenchArgs) -> anyhow::Result<ExitCode> {
    tools::tls::install_tls_provider();
    let container_url = args.container_url.clone().context("--container-url URL")?;
    let token = std::env::var(TOKEN_ENV).ok().filter(|t| !t.is_empty());
    let n = args.iterations.max(5);

    let dir = std::env::temp_dir().join(format!(
        "code-executor-bench-container-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir)?;
    let host_token = format!("bench-host-{:0>24}", std::process::id());
    let (host_server, host_url) = start_host(&exe, &dir, &host_token).await?;
    let host_pid = host_server.id();
    wait_ready(host_url.trim_end_matches("/mcp")).await?;
    wait_ready(container_url.trim_end_matches("/mcp"))
        .await
        .with_context(|| format!("the container at {container_url}"))?;

    let container = connect(&container_url, token.as_deref())
        .await
        .with_context(|| format!("cannot connect to {container_url} (token from ${TOKEN_ENV})"))?;
    let host = connect(&host_url, Some(&host_token)).await?;
    let languages = [
        (
            "typescript",
            "execute_typescript",
            json!({"code": "return 1"}),
        ),
        ("python", "execute_python", json!({"code": "1"})),
    ];
    for (_, tool, body) in &languages {
        for _ in 0..WARMUP {
            call(&container, tool, body)
                .await
                .context("container warm-up")?;
            call(&host, tool, body).await.context("host warm-up")?;
        }
    }
    let mut report = serde_json::Map::new();
    for (name, tool, body) in &languages {
        let (mut in_container, mut on_host) = (Vec::with_capacity(n), Vec::with_capacity(n));
        for i in 0..n {
            // Alternate which side goes first, so neither always follows the other's refill.
            for side in [i % 2, 1 - i % 2] {
                tokio::time::sleep(GAP).await;
                let (client, samples) = if side == 0 {
                    (&container, &mut in_container)
                } else {
                    (&host, &mut on_host)
                };
                let t = Instant::now();
                call(client, tool, body).await?;
                samples.push(t.elapsed().as_secs_f64() * 1e3);
            }
        }
        let (c, h) = (summary(in_container), summary(on_host));
        let r = ratio(&c, &h);
        report.insert(
            (*name).to_string(),
            json!({"container": c, "host": h, "container_vs_host_median": r}),
        );
    }
    let out = json!({"container": {
        "trivial_execution": report,
        "samples_per_side": n,
        "container_url": container_url,
        "servers": {"container": version(&container), "host": version(&host)},
        "target": "container_vs_host_median close to 1: the container adds no sandbox cost of its own",
        "notes": "one client per side; samples alternate container/host, each after a 200 ms gap (pools refilled); both over streamable HTTP on loopback (the container through its published port)",
    }});
    let _ = container.cancel().await;
    let _ = host.cancel().await;
    if let Some(pid) = host_pid {
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status();
    }
    let _ = std::fs::remove_dir_all(&dir);
    say(&serde_json::to_string_pretty(&out)?);
    Ok(ExitCode::SUCCESS)
}

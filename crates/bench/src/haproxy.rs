//! `code-executor-mcp bench --http --via-haproxy`: executions per second through HAProxy in
//! front of 1 and of 3 replicas, at 8 and 32 clients, next to one replica without a proxy
//! and server-everything's `echo` over streamable HTTP, all in the same run.
//!
//! HAProxy runs the shipped configuration (`--haproxy-config`, default
//! deploy/haproxy/haproxy.cfg) with its list of replicas replaced; the replicas are the built
//! binary (`serve --http --replica-id bN`) with the settings of `bench --http`. Each round also
//! says where the CPU went (the machine's busy share, HAProxy's and this client's, from
//! the system), which is what bounds the rate on a small machine.

use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};
use std::time::Instant;

use anyhow::Context;
use serde_json::{Value, json};

use super::args::BenchArgs;
use super::http::{free_port, round, start_ours, wait_listening, wait_ready};
use tools::console::say;

/// Concurrent clients per round.
const CLIENTS: [usize; 2] = [8, 32];
/// Replicas behind HAProxy, per configuration measured.
const REPLICAS: [usize; 2] = [1, 3];

/// `text` with `servers` (`(name, host:port)`) as its list of replicas (the lines between
/// `# replicas: begin` and `# replicas: end`).
fn with_servers(text: &str, servers: &[(String, String)]) -> anyhow::Result<String> {
    let mut out = String::new();
    let mut skipping = false;
    for line in text.lines() {
        if line.trim() == "# replicas: end" {
            skipping = false;
        }
        if skipping {
            continue;
        }
        out.push_str(line);
        out.push('\n');
        if line.trim() == "# replicas: begin" {
            skipping = true;
            for (name, addr) in servers {
                out.push_str(&format!("    server {name} {addr}\n"));
            }
        }
    }
    anyhow::ensure!(
        out.contains("# replicas: end"),
        "the HAProxy configuration has no `# replicas: begin` / `# replicas: end` block"
    );
    Ok(out)
}

fn haproxy_bin() -> anyhow::Result<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/usr/local/sbin")])
        .map(|d| d.join("haproxy"))
        .find(|p| p.is_file())
        .context("haproxy is not installed (apt-get install haproxy)")
}

/// HAProxy with `config` in `dir`; its pid and MCP URL.
async fn start_haproxy(
    bin: &Path,
    dir: &Path,
    config: &str,
) -> anyhow::Result<(tokio::process::Child, String)> {
    let cfg = dir.join("haproxy.cfg");
    std::fs::write(&cfg, config)?;
    let port = free_port()?;
    let child = tokio::process::Command::new(bin)
        .args(["-db", "-f"])
        .arg(&cfg)
        .env("HAPROXY_BIND", format!("127.0.0.1:{port}"))
        .env("HAPROXY_ADMIN_SOCKET", dir.join("admin.sock"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("haproxy.log"))?)
        .kill_on_drop(true)
        .spawn()
        .context("cannot start haproxy")?;
    wait_listening(port).await?;
    Ok((child, format!("http://127.0.0.1:{port}/mcp")))
}

/// CPU ticks (user + system) of `pid`, or of the whole machine (busy) with `None`.
fn ticks(pid: Option<u32>) -> u64 {
    sandbox::process::cpu_ticks(pid.map(sandbox::process::Which::Pid)).unwrap_or(0)
}

/// A round, with where the CPU went during it (percent of one core; the machine's share is
/// of all its cores).
async fn measured(
    url: &str,
    tokens: &[String],
    c: usize,
    per_client: usize,
    tool: &str,
    args: &Value,
    haproxy: Option<u32>,
) -> anyhow::Result<Value> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    let hz = 100.0; // USER_HZ on Linux
    let (m0, h0, s0) = (
        ticks(None),
        haproxy.map(|p| ticks(Some(p))),
        ticks(Some(std::process::id())),
    );
    let t = Instant::now();
    let mut r = round(url, tokens, c, per_client, tool, args).await?;
    let wall = t.elapsed().as_secs_f64();
    let pct = |d: u64| ((d as f64 / hz / wall) * 1000.0).round() / 10.0;
    r["cpu"] = json!({
        "machine_busy_pct_of_all_cores": pct(ticks(None) - m0) / cores,
        "haproxy_pct_of_a_core": h0.map(|h0| pct(ticks(haproxy) - h0)),
        "bench_client_pct_of_a_core": pct(ticks(Some(std::process::id())) - s0),
    });
    Ok(r)
}

pub(crate) async fn run(exe: PathBuf, args: &BenchArgs) -> anyhow::Result<ExitCode> {
    let bin = haproxy_bin()?;
    let shipped = std::fs::read_to_string(&args.haproxy_config)
        .with_context(|| format!("read {}", args.haproxy_config.display()))?;
    let everything = args.everything_js()?;
    let per_client = args.iterations.max(5);
    let port = free_port()?;
    let _direct_server = tokio::process::Command::new(&args.node)
        .arg(&everything)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .context("cannot start server-everything")?;
    wait_listening(port).await?;
    let direct_url = format!("http://127.0.0.1:{port}/mcp");

    let dir = std::env::temp_dir().join(format!(
        "code-executor-bench-haproxy-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir)?;
    let max = CLIENTS.iter().copied().max().unwrap_or(1);
    let tokens: Vec<String> = (0..max)
        .map(|i| format!("bench-agent-{i}-{:0>24}", i * 104_729))
        .collect();
    let upstream = json!({"mcpServers": {"everything": {
        "command": args.node, "args": [everything.display().to_string(), "stdio"]
    }}});
    let top = REPLICAS.iter().copied().max().unwrap_or(1);
    let mut replicas = Vec::new();
    for i in 0..top {
        let id = format!("b{i}");
        let rdir = dir.join(&id);
        std::fs::create_dir_all(&rdir)?;
        let (child, url) =
            start_ours(&exe, &rdir, &upstream, &tokens, &["--replica-id", &id]).await?;
        let base = url.trim_end_matches("/mcp").to_string();
        wait_ready(&base).await?;
        let addr = base.trim_start_matches("http://").to_string();
        replicas.push((id, addr, child, url));
    }
    let mut proxies = Vec::new();
    for n in REPLICAS {
        let servers: Vec<(String, String)> = replicas[..n]
            .iter()
            .map(|(id, addr, _, _)| (id.clone(), addr.clone()))
            .collect();
        let pdir = dir.join(format!("haproxy-{n}"));
        std::fs::create_dir_all(&pdir)?;
        // The replicas are ready before it starts, and HAProxy starts with its servers up.
        let (child, url) = start_haproxy(&bin, &pdir, &with_servers(&shipped, &servers)?).await?;
        proxies.push((n, child, url));
    }

    let echo = json!({"message": "hello"});
    let trivial = json!({"code": "return 1"});
    let mut rounds = serde_json::Map::new();
    for c in CLIENTS {
        let direct = measured(&direct_url, &[], c, per_client, "echo", &echo, None).await?;
        let one = measured(
            &replicas[0].3,
            &tokens,
            c,
            per_client,
            "execute_typescript",
            &trivial,
            None,
        )
        .await?;
        let mut row = json!({
            "direct_echo": direct,
            "one_replica_without_proxy": one,
        });
        for (n, child, url) in &proxies {
            let r = measured(
                url,
                &tokens,
                c,
                per_client,
                "execute_typescript",
                &trivial,
                child.id(),
            )
            .await?;
            let rate = |v: &Value| v["per_second"].as_f64().unwrap_or(f64::NAN);
            let ratio = |x: f64| json!((x * 1000.0).round() / 1000.0);
            row[format!("haproxy_{n}_vs_direct_echo")] =
                ratio(rate(&r) / rate(&row["direct_echo"]));
            row[format!("haproxy_{n}_vs_one_replica_without_proxy")] =
                ratio(rate(&r) / rate(&row["one_replica_without_proxy"]));
            row[format!("haproxy_{n}_replicas")] = r;
        }
        rounds.insert(c.to_string(), row);
    }
    let report = json!({
        "http_via_haproxy": {
            "clients": rounds,
            "per_client_calls": per_client,
            "haproxy_config": args.haproxy_config,
            "cores": std::thread::available_parallelism().map_or(1, |n| n.get()),
            "target": "per replica >= 0.5 x the direct echo rate; near-linear in replicas up to the machine's cores",
            "notes": "each client is its own principal; a request is a trivial `execute_typescript` (`return 1`, a fresh sandboxed worker per execution); every process (clients, HAProxy, replicas, their workers, server-everything) shares this machine's cores: `cpu` says how busy they were",
        }
    });
    for (_, _, child, _) in &replicas {
        if let Some(pid) = child.id() {
            let _ = std::process::Command::new("kill")
                .args(["-TERM", &pid.to_string()])
                .status();
        }
    }
    drop(proxies);
    let _ = std::fs::remove_dir_all(&dir);
    say(&serde_json::to_string_pretty(&report)?);
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail loudly")]

    use super::*;

    #[test]
    fn the_list_of_replicas_is_replaced() {
        let text = "a\n    # replicas: begin\n    server x 1:1\n    # replicas: end\nb\n";
        let out = with_servers(text, &[("b0".into(), "127.0.0.1:9".into())]).unwrap();
        assert_eq!(
            out,
            "a\n    # replicas: begin\n    server b0 127.0.0.1:9\n    # replicas: end\nb\n"
        );
        assert!(with_servers("a\n", &[]).is_err());
    }
}

//! Three replicas behind a load balancer (docs/kubernetes.md, "Replicas and affinity"): the
//! built binary three times (`serve --http --replica-id rN` on loopback ports, the fixture
//! upstream each), a round-robin proxy in front (`test_support::proxy`: it routes on the
//! affinity key when a request carries one, as an ingress would), and the official Python MCP
//! SDK as the client (`tests/interop/replicas.py`, protocol 2026-07-28):
//! - stateless calls spread over all three replicas (each one's /metrics);
//! - what outlives a request is pinned: a session used across calls, an approval paused and
//!   resumed, a task polled, all through the proxy;
//! - a handle sent straight to the wrong replica gets an error naming its replica and the
//!   affinity key; another client's handle stays unknown on its own replica;
//! - a replica killed mid-run loses only its own executions: the others finish, and its
//!   handles get that error from a live replica.
//!
//! One set of replicas serves every case, in order. The SDK comes from the interop harness
//! (scripts/setup-interop.sh); without it the test prints a loud SKIP, unless
//! `CODE_EXECUTOR_REQUIRE_INTEROP=1` (set in CI) makes that a failure.

use std::path::PathBuf;

use serde_json::json;
use test_support::http::HttpServer;
use test_support::proxy::{Backend, Proxy};

use crate::common::EXE;

const ALICE: &str = "alice-token-0123456789abcdef";
const BOB: &str = "bob-token-0123456789abcdef00";

fn interop() -> Option<PathBuf> {
    let p = std::env::var_os("CODE_EXECUTOR_INTEROP").map_or_else(
        || PathBuf::from("/tmp/code-executor-interop"),
        PathBuf::from,
    );
    if p.join("venv/bin/python").exists() {
        return Some(p);
    }
    let msg = format!(
        "the interop harness is not installed at {}: run scripts/setup-interop.sh",
        p.display()
    );
    if std::env::var_os("CODE_EXECUTOR_REQUIRE_INTEROP").is_some() {
        panic!("{msg} (CODE_EXECUTOR_REQUIRE_INTEROP is set)");
    }
    eprintln!("SKIP: {msg}");
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_replicas_behind_a_proxy_share_stateless_work_and_pin_the_rest() {
    let Some(prefix) = interop() else { return };
    let dir = test_support::TempDir::new("replicas");
    let tokens = dir.0.join("tokens");
    std::fs::write(&tokens, format!("alice={ALICE}\nbob={BOB}\n")).unwrap();
    test_support::set_mode(&tokens, 0o600);
    let settings = dir.0.join("settings.json");
    std::fs::write(
        &settings,
        json!({
            "approvals": {"approve": ["mcp__fx__write_*"], "timeoutMs": 20000},
            "longRuns": {"taskAfterMs": 700},
        })
        .to_string(),
    )
    .unwrap();
    let upstream = json!({"fx": {
        "command": test_support::workspace_bin("fixture-server"),
        "args": ["fx"],
        "env": {"FIXTURE_PAUSE_TOOLS": "1"}
    }});
    let mut replicas = Vec::new();
    for i in 0..3 {
        let id = format!("r{i}");
        let s = HttpServer::start(
            EXE.as_ref(),
            upstream.clone(),
            &[
                "--tokens-file",
                tokens.to_str().unwrap(),
                "--replica-id",
                &id,
                "--pool-size",
                "1",
                "--python-pool-size",
                "1",
            ],
            &[("CODE_EXECUTOR_CONFIG_PATH", settings.to_str().unwrap())],
        )
        .await;
        replicas.push((id, s));
    }
    let proxy = Proxy::start(
        replicas
            .iter()
            .map(|(id, s)| Backend {
                name: id.clone(),
                base: s.base.clone(),
            })
            .collect(),
    )
    .await;

    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/interop/replicas.py");
    let mut cmd = tokio::process::Command::new(prefix.join("venv/bin/python"));
    cmd.arg(script)
        .args(["--proxy", &proxy.url, "--alice", ALICE, "--bob", BOB]);
    for (id, s) in &replicas {
        let pid = s.child.id().expect("replica pid");
        cmd.arg("--replica").arg(format!("{id}={}={pid}", s.base));
    }
    let out = tokio::time::timeout(std::time::Duration::from_secs(300), cmd.output())
        .await
        .expect("the replicas script finished within 5 minutes")
        .expect("run the replicas script");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    if !out.status.success() {
        for (id, s) in &replicas {
            eprintln!("--- log of {id}:\n{}", s.log());
        }
        panic!("the replicas script failed:\n{stdout}\n{stderr}");
    }
    assert!(stdout.contains(" 0 failed"), "{stdout}");
}

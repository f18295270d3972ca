//! Escape attempts from JavaScript, through the real server path: a real MCP client calls
//! `execute_typescript` on the built binary. Each test is one attack, asserts that it fails,
//! and that the server still answers. The OS-level attack suite (files, network, processes)
//! runs against the sandbox itself in `crates/sandbox/tests`; here we check what the JS path
//! adds: the worker really is confined, nothing of the host leaks in, and nothing outlives an
//! execution. `workers_share_our_namespaces_when_the_sandbox_is_off` proves the checks can fail.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::json;
use test_support::{Harness, fixture_entry};

use crate::common::EXE;

const CANARY: &str = "sk-canary-7f3a9c1e";

async fn harness(args: &[&str]) -> Harness {
    Harness::start(
        EXE.as_ref(),
        json!({ "fx": fixture_entry("fx") }),
        args,
        &[("CANARY_SECRET", CANARY)],
    )
    .await
}

async fn still_serving(h: &Harness) {
    let (v, is_error) = h.exec("return 'alive'").await;
    assert!(!is_error, "{v}");
    assert_eq!(v["result"], "alive");
}

fn ppid(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit(')')
        .next()?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// Every process below `root`.
fn descendants(root: u32) -> BTreeSet<u32> {
    let all: Vec<u32> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect();
    let mut out = BTreeSet::new();
    let mut frontier = vec![root];
    while let Some(p) = frontier.pop() {
        for &c in &all {
            if ppid(c) == Some(p) && out.insert(c) {
                frontier.push(c);
            }
        }
    }
    out
}

fn cmdline(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
        .unwrap_or_default()
}

fn ns(pid: u32, kind: &str) -> Option<String> {
    std::fs::read_link(format!("/proc/{pid}/ns/{kind}"))
        .ok()
        .map(|p| p.display().to_string())
}

/// The JS engine processes under the server (pool workers), waiting for the pool to fill.
async fn engine_pids(server: u32) -> Vec<u32> {
    for _ in 0..100 {
        let pids: Vec<u32> = descendants(server)
            .into_iter()
            .filter(|p| cmdline(*p).contains("__worker js"))
            .collect();
        if !pids.is_empty() {
            return pids;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no worker process appeared under the server");
}

#[tokio::test]
async fn workers_run_in_their_own_namespaces() {
    let h = harness(&[]).await;
    let server = h.pid.unwrap();
    for pid in engine_pids(server).await {
        for kind in ["net", "user", "pid", "mnt", "ipc", "uts"] {
            assert_ne!(
                ns(pid, kind),
                ns(server, kind),
                "worker {pid} shares the server's {kind} namespace"
            );
        }
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        assert!(status.contains("NoNewPrivs:\t1"), "{status}");
        assert!(status.contains("Seccomp:\t2"), "{status}");
        assert!(status.contains("CapEff:\t0000000000000000"), "{status}");
    }
    still_serving(&h).await;
}

#[tokio::test]
async fn workers_share_our_namespaces_when_the_sandbox_is_off() {
    // The same check with `--sandbox none` must see the host's namespaces: the test above can fail.
    let h = harness(&["--sandbox", "none"]).await;
    let server = h.pid.unwrap();
    for pid in engine_pids(server).await {
        assert_eq!(ns(pid, "net"), ns(server, "net"));
    }
    let (v, _) = h.exec("return 1").await;
    assert!(
        v["warning"].as_str().unwrap().starts_with("UNSANDBOXED"),
        "{v}"
    );
}

#[tokio::test]
async fn host_environment_and_secrets_are_invisible_to_code() {
    let h = harness(&[]).await;
    let (v, is_error) = h
        .exec(
            r#"
            const seen = [];
            const walk = (o, depth) => {
              if (depth > 3 || o === null || (typeof o !== 'object' && typeof o !== 'function')) return;
              for (const k of Object.getOwnPropertyNames(o)) {
                let x; try { x = o[k]; } catch { continue; }
                if (typeof x === 'string') seen.push(x); else walk(x, depth + 1);
              }
            };
            walk(globalThis, 0);
            console.log(seen.join(' '));
            return { process: typeof process, require: typeof require, std: typeof std, os: typeof os,
                     Deno: typeof Deno, fetch: typeof fetch, hostLeak: typeof __host, strings: seen.length };
            "#,
        )
        .await;
    assert!(!is_error, "{v}");
    // `fetch` exists (the host makes the request, and refuses it without a network grant:
    // the execution suite's `access`); nothing else reaches outside.
    assert_eq!(
        v["result"],
        json!({"process": "undefined", "require": "undefined", "std": "undefined", "os": "undefined",
               "Deno": "undefined", "fetch": "function", "hostLeak": "undefined", "strings": v["result"]["strings"]})
    );
    assert!(!v.to_string().contains(CANARY));
    still_serving(&h).await;
}

#[tokio::test]
async fn one_execution_cannot_influence_the_next() {
    let h = harness(&[]).await;
    let (v, is_error) = h
        .exec("Object.prototype.polluted = 'yes'; globalThis.leftover = 1; Array.prototype.map = () => 'hijacked'; return 'set';")
        .await;
    assert!(!is_error, "{v}");
    let (v, is_error) = h
        .exec("return [({}).polluted ?? null, typeof leftover, [1, 2].map((x) => x * 2)];")
        .await;
    assert!(!is_error, "{v}");
    assert_eq!(v["result"], json!([null, "undefined", [2, 4]]));
}

#[tokio::test]
async fn nothing_outlives_an_execution_that_hit_its_deadline() {
    let h = harness(&[]).await;
    let server = h.pid.unwrap();
    // Wait for the pool (2 workers) to be full, so the snapshot holds the worker that will run.
    for _ in 0..100 {
        if engine_pids(server).await.len() >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Only the sandbox's own processes (helper, init, engine): transient processes of a
    // worker being started at the same moment are not what this test is about.
    let sandbox_procs = |pids: BTreeSet<u32>| -> BTreeSet<u32> {
        pids.into_iter()
            .filter(|p| {
                let c = cmdline(*p);
                c.contains("__worker") || c.contains("__sandbox")
            })
            .collect()
    };
    let before = sandbox_procs(descendants(server));
    let (v, is_error) = h
        .exec_with(json!({"code": "while (true) {}", "timeoutMs": 200}))
        .await;
    assert!(is_error);
    assert_eq!(v["error"]["name"], "TimeoutError");
    // The worker that ran it (and its sandbox helper) is gone; only the pool's others remain.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let after = sandbox_procs(descendants(server));
    let ran_it: Vec<u32> = before.difference(&after).copied().collect();
    assert!(
        !ran_it.is_empty(),
        "no worker was used up: {before:?} -> {after:?}"
    );
    for pid in &ran_it {
        // Gone, or at most a zombie (dead, waiting to be reaped).
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| {
                s.rsplit(')')
                    .next()?
                    .split_whitespace()
                    .next()
                    .map(str::to_string)
            });
        assert!(
            state.is_none() || state.as_deref() == Some("Z"),
            "{pid} survived in state {state:?}"
        );
    }
    still_serving(&h).await;
}

#[tokio::test]
async fn a_flood_of_frames_does_not_take_the_server_down() {
    let h = harness(&[]).await;
    // Thousands of concurrent host requests from one execution, most of them invalid.
    let (v, is_error) = h
        .exec(
            r#"
            const calls = [];
            for (let i = 0; i < 3000; i++) calls.push(callMCPTool('mcp__fx__nope' + i, {}).catch(e => e.name));
            const out = await Promise.all(calls);
            return ['ToolError', 'LimitError'].map(k => out.filter(n => n === k).length);
            "#,
        )
        .await;
    assert!(!is_error, "{v}");
    // Every attempt counts against maxToolCalls (1,000), unknown names too.
    assert_eq!(v["result"], json!([1000, 2000]));
    still_serving(&h).await;
}

#[tokio::test]
async fn tool_call_cap_stops_a_runaway_loop() {
    let h = harness(&[]).await;
    let (v, _) = h
        .exec("let n = 0; try { while (true) { await tools.fx.echo({message: 'x'}); n++; } } catch (e) { return [n, e.name]; }")
        .await;
    assert_eq!(v["result"], json!([1000, "LimitError"]), "{v}");
    still_serving(&h).await;
}

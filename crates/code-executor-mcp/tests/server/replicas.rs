//! Replicas behind HAProxy (docs/kubernetes.md, "Replicas and affinity"): the built binary
//! three times (`serve --http --replica-id ID` on loopback ports, the fixture upstream each),
//! HAProxy in front with the shipped configuration (`deploy/haproxy/haproxy.cfg`, only its
//! list of replicas is the test's: `test_support::haproxy`), and the official Python MCP SDK
//! as the client (protocol 2026-07-28). One HAProxy serves every case, in order:
//!
//! 1. `tests/interop/replicas.py`: stateless calls spread over all three replicas (each one's
//!    /metrics); what outlives a request is pinned through the proxy (a session used across
//!    calls, an approval paused and resumed, a task polled, a 2025-11-25 client's transport
//!    session); a handle sent straight to the wrong replica gets an error naming its replica
//!    and the affinity key; another client's handle stays unknown; a replica killed mid-run
//!    loses only its own executions, its handles get that error from a live replica;
//! 2. the killed replica is replaced by a new one (added through HAProxy's admin socket);
//! 3. **a rolling update** (`tests/interop/rolling.py --phase rolling`): while a client keeps
//!    making stateless executions and holds a session and a long run on every replica, each
//!    replica is replaced in turn by one with a new id (the new one added and up first, then
//!    the old one SIGTERMed, its grace waited out, and removed): no stateless request fails,
//!    each pinned handle finishes on its replica or is refused naming it, never a wrong
//!    answer or a hang;
//! 4. **a replica killed** (SIGKILL) under stateless load (`--phase kill`): HAProxy marks it
//!    down within its health check's bound, and the client errors are counted and bounded by
//!    the requests that were running on it.
//!
//! 5. **plain round robin** (`deploy/haproxy/haproxy-roundrobin.cfg`, a HAProxy of its own):
//!    two replicas sharing one PostgreSQL store answer each other's runs with a handle.
//!
//! The counts are printed. The SDK comes from the interop harness (scripts/setup-interop.sh,
//! which installs HAProxy too); without either the test prints a loud SKIP, unless
//! `CODE_EXECUTOR_REQUIRE_INTEROP=1` / `CODE_EXECUTOR_REQUIRE_HAPROXY=1` (set in CI) make
//! that a failure.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use test_support::haproxy::Haproxy;
use test_support::http::HttpServer;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::common::EXE;

const ALICE: &str = "alice-token-0123456789abcdef";
const BOB: &str = "bob-token-0123456789abcdef00";
/// The replicas' --shutdown-grace: longer than rolling.py's long runs.
const GRACE_S: &str = "10";
/// The replicas' --drain-delay: more than twice HAProxy's check interval (`inter 1s fall 2`),
/// so it has them down before they stop accepting and close the connections it keeps.
const DRAIN_S: &str = "3";
/// HAProxy's check: `inter 1s fall 2`, or at once on a refused connection (`observe layer4`).
const DOWN_WITHIN: Duration = Duration::from_secs(3);

fn interop() -> Option<PathBuf> {
    crate::common::interop::prefix(&["venv/bin/python"])
}

fn script(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../../tests/interop/{name}"))
}

/// Starts and stops replicas, all with the same settings.
struct Fleet {
    tokens: PathBuf,
    settings: PathBuf,
    upstream: Value,
}

impl Fleet {
    async fn start(&self, id: &str) -> HttpServer {
        self.start_on(id, "127.0.0.1:0").await
    }

    async fn start_on(&self, id: &str, addr: &str) -> HttpServer {
        self.start_with(id, addr, &[]).await
    }

    /// Replica `id` on `addr` with `extra` arguments.
    async fn start_with(&self, id: &str, addr: &str, extra: &[&str]) -> HttpServer {
        let args = [
            "--tokens-file",
            self.tokens.to_str().unwrap(),
            "--replica-id",
            id,
            "--shutdown-grace",
            GRACE_S,
            "--drain-delay",
            DRAIN_S,
            "--pool-size",
            "1",
            "--python-pool-size",
            "1",
        ];
        let args: Vec<&str> = args.iter().chain(extra).copied().collect();
        HttpServer::start_on(
            EXE.as_ref(),
            addr,
            self.upstream.clone(),
            &args,
            &[("CODE_EXECUTOR_CONFIG_PATH", self.settings.to_str().unwrap())],
        )
        .await
        .unwrap_or_else(|log| panic!("replica {id} did not start:\n{log}"))
    }

    /// Tokens, settings and the fixture upstream in `dir`.
    fn new(dir: &Path) -> Fleet {
        let tokens = dir.join("tokens");
        std::fs::write(&tokens, format!("alice={ALICE}\nbob={BOB}\n")).unwrap();
        test_support::set_mode(&tokens, 0o600);
        let settings = dir.join("settings.json");
        std::fs::write(
            &settings,
            json!({
                "approvals": {"approve": ["mcp__fx__write_*"], "timeoutMs": 20000},
                "longRuns": {"taskAfterMs": 700},
                "limits": {"executionsPerMinute": 100_000, "toolCallsPerMinute": 100_000},
            })
            .to_string(),
        )
        .unwrap();
        Fleet {
            tokens,
            settings,
            upstream: json!({"fx": {
                "command": test_support::workspace_bin("fixture-server"),
                "args": ["fx"],
                "env": {"FIXTURE_PAUSE_TOOLS": "1"}
            }}),
        }
    }
}

/// The two end-to-end tests run one after the other: each is several processes busy on two
/// cores, and the rolling update's timing is what it checks.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// `tests/interop/replicas.py` through `proxy_url` against `replicas`; panics with the logs
/// when a check fails.
async fn replicas_script(prefix: &Path, proxy: &Haproxy, replicas: &[(String, HttpServer)]) {
    let mut cmd = tokio::process::Command::new(prefix.join("venv/bin/python"));
    cmd.arg(script("replicas.py"))
        .args(["--proxy", &proxy.url, "--alice", ALICE, "--bob", BOB]);
    for (id, s) in replicas {
        let pid = s.child.id().expect("replica pid");
        cmd.arg("--replica").arg(format!("{id}={}={pid}", s.base));
    }
    let out = tokio::time::timeout(Duration::from_secs(300), cmd.output())
        .await
        .expect("the replicas script finished within 5 minutes")
        .expect("run the replicas script");
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    if !out.status.success() || !stdout.contains(" 0 failed") {
        for (id, s) in replicas {
            eprintln!("--- log of {id}:\n{}", s.log());
        }
        panic!(
            "the replicas script failed:\n{stdout}\n{}\n--- haproxy:\n{}",
            String::from_utf8_lossy(&out.stderr),
            proxy.log()
        );
    }
}

fn addr(s: &HttpServer) -> String {
    s.base.trim_start_matches("http://").to_string()
}

/// rolling.py, running until it is told DONE.
struct Client {
    child: tokio::process::Child,
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    out: String,
}

impl Client {
    async fn start(prefix: &Path, url: &str, replicas: &[&str], phase: &str) -> Client {
        let mut child = tokio::process::Command::new(prefix.join("venv/bin/python"))
            .arg(script("rolling.py"))
            .args(["--proxy", url, "--token", ALICE, "--phase", phase])
            .args(["--replicas", &replicas.join(",")])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("start rolling.py");
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut c = Client {
            child,
            lines,
            out: String::new(),
        };
        c.until("READY", Duration::from_secs(120)).await;
        c
    }

    /// Reads lines until one starts with `prefix`; that line.
    async fn until(&mut self, prefix: &str, within: Duration) -> String {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            match tokio::time::timeout_at(deadline, self.lines.next_line()).await {
                Ok(Ok(Some(line))) => {
                    self.out.push_str(&line);
                    self.out.push('\n');
                    if line.starts_with(prefix) {
                        return line;
                    }
                }
                Ok(_) => panic!("rolling.py ended before {prefix}:\n{}", self.out),
                Err(_) => panic!(
                    "no {prefix} from rolling.py within {within:?}:\n{}",
                    self.out
                ),
            }
        }
    }

    /// Asks for a long run on replica `id` (its `wait` kept open); its handle.
    async fn pin(&mut self, id: &str) -> String {
        let stdin = self.child.stdin.as_mut().unwrap();
        stdin
            .write_all(format!("PIN {id}\n").as_bytes())
            .await
            .unwrap();
        stdin.flush().await.unwrap();
        let line = self.until("PINNED ", Duration::from_secs(120)).await;
        line.split_whitespace()
            .nth(2)
            .unwrap_or_default()
            .to_string()
    }

    /// Tells it DONE; its counts.
    async fn finish(mut self) -> Value {
        let mut stdin = self.child.stdin.take().unwrap();
        stdin.write_all(b"DONE\n").await.unwrap();
        drop(stdin);
        let line = self.until("COUNTS ", Duration::from_secs(120)).await;
        let _ = tokio::time::timeout(Duration::from_secs(30), self.child.wait()).await;
        serde_json::from_str(&line["COUNTS ".len()..]).unwrap()
    }
}

/// SIGTERM, then the process's exit, within the grace and a margin.
async fn stop(replica: &mut HttpServer) -> Duration {
    let t = Instant::now();
    replica.sigterm();
    tokio::time::timeout(Duration::from_secs(30), replica.child.wait())
        .await
        .expect("a SIGTERMed replica exits within its grace")
        .expect("wait for the replica");
    t.elapsed()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_behind_haproxy_pin_handles_survive_a_rolling_update_and_a_kill() {
    let Some(prefix) = interop() else { return };
    let Some(bin) = test_support::haproxy::haproxy_bin() else {
        return;
    };
    let _serial = ONE_AT_A_TIME.lock().await;
    let dir = test_support::TempDir::new("replicas");
    let started = Instant::now();
    let fleet = Fleet::new(&dir.0);
    let mut replicas: Vec<(String, HttpServer)> = Vec::new();
    for i in 0..3 {
        let id = format!("r{i}");
        replicas.push((id.clone(), fleet.start(&id).await));
    }
    let servers: Vec<(String, String)> = replicas
        .iter()
        .map(|(id, s)| (id.clone(), addr(s)))
        .collect();
    println!("three replicas started: {:.1?}", started.elapsed());
    let proxy = Haproxy::start(&bin, &servers);
    for (id, _) in &replicas {
        proxy
            .wait_status(id, Duration::from_secs(30), |s| s == Some("UP"))
            .unwrap_or_else(|e| panic!("{e}\n{}", proxy.log()));
    }

    // 1. Everything the replicas check, through HAProxy.
    let t = Instant::now();
    replicas_script(&prefix, &proxy, &replicas).await;
    println!("replicas.py through HAProxy: {:.1?}", t.elapsed());

    // 2. replicas.py killed r1: HAProxy has it down; a new replica takes its place.
    let t = proxy
        .wait_status("r1", DOWN_WITHIN, |s| {
            s.is_some_and(|s| s.starts_with("DOWN"))
        })
        .unwrap_or_else(|e| panic!("{e}\n{}", proxy.log()));
    println!("r1 (SIGKILLed by replicas.py) is DOWN in HAProxy ({t:?} after the script ended)");
    let r3 = fleet.start("r3").await;
    proxy.add_replica("r3", &addr(&r3));
    proxy.remove_replica("r1");
    replicas.retain(|(id, _)| id != "r1");
    replicas.push(("r3".into(), r3));

    // 3. A rolling update: r0, r2, r3 replaced by r4, r5, r6 under load.
    let names: Vec<String> = replicas.iter().map(|(id, _)| id.clone()).collect();
    let name_refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let t = Instant::now();
    let mut client = Client::start(&prefix, &proxy.url, &name_refs, "rolling").await;
    println!(
        "rolling.py ready (a session and a long run on each replica): {:.1?}",
        t.elapsed()
    );
    let mut steps = Vec::new();
    let mut draining_runs = Vec::new();
    for (i, old) in names.iter().enumerate() {
        let new = format!("r{}", 4 + i);
        let fresh = fleet.start(&new).await;
        proxy.add_replica(&new, &addr(&fresh));
        // A long run on the old replica, its `wait` open, while it drains.
        let pinned = client.pin(old).await;
        assert!(
            pinned.ends_with(&format!("@{old}")),
            "no run landed on {old}"
        );
        draining_runs.push(pinned);
        let at = replicas.iter().position(|(id, _)| id == old).unwrap();
        let (_, mut gone) = replicas.remove(at);
        let stopped = stop(&mut gone).await;
        let down = proxy
            .wait_status(old, DOWN_WITHIN, |s| {
                s.is_some_and(|s| s.starts_with("DOWN") || s == "MAINT")
            })
            .unwrap_or_else(|e| panic!("{e}\n{}", proxy.log()));
        proxy.remove_replica(old);
        steps.push(format!(
            "{old} -> {new}: exited {stopped:.1?} after SIGTERM, DOWN in HAProxy {down:.1?} after"
        ));
        replicas.push((new, fresh));
    }
    let counts = client.finish().await;
    println!("rolling update: {}", steps.join("; "));
    println!("rolling update counts: {counts}");
    let pinned = counts["pinned"].as_object().cloned().unwrap_or_default();
    let outcome = |o: &str| pinned.values().filter(|r| r["outcome"] == o).count();
    println!(
        "rolling update: {} stateless requests, {} failed; {} pinned handles: {} finished, {} refused naming their replica, {} wrong",
        counts["requests"],
        counts["failed"],
        pinned.len(),
        outcome("finished"),
        outcome("refused"),
        pinned.len() - outcome("finished") - outcome("refused"),
    );
    let logs = || {
        let mut s = proxy.log();
        for (id, r) in &replicas {
            s.push_str(&format!("\n--- log of {id}:\n{}", r.log()));
        }
        s
    };
    assert_eq!(counts["failed"], 0, "{counts}\n{}", logs());
    assert!(counts["requests"].as_u64().unwrap_or(0) >= 20, "{counts}");
    // A session and a long run on each replica from the start, and a run on each replica
    // just before it was stopped.
    assert_eq!(pinned.len(), 3 * names.len(), "{counts}");
    assert_eq!(
        outcome("finished") + outcome("refused"),
        pinned.len(),
        "{counts}"
    );
    // A run was in flight on each replica when it got SIGTERM: it finished within the grace
    // (or, when its `wait` reached HAProxy only after the replica closed, was refused).
    let draining: Vec<&Value> = pinned
        .values()
        .filter(|r| r["kind"] == "long run at SIGTERM")
        .collect();
    assert_eq!(draining.len(), names.len(), "{counts}");
    for h in &draining_runs {
        assert!(
            draining.iter().any(|r| r["handle"] == h.as_str()),
            "{h}\n{counts}"
        );
    }
    println!(
        "runs in flight at SIGTERM: {} finished within the grace, {} refused",
        draining
            .iter()
            .filter(|r| r["outcome"] == "finished")
            .count(),
        draining
            .iter()
            .filter(|r| r["outcome"] == "refused")
            .count()
    );
    assert_eq!(counts["pin_errors"], 0, "{counts}");
    // Sessions live on until their replica goes: each is refused in the end.
    assert!(
        pinned
            .values()
            .filter(|r| r["kind"] == "session")
            .all(|r| r["outcome"] == "refused"),
        "{counts}"
    );

    // 4. A replica killed under load.
    let names: Vec<String> = replicas.iter().map(|(id, _)| id.clone()).collect();
    let name_refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let client = Client::start(&prefix, &proxy.url, &name_refs, "kill").await;
    let victim = &replicas[1];
    // Load is running: let each replica take some before the kill (bounded by a deadline).
    let served = |id: &str| -> u64 {
        let stat = proxy.admin("show stat");
        stat.lines()
            .find(|l| l.starts_with(&format!("replicas,{id},")))
            .and_then(|l| l.split(',').nth(7).and_then(|n| n.parse().ok()))
            .unwrap_or(0)
    };
    let before = served(&victim.0);
    let deadline = Instant::now() + Duration::from_secs(30);
    while served(&victim.0) < before + 3 {
        assert!(Instant::now() < deadline, "no load reached {}", victim.0);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let pid = victim.1.child.id().unwrap();
    let _ = std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status();
    let down = proxy
        .wait_status(&victim.0, DOWN_WITHIN, |s| {
            s.is_some_and(|s| s.starts_with("DOWN"))
        })
        .unwrap_or_else(|e| panic!("{e}\n{}", proxy.log()));
    let at_down = served(&victim.0);
    // The others keep serving: a few more requests, then stop.
    let others_before: u64 = names
        .iter()
        .filter(|n| **n != victim.0)
        .map(|n| served(n))
        .sum();
    let deadline = Instant::now() + Duration::from_secs(30);
    while names
        .iter()
        .filter(|n| **n != victim.0)
        .map(|n| served(n))
        .sum::<u64>()
        < others_before + 10
    {
        assert!(Instant::now() < deadline, "the others stopped serving");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let counts = client.finish().await;
    let after = served(&victim.0);
    println!(
        "replica {} SIGKILLed under load: DOWN in HAProxy {:.0?} after the kill; \
         requests sent to it after DOWN: {}; client: {} requests, {} failed: {}",
        victim.0,
        down,
        after - at_down,
        counts["requests"],
        counts["failed"],
        counts["errors"]
    );
    assert_eq!(after, at_down, "HAProxy sent requests to a DOWN replica");
    // Only the requests running on it when it died can fail: at most one per worker.
    assert!(counts["failed"].as_u64().unwrap() <= 4, "{counts}");
}

/// Plain round robin (`deploy/haproxy/haproxy-roundrobin.cfg`: no affinity, no stickiness)
/// over two replicas sharing one PostgreSQL store (docs/kubernetes.md, "Round robin with a
/// shared store"). Runs with a handle are started through the proxy, so they land on both
/// replicas; each one, held on an upstream call, is asked for at the replica that did not
/// start it: running; a `wait` there sees it finish on its own. A fifth run is cancelled at
/// the other replica: its own replica stops it. The replica that ran them is stopped, and
/// the other still answers its handles, through the proxy too. Another principal
/// presenting them gets the error it always got.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn round_robin_replicas_sharing_a_store_answer_each_others_runs() {
    let Some(bin) = test_support::haproxy::haproxy_bin() else {
        return;
    };
    let Some(db) = test_support::postgres::fresh_database("replicas::round_robin").await else {
        return;
    };
    let _serial = ONE_AT_A_TIME.lock().await;
    let dir = test_support::TempDir::new("roundrobin");
    let fleet = Fleet::new(&dir.0);
    let mut replicas: Vec<(String, HttpServer)> = Vec::new();
    for id in ["r0", "r1"] {
        let s = fleet.start_with(id, "127.0.0.1:0", &["--store", &db]).await;
        replicas.push((id.to_string(), s));
    }
    let servers: Vec<(String, String)> = replicas
        .iter()
        .map(|(id, s)| (id.clone(), addr(s)))
        .collect();
    let text = std::fs::read_to_string(
        test_support::haproxy::shipped_config().with_file_name("haproxy-roundrobin.cfg"),
    )
    .unwrap();
    let proxy = Haproxy::start_config(
        &bin,
        &test_support::haproxy::with_servers(&text, &servers),
        &[],
    );
    for (id, _) in &replicas {
        proxy
            .wait_status(id, Duration::from_secs(30), |s| s == Some("UP"))
            .unwrap_or_else(|e| panic!("{e}\n{}", proxy.log()));
    }
    let logs = |replicas: &[(String, HttpServer)]| {
        let mut s = proxy.log();
        for (id, r) in replicas {
            s.push_str(&format!("\n--- log of {id}:\n{}", r.log()));
        }
        s
    };
    let stateless = test_support::http::Generation::Stateless;
    let via = test_support::http::McpHttp::connect(&proxy.url, Some(ALICE), stateless).await;
    let mut direct = Vec::new();
    for (_, r) in &replicas {
        direct.push(test_support::http::McpHttp::connect(&r.url, Some(ALICE), stateless).await);
    }
    let bob = test_support::http::McpHttp::connect(&replicas[0].1.url, Some(BOB), stateless).await;

    // Four runs through the proxy, each held on an upstream call: two land on each replica.
    let mut runs = Vec::new();
    for i in 0..4 {
        let hold = super::http::Hold::new();
        let code = format!(
            "await tools.fx.hold({{socket: {:?}}}); return {i}",
            hold.path.to_str().unwrap()
        );
        let (v, err) = via.exec(json!({"code": code, "yieldAfterMs": 0})).await;
        assert!(!err, "{v}");
        let handle = v["running"]["handle"]
            .as_str()
            .unwrap_or_else(|| panic!("{v}"))
            .to_string();
        let held = hold.arrived().await;
        runs.push((i, handle, hold, Some(held)));
    }
    for id in ["r0", "r1"] {
        assert!(
            runs.iter()
                .any(|(_, h, _, _)| h.ends_with(&format!("@{id}"))),
            "round robin put no run on {id}"
        );
    }
    for (i, handle, _hold, held) in &mut runs {
        let (i, handle) = (*i, handle.clone());
        let other = usize::from(handle.ends_with("@r0"));
        // At the other replica: running (not an error, no result yet).
        let (v, err) = wait(&direct[other], &handle, 0, false).await;
        assert!(!err, "{v}\n{}", logs(&replicas));
        assert!(v.get("result").is_none() || v["result"].is_null(), "{v}");
        // Another principal: the same error a handle never written gets.
        let (v, err) = wait(&bob, &handle, 0, false).await;
        assert!(err, "{v}");
        assert_eq!(v["error"]["name"], "HandleError", "{v}");
        // A `wait` there sees it finish on its own replica, through the store.
        let release = async {
            drop(held.take());
        };
        let ((v, err), ()) = tokio::join!(wait(&direct[other], &handle, 30_000, false), release);
        assert!(!err, "{v}\n{}", logs(&replicas));
        assert_eq!(v["result"], json!(i), "{v}");
    }

    // Cancelled at the other replica: its own replica stops it (the upstream call held
    // ends with it), and the cancelling `wait` gets the outcome.
    let hold = super::http::Hold::new();
    let code = format!(
        "await tools.fx.hold({{socket: {:?}}}); return 'not cancelled'",
        hold.path.to_str().unwrap()
    );
    let (v, err) = via.exec(json!({"code": code, "yieldAfterMs": 0})).await;
    assert!(!err, "{v}");
    let handle = v["running"]["handle"].as_str().unwrap().to_string();
    let _held = hold.arrived().await;
    let other = usize::from(handle.ends_with("@r0"));
    let (v, _) = wait(&direct[other], &handle, 0, true).await;
    assert_eq!(
        v["error"]["name"],
        "CancelledError",
        "{v}\n{}",
        logs(&replicas)
    );
    let (v, _) = wait(&direct[1 - other], &handle, 5_000, false).await;
    assert_eq!(v["error"]["name"], "CancelledError", "{v}");

    // r0 stops (SIGTERM, its runs all finished): r1 still answers every handle, directly
    // and through the proxy.
    let (_, mut r0) = replicas.remove(0);
    stop(&mut r0).await;
    proxy
        .wait_status("r0", DOWN_WITHIN, |s| {
            s.is_some_and(|s| s.starts_with("DOWN"))
        })
        .unwrap_or_else(|e| panic!("{e}\n{}", proxy.log()));
    for (i, handle, _, _) in &runs {
        for c in [&direct[1], &via] {
            let (v, err) = wait(c, handle, 5_000, false).await;
            assert!(!err, "{v}\n{}", logs(&replicas));
            assert_eq!(v["result"], json!(i), "{v}");
        }
    }
}

/// `wait` on `handle` at `c`: the structured content and isError.
async fn wait(
    c: &test_support::http::McpHttp,
    handle: &str,
    ms: u64,
    cancel: bool,
) -> (Value, bool) {
    let r = c
        .call(
            "wait",
            json!({"handle": handle, "timeoutMs": ms, "cancel": cancel}),
        )
        .await;
    (
        r["structuredContent"].clone(),
        r["isError"].as_bool().unwrap_or(false),
    )
}

/// Both shipped configurations are valid for the installed HAProxy (`haproxy -c`), the
/// Kubernetes one with its Lua.
#[test]
fn the_shipped_haproxy_configurations_are_valid() {
    let Some(bin) = test_support::haproxy::haproxy_bin() else {
        return;
    };
    let dir = test_support::haproxy::shipped_config()
        .parent()
        .unwrap()
        .to_path_buf();
    for cfg in [
        "haproxy.cfg",
        "haproxy-kubernetes.cfg",
        "haproxy-roundrobin.cfg",
    ] {
        let out = std::process::Command::new(&bin)
            .args(["-c", "-f"])
            .arg(dir.join(cfg))
            .env("HAPROXY_BIND", "127.0.0.1:1")
            .env(
                "HAPROXY_ADMIN_SOCKET",
                std::env::temp_dir().join("cem-hx-check.sock"),
            )
            .env("HAPROXY_LUA_DIR", &dir)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{cfg}: {text}");
        assert!(!text.contains("[WARNING]"), "{cfg}: {text}");
    }
}

/// The Kubernetes variant (`deploy/haproxy/haproxy-kubernetes.cfg` with
/// `replica-address.lua`): replicas discovered through DNS as the headless Service lists them
/// (`tests/interop/dns.py` answers for its name with the replicas' addresses: 127.0.0.2-4, one
/// port, as pods share one), replica ids `<name>_<address>` as the Deployment sets them, the
/// key mapped to a server by address. Only the resolver (this DNS server instead of the
/// pod's /etc/resolv.conf) and the port differ from the shipped file. Everything
/// `tests/interop/replicas.py` checks holds through it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_discovered_through_dns_behind_the_kubernetes_haproxy() {
    let Some(prefix) = interop() else { return };
    let Some(bin) = test_support::haproxy::haproxy_bin() else {
        return;
    };
    let _serial = ONE_AT_A_TIME.lock().await;
    let dir = test_support::TempDir::new("replicas-dns");
    let fleet = Fleet::new(&dir.0);
    let ips = ["127.0.0.2", "127.0.0.3", "127.0.0.4"];
    // One port free on all three addresses (pods share the container port).
    let mut port = 0;
    for _ in 0..20 {
        let p = std::net::TcpListener::bind("127.0.0.2:0")
            .and_then(|l| l.local_addr())
            .unwrap()
            .port();
        if ips
            .iter()
            .all(|ip| std::net::TcpListener::bind((*ip, p)).is_ok())
        {
            port = p;
            break;
        }
    }
    assert_ne!(port, 0, "no port free on {ips:?}");
    let mut replicas = Vec::new();
    for (i, ip) in ips.iter().enumerate() {
        let id = format!("kube-{i}_{ip}");
        let s = fleet.start_on(&id, &format!("{ip}:{port}")).await;
        replicas.push((id, s));
    }
    let name = "code-executor-mcp-replicas.code-executor.svc.cluster.local";
    let addresses = dir.0.join("addresses");
    std::fs::write(&addresses, ips.join("\n")).unwrap();
    let port_file = dir.0.join("dns-port");
    let _dns = tokio::process::Command::new(prefix.join("venv/bin/python"))
        .arg(script("dns.py"))
        .args(["--name", name, "--addresses-file"])
        .arg(&addresses)
        .arg("--port-file")
        .arg(&port_file)
        .kill_on_drop(true)
        .spawn()
        .expect("start dns.py");
    let deadline = Instant::now() + Duration::from_secs(30);
    let dns_port = loop {
        if let Ok(p) = std::fs::read_to_string(&port_file) {
            break p;
        }
        assert!(Instant::now() < deadline, "dns.py did not start");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let shipped = test_support::haproxy::shipped_config()
        .parent()
        .unwrap()
        .to_path_buf();
    let text = std::fs::read_to_string(shipped.join("haproxy-kubernetes.cfg")).unwrap();
    assert!(text.contains("    parse-resolv-conf\n") && text.contains(&format!("{name}:3333 ")));
    let text = text
        .replace(
            "    parse-resolv-conf\n",
            &format!("    nameserver test 127.0.0.1:{dns_port}\n"),
        )
        .replace(&format!("{name}:3333 "), &format!("{name}:{port} "));
    let lua_dir = shipped.to_str().unwrap();
    let proxy = Haproxy::start_config(&bin, &text, &[("HAPROXY_LUA_DIR", lua_dir)]);
    let deadline = Instant::now() + Duration::from_secs(30);
    while proxy.statuses().iter().filter(|(_, s)| s == "UP").count() < ips.len() {
        assert!(
            Instant::now() < deadline,
            "HAProxy did not find the three replicas through DNS: {:?}\n{}",
            proxy.statuses(),
            proxy.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    replicas_script(&prefix, &proxy, &replicas).await;
}

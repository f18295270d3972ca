//! Sessions through the built binary and a real MCP client (rmcp over stdio), in both
//! languages: what persists within a session (a variable, a function, an imported module, a
//! stored value, a workspace file), what does not cross to another session or a call without
//! one, handles another server never issued, reset, idle expiry, eviction, a session worker
//! that dies, the workspace quota, and the audit lines.
//!
//! Servers are shared by the cases that need the same settings, to keep the suite fast.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use test_support::{Harness, Lang, TempConfig, fixture_entry};

use crate::common::{BOTH, EXE, server};

/// The workspace quota as a bound: hostile shapes, failed runs, concurrent writers, and a
/// property test over random trees.
mod quota;

/// Code of one execution never acts in the next: threads, executors, processes, timers and
/// promises left behind, in both languages.
mod outlive;

/// A server whose temporary directory (`TMPDIR`, where it puts its workspace root and sweeps
/// the roots of servers that are gone) is `tmp`: the servers of one test share it, and no
/// server of another test running at the same time sweeps what the test asserts on.
async fn server_in(tmp: &std::path::Path, settings: Value) -> (Harness, TempConfig) {
    let tmp = tmp.to_str().unwrap();
    Harness::with_settings(
        EXE.as_ref(),
        json!({ "fx": fixture_entry("fx") }),
        &settings,
        &[("TMPDIR", tmp)],
    )
    .await
}

async fn run(h: &Harness, lang: Lang, args: Value) -> (Value, bool) {
    h.run_tool(lang.tool(), args).await
}

/// Runs `code` in `session` and returns the answer, which must not be an error.
async fn ok_in(h: &Harness, lang: Lang, session: &str, code: &str) -> Value {
    let (v, is_error) = run(h, lang, json!({"code": code, "session": session})).await;
    assert!(!is_error, "{lang:?} in {session}: {v}");
    v
}

/// Starts a session with `code` and returns (its handle, the answer).
async fn new_session(h: &Harness, lang: Lang, code: &str) -> (String, Value) {
    let v = ok_in(h, lang, "new", code).await;
    assert_eq!(v["session"]["created"], json!(true), "{v}");
    let id = v["session"]["id"].as_str().unwrap().to_string();
    assert!(
        id.len() == 34 && id.starts_with("s_") && id[2..].bytes().all(|b| b.is_ascii_hexdigit()),
        "a handle is s_ and 128 bits in hex: {id}"
    );
    (id, v)
}

/// The host directory of session `id`'s workspace (under the server's temporary directory).
fn host_workspace(id: &str) -> std::path::PathBuf {
    host_workspace_in(&std::env::temp_dir(), id)
}

/// The host directory of session `id`'s workspace, in the roots under `tmp`.
fn host_workspace_in(tmp: &std::path::Path, id: &str) -> std::path::PathBuf {
    let found: Vec<_> = std::fs::read_dir(tmp)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("code-executor-mcp-sessions-")
        })
        .map(|e| e.path().join(id))
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(found.len(), 1, "one workspace for {id}: {found:?}");
    found.into_iter().next().unwrap()
}

fn error_name(v: &Value) -> &str {
    v["error"]["name"].as_str().unwrap_or("")
}

fn error_message(v: &Value) -> String {
    v["error"]["message"].as_str().unwrap_or("").to_string()
}

/// Code that defines one of everything that should persist.
fn define(lang: Lang) -> &'static str {
    lang.pick(
        r#"
        const rows: number[] = [1, 2, 3];
        let counter = 10;
        function double(x: number) { return x * 2; }
        class Box { constructor(public v: number) {} }
        globalThis.explicit = 'g';
        await store('config', { region: 'eu', n: 2 });
        return 'defined';
        "#,
        r#"
import json as j
rows = [1, 2, 3]
counter = 10
def double(x):
    return x * 2
class Box:
    def __init__(self, v):
        self.v = v
store("config", {"region": "eu", "n": 2})
with open("notes.txt", "w") as f:
    f.write("kept")
"defined"
"#,
    )
}

/// Code that reads all of it back.
fn read_back(lang: Lang) -> &'static str {
    lang.pick(
        r#"
        counter += 1;
        return [rows, counter, double(21), new Box(7).v, explicit, await load('config'), await load('absent')];
        "#,
        r#"
counter += 1
[rows, counter, double(21), Box(7).v, j.dumps({"a": 1}), load("config"), load("absent"), open("notes.txt").read()]
"#,
    )
}

/// What a fresh worker (another session, or none) sees of those names.
fn probe(lang: Lang) -> &'static str {
    lang.pick(
        "return [typeof rows, typeof counter, typeof double, typeof Box, typeof explicit];",
        "import os\n[n in globals() for n in ('rows', 'counter', 'double', 'Box', 'j')] + [os.path.exists('notes.txt')]",
    )
}

#[tokio::test]
async fn state_persists_within_a_session_and_nowhere_else() {
    let (h, _d) = server(json!({})).await;
    for lang in BOTH {
        let (id, v) = new_session(&h, lang, define(lang)).await;
        assert_eq!(v["result"], json!("defined"), "{lang:?}: {v}");
        let (servers, _) = h.run_tool("list_servers", json!({})).await;
        let mine = servers["sessions"]["mine"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert!(mine.iter().any(|s| s["session"] == json!(id)), "{servers}");
        let v = ok_in(&h, lang, &id, read_back(lang)).await;
        let expected = lang.pick(
            json!([[1, 2, 3], 11, 42, 7, "g", {"region": "eu", "n": 2}, null]),
            json!([[1, 2, 3], 11, 42, 7, "{\"a\": 1}", {"region": "eu", "n": 2}, null, "kept"]),
        );
        assert_eq!(v["result"], expected, "{lang:?}: {v}");
        assert_eq!(v["session"], json!({"id": id}), "{lang:?}: {v}");
        // Again: the counter moved on, so the same worker ran both.
        let v = ok_in(&h, lang, &id, lang.pick("return counter", "counter")).await;
        assert_eq!(v["result"], json!(11), "{lang:?}: {v}");
        // A name of our API that the code takes for its own keeps the code's value in the next
        // run; a function from an earlier run still reaches the API it did not shadow.
        let shadow = lang.pick(
            "const progress = 41; function usesApi() { return typeof store } return 'ok'",
            "progress = 41\ndef uses_api():\n    return callable(store)\n'ok'",
        );
        ok_in(&h, lang, &id, shadow).await;
        let v = ok_in(
            &h,
            lang,
            &id,
            lang.pick(
                "return [progress + 1, usesApi(), typeof fetch]",
                "[progress + 1, uses_api(), callable(fetch)]",
            ),
        )
        .await;
        let expected = lang.pick(json!([42, "function", "function"]), json!([42, true, true]));
        assert_eq!(v["result"], expected, "{lang:?}: {v}");

        let absent = lang.pick(
            json!([
                "undefined",
                "undefined",
                "undefined",
                "undefined",
                "undefined"
            ]),
            json!([false, false, false, false, false, false]),
        );
        let (other, v) = new_session(&h, lang, probe(lang)).await;
        assert_ne!(other, id);
        assert_eq!(v["result"], absent, "another session: {lang:?}: {v}");
        let (v, is_error) = run(&h, lang, json!({"code": probe(lang)})).await;
        assert!(!is_error, "{v}");
        assert_eq!(v["result"], absent, "no session: {lang:?}: {v}");
        assert!(v.get("session").is_none(), "{v}");

        // store and load need a session.
        let (v, is_error) = run(
            &h,
            lang,
            json!({"code": lang.pick("await store('k', 1)", "store('k', 1)")}),
        )
        .await;
        assert!(is_error, "{v}");
        assert_eq!(error_name(&v), "TypeError", "{v}");
        assert!(error_message(&v).contains("session: \"new\""), "{v}");
    }
}

#[tokio::test]
async fn sessions_of_one_language_are_not_sessions_of_the_other() {
    let (h, _d) = server(json!({})).await;
    let (id, _) = new_session(&h, Lang::Ts, "return 1").await;
    let (v, is_error) = run(&h, Lang::Py, json!({"code": "1", "session": id})).await;
    assert!(is_error, "{v}");
    assert_eq!(error_name(&v), "SessionError");
    assert!(error_message(&v).contains("is a typescript session"), "{v}");
}

#[tokio::test]
async fn a_handle_this_server_never_issued_is_unknown() {
    let (a, _da) = server(json!({})).await;
    let (b, _db) = server(json!({})).await;
    for lang in BOTH {
        let (id, _) = new_session(&a, lang, lang.pick("return 1", "1")).await;
        // The same handle sent to another server (another client's server) is unknown there.
        for (h, handle) in [
            (&b, id.clone()),
            (&a, format!("s_{}", "0".repeat(32))),
            (&a, "x".repeat(10_000)),
        ] {
            let (v, is_error) = run(h, lang, json!({"code": "1", "session": handle})).await;
            assert!(is_error, "{v}");
            assert_eq!(error_name(&v), "SessionError", "{v}");
            let m = error_message(&v);
            assert!(m.starts_with("unknown session"), "{m}");
            assert!(m.len() < 300, "a long handle is not echoed whole: {m}");
        }
        // It still works where it was made.
        ok_in(&a, lang, &id, lang.pick("return 2", "2")).await;
    }
}

#[tokio::test]
async fn reset_ends_the_session_and_its_workspace() {
    let (h, _d) = server(json!({})).await;
    for lang in BOTH {
        let (id, _) = new_session(
            &h,
            lang,
            lang.pick(
                "globalThis.x = 1; await store('k', 'v'); return 1",
                "x = 1\nstore('k', 'v')\nopen('f', 'w').write('y')\n1",
            ),
        )
        .await;
        let (v, is_error) = run(
            &h,
            lang,
            json!({"code": lang.pick("return typeof x", "'x' in globals()"), "session": id, "reset": true}),
        )
        .await;
        assert!(!is_error, "{v}");
        // The code ran in a fresh worker, outside the ended session.
        assert_eq!(
            v["result"],
            lang.pick(json!("undefined"), json!(false)),
            "{v}"
        );
        assert_eq!(v["session"], json!({"id": id, "ended": "reset"}), "{v}");
        let (v, is_error) = run(&h, lang, json!({"code": "1", "session": id})).await;
        assert!(is_error, "{v}");
        assert_eq!(error_name(&v), "SessionError");
        assert!(
            error_message(&v).contains("has ended: it was ended with reset: true"),
            "{v}"
        );
    }
    let (v, is_error) = run(&h, Lang::Ts, json!({"code": "1", "reset": true})).await;
    assert!(is_error, "{v}");
    assert!(error_message(&v).contains("reset ends a session"), "{v}");
}

/// Polls `health` until `done` holds for its `sessions` report (bounded).
async fn wait_for_sessions(h: &Harness, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    let start = Instant::now();
    loop {
        let (v, _) = h.run_tool("health", json!({})).await;
        if done(&v["sessions"]) {
            return v["sessions"].clone();
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{what}: sessions are {}",
            v["sessions"]
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn idle_sessions_end_and_their_next_call_says_so() {
    // 3 s: both sessions must be listed before the first ends, and starting a Python worker
    // on a loaded 2-core machine has taken over a second.
    let (h, _d) = server(json!({"sessions": {"idleTimeoutS": 3}})).await;
    let (ts, _) = new_session(&h, Lang::Ts, "return 1").await;
    let (py, _) = new_session(&h, Lang::Py, "1").await;
    let report = wait_for_sessions(&h, "two sessions", |s| s["count"] == json!(2)).await;
    let mine = report["mine"].as_array().unwrap();
    assert_eq!(mine.len(), 2, "{report}");
    for s in mine {
        assert!(s["ageMs"].as_u64().is_some(), "{s}");
        assert!(
            s["memoryBytes"].as_u64().unwrap() > 0,
            "an idle worker's memory: {s}"
        );
    }
    wait_for_sessions(&h, "idle sessions end", |s| s["count"] == json!(0)).await;
    for (lang, id) in [(Lang::Ts, ts), (Lang::Py, py)] {
        let (v, is_error) = run(&h, lang, json!({"code": "1", "session": id})).await;
        assert!(is_error, "{v}");
        assert!(error_message(&v).contains("idle for more than 3 s"), "{v}");
    }
}

#[tokio::test]
async fn the_oldest_idle_session_is_evicted_under_pressure() {
    let (h, _d) = server(json!({"sessions": {"maxPerClient": 2}})).await;
    let (first, _) = new_session(&h, Lang::Ts, "globalThis.v = 'first'; return 1").await;
    let (second, _) = new_session(&h, Lang::Py, "v = 'second'").await;
    // Using the first makes the second the oldest idle one.
    ok_in(&h, Lang::Ts, &first, "return v").await;
    let (third, _) = new_session(&h, Lang::Ts, "return 3").await;
    let v = ok_in(&h, Lang::Ts, &first, "return v").await;
    assert_eq!(v["result"], json!("first"));
    ok_in(&h, Lang::Ts, &third, "return 3").await;
    let (v, is_error) = run(&h, Lang::Py, json!({"code": "v", "session": second})).await;
    assert!(is_error, "{v}");
    assert!(error_message(&v).contains("evicted"), "{v}");
}

#[tokio::test]
async fn a_dead_session_worker_loses_its_variables_but_not_its_stored_values_or_files() {
    let (h, _d) = server(json!({})).await;
    for lang in BOTH {
        let (id, _) = new_session(
            &h,
            lang,
            lang.pick(
                "globalThis.x = 1; await store('k', 'kept'); return 1",
                "x = 1\nstore('k', 'kept')\nopen('f.txt', 'w').write('file kept')\n1",
            ),
        )
        .await;
        // A worker that dies: a crash in Python, a deadline in TypeScript.
        let (v, is_error) = run(
            &h,
            lang,
            json!({
                "code": lang.pick("while (true) {}", "import os\nos._exit(3)"),
                "session": id,
                "timeoutMs": 1000,
            }),
        )
        .await;
        assert!(is_error, "{v}");
        assert_eq!(
            error_name(&v),
            lang.pick("TimeoutError", "WorkerCrashed"),
            "{v}"
        );
        let v = ok_in(
            &h,
            lang,
            &id,
            lang.pick(
                "return [typeof x, await load('k')]",
                "['x' in globals(), load('k'), open('f.txt').read()]",
            ),
        )
        .await;
        let expected = lang.pick(
            json!(["undefined", "kept"]),
            json!([false, "kept", "file kept"]),
        );
        assert_eq!(v["result"], expected, "{v}");
        let lost = v["session"]["stateLost"].as_str().unwrap_or_default();
        assert!(
            lost.contains(lang.pick("TimeoutError", "WorkerCrashed")),
            "the answer says why the variables are gone: {v}"
        );
        // And the fresh worker is the session's from now on.
        let v = ok_in(
            &h,
            lang,
            &id,
            lang.pick("return typeof x", "'x' in globals()"),
        )
        .await;
        assert!(v["session"].get("stateLost").is_none(), "{v}");
    }
}

#[tokio::test]
async fn session_code_cannot_execute_what_it_writes_or_reach_the_host_through_links() {
    let (h, _d) = server(json!({})).await;
    let (id, _) = new_session(&h, Lang::Py, "1").await;
    let canary = TempConfig::new(json!({}));
    let target = canary.dir.join("host-file");
    std::fs::write(&target, "host data").unwrap();
    let code = format!(
        r##"
import os, subprocess, shutil
out = {{}}
with open("run.sh", "w") as f:
    f.write("#!/bin/sh\necho escaped\n")
os.chmod("run.sh", 0o755)
try:
    out["exec"] = subprocess.run(["./run.sh"], capture_output=True).stdout.decode()
except OSError as e:
    out["exec"] = type(e).__name__
os.symlink({target:?}, "link")
try:
    out["read_link"] = open("link").read()
except OSError as e:
    out["read_link"] = type(e).__name__
out
"##,
        target = target.display().to_string()
    );
    let v = ok_in(&h, Lang::Py, &id, &code).await;
    assert_ne!(v["result"]["exec"], json!("escaped\n"), "{v}");
    assert_ne!(v["result"]["read_link"], json!("host data"), "{v}");
    // Ending the session deletes the workspace without following the link.
    let (v, _) = run(
        &h,
        Lang::Py,
        json!({"code": "1", "session": id, "reset": true}),
    )
    .await;
    assert_eq!(v["session"]["ended"], json!("reset"), "{v}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "host data");
}

#[tokio::test]
async fn calls_in_one_session_run_one_at_a_time_in_order() {
    let (h, _d) = server(json!({})).await;
    let (id, _) = new_session(&h, Lang::Ts, "globalThis.log = []; return 1").await;
    let slow = ok_in(
        &h,
        Lang::Ts,
        &id,
        "return 1", // warm
    );
    slow.await;
    let a = run(
        &h,
        Lang::Ts,
        json!({"code": "log.push('a-start'); await new Promise(r => setTimeout(r, 300)); log.push('a-end'); return log.length", "session": id}),
    );
    let b = run(
        &h,
        Lang::Ts,
        json!({"code": "log.push('b'); return [...log]", "session": id}),
    );
    let ((va, ea), (vb, eb)) = tokio::join!(a, b);
    assert!(!ea && !eb, "{va} {vb}");
    // Whichever came first, the other did not start before it ended.
    let v = ok_in(&h, Lang::Ts, &id, "return log").await;
    let order = &v["result"];
    assert!(
        *order == json!(["a-start", "a-end", "b"]) || *order == json!(["b", "a-start", "a-end"]),
        "{order}"
    );
}

#[tokio::test]
async fn the_audit_log_records_sessions() {
    let (h, _d) = server(json!({})).await;
    let (id, _) = new_session(&h, Lang::Ts, "return 1").await;
    ok_in(&h, Lang::Ts, &id, "return 2").await;
    run(
        &h,
        Lang::Ts,
        json!({"code": "return 3", "session": id, "reset": true}),
    )
    .await;
    let start = Instant::now();
    let lines = loop {
        let text = std::fs::read_to_string(h.audit_path()).unwrap_or_default();
        let lines: Vec<Value> = text
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        if lines.iter().any(|l| l["event"] == "session.end")
            || start.elapsed() > Duration::from_secs(10)
        {
            break lines;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let start_line = lines
        .iter()
        .find(|l| l["event"] == "session.start")
        .unwrap();
    assert_eq!(start_line["session"], json!(id));
    assert_eq!(start_line["language"], json!("typescript"));
    let in_session = lines
        .iter()
        .filter(|l| l["event"] == "run.start" && l["session"] == json!(id))
        .count();
    assert_eq!(in_session, 2, "{lines:?}");
    let end = lines.iter().find(|l| l["event"] == "session.end").unwrap();
    assert_eq!(end["session"], json!(id));
    assert_eq!(end["reason"], json!("reset"));
    assert_eq!(end["executions"], json!(2));
}

/// A client that records the progress notifications it receives.
#[derive(Clone, Default)]
struct ProgressRecorder(
    std::sync::Arc<std::sync::Mutex<Vec<rmcp::model::ProgressNotificationParam>>>,
);

impl rmcp::ClientHandler for ProgressRecorder {
    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _context: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        self.0.lock().unwrap().push(params);
    }
}

#[tokio::test]
async fn a_call_waiting_for_its_session_tells_a_client_that_asked_for_progress() {
    use rmcp::ServiceExt;
    use rmcp::model::{CallToolRequestParams, ProgressToken, RequestMetaObject};
    let config = TempConfig::new(json!({}));
    let mut cmd = tokio::process::Command::new(EXE);
    cmd.arg("--config")
        .arg(&config.path)
        .arg("--no-discover")
        .env("XDG_STATE_HOME", config.dir.join("state"))
        .kill_on_drop(true);
    let transport = rmcp::transport::TokioChildProcess::new(cmd).unwrap();
    let recorder = ProgressRecorder::default();
    let client = recorder.clone().serve(transport).await.unwrap();
    let call = |code: &str, session: &str, token: Option<&str>| {
        let mut params = CallToolRequestParams::new("execute_typescript").with_arguments(
            json!({"code": code, "session": session})
                .as_object()
                .cloned()
                .unwrap(),
        );
        if let Some(t) = token {
            let mut meta = RequestMetaObject::default();
            meta.set_progress_token(ProgressToken(rmcp::model::NumberOrString::String(t.into())));
            params.meta = Some(meta);
        }
        client.peer().call_tool(params)
    };
    let first = call("return 1", "new", None).await.unwrap();
    let id = first.structured_content.unwrap()["session"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    // The first holds the session until the second has asked; the second waits, and says so.
    let slow = call(
        "await new Promise(r => setTimeout(r, 1000)); return 'slow'",
        &id,
        None,
    );
    let waiting = async {
        // Once the session is in use (the first call holds it), ask.
        let start = Instant::now();
        loop {
            let health = client
                .peer()
                .call_tool(CallToolRequestParams::new("health"))
                .await
                .unwrap();
            let s = health.structured_content.unwrap();
            if s["sessions"]["mine"][0]["idleMs"].is_null() {
                break;
            }
            assert!(start.elapsed() < Duration::from_secs(10), "{s}");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        call("return 'second'", &id, Some("tok-1")).await
    };
    let (a, b) = tokio::join!(slow, waiting);
    assert_eq!(
        a.unwrap().structured_content.unwrap()["result"],
        json!("slow")
    );
    assert_eq!(
        b.unwrap().structured_content.unwrap()["result"],
        json!("second")
    );
    let got = recorder.0.lock().unwrap().clone();
    // (rmcp's client sends a token of its own in place of ours.)
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(
        got[0].message.as_deref(),
        Some("waiting for the session's previous execution to finish")
    );
}

/// Polls `health` until the caller's only session has counted `n` executions (started or
/// waiting).
async fn wait_for_executions(h: &Harness, n: u64) {
    wait_for_sessions(h, "executions counted", |s| {
        s["mine"][0]["executions"].as_u64() == Some(n)
    })
    .await;
}

#[tokio::test]
async fn a_call_waiting_for_a_session_that_ends_meanwhile_is_told_so() {
    let (h, _d) = server(json!({})).await;
    let (id, _) = new_session(&h, Lang::Ts, "return 1").await;
    let slow = run(
        &h,
        Lang::Ts,
        json!({"code": "await new Promise(r => setTimeout(r, 1500)); return 'slow'", "session": id}),
    );
    let rest = async {
        wait_for_executions(&h, 2).await;
        let waiting = run(
            &h,
            Lang::Ts,
            json!({"code": "return 'late'", "session": id}),
        );
        let reset = async {
            wait_for_executions(&h, 3).await;
            run(
                &h,
                Lang::Ts,
                json!({"code": "return 'reset'", "session": id, "reset": true}),
            )
            .await
        };
        tokio::join!(waiting, reset)
    };
    let ((slow, _), ((late, late_err), (reset, _))) = tokio::join!(slow, rest);
    assert_eq!(slow["result"], json!("slow"), "{slow}");
    assert_eq!(reset["session"]["ended"], json!("reset"), "{reset}");
    assert!(late_err, "{late}");
    assert_eq!(error_name(&late), "SessionError", "{late}");
    assert!(
        error_message(&late).contains("ended (reset) before this execution"),
        "{late}"
    );
}

/// Whether process `pid` has ended (gone, or a zombie nobody reaped yet).
fn ended(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z'),
    }
}

/// Polls `done` until it holds, for at most 20 s.
async fn eventually(what: &str, done: impl Fn() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "timed out: {what}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

#[tokio::test]
async fn a_stopped_server_deletes_its_workspaces_and_a_killed_ones_go_with_the_next_start() {
    // The servers here share a temporary directory of their own: a server another test
    // starts meanwhile sweeps the roots of dead servers in its TMPDIR, and would delete the
    // killed server's root below before the test looks at it (it did, in CI).
    let tmp = test_support::TempDir::new("stopped-servers");
    // Stopped by a signal, as clients stop stdio servers (after closing stdin, or instead):
    // every session ends in the audit log and the workspaces are deleted.
    for signal in ["TERM", "INT"] {
        let (h, _d) = server_in(&tmp.0, json!({})).await;
        let mut roots = Vec::new();
        for lang in BOTH {
            let (id, _) = new_session(&h, lang, define(lang)).await;
            roots.push(
                host_workspace_in(&tmp.0, &id)
                    .parent()
                    .unwrap()
                    .to_path_buf(),
            );
        }
        roots.dedup();
        assert_eq!(roots.len(), 1, "{roots:?}");
        let pid = h.pid.unwrap();
        let status = std::process::Command::new("kill")
            .args([format!("-{signal}"), pid.to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        eventually("the server exits", || ended(pid)).await;
        assert!(
            !roots[0].exists(),
            "SIG{signal}: {} is left",
            roots[0].display()
        );
        let audit = std::fs::read_to_string(h.audit_path()).unwrap();
        let ends = audit
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|l| l["event"] == "session.end" && l["reason"] == "shutdown")
            .count();
        assert_eq!(ends, 2, "SIG{signal}: {audit}");
    }

    // Killed, it cannot: the next server to start deletes what it left.
    let (h, _d) = server_in(&tmp.0, json!({})).await;
    let (id, _) = new_session(&h, Lang::Py, define(Lang::Py)).await;
    let workspace = host_workspace_in(&tmp.0, &id);
    assert!(workspace.join("notes.txt").is_file());
    let pid = h.pid.unwrap();
    std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .unwrap();
    eventually("the server dies", || ended(pid)).await;
    assert!(workspace.is_dir(), "nothing could delete it yet");
    let (next, _d2) = server_in(&tmp.0, json!({})).await;
    eventually("the next server deletes the dead one's workspaces", || {
        !workspace.parent().unwrap().exists()
    })
    .await;
    // And leaves a live server's alone.
    let (id, _) = new_session(&next, Lang::Ts, "return 1").await;
    let (_third, _d3) = server_in(&tmp.0, json!({})).await;
    ok_in(&next, Lang::Ts, &id, "return 2").await;
    assert!(host_workspace_in(&tmp.0, &id).is_dir());
}

//! Runs paused for a person that survive a SIGKILL of their server (issue #54; docs/store.md),
//! on SQLite and on the test PostgreSQL (as `durable.rs`): a `wait` handle's run that made an
//! upstream call and then waited for an approval in the inbox is, after the kill and a
//! restart, started again when its handle is asked for, replaying its call log (the earlier
//! call is served from the log, not made again), reaches the same approval, is approved on
//! the new server's page and completes; the fixture counts every call in a file (it restarts
//! with the server), and each call was made exactly once. The first call's arguments hold a
//! random number, which the replay draws again from the run's seed. In both languages. Also a replay
//! that diverges (the first call's arguments depend on the clock) stops naming the step and
//! calls nothing more, a run lost while it ran (no approval pending) reports the ledger of
//! the calls it had completed, and a run whose call log passed its cap (8 MiB) is not
//! started again: it is reported lost, saying so.
//!
//! Sessions (`crate::service::replay`): a session's variables, made from upstream calls and
//! random numbers over two executions, are there after a SIGKILL and a restart, rebuilt by
//! replaying those executions against their logs (no call made again), in both languages;
//! a session whose replay diverges says which execution and is not reset.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use test_support::{Harness, Lang, TempDir};

use super::durable::{Place, places, sigkill};
use crate::common::{BOTH, EXE};

/// Where one test's server keeps its files across restarts.
struct Rig {
    dir: TempDir,
    calls: PathBuf,
}

impl Rig {
    fn new(tag: &str) -> Rig {
        let dir = TempDir::new(tag);
        let calls = dir.0.join("calls.txt");
        Rig { dir, calls }
    }

    /// A server on `place` whose approvals of `write_*` wait in the inbox.
    async fn start(&self, place: &Place) -> Harness {
        self.start_with(place, json!({})).await
    }

    /// [`Rig::start`] with `store` settings added to the store's.
    async fn start_with(&self, place: &Place, store: Value) -> Harness {
        let settings = self.dir.0.join("settings.json");
        let mut s = json!({"store": {"url": place.url},
               "approvals": {"approve": ["mcp__fix__write_*"], "fallback": "inbox", "timeoutMs": 120_000}});
        if let Some(extra) = store.as_object() {
            for (k, v) in extra {
                s["store"][k] = v.clone();
            }
        }
        std::fs::write(&settings, s.to_string()).unwrap();
        let mut fix = test_support::fixture_entry("fix");
        fix["env"] = json!({"FIXTURE_PAUSE_TOOLS": "1", "FIXTURE_SHAPE_TOOLS": "1",
                            "FIXTURE_CALLS_FILE": self.calls});
        let run = self.dir.0.join("run");
        let state = self.dir.0.join("state");
        Harness::start(
            Path::new(EXE),
            json!({ "fix": fix }),
            &[],
            &[
                ("CODE_EXECUTOR_CONFIG_PATH", settings.to_str().unwrap()),
                ("XDG_RUNTIME_DIR", run.to_str().unwrap()),
                ("XDG_STATE_HOME", state.to_str().unwrap()),
            ],
        )
        .await
    }

    /// The calls the fixture counted, one line each.
    fn calls(&self) -> Vec<String> {
        std::fs::read_to_string(&self.calls)
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// Waits (bounded) until the fixture counted `n` calls.
    async fn until_calls(&self, n: usize) {
        for _ in 0..1500 {
            if self.calls().len() >= n {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("the fixture never counted {n} calls: {:?}", self.calls());
    }

    /// Waits (bounded) for the one approval pending in server `pid`'s inbox (the run's log
    /// says it is being asked before it is there); answers it when `answer`.
    async fn approve(&self, pid: u32, tool: &str) {
        self.pending(pid, tool, true).await;
    }

    async fn pending(&self, pid: u32, tool: &str, answer: bool) {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        let link = self
            .dir
            .0
            .join("run/code-executor-mcp/approvals")
            .join(format!("{pid}.json"));
        for _ in 0..1500 {
            if let Ok(text) = std::fs::read_to_string(&link) {
                let f: Value = serde_json::from_str(&text).unwrap();
                let (url, token) = (f["url"].as_str().unwrap(), f["token"].as_str().unwrap());
                let list: Vec<Value> = http
                    .get(format!("{url}.json"))
                    .header("x-approvals-token", token)
                    .send()
                    .await
                    .unwrap()
                    .json()
                    .await
                    .unwrap();
                if let Some(first) = list.first() {
                    assert_eq!(list.len(), 1, "{list:?}");
                    assert_eq!(first["tool"], tool, "{first}");
                    if !answer {
                        return;
                    }
                    let id = first["id"].as_u64().unwrap();
                    let r = http
                        .post(format!("{url}/{id}/approve"))
                        .header("content-type", "application/x-www-form-urlencoded")
                        .body(format!("token={token}&do=approve"))
                        .send()
                        .await
                        .unwrap();
                    assert_eq!(r.status(), 303);
                    return;
                }
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("no approval of {tool} arrived in the inbox of {pid}");
    }
}

async fn call(h: &Harness, tool: &str, args: Value) -> (Value, bool) {
    let r = h.call(tool, args).await;
    (
        r.structured_content.unwrap_or(Value::Null),
        r.is_error == Some(true),
    )
}

/// Starts `code` with a `wait` handle; the handle.
async fn start_run(h: &Harness, lang: Lang, code: &str) -> String {
    let (v, err) = call(
        h,
        lang.tool(),
        json!({"code": code, "yieldAfterMs": 0, "timeoutMs": 120_000}),
    )
    .await;
    assert!(!err, "{v}");
    v["running"]["handle"]
        .as_str()
        .expect("a handle")
        .to_string()
}

/// `wait` on `handle` until its run finished; its answer.
async fn finished(h: &Harness, handle: &str) -> (Value, bool) {
    for _ in 0..120 {
        let (v, err) = call(h, "wait", json!({"handle": handle, "timeoutMs": 1000})).await;
        if v.get("running").is_none() || err {
            return (v, err);
        }
    }
    panic!("{handle} never finished");
}

#[tokio::test]
async fn a_run_paused_for_an_approval_resumes_after_a_sigkill_and_calls_each_tool_once() {
    for place in places("resume").await {
        for lang in BOTH {
            let rig = Rig::new("resume");
            let h = rig.start(&place).await;
            let code = lang.pick(
                "const a = await tools.fix.tick({ step: 'a', r: Math.random() });
                 const w = await tools.fix.write_note({ text: 'w' });
                 const b = await tools.fix.tick({ step: 'b' });
                 return { a, w, b };",
                "import random\n\
                 a = await tools.fix.tick({'step': 'a', 'r': random.random()})\n\
                 w = await tools.fix.write_note({'text': 'w'})\n\
                 b = await tools.fix.tick({'step': 'b'})\n\
                 {'a': a, 'w': w, 'b': b}",
            );
            let handle = start_run(&h, lang, code).await;
            // The first call is made; the second waits for a person.
            rig.until_calls(1).await;
            rig.pending(h.pid.unwrap(), "write_note", false).await;
            sigkill(&h);
            drop(h);
            let h = rig.start(&place).await;
            // Asked for, the handle starts the run again: running, not lost.
            let (v, err) = call(&h, "wait", json!({"handle": handle, "timeoutMs": 0})).await;
            assert!(!err, "{lang:?} on {}: {v}", place.url);
            assert!(v.get("running").is_some(), "{lang:?}: {v}");
            rig.approve(h.pid.unwrap(), "write_note").await;
            let (v, err) = finished(&h, &handle).await;
            assert!(!err, "{lang:?} on {}: {v}", place.url);
            // The replayed call answers what it answered the first time.
            assert_eq!(v["result"]["a"], json!(1), "{v}");
            assert_eq!(v["result"]["w"], json!(2), "{v}");
            assert_eq!(v["result"]["b"], json!(3), "{v}");
            let calls = rig.calls();
            assert_eq!(calls.len(), 3, "{lang:?}: {calls:?}");
            // The first call's arguments drew a random number: the replay drew the same
            // (the run's seed is in its log), or it would have diverged.
            assert!(
                calls[0].starts_with(r#"tick {"step":"a","r":0."#),
                "{calls:?}"
            );
            assert_eq!(
                calls[1..],
                [r#"write_note {"text":"w"}"#, r#"tick {"step":"b"}"#],
                "{lang:?}: each call exactly once"
            );
        }
    }
}

#[tokio::test]
async fn a_replay_that_asks_for_another_call_stops_naming_the_step() {
    for place in places("diverge").await {
        for lang in BOTH {
            let rig = Rig::new("diverge");
            let h = rig.start(&place).await;
            let code = lang.pick(
                "await tools.fix.tick({ at: Date.now() });
                 await tools.fix.write_note({ text: 'w' });
                 return 'done';",
                "import time\n\
                 await tools.fix.tick({'at': time.time()})\n\
                 await tools.fix.write_note({'text': 'w'})\n\
                 'done'",
            );
            let handle = start_run(&h, lang, code).await;
            rig.until_calls(1).await;
            rig.pending(h.pid.unwrap(), "write_note", false).await;
            sigkill(&h);
            drop(h);
            let h = rig.start(&place).await;
            let (v, err) = finished(&h, &handle).await;
            assert!(err, "{lang:?} on {}: {v}", place.url);
            assert_eq!(v["error"]["name"], "ReplayDiverged", "{v}");
            let message = v["error"]["message"].as_str().unwrap_or_default();
            assert!(
                message.contains("replay diverged at call 1: the log has fix.tick(args sha256")
                    && message.contains("the code asked for fix.tick(args sha256")
                    && message.contains("nothing further is called"),
                "{message}"
            );
            // Nothing was called again, nor after.
            assert_eq!(rig.calls().len(), 1, "{:?}", rig.calls());
        }
    }
}

#[tokio::test]
async fn a_run_lost_while_it_ran_reports_the_calls_it_had_completed() {
    for place in places("ledger").await {
        for lang in BOTH {
            let rig = Rig::new("ledger");
            let h = rig.start(&place).await;
            let code = lang.pick(
                "await tools.fix.tick({ step: 'a' }); await tools.fix.tick({ step: 'b' });
                 await new Promise((r) => setTimeout(r, 100000)); return 1;",
                "import time\n\
                 await tools.fix.tick({'step': 'a'})\n\
                 await tools.fix.tick({'step': 'b'})\n\
                 time.sleep(100)\n\
                 1",
            );
            let handle = start_run(&h, lang, code).await;
            rig.until_calls(2).await;
            tokio::time::sleep(Duration::from_millis(300)).await;
            sigkill(&h);
            drop(h);
            let h = rig.start(&place).await;
            let (v, err) = call(&h, "wait", json!({"handle": handle})).await;
            assert!(err, "{v}");
            assert_eq!(v["error"]["name"], "LostToRestart", "{v}");
            let message = v["error"]["message"].as_str().unwrap_or_default();
            assert!(
                message.contains(
                    "What it had completed (2 tool calls): call 1: fix.tick (args sha256"
                ) && message.contains("call 2: fix.tick")
                    && message.contains("completed (result sha256"),
                "{lang:?}: {message}"
            );
            assert!(!message.contains("not known"), "{message}");
            assert_eq!(rig.calls().len(), 2);
        }
    }
}

#[tokio::test]
async fn a_run_whose_log_passed_its_cap_is_not_resumed_and_says_so() {
    for place in places("cap").await {
        let rig = Rig::new("cap");
        let h = rig.start(&place).await;
        // Five results of 2 MB each: the log keeps 8 MiB.
        let code = "for (let i = 0; i < 5; i++) await tools.fix.shaped({ big: 1000000 });
                    await tools.fix.write_note({ text: 'w' }); return 1;";
        let handle = start_run(&h, Lang::Ts, code).await;
        rig.pending(h.pid.unwrap(), "write_note", false).await;
        sigkill(&h);
        drop(h);
        let h = rig.start(&place).await;
        let (v, err) = call(&h, "wait", json!({"handle": handle})).await;
        assert!(err, "on {}: {v}", place.url);
        assert_eq!(v["error"]["name"], "LostToRestart", "{v}");
        let message = v["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("call 1: fix.shaped")
                && message.contains("its call log passed its cap there")
                && message.contains("it cannot be started again"),
            "{message}"
        );
        assert!(rig.calls().is_empty(), "{:?}", rig.calls());
    }
}

/// Runs `code` in session `session` (`"new"` for a new one); the answer.
async fn in_session(h: &Harness, lang: Lang, session: &str, code: &str) -> (Value, bool) {
    call(h, lang.tool(), json!({"code": code, "session": session})).await
}

#[tokio::test]
async fn a_sessions_variables_are_rebuilt_after_a_sigkill_by_replaying_its_executions() {
    for place in places("session_replay").await {
        for lang in BOTH {
            let rig = Rig::new("session-replay");
            let h = rig.start(&place).await;
            let (v, err) = in_session(
                &h,
                lang,
                "new",
                lang.pick(
                    "globalThis.a = await tools.fix.tick({ step: 'a' }); \
                     globalThis.r = Math.random(); return a;",
                    "import random\na = await tools.fix.tick({'step': 'a'})\nr = random.random()\na",
                ),
            )
            .await;
            assert!(!err, "{lang:?}: {v}");
            let id = v["session"]["id"].as_str().unwrap().to_string();
            let (v, err) = in_session(
                &h,
                lang,
                &id,
                lang.pick(
                    "globalThis.b = a + 10; await store('k', 'kept'); return [b, r];",
                    "b = a + 10\nstore('k', 'kept')\n[b, r]",
                ),
            )
            .await;
            assert!(!err, "{lang:?}: {v}");
            let r = v["result"][1].clone();
            assert!(r.is_f64(), "{v}");
            sigkill(&h);
            drop(h);
            let h = rig.start(&place).await;
            let (v, err) = in_session(
                &h,
                lang,
                &id,
                lang.pick(
                    "return [a, b, r, await load('k'), await tools.fix.tick({ step: 'c' })];",
                    "[a, b, r, load('k'), await tools.fix.tick({'step': 'c'})]",
                ),
            )
            .await;
            assert!(!err, "{lang:?} on {}: {v}", place.url);
            assert_eq!(v["result"][0], json!(1), "{lang:?}: {v}");
            assert_eq!(v["result"][1], json!(11), "{lang:?}: {v}");
            assert_eq!(v["result"][2], r, "the random number drawn again: {v}");
            assert_eq!(v["result"][3], json!("kept"), "{v}");
            assert_eq!(v["result"][4], json!(2), "{v}");
            assert_eq!(v["session"]["replayed"], json!(2), "{v}");
            assert!(v["session"].get("stateLost").is_none(), "{v}");
            // The first call was served from its log: each call made exactly once.
            assert_eq!(
                rig.calls(),
                [r#"tick {"step":"a"}"#, r#"tick {"step":"c"}"#],
                "{lang:?}"
            );
            // It goes on as a session: the next execution needs no replay.
            let (v, err) = in_session(&h, lang, &id, lang.pick("return b + 1;", "b + 1")).await;
            assert!(!err, "{v}");
            assert_eq!(v["result"], json!(12), "{v}");
            assert!(v["session"].get("replayed").is_none(), "{v}");
        }
    }
}

#[tokio::test]
async fn a_session_whose_replay_diverges_says_which_execution_and_is_not_reset() {
    for place in places("session_diverges").await {
        let lang = Lang::Ts;
        let rig = Rig::new("session-diverges");
        let h = rig.start(&place).await;
        let (v, err) = in_session(&h, lang, "new", "await store('k', 'kept'); return 1;").await;
        assert!(!err, "{v}");
        let id = v["session"]["id"].as_str().unwrap().to_string();
        let (v, err) = in_session(
            &h,
            lang,
            &id,
            "globalThis.t = await tools.fix.tick({ at: Date.now() }); return t;",
        )
        .await;
        assert!(!err, "{v}");
        sigkill(&h);
        drop(h);
        let h = rig.start(&place).await;
        for _ in 0..2 {
            let (v, err) = in_session(&h, lang, &id, "return typeof t;").await;
            assert!(err, "{v}");
            let message = v["error"]["message"].as_str().unwrap_or_default();
            assert_eq!(v["error"]["name"], "SessionError", "{v}");
            assert!(
                message.contains("execution 2 of 2 diverged") && message.contains("tick"),
                "{v}"
            );
        }
        // Nothing was called again, and the session is still there with its values.
        assert_eq!(rig.calls().len(), 1, "{:?}", rig.calls());
        let (v, err) = in_session(&h, lang, &id, "return 1;").await;
        assert!(err, "{v}");
        let (v, err) = call(
            &h,
            lang.tool(),
            json!({"code": "return 1", "session": id, "reset": true}),
        )
        .await;
        assert!(!err, "reset ends it: {v}");
    }
}

#[tokio::test]
async fn a_session_whose_execution_cannot_be_kept_warns_and_comes_back_without_variables() {
    for place in places("session_unkept").await {
        let lang = Lang::Ts;
        let rig = Rig::new("session-unkept");
        let limit = json!({"maxBytesPerClient": 4096});
        let h = rig.start_with(&place, limit.clone()).await;
        let (v, err) = in_session(&h, lang, "new", "globalThis.x = 1; return x;").await;
        assert!(!err, "{v}");
        assert!(v.get("warning").is_none(), "{v}");
        let id = v["session"]["id"].as_str().unwrap().to_string();
        // Its code alone is past the client's room in the store.
        let big = format!("globalThis.y = 2; /* {} */ return y;", "z".repeat(8000));
        let (v, err) = in_session(&h, lang, &id, &big).await;
        assert!(!err, "{v}");
        let warning = v["warning"].as_str().unwrap_or_default();
        assert!(
            warning.contains("could not be kept") && warning.contains("without its variables"),
            "{v}"
        );
        sigkill(&h);
        drop(h);
        let h = rig.start_with(&place, limit).await;
        // Not an older state replayed: no variables, and it says so.
        let (v, err) = in_session(&h, lang, &id, "return typeof x;").await;
        assert!(!err, "{v}");
        assert_eq!(v["result"], json!("undefined"), "{v}");
        assert!(v["session"].get("replayed").is_none(), "{v}");
        assert!(
            v["session"]["stateLost"]
                .as_str()
                .unwrap_or_default()
                .contains("cannot be replayed"),
            "{v}"
        );
    }
}

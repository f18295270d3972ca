//! What survives a SIGKILL of the server through the durable store (`--store`, the `store`
//! setting; docs/store.md), on SQLite and on a real PostgreSQL
//! (`CODE_EXECUTOR_TEST_POSTGRES`, started by scripts/setup-postgres.sh; without it the
//! PostgreSQL cases print SKIP, and fail under `CODE_EXECUTOR_REQUIRE_POSTGRES=1`):
//! a session's stored values (the handle works again, its variables are said lost), a `wait`
//! handle whose run finished before the kill, and one whose run was still going (failed:
//! lost to the restart). Also a store that cannot be used stops the server from starting,
//! with the reason, and `--store none` keeps today's memory-only behaviour.

use std::path::PathBuf;

use serde_json::{Value, json};
use test_support::{Harness, Lang, TempConfig};

use crate::common::{BOTH, server};

async fn call(h: &Harness, tool: &str, args: Value) -> (Value, bool) {
    let r = h.call(tool, args).await;
    (
        r.structured_content.unwrap_or(Value::Null),
        r.is_error == Some(true),
    )
}

async fn run(h: &Harness, lang: Lang, args: Value) -> (Value, bool) {
    call(h, lang.tool(), args).await
}

/// SIGKILLs the server: no orderly end, nothing flushed on the way out.
pub(crate) fn sigkill(h: &Harness) {
    let pid = h.pid.expect("the server's pid");
    let pid = nix::unistd::Pid::from_raw(i32::try_from(pid).expect("pid"));
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL).expect("SIGKILL");
}

/// Where a test's store lives: an SQLite file in its own directory, or its own database on
/// the test PostgreSQL.
pub(crate) struct Place {
    pub(crate) url: String,
    _dir: Option<TempConfig>,
}

fn sqlite() -> Place {
    let dir = TempConfig::new(json!({}));
    Place {
        url: format!("sqlite:{}", dir.dir.join("durable/store.sqlite3").display()),
        _dir: Some(dir),
    }
}

/// A fresh database on the test PostgreSQL, or `None` (SKIP; a failure under REQUIRE).
async fn postgres(test: &str) -> Option<Place> {
    let url = test_support::postgres::fresh_database(&format!("durable::{test}")).await?;
    Some(Place { url, _dir: None })
}

pub(super) async fn places(test: &str) -> Vec<Place> {
    let mut out = vec![sqlite()];
    out.extend(postgres(test).await);
    out
}

async fn start(place: &Place) -> (Harness, TempConfig) {
    server(json!({ "store": { "url": place.url } })).await
}

#[tokio::test]
async fn a_sessions_stored_values_survive_a_sigkill_in_both_languages() {
    for place in places("stored_values").await {
        let (h, _d) = start(&place).await;
        let mut ids = Vec::new();
        for lang in BOTH {
            let code = lang.pick(
                "globalThis.counter = 41; await store('config', { region: 'eu', n: 2 }); \
                 await store('gone', 1); await store('gone'); return 'stored'",
                "counter = 41\nstore('config', {'region': 'eu', 'n': 2})\nstore('gone', 1)\n\
                 store('gone')\n'stored'",
            );
            let (v, err) = run(&h, lang, json!({"code": code, "session": "new"})).await;
            assert!(!err, "{lang:?}: {v}");
            ids.push(v["session"]["id"].as_str().expect("a session").to_string());
        }
        sigkill(&h);
        drop(h);
        let (h, _d2) = start(&place).await;
        for (lang, id) in BOTH.into_iter().zip(&ids) {
            let code = lang.pick(
                "return [await load('config'), await load('gone'), typeof globalThis.counter]",
                "[load('config'), load('gone'), 'counter' in globals()]",
            );
            let (v, err) = run(&h, lang, json!({"code": code, "session": id})).await;
            assert!(!err, "{lang:?} on {}: {v}", place.url);
            assert_eq!(v["result"][0], json!({"region": "eu", "n": 2}), "{v}");
            assert_eq!(
                v["result"][1],
                Value::Null,
                "a forgotten key came back: {v}"
            );
            // Its variables too: rebuilt by replaying its one execution (resume.rs has more).
            assert_eq!(
                v["result"][2],
                lang.pick(json!("number"), json!(true)),
                "{v}"
            );
            assert_eq!(v["session"]["replayed"], json!(1), "{v}");
            assert!(v["session"].get("stateLost").is_none(), "{v}");
            // The other language's handle is refused, named.
            let other = if lang == Lang::Ts { Lang::Py } else { Lang::Ts };
            let (v, err) = run(&h, other, json!({"code": "1", "session": id})).await;
            assert!(err, "{v}");
            // Reset ends it for good: after another kill it does not come back.
            let (v, err) = run(&h, lang, json!({"code": "1", "session": id, "reset": true})).await;
            assert!(!err, "{v}");
        }
        // The delete of a reset session runs in the background.
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        sigkill(&h);
        drop(h);
        let (h, _d3) = start(&place).await;
        for (lang, id) in BOTH.into_iter().zip(&ids) {
            let (v, err) = run(&h, lang, json!({"code": "1", "session": id})).await;
            assert!(err, "a reset session came back: {v}");
            assert!(v.to_string().contains("unknown session"), "{v}");
        }
    }
}

#[tokio::test]
async fn a_finished_run_is_read_after_a_sigkill_and_a_running_one_is_lost() {
    for place in places("runs").await {
        let (h, _d) = start(&place).await;
        let (v, err) = call(
            &h,
            "execute_typescript",
            json!({"code": "console.log('hello'); return 6 * 7", "yieldAfterMs": 0}),
        )
        .await;
        assert!(!err, "{v}");
        let done = v["running"]["handle"]
            .as_str()
            .expect("a handle")
            .to_string();
        // Until it finished (the first wait may come before).
        let mut finished = false;
        for _ in 0..100 {
            let (v, _) = call(&h, "wait", json!({"handle": done, "timeoutMs": 1000})).await;
            if v["result"] == json!(42) {
                finished = true;
                break;
            }
        }
        assert!(finished);
        let (v, err) = call(
            &h,
            "execute_python",
            json!({"code": "import time\ntime.sleep(50)\n1", "yieldAfterMs": 0, "timeoutMs": 60000}),
        )
        .await;
        assert!(!err, "{v}");
        let running = v["running"]["handle"]
            .as_str()
            .expect("a handle")
            .to_string();
        sigkill(&h);
        drop(h);
        let (h, _d2) = start(&place).await;
        let (v, err) = call(&h, "wait", json!({"handle": done})).await;
        assert!(!err, "on {}: {v}", place.url);
        assert_eq!(v["result"], json!(42), "{v}");
        let (v, err) = call(&h, "wait", json!({"handle": running})).await;
        assert!(err, "{v}");
        assert_eq!(v["error"]["name"], "LostToRestart", "{v}");
        let message = v["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("lost to a server restart"), "{v}");
        // Cancelling it is answered as the run it is: ended.
        let (v, _) = call(&h, "wait", json!({"handle": running, "cancel": true})).await;
        assert_eq!(v["error"]["name"], "LostToRestart", "{v}");
        // A handle never issued is still unknown.
        let (v, err) = call(
            &h,
            "wait",
            json!({"handle": "run-00000000000000000000000000000000"}),
        )
        .await;
        assert!(err && v.to_string().contains("unknown handle"), "{v}");
    }
}

#[tokio::test]
async fn a_store_that_cannot_be_used_stops_the_server_with_the_reason() {
    let dir = TempConfig::new(json!({}));
    let corrupt: PathBuf = dir.dir.join("store.sqlite3");
    std::fs::write(&corrupt, b"not a database, someone's file".repeat(200)).unwrap();
    for (store, says) in [
        (
            format!("sqlite:{}", corrupt.display()),
            "not a usable SQLite database",
        ),
        (
            format!("sqlite:{}/file/store.sqlite3", corrupt.display()),
            "cannot make its directory",
        ),
        (
            "postgres://nobody:hunter2@127.0.0.1:1/x?connect_timeout=2".to_string(),
            "the store is unavailable (postgres",
        ),
    ] {
        let out = std::process::Command::new(crate::common::EXE)
            .args(["--no-discover", "--store", &store, "serve"])
            .env("XDG_STATE_HOME", dir.dir.join("state"))
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{store}: started anyway: {stderr}");
        assert!(stderr.contains(says), "{store}: {stderr}");
        assert!(!stderr.contains("hunter2"), "the password leaked: {stderr}");
    }
    assert_eq!(
        std::fs::read(&corrupt).unwrap(),
        b"not a database, someone's file".repeat(200),
        "the corrupt file was changed"
    );
}

#[tokio::test]
async fn without_a_store_nothing_survives() {
    let (h, _d) = server(json!({ "store": { "url": "none" } })).await;
    let (v, err) = call(
        &h,
        "execute_typescript",
        json!({"code": "await store('k', 1); return 1", "session": "new"}),
    )
    .await;
    assert!(!err, "{v}");
    let id = v["session"]["id"].as_str().unwrap().to_string();
    sigkill(&h);
    drop(h);
    let (h, _d2) = server(json!({ "store": { "url": "none" } })).await;
    let (v, err) = call(
        &h,
        "execute_typescript",
        json!({"code": "return await load('k')", "session": id}),
    )
    .await;
    assert!(err && v.to_string().contains("unknown session"), "{v}");
}

#[tokio::test]
async fn the_default_store_that_cannot_be_made_leaves_the_server_in_memory_and_says_so() {
    let dir = TempConfig::new(json!({}));
    // The data directory is a file: the default store cannot be made there (a read-only
    // home in a container is the same), and no store was named.
    let state = dir.dir.join("state");
    std::fs::write(&state, b"a file").unwrap();
    let out = std::process::Command::new(crate::common::EXE)
        .args(["--no-discover", "serve"])
        .env("XDG_STATE_HOME", &state)
        .env_remove("CODE_EXECUTOR_STORE")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("the store is unavailable (sqlite")
            && stderr.contains("kept in memory only")
            && stderr.contains("serving MCP on stdio"),
        "{stderr}"
    );
}

#[tokio::test]
async fn a_client_past_its_room_in_the_store_is_refused_and_keeps_what_it_had() {
    let place = sqlite();
    let (h, _d) = server(json!({"store": {"url": place.url, "maxBytesPerClient": 2048}})).await;
    let code = "await store('small', 'kept');
        let refused = null;
        try { await store('big', 'x'.repeat(4000)); } catch (e) { refused = e.message; }
        return [refused, await load('small'), await load('big')]";
    let (v, err) = call(
        &h,
        "execute_typescript",
        json!({"code": code, "session": "new"}),
    )
    .await;
    assert!(!err, "{v}");
    let refused = v["result"][0].as_str().unwrap_or_default();
    assert!(
        refused.contains("store.maxBytesPerClient") && refused.contains("2048"),
        "{v}"
    );
    assert_eq!(v["result"][1], json!("kept"), "{v}");
    assert_eq!(v["result"][2], Value::Null, "a refused value was kept: {v}");
    let id = v["session"]["id"].as_str().unwrap().to_string();
    sigkill(&h);
    drop(h);
    let (h, _d2) = server(json!({"store": {"url": place.url, "maxBytesPerClient": 2048}})).await;
    let (v, err) = call(
        &h,
        "execute_typescript",
        json!({"code": "return [await load('small'), await load('big')]", "session": id}),
    )
    .await;
    assert!(!err, "{v}");
    assert_eq!(v["result"], json!(["kept", null]), "{v}");
}

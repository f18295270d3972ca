use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use super::*;

fn call(tool: &str, args: Value, result: Value) -> Entry {
    Entry::Call {
        tool: tool.into(),
        args: digest(&args),
        result: digest(&result),
        failed: false,
        outcome: Called::Ok {
            server: "s".into(),
            tool: tool.into(),
            result,
        },
    }
}

#[test]
fn the_digest_is_of_the_value_not_of_its_key_order() {
    let a: Value = serde_json::from_str(r#"{"b": [1, {"y": 2, "x": 1}], "a": "z"}"#).unwrap();
    let b: Value = serde_json::from_str(r#"{"a": "z", "b": [1, {"x": 1, "y": 2}]}"#).unwrap();
    assert_eq!(digest(&a), digest(&b));
    assert_ne!(
        digest(&a),
        digest(&json!({"a": "z", "b": [1, {"x": 1, "y": 3}]}))
    );
    assert_ne!(digest(&json!("1")), digest(&json!(1)));
}

#[test]
fn a_replay_serves_the_log_then_goes_live() {
    let log = vec![
        call("s.a", json!({"n": 1}), json!({"content": [], "r": 1})),
        Entry::Asking { tool: "b".into() },
        Entry::Approval {
            tool: "b".into(),
            decision: "execution".into(),
        },
        call("s.b", json!({}), json!({"content": [], "r": 2})),
    ];
    let r = CallLog::replaying(42, log.clone());
    assert_eq!(r.run_seed(), CallLog::with_seed(42).run_seed());
    let Replayed::Served { outcome, approvals } = r.replay_call("s.a", &digest(&json!({"n": 1})))
    else {
        panic!("not served")
    };
    assert!(approvals.is_empty());
    assert!(matches!(outcome, Called::Ok { result, .. } if result["r"] == 1));
    let Replayed::Served { approvals, .. } = r.replay_call("s.b", &digest(&json!({}))) else {
        panic!("not served")
    };
    assert_eq!(approvals, [("b".to_string(), "execution".to_string())]);
    // The log is used up: live from here, and the old entries stay first.
    assert!(matches!(
        r.replay_call("s.a", &digest(&json!({"n": 1}))),
        Replayed::Live
    ));
    assert_eq!(r.entries(), log);
    assert!(r.diverged().is_none());
}

#[test]
fn a_replay_that_asks_for_something_else_stops_naming_the_step() {
    let log = vec![
        call("s.a", json!({"n": 1}), json!({"r": 1})),
        call("s.b", json!({"n": 2}), json!({"r": 2})),
    ];
    let r = CallLog::replaying(1, log);
    assert!(matches!(
        r.replay_call("s.a", &digest(&json!({"n": 1}))),
        Replayed::Served { .. }
    ));
    let Replayed::Diverged(e) = r.replay_call("s.b", &digest(&json!({"n": 3}))) else {
        panic!("did not diverge")
    };
    assert!(
        e.message.contains("replay diverged at call 2"),
        "{}",
        e.message
    );
    assert!(
        e.message.contains("the log has s.b(args sha256"),
        "{}",
        e.message
    );
    assert!(
        e.message.contains("nothing further is called"),
        "{}",
        e.message
    );
    // Everything after is refused the same, even what the log had.
    assert!(matches!(
        r.replay_call("s.b", &digest(&json!({"n": 2}))),
        Replayed::Diverged(_)
    ));
    assert!(matches!(r.replay_llm("x"), Replayed::Diverged(_)));
    assert!(r.diverged().is_some());
    // A fresh log never replays.
    assert!(matches!(
        CallLog::new().replay_call("s.a", "x"),
        Replayed::Live
    ));
}

#[tokio::test]
async fn a_log_past_its_cap_ends_truncated_and_keeps_nothing_more() {
    let log = CallLog::new();
    for i in 0..MAX_ENTRIES + 10 {
        log.record(call("s.a", json!({ "i": i }), json!({}))).await;
    }
    let entries = log.entries();
    assert_eq!(entries.len(), MAX_ENTRIES);
    assert!(matches!(entries.last(), Some(Entry::Truncated { .. })));
    let big = CallLog::new();
    big.record(call("s.a", json!({}), json!("x".repeat(MAX_BYTES))))
        .await;
    assert!(matches!(big.entries()[..], [Entry::Truncated { .. }]));
    assert!(ledger(&entries).contains("passed its cap"));
}

#[tokio::test]
async fn an_armed_log_is_in_the_store_redacted_and_only_for_its_principal() {
    let dir = test_support::TempDir::new("calllog");
    let store: Shared = Arc::new(
        store::sqlite::Sqlite::open(&dir.0.join("s.sqlite3"), store::Limits::default())
            .await
            .unwrap(),
    );
    let log = CallLog::new();
    log.record(call("s.a", json!({}), json!({"token": "sekrit-value-123"})))
        .await;
    // Nothing is written before the log is armed.
    assert!(read(&store, "alice", "run-1").await.unwrap().is_empty());
    log.arm(Sink {
        store: store.clone(),
        principal: "alice".into(),
        handle: "run-1".into(),
        ttl: Duration::from_secs(60),
        redactor: Arc::new(Redactor::new(["sekrit-value-123"])),
    })
    .await;
    log.record(Entry::Asking { tool: "w".into() }).await;
    let kept = read(&store, "alice", "run-1").await.unwrap();
    assert_eq!(kept.len(), 2);
    let Entry::Call {
        outcome: Called::Ok { result, .. },
        ..
    } = &kept[0]
    else {
        panic!("{kept:?}")
    };
    assert_eq!(result["token"], "[redacted]");
    assert_eq!(kept[1], Entry::Asking { tool: "w".into() });
    assert!(read(&store, "bob", "run-1").await.unwrap().is_empty());
    let text = ledger(&kept);
    assert!(text.contains("call 1: s.a"), "{text}");
    assert!(
        text.contains("waiting for a person to approve a call to w"),
        "{text}"
    );
}

#[test]
fn a_whole_executions_replay_never_goes_live_and_says_what_it_did_not_ask() {
    let log = vec![
        call("s.a", json!({"n": 1}), json!({"content": [], "r": 1})),
        call("s.b", json!({}), json!({"content": [], "r": 2})),
    ];
    let r = CallLog::replaying_whole(7, log.clone());
    assert_eq!(r.replay_left(), 2);
    assert!(matches!(
        r.replay_call("s.a", &digest(&json!({"n": 1}))),
        Replayed::Served { .. }
    ));
    assert_eq!(r.replay_left(), 1);
    assert!(matches!(
        r.replay_call("s.b", &digest(&json!({}))),
        Replayed::Served { .. }
    ));
    assert_eq!(r.replay_left(), 0);
    // Past its end: a divergence naming the call, not a live call.
    let Replayed::Diverged(e) = r.replay_call("s.c", &digest(&json!({}))) else {
        panic!("went live")
    };
    assert!(
        e.message.contains("call 3") && e.message.contains("s.c"),
        "{}",
        e.message
    );
    assert!(r.diverged().is_some());
    // A replay that stopped short leaves steps.
    let short = CallLog::replaying_whole(7, log);
    assert!(matches!(
        short.replay_call("s.a", &digest(&json!({"n": 1}))),
        Replayed::Served { .. }
    ));
    assert_eq!(short.replay_left(), 1);
}

//! Principals and the durable store over HTTP: after a SIGKILL and a restart on the same
//! store, a principal gets its stored values and its finished run back, and another
//! principal presenting those handles gets exactly what a handle never issued gets
//! (docs/store.md).

use serde_json::{Value, json};
use test_support::http::{Generation, McpHttp};

use super::server;

async fn wait(client: &McpHttp, handle: &str) -> (Value, bool) {
    let r = client
        .call("wait", json!({"handle": handle, "timeoutMs": 2000}))
        .await;
    (
        r["structuredContent"].clone(),
        r["isError"].as_bool().unwrap_or(false),
    )
}

#[tokio::test]
async fn after_a_restart_a_principal_gets_its_own_records_and_no_other() {
    let place = test_support::TempDir::new("http-durable");
    let url = format!("sqlite:{}", place.0.join("store.sqlite3").display());
    let settings = json!({"store": {"url": url}});
    let (mut s, toks, _d) = server(2, &[], settings.clone()).await;
    let generation = Generation::Stateless;
    let alice = McpHttp::connect(&s.url, Some(&toks[0]), generation).await;
    let (v, err) = alice
        .exec(json!({"code": "await store('k', 'alice-only'); return 1", "session": "new"}))
        .await;
    assert!(!err, "{v}");
    let session = v["session"]["id"].as_str().unwrap().to_string();
    let (v, err) = alice
        .exec(json!({"code": "return 'alice-result'", "yieldAfterMs": 0}))
        .await;
    assert!(!err, "{v}");
    let handle = v["running"]["handle"].as_str().unwrap().to_string();
    let mut done = false;
    for _ in 0..50 {
        if wait(&alice, &handle).await.0["result"] == json!("alice-result") {
            done = true;
            break;
        }
    }
    assert!(done, "the run did not finish");
    s.child.start_kill().unwrap();
    let _ = s.child.wait().await;

    let (s, toks, _d2) = server(2, &[], settings).await;
    let alice = McpHttp::connect(&s.url, Some(&toks[0]), generation).await;
    let bob = McpHttp::connect(&s.url, Some(&toks[1]), generation).await;
    // Bob first: Alice's handles read like ones never issued, and bringing nothing back.
    let (v, err) = bob
        .exec(json!({"code": "return await load('k')", "session": session}))
        .await;
    assert!(err, "{v}");
    let never = format!("s_{}", "0".repeat(32));
    let (n, _) = bob.exec(json!({"code": "1", "session": never})).await;
    assert_eq!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .replace(&session, "ID"),
        n["error"]["message"]
            .as_str()
            .unwrap()
            .replace(&never, "ID"),
    );
    let (v, err) = wait(&bob, &handle).await;
    assert!(err, "{v}");
    assert_eq!(v["error"]["name"], "HandleError", "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("unknown handle"),
        "{v}"
    );
    // Alice gets both back.
    let (v, err) = alice
        .exec(json!({"code": "return await load('k')", "session": session}))
        .await;
    assert!(!err, "{v}");
    assert_eq!(v["result"], json!("alice-only"));
    let (v, err) = wait(&alice, &handle).await;
    assert!(!err, "{v}");
    assert_eq!(v["result"], json!("alice-result"));
}

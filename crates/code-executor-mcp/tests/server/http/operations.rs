//! The operations face of `serve --http`, split from `http.rs` (a module of it): every
//! refusal of `/mcp` is a JSON-RPC error, `/metrics` requires the token or is served on
//! `--metrics-addr`, and an audit log that cannot be written fails readiness.

use serde_json::{Value, json};
use test_support::http::{Generation, HttpServer, McpHttp};

use super::{EXE, server};

/// A refusal of `/mcp` as docs/http.md promises it: the HTTP status, `Content-Type:
/// application/json`, and a JSON-RPC error with `"id": null` and the given code.
/// A JSON-RPC refusal: `want` is the status and the code; the id is `null` (nothing readable)
/// unless `what` is a case of [`REFUSALS_WITH_AN_ID`].
fn assert_rpc_refusal(what: &str, status: u16, ct: Option<&str>, body: &str, want: (u16, i64)) {
    assert_eq!(status, want.0, "{what}: {body}");
    assert_eq!(ct, Some("application/json"), "{what}: {body}");
    let v: Value =
        serde_json::from_str(body).unwrap_or_else(|e| panic!("{what}: not JSON ({e}): {body}"));
    assert_eq!(v["jsonrpc"], "2.0", "{what}: {v}");
    let id = REFUSALS_WITH_AN_ID
        .iter()
        .find(|(w, _)| *w == what)
        .map_or(Value::Null, |(_, id)| json!(id));
    assert_eq!(v["id"], id, "{what}: {v}");
    assert_eq!(v["error"]["code"], json!(want.1), "{what}: {v}");
    assert!(
        !v["error"]["message"].as_str().unwrap_or("").is_empty(),
        "{what}: {v}"
    );
}

/// Malformed bodies whose id can still be read: the answer carries it (JSON-RPC 2.0).
const REFUSALS_WITH_AN_ID: [(&str, i64); 2] = [
    ("JSON that is not a JSON-RPC message", 1),
    ("a request with a wrong jsonrpc version", 7),
];

#[tokio::test]
async fn every_refusal_of_mcp_is_a_json_rpc_error() {
    let (s, toks, _d) = server(1, &["--max-body-bytes", "2000"], json!({})).await;
    let http = reqwest::Client::new();
    let both = "application/json, text/event-stream";
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}}).to_string();
    let cases: Vec<(&str, reqwest::RequestBuilder, (u16, i64))> = vec![
        (
            "a body that is not JSON",
            http.post(&s.url)
                .header("content-type", "application/json")
                .header("accept", both)
                .body("{not json"),
            (400, -32700),
        ),
        (
            "bytes that are not UTF-8",
            http.post(&s.url)
                .header("content-type", "application/json")
                .header("accept", both)
                .body(vec![0xff, 0xfe, 0x00]),
            (400, -32700),
        ),
        (
            "JSON that is not a JSON-RPC message",
            http.post(&s.url)
                .header("content-type", "application/json")
                .header("accept", both)
                .body("{\"jsonrpc\":\"2.0\",\"id\":1}"),
            (400, -32600),
        ),
        (
            "a request with a wrong jsonrpc version",
            http.post(&s.url)
                .header("content-type", "application/json")
                .header("accept", both)
                .body("{\"jsonrpc\":\"1.0\",\"id\":7,\"method\":\"tools/list\"}"),
            (400, -32600),
        ),
        (
            "a malformed body under a wrong Content-Type",
            http.post(&s.url)
                .header("content-type", "text/plain")
                .header("accept", both)
                .body("{not json"),
            (415, -32000),
        ),
        (
            "a wrong Content-Type",
            http.post(&s.url)
                .header("content-type", "text/plain")
                .header("accept", both)
                .body(init.clone()),
            (415, -32000),
        ),
        (
            "no Content-Type",
            http.post(&s.url).header("accept", both).body(init.clone()),
            (415, -32000),
        ),
        (
            "an Accept without text/event-stream",
            http.post(&s.url)
                .header("content-type", "application/json")
                .header("accept", "application/json")
                .body(init.clone()),
            (406, -32000),
        ),
        ("a PUT", http.put(&s.url).body(init.clone()), (405, -32000)),
        (
            "an unknown transport session",
            http.post(&s.url)
                .header("content-type", "application/json")
                .header("accept", both)
                .header("mcp-session-id", "no-such-session")
                .header("mcp-protocol-version", "2025-11-25")
                .body(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string()),
            (404, -32001),
        ),
        (
            "a body over --max-body-bytes",
            http.post(&s.url)
                .header("content-type", "application/json")
                .header("accept", both)
                .body("x".repeat(5000)),
            (413, -32600),
        ),
    ];
    for (what, req, want) in cases {
        let r = req.bearer_auth(&toks[0]).send().await.unwrap();
        let status = r.status().as_u16();
        let ct = r
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap().to_string());
        let allow = r.headers().get("allow").is_some();
        let body = r.text().await.unwrap();
        assert_rpc_refusal(what, status, ct.as_deref(), &body, want);
        if status == 405 {
            assert!(allow, "405 without Allow");
        }
    }
    // A notification outside MCP, in a transport session, is accepted and ignored, never
    // answered (as over stdio).
    let opened = http
        .post(&s.url)
        .bearer_auth(&toks[0])
        .header("content-type", "application/json")
        .header("accept", both)
        .body(init.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(opened.status(), 200);
    let session = opened.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_string();
    for body in [
        json!({"jsonrpc": "2.0", "method": "x/unknown"}),
        json!({"jsonrpc": "2.0", "method": "notifications/x-unknown", "params": {"a": 1}}),
    ] {
        let r = http
            .post(&s.url)
            .bearer_auth(&toks[0])
            .header("content-type", "application/json")
            .header("accept", both)
            .header("mcp-session-id", &session)
            .header("mcp-protocol-version", "2025-11-25")
            .body(body.to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 202, "{body}");
        assert_eq!(r.text().await.unwrap(), "", "{body}");
    }
    // Without a token, and with a wrong Host.
    let r = http
        .post(&s.url)
        .header("content-type", "application/json")
        .body(init.clone())
        .send()
        .await
        .unwrap();
    let ct = r
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string());
    assert_rpc_refusal(
        "no token",
        r.status().as_u16(),
        ct.as_deref(),
        &r.text().await.unwrap(),
        (401, -32001),
    );
    let r = http
        .post(&s.url)
        .bearer_auth(&toks[0])
        .header("host", "evil.example")
        .header("content-type", "application/json")
        .body(init)
        .send()
        .await
        .unwrap();
    let ct = r
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string());
    assert_rpc_refusal(
        "a wrong Host",
        r.status().as_u16(),
        ct.as_deref(),
        &r.text().await.unwrap(),
        (403, -32000),
    );
}

#[tokio::test]
async fn metrics_require_the_token_or_are_served_on_their_own_address() {
    let (s, toks, _d) = server(1, &["--metrics-addr", "127.0.0.1:0"], json!({})).await;
    let http = reqwest::Client::new();
    let url = format!("{}/metrics", s.base);
    for token in [None, Some("not-a-token-at-all-xxxxxxxx")] {
        let mut req = http.get(&url);
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        let r = req.send().await.unwrap();
        assert_eq!(r.status(), 401, "{token:?}");
        assert!(r.headers().get("www-authenticate").is_some());
        let body = r.text().await.unwrap();
        assert!(!body.contains("code_executor_"), "{body}");
    }
    let r = http.get(&url).bearer_auth(&toks[0]).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert!(
        r.text()
            .await
            .unwrap()
            .contains("# TYPE code_executor_executions_total counter")
    );
    // --metrics-addr: the same page without a token, and nothing else.
    let log = s.log();
    let addr: String = log
        .split("serving /metrics without a token on http://")
        .nth(1)
        .unwrap_or_else(|| panic!("no metrics address in the log:\n{log}"))
        .chars()
        .take_while(|c| *c != '/')
        .collect();
    let r = http
        .get(format!("http://{addr}/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert!(
        r.text()
            .await
            .unwrap()
            .contains("# TYPE code_executor_executions_total counter")
    );
    let r = http.get(format!("http://{addr}/mcp")).send().await.unwrap();
    assert_eq!(r.status(), 404);

    // A loopback server without tokens serves it to anyone, as it serves /mcp.
    let open = HttpServer::start(EXE.as_ref(), json!({}), &[], &[]).await;
    assert_eq!(open.get("/metrics").await.0, 200);
}

#[tokio::test]
async fn an_audit_log_that_cannot_be_written_fails_readiness_and_health_says_so() {
    // Cannot be opened (nothing can be created under /proc), and opened but every write
    // fails (/dev/full).
    for path in ["/proc/no-such-dir/audit.jsonl", "/dev/full"] {
        let (s, toks, _d) = server(1, &[], json!({"audit": {"path": path}})).await;
        let c = McpHttp::connect(&s.url, Some(&toks[0]), Generation::Stateless).await;
        let (v, is_error) = c.exec(json!({"code": "return 1"})).await;
        assert!(!is_error, "{v}");
        let health = c.call("health", json!({})).await;
        let problem = health["structuredContent"]["audit"]["problem"]
            .as_str()
            .unwrap_or_else(|| panic!("{path}: health says nothing: {health}"))
            .to_string();
        assert!(
            problem.contains(path.split('/').nth(1).unwrap()),
            "{problem}"
        );
        let (status, body) = s.get("/readyz").await;
        assert_eq!(status, 503, "{path}: {body}");
        let ready: Value = serde_json::from_str(&body).unwrap();
        assert!(
            ready["problems"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p.as_str().unwrap().contains("audit log is not written")),
            "{path}: {ready}"
        );
        assert!(s.log().contains("audit log"), "{}", s.log());
    }
    // Turned off on purpose: nothing to report.
    let (s, toks, _d) = server(1, &[], json!({"audit": {"enabled": false}})).await;
    let c = McpHttp::connect(&s.url, Some(&toks[0]), Generation::Stateless).await;
    let health = c.call("health", json!({})).await;
    assert_eq!(health["structuredContent"]["audit"]["problem"], Value::Null);
}

//! `serve --http`: the built binary over streamable HTTP, driven by a raw JSON-RPC client in
//! both protocol generations (2025-11-25 with `Mcp-Session-Id`, 2026-07-28 stateless), with
//! the fixture server upstream: authenticated principals and their isolation, the
//! Host/Origin checks, caps and the busy answer, hostile and slow clients, a client that
//! disconnects mid-execution, SIGTERM with executions in flight, and the operations
//! endpoints.

use std::time::Duration;

use serde_json::{Value, json};
use test_support::fixture_entry;
use test_support::http::{Generation, HttpServer, McpHttp};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::common::EXE;

mod durable;
mod operations;

const BOTH: [Generation; 2] = [Generation::Sessions, Generation::Stateless];

/// `n` principals `p0..` with tokens, as the tokens file's text and the tokens.
fn tokens(n: usize) -> (String, Vec<String>) {
    let toks: Vec<String> = (0..n)
        .map(|i| format!("token-of-p{i}-{:0>16}", i * 7919))
        .collect();
    let text = toks
        .iter()
        .enumerate()
        .map(|(i, t)| format!("p{i}={t}\n"))
        .collect();
    (text, toks)
}

/// A server with the fixture upstream and `n` token principals; its tokens.
async fn server(
    n: usize,
    extra: &[&str],
    settings: Value,
) -> (HttpServer, Vec<String>, test_support::TempDir) {
    let dir = test_support::TempDir::new("http");
    let (text, toks) = tokens(n);
    let file = dir.0.join("tokens");
    std::fs::write(&file, text).unwrap();
    test_support::set_mode(&file, 0o600);
    let settings_file = dir.0.join("settings.json");
    std::fs::write(&settings_file, settings.to_string()).unwrap();
    let mut args = vec!["--tokens-file", file.to_str().unwrap()];
    args.extend_from_slice(extra);
    let mut s = HttpServer::start(
        EXE.as_ref(),
        json!({"fx": fixture_entry("fx")}),
        &args,
        &[("CODE_EXECUTOR_CONFIG_PATH", settings_file.to_str().unwrap())],
    )
    .await;
    // /metrics requires a token here, as /mcp does.
    s.token = toks.first().cloned();
    (s, toks, dir)
}

fn error_of(v: &Value) -> (String, String) {
    (
        v["error"]["name"].as_str().unwrap_or("").to_string(),
        v["error"]["message"].as_str().unwrap_or("").to_string(),
    )
}

#[tokio::test]
async fn both_generations_run_code_that_calls_upstream_tools() {
    let (s, toks, _d) = server(1, &[], json!({})).await;
    for generation in BOTH {
        let c = McpHttp::connect(&s.url, Some(&toks[0]), generation).await;
        let tools = c.request("tools/list", json!({})).await;
        let names: Vec<&str> =
            tools.response(2).or(tools.messages.last()).unwrap()["result"]["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["name"].as_str().unwrap())
                .collect();
        assert!(
            names.contains(&"execute_typescript"),
            "{generation:?}: {names:?}"
        );
        let (v, is_error) = c
            .exec(json!({"code": "const r = await tools.fx.echo({message: 'hi'}); return r"}))
            .await;
        assert!(!is_error, "{generation:?}: {v}");
        assert_eq!(v["result"], json!("Echo: hi"), "{generation:?}");
        let health = c.call("health", json!({})).await;
        assert_eq!(
            health["structuredContent"]["principal"],
            json!({"name": "p0", "via": "token"}),
            "{generation:?}"
        );
    }
}

/// Pinned direct tools over HTTP in both generations (a stateless 2026-07-28 request has no
/// session: the listing and the call stand alone): listed, answered with the upstream's own
/// result (with `resultType` on 2026-07-28), denied by a rule as code is, audited under the
/// token's principal.
#[tokio::test]
async fn both_generations_list_and_call_pinned_direct_tools() {
    let (s, toks, _d) = server(
        1,
        &[],
        json!({
            "directTools": ["mcp__fx__add", "mcp__fx__sleep"],
            "policy": {"servers": {"fx": {"deny": ["sleep"]}}},
        }),
    )
    .await;
    for generation in BOTH {
        let c = McpHttp::connect(&s.url, Some(&toks[0]), generation).await;
        let tools = c.request("tools/list", json!({})).await;
        let list = tools.response(2).or(tools.messages.last()).unwrap()["result"]["tools"].clone();
        let add = list
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "fx__add")
            .unwrap_or_else(|| panic!("{generation:?}: {list}"));
        assert!(add["outputSchema"].is_object(), "{add}");
        assert!(
            !list
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t["name"] == "fx__sleep"),
            "{generation:?}: {list}"
        );
        let r = c.call("fx__add", json!({"a": 1, "b": 2})).await;
        assert_eq!(
            r["structuredContent"],
            json!({"sum": 3.0}),
            "{generation:?}: {r}"
        );
        if generation == Generation::Stateless {
            assert_eq!(r["resultType"], "complete", "{r}");
        }
        let r = c.call("fx__sleep", json!({"ms": 1})).await;
        assert_eq!(r["isError"], true, "{generation:?}: {r}");
        assert!(
            r["content"][0]["text"]
                .as_str()
                .unwrap()
                .starts_with("PolicyError: mcp__fx__sleep is denied"),
            "{r}"
        );
    }
    let calls: Vec<(Value, Value)> = s
        .audit()
        .into_iter()
        .filter(|l| l["event"] == "tool.call")
        .map(|l| (l["tool"].clone(), l["decision"].clone()))
        .collect();
    assert_eq!(
        calls,
        [
            (json!("add"), json!("allow")),
            (json!("sleep"), json!("deny")),
            (json!("add"), json!("allow")),
            (json!("sleep"), json!("deny"))
        ]
    );
}

#[tokio::test]
async fn without_a_valid_token_the_answer_is_401_with_a_bearer_challenge() {
    let (s, toks, _d) = server(1, &[], json!({})).await;
    for token in [None, Some("not-a-token-at-all-xxxxxxxx"), Some("")] {
        let c = McpHttp::new(&s.url, token, Generation::Sessions);
        let r = c
            .request(
                "initialize",
                json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}),
            )
            .await;
        assert_eq!(r.status, 401, "{token:?}: {r:?}");
        let challenge = r.header("www-authenticate").unwrap();
        assert!(challenge.starts_with("Bearer "), "{challenge}");
        assert!(r.header("mcp-session-id").is_none());
    }
    // A token of the right length with one byte changed is no token.
    let mut forged = toks[0].clone().into_bytes();
    forged[0] ^= 1;
    let c = McpHttp::new(
        &s.url,
        Some(std::str::from_utf8(&forged).unwrap()),
        Generation::Stateless,
    );
    assert_eq!(c.request("server/discover", json!({})).await.status, 401);
    assert_eq!(
        s.metric("code_executor_auth_failures_total{reason=\"invalid_token\"}")
            .await,
        Some(2.0)
    );
    assert_eq!(
        s.metric("code_executor_auth_failures_total{reason=\"missing\"}")
            .await,
        Some(2.0)
    );
}

/// Two principals: neither sees the other's execution session, stored values, or transport
/// session; each gets "unknown" exactly as for a handle never issued.
#[tokio::test]
async fn principals_cannot_see_each_others_sessions() {
    let (s, toks, _d) = server(2, &[], json!({})).await;
    for generation in BOTH {
        let alice = McpHttp::connect(&s.url, Some(&toks[0]), generation).await;
        let bob = McpHttp::connect(&s.url, Some(&toks[1]), generation).await;
        let (v, is_error) = alice
            .exec(json!({"code": "globalThis.secret = 'alice-only'; await store('k', 42); return 1", "session": "new"}))
            .await;
        assert!(!is_error, "{v}");
        let id = v["session"]["id"].as_str().unwrap().to_string();
        let (v, is_error) = bob
            .exec(json!({"code": "return globalThis.secret", "session": id}))
            .await;
        assert!(is_error, "{v}");
        let (name, message) = error_of(&v);
        assert_eq!(name, "SessionError", "{v}");
        assert!(message.starts_with("unknown session"), "{message}");
        let (never, _) = bob
            .exec(json!({"code": "1", "session": format!("s_{}", "0".repeat(32))}))
            .await;
        assert_eq!(
            error_of(&never)
                .1
                .replace(&format!("s_{}", "0".repeat(32)), "ID"),
            message.replace(&id, "ID"),
            "a foreign handle reads like one never issued"
        );
        // Bob's list of sessions does not show Alice's.
        let listed = bob.call("list_servers", json!({})).await;
        assert_eq!(
            listed["structuredContent"]["sessions"]["mine"],
            json!([]),
            "{listed}"
        );
        let (v, is_error) = alice
            .exec(json!({"code": "return [globalThis.secret, await load('k')]", "session": id}))
            .await;
        assert!(!is_error, "{v}");
        assert_eq!(v["result"], json!(["alice-only", 42]));
        if generation == Generation::Sessions {
            // Bob presenting Alice's Mcp-Session-Id is answered like an unknown session.
            let mut thief = McpHttp::new(&s.url, Some(&toks[1]), generation);
            thief.session = alice.session.clone();
            let stolen = thief.request("tools/list", json!({})).await;
            let mut nobody = McpHttp::new(&s.url, Some(&toks[1]), generation);
            nobody.session = Some("00000000-0000-0000-0000-000000000000".into());
            let unknown = nobody.request("tools/list", json!({})).await;
            assert_eq!(stolen.status, 404, "{stolen:?}");
            assert_eq!(
                (stolen.status, &stolen.body),
                (unknown.status, &unknown.body)
            );
            // Nor can he end it.
            assert_eq!(thief.delete().await, 404);
            assert_eq!(alice.request("tools/list", json!({})).await.status, 200);
            // Alice closes it: 200 (what the SDKs take; rmcp's 202 made the official Python
            // SDK log "Session termination failed: 202"), and it is gone.
            assert_eq!(alice.delete().await, 200);
            assert_eq!(alice.request("tools/list", json!({})).await.status, 404);
        }
    }
}

/// 20 principals at once, half in each generation, each running code that calls upstream
/// with its own marker and keeps state in its own session: nothing crosses.
#[tokio::test]
async fn twenty_principals_at_once_never_see_each_others_results_or_state() {
    let (s, toks, _d) = server(20, &[], json!({"limits": {"maxConcurrentExecutions": 8, "queue": 64}, "sessions": {"maxWorkers": 24}})).await;
    let mut tasks = tokio::task::JoinSet::new();
    for (i, tok) in toks.iter().enumerate() {
        let (url, tok) = (s.url.clone(), tok.clone());
        tasks.spawn(async move {
            let generation = BOTH[i % 2];
            let c = McpHttp::connect(&url, Some(&tok), generation).await;
            let marker = format!("marker-{i}");
            let (v, is_error) = c
                .exec(json!({
                    "code": format!("const r = await tools.fx.echo({{message: '{marker}'}}); globalThis.mine = r; await store('m', '{marker}'); return r"),
                    "session": "new"
                }))
                .await;
            assert!(!is_error, "p{i}: {v}");
            assert_eq!(v["result"], json!(format!("Echo: {marker}")), "p{i}");
            let id = v["session"]["id"].as_str().unwrap().to_string();
            let (v, is_error) = c
                .exec(json!({"code": "const again = await tools.fx.echo({message: await load('m')}); return [globalThis.mine, again]", "session": id}))
                .await;
            assert!(!is_error, "p{i}: {v}");
            assert_eq!(
                v["result"],
                json!([format!("Echo: {marker}"), format!("Echo: {marker}")]),
                "p{i}"
            );
            let health = c.call("health", json!({})).await;
            let mine = &health["structuredContent"]["sessions"]["mine"];
            assert_eq!(mine.as_array().map(Vec::len), Some(1), "p{i}: {health}");
            (i, id)
        });
    }
    let mut ids = std::collections::BTreeSet::new();
    while let Some(r) = tasks.join_next().await {
        let (_, id) = r.unwrap();
        ids.insert(id);
    }
    assert_eq!(ids.len(), 20, "every principal got its own session");
    // Every run.start names its principal; 40 runs by 20 principals, two each.
    let audit = s.audit();
    let mut per: std::collections::BTreeMap<String, usize> = Default::default();
    for l in audit.iter().filter(|l| l["event"] == "run.start") {
        *per.entry(l["client"].as_str().unwrap().to_string())
            .or_default() += 1;
    }
    assert_eq!(per.len(), 20, "{per:?}");
    assert!(
        per.iter().all(|(k, n)| k.starts_with("token:p") && *n == 2),
        "{per:?}"
    );
}

#[tokio::test]
async fn wrong_host_or_origin_is_403() {
    // --allowed-host adds a name; the loopback names stay allowed.
    let (s, toks, _d) = server(1, &["--allowed-host", "mcp.example.internal"], json!({})).await;
    let http = reqwest::Client::new();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}});
    let send = |host: Option<&str>, origin: Option<&str>| {
        let mut b = http
            .post(&s.url)
            .bearer_auth(&toks[0])
            .header("accept", "application/json, text/event-stream")
            .json(&init);
        if let Some(h) = host {
            b = b.header("host", h);
        }
        if let Some(o) = origin {
            b = b.header("origin", o);
        }
        b.send()
    };
    for (host, origin) in [
        (Some("evil.example"), None),
        (Some(format!("rebound.example:{}", s.port).as_str()), None),
        (None, Some("https://evil.example")),
        (None, Some("null")),
    ] {
        let r = send(host, origin).await.unwrap();
        assert_eq!(r.status(), 403, "{host:?} {origin:?}");
        assert!(r.text().await.unwrap().contains("not allowed"));
    }
    for origin in [None, Some(format!("http://localhost:{}", s.port))] {
        let r = send(None, origin.as_deref()).await.unwrap();
        assert_eq!(r.status(), 200, "{origin:?}");
    }
    for host in [
        "mcp.example.internal",
        "mcp.example.internal:443",
        "localhost",
    ] {
        let r = send(Some(host), None).await.unwrap();
        assert_eq!(r.status(), 200, "{host}");
    }
    // The health probes answer whatever the Host.
    let r = http
        .get(format!("{}/healthz", s.base))
        .header("host", "10.1.2.3:3333")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
}

#[tokio::test]
async fn oversized_bodies_are_413_and_malformed_json_rpc_is_an_error_answer() {
    let (s, toks, _d) = server(1, &["--max-body-bytes", "2000"], json!({})).await;
    let c = McpHttp::connect(&s.url, Some(&toks[0]), Generation::Stateless).await;
    let big = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "execute_typescript", "arguments": {"code": "x".repeat(5000)}}});
    let r = c.post_raw(serde_json::to_vec(&big).unwrap()).await;
    assert_eq!(r.status, 413, "{r:?}");
    assert!(r.body.contains("larger than 2000 bytes"), "{}", r.body);
    // JSON-RPC 2.0's answers: a parse error, or `Invalid request` with the id when it can be
    // read, else `"id": null`.
    for (junk, code, id) in [
        (b"{not json".to_vec(), -32700, Value::Null),
        (vec![0xff, 0xfe, 0x00], -32700, Value::Null),
        (b"[]".to_vec(), -32600, Value::Null),
        (b"{}".to_vec(), -32600, Value::Null),
        (b"{\"jsonrpc\":\"2.0\",\"id\":1}".to_vec(), -32600, json!(1)),
        (
            b"{\"jsonrpc\":\"2.0\",\"id\":\"m\",\"method\":5}".to_vec(),
            -32600,
            json!("m"),
        ),
        (
            b"{\"jsonrpc\":\"1.0\",\"id\":3,\"method\":\"ping\"}".to_vec(),
            -32600,
            json!(3),
        ),
        (
            b"{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/list\",\"params\":7}".to_vec(),
            -32600,
            json!(4),
        ),
    ] {
        let r = c.post_raw(junk.clone()).await;
        let what = String::from_utf8_lossy(&junk);
        assert_eq!(r.status, 400, "{what:?}: {r:?}");
        let answer: Value = serde_json::from_str(&r.body).unwrap();
        assert_eq!(answer["jsonrpc"], "2.0", "{what:?}: {answer}");
        assert_eq!(answer["error"]["code"], code, "{what:?}: {answer}");
        assert_eq!(answer.get("id"), Some(&id), "{what:?}: {answer}");
    }
    // The server is fine afterwards.
    let (v, is_error) = c.exec(json!({"code": "return 6 * 7"})).await;
    assert!(!is_error, "{v}");
    assert_eq!(v["result"], json!(42));
}

/// A client that sends its headers or its body too slowly is cut off; others are served.
#[tokio::test]
async fn slow_clients_are_cut_off() {
    let (s, toks, _d) = server(
        1,
        &["--header-timeout", "1", "--body-timeout", "1"],
        json!({}),
    )
    .await;
    // Headers never finished: the server closes the connection.
    let mut slow = tokio::net::TcpStream::connect(("127.0.0.1", s.port))
        .await
        .unwrap();
    slow.write_all(b"POST /mcp HTTP/1.1\r\nHost: localhost\r\n")
        .await
        .unwrap();
    let mut buf = vec![0u8; 1024];
    let n = tokio::time::timeout(Duration::from_secs(10), slow.read(&mut buf))
        .await
        .expect("the server should have closed the connection");
    let text = String::from_utf8_lossy(&buf[..n.unwrap_or(0)]).to_string();
    assert!(
        text.is_empty() || text.starts_with("HTTP/1.1 408"),
        "{text}"
    );
    // A body that never arrives: 408.
    let mut slow = tokio::net::TcpStream::connect(("127.0.0.1", s.port))
        .await
        .unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 500\r\n\r\n{{\"jsonrpc\"",
        toks[0]
    );
    slow.write_all(head.as_bytes()).await.unwrap();
    let mut got = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), slow.read_to_end(&mut got)).await;
    let text = String::from_utf8_lossy(&got);
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    let c = McpHttp::connect(&s.url, Some(&toks[0]), Generation::Sessions).await;
    assert_eq!(c.request("tools/list", json!({})).await.status, 200);
}

/// Over the connection cap the answer is a clear busy (503, Retry-After); once connections
/// close the server answers normally.
#[tokio::test]
async fn a_burst_beyond_the_caps_gets_the_busy_answer_and_service_resumes() {
    let (s, toks, _d) = server(
        1,
        &[
            "--max-connections",
            "4",
            "--max-sessions-per-principal",
            "2",
        ],
        json!({}),
    )
    .await;
    // Four idle connections fill the cap.
    let mut held = vec![];
    for _ in 0..4 {
        held.push(
            tokio::net::TcpStream::connect(("127.0.0.1", s.port))
                .await
                .unwrap(),
        );
    }
    // Wait until the server has taken all four (it counts them when accepted).
    let probe = || async {
        let mut t = tokio::net::TcpStream::connect(("127.0.0.1", s.port))
            .await
            .unwrap();
        t.write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
            .await
            .unwrap();
        let mut got = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(10), t.read_to_end(&mut got)).await;
        String::from_utf8_lossy(&got).to_string()
    };
    let mut answers = vec![];
    for _ in 0..8 {
        answers.push(probe().await);
    }
    assert!(
        answers.iter().all(|a| a.starts_with("HTTP/1.1 503")),
        "{answers:?}"
    );
    assert!(
        answers[0].to_ascii_lowercase().contains("retry-after: 1"),
        "{}",
        answers[0]
    );
    assert!(answers[0].contains("busy: the server is serving its maximum of connections"));
    drop(held);
    // Served again once they are gone (the server notices the closes).
    let c = loop {
        let r = reqwest::Client::new()
            .get(format!("{}/healthz", s.base))
            .send()
            .await
            .unwrap();
        if r.status() == 200 {
            break McpHttp::connect(&s.url, Some(&toks[0]), Generation::Sessions).await;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    // The per-principal transport-session cap: a third session is busy.
    let _second = McpHttp::connect(&s.url, Some(&toks[0]), Generation::Sessions).await;
    let third = McpHttp::new(&s.url, Some(&toks[0]), Generation::Sessions)
        .request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}),
        )
        .await;
    assert_eq!(third.status, 503, "{third:?}");
    assert!(
        third.body.contains("maximum per principal"),
        "{}",
        third.body
    );
    // Closing one makes room.
    assert_eq!(c.delete().await, 200);
    let _fourth = McpHttp::connect(&s.url, Some(&toks[0]), Generation::Sessions).await;
    assert!(
        s.metric("code_executor_http_connections_rejected_total")
            .await
            .unwrap()
            >= 8.0
    );
}

/// A Unix socket the fixture's `hold` tool connects to: the test knows the upstream call is
/// running, and releases it by dropping the connection.
pub(crate) struct Hold {
    listener: tokio::net::UnixListener,
    pub(crate) path: std::path::PathBuf,
    _dir: test_support::TempDir,
}

impl Hold {
    pub(crate) fn new() -> Hold {
        let dir = test_support::TempDir::new("hold");
        let path = dir.0.join("hold.sock");
        Hold {
            listener: tokio::net::UnixListener::bind(&path).unwrap(),
            path,
            _dir: dir,
        }
    }

    pub(crate) async fn arrived(&self) -> tokio::net::UnixStream {
        tokio::time::timeout(Duration::from_secs(30), self.listener.accept())
            .await
            .expect("the upstream call did not start")
            .unwrap()
            .0
    }
}

/// The client goes away while its execution waits on an upstream call: the execution is
/// cancelled (its worker killed), the upstream call is recorded cancelled, and the server
/// keeps serving.
#[tokio::test]
async fn a_client_disconnecting_mid_execution_cancels_it() {
    disconnect_mid_execution(Generation::Stateless).await;
}

#[tokio::test]
async fn a_session_client_disconnecting_mid_execution_cancels_it() {
    disconnect_mid_execution(Generation::Sessions).await;
}

async fn disconnect_mid_execution(generation: Generation) {
    let (s, toks, _d) = server(1, &[], json!({})).await;
    let hold = Hold::new();
    let c = McpHttp::connect(&s.url, Some(&toks[0]), generation).await;
    let code = format!(
        "await tools.fx.hold({{socket: {:?}}}); return 'finished'",
        hold.path.to_str().unwrap()
    );
    let call = tokio::spawn(async move { c.exec(json!({"code": code})).await });
    let _upstream = hold.arrived().await;
    assert_eq!(
        s.metric("code_executor_executions_running").await,
        Some(1.0)
    );
    call.abort();
    let _ = call.await;
    // The run ends as cancelled once the server sees the connection gone.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        if s.metric("code_executor_executions_total{outcome=\"cancelled\"}")
            .await
            == Some(1.0)
        {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{}", s.log());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        s.metric("code_executor_executions_running").await,
        Some(0.0)
    );
    assert_eq!(
        s.metric("code_executor_tool_calls_total{server=\"fx\",outcome=\"cancelled\"}")
            .await,
        Some(1.0)
    );
    let c = McpHttp::connect(&s.url, Some(&toks[0]), generation).await;
    let (v, _) = c.exec(json!({"code": "return 'still here'"})).await;
    assert_eq!(v["result"], json!("still here"));
}

/// SIGTERM with an execution in flight: the server stops accepting, the execution finishes
/// and its answer arrives, the server exits 0; one that outlives the grace is cancelled and
/// recorded so in the audit log.
#[tokio::test]
async fn sigterm_lets_running_executions_finish_then_exits() {
    let (mut s, toks, _d) = server(1, &["--shutdown-grace", "20"], json!({})).await;
    let hold = Hold::new();
    let c = McpHttp::connect(&s.url, Some(&toks[0]), Generation::Stateless).await;
    let code = format!(
        "await tools.fx.hold({{socket: {:?}}}); return 'finished'",
        hold.path.to_str().unwrap()
    );
    let call = tokio::spawn(async move { c.exec(json!({"code": code})).await });
    let upstream = hold.arrived().await;
    s.sigterm();
    // Not ready any more, and no new connections once the listener is gone.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while tokio::net::TcpStream::connect(("127.0.0.1", s.port))
        .await
        .is_ok()
    {
        assert!(tokio::time::Instant::now() < deadline, "still accepting");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    drop(upstream);
    let (v, is_error) = call.await.unwrap();
    assert!(!is_error, "{v}");
    assert_eq!(v["result"], json!("finished"));
    let status = tokio::time::timeout(Duration::from_secs(20), s.child.wait())
        .await
        .expect("the server did not exit")
        .unwrap();
    assert!(status.success(), "{status:?}\n{}", s.log());
    let ends: Vec<Value> = s
        .audit()
        .into_iter()
        .filter(|l| l["event"] == "run.end")
        .collect();
    assert_eq!(ends.len(), 1);
    assert_eq!(ends[0]["outcome"], "ok");

    // Past the grace: cancelled, recorded, exit.
    let (mut s, toks, _d) = server(1, &["--shutdown-grace", "1"], json!({})).await;
    let hold = Hold::new();
    let c = McpHttp::connect(&s.url, Some(&toks[0]), Generation::Sessions).await;
    let code = format!(
        "await tools.fx.hold({{socket: {:?}}}); return 'finished'",
        hold.path.to_str().unwrap()
    );
    let call =
        tokio::spawn(async move { c.call("execute_typescript", json!({"code": code})).await });
    let _upstream = hold.arrived().await;
    s.sigterm();
    let status = tokio::time::timeout(Duration::from_secs(20), s.child.wait())
        .await
        .expect("the server did not exit")
        .unwrap();
    assert!(status.success(), "{status:?}\n{}", s.log());
    let _ = call.await;
    let ends: Vec<Value> = s
        .audit()
        .into_iter()
        .filter(|l| l["event"] == "run.end")
        .collect();
    assert_eq!(ends.len(), 1, "{ends:?}");
    assert_eq!(ends[0]["outcome"], "cancelled");
    assert!(
        s.log().contains("cancelling the executions still running"),
        "{}",
        s.log()
    );
}

#[tokio::test]
async fn health_readiness_and_metrics() {
    let (s, toks, _d) = server(1, &[], json!({})).await;
    assert_eq!(
        s.get("/healthz").await,
        (200, json!({"status": "alive"}).to_string())
    );
    // Ready once the pools are warm.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let ready = loop {
        let (status, body) = s.get("/readyz").await;
        if status == 200 {
            break body;
        }
        assert_eq!(status, 503, "{body}");
        assert!(
            tokio::time::Instant::now() < deadline,
            "never ready: {body}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let ready: Value = serde_json::from_str(&ready).unwrap();
    assert_eq!(ready["ready"], json!(true));
    let c = McpHttp::connect(&s.url, Some(&toks[0]), Generation::Sessions).await;
    let (v, _) = c
        .exec(json!({"code": "await tools.fx.echo({message: 'a'}); try { await tools.fx.fail({message: 'no'}) } catch {} ; return 1"}))
        .await;
    assert_eq!(v["result"], json!(1));
    let (_, is_error) = c.exec(json!({"code": "throw new Error('x')"})).await;
    assert!(is_error);
    let (status, text) = s.get("/metrics").await;
    assert_eq!(status, 200);
    for sample in [
        "code_executor_executions_total{outcome=\"ok\"} 1",
        "code_executor_executions_total{outcome=\"error\"} 1",
        "code_executor_tool_calls_total{server=\"fx\",outcome=\"ok\"} 1",
        "code_executor_tool_calls_total{server=\"fx\",outcome=\"tool_error\"} 1",
        "code_executor_execution_duration_seconds_count 2",
        "code_executor_transport_sessions 1",
        "code_executor_pool_target{language=\"js\"} 2",
    ] {
        assert!(
            text.lines().any(|l| l == sample),
            "{sample} missing:\n{text}"
        );
    }
    assert!(text.contains("# TYPE code_executor_executions_total counter"));
}

/// Off loopback, the server refuses to start without authentication.
#[tokio::test]
async fn a_non_loopback_address_requires_authentication() {
    let err = HttpServer::start_on(EXE.as_ref(), "0.0.0.0:0", json!({}), &[], &[])
        .await
        .err()
        .expect("it must not start");
    assert!(err.contains("refusing to serve 0.0.0.0:"), "{err}");
    assert!(err.contains("without authentication"), "{err}");
}

/// On loopback without tokens the client's declared name is its principal, as on stdio.
#[tokio::test]
async fn loopback_without_tokens_uses_the_declared_name() {
    let s = HttpServer::start(EXE.as_ref(), json!({}), &[], &[]).await;
    let c = McpHttp::connect(&s.url, None, Generation::Sessions).await;
    let health = c.call("health", json!({})).await;
    assert_eq!(
        health["structuredContent"]["principal"],
        json!({"name": "http-test", "via": "declared"})
    );
}

/// `--log-format json`: every log line is one JSON object (for log collectors), the access
/// log names the principal and the MCP method.
#[tokio::test]
async fn logs_can_be_json_lines() {
    let dir = test_support::TempDir::new("jsonlog");
    let file = dir.0.join("tokens");
    std::fs::write(&file, "carol=carol-token-0123456789\n").unwrap();
    test_support::set_mode(&file, 0o600);
    let s = HttpServer::start(
        EXE.as_ref(),
        json!({}),
        &[
            "--log-format",
            "json",
            "--tokens-file",
            file.to_str().unwrap(),
        ],
        &[("RUST_LOG", "info,rmcp=warn,code_executor_mcp::http=debug")],
    )
    .await;
    let c = McpHttp::connect(
        &s.url,
        Some("carol-token-0123456789"),
        Generation::Stateless,
    )
    .await;
    c.call("health", json!({})).await;
    let log = s.log();
    let lines: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    assert!(lines.iter().any(|l| {
        l["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("serving MCP on"))
    }));
    assert!(
        lines.iter().any(|l| l["message"] == "mcp request"
            && l["principal"] == "token:carol"
            && l["method"] == "tools/call"
            && l["status"] == 200),
        "{log}"
    );
}

/// Limits are per principal: one principal at its maximum of executions at once waits (or
/// is over its rate and is told busy) while another runs at once.
#[tokio::test]
async fn limits_are_per_principal() {
    let (s, toks, _d) = server(
        2,
        &[],
        json!({"limits": {"maxConcurrentPerClient": 1, "executionsPerMinute": 3}}),
    )
    .await;
    let hold = Hold::new();
    let a = McpHttp::connect(&s.url, Some(&toks[0]), Generation::Stateless).await;
    let b = McpHttp::connect(&s.url, Some(&toks[1]), Generation::Stateless).await;
    let code = format!(
        "await tools.fx.hold({{socket: {:?}}}); return 'first'",
        hold.path.to_str().unwrap()
    );
    let a = std::sync::Arc::new(a);
    let a1 = a.clone();
    let first = tokio::spawn(async move { a1.exec(json!({"code": code})).await });
    let upstream = hold.arrived().await;
    // A's second execution queues behind its first...
    let a2 = a.clone();
    let second = tokio::spawn(async move { a2.exec(json!({"code": "return 'second'"})).await });
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while s.metric("code_executor_admission_in_flight").await != Some(2.0) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the second did not queue"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!second.is_finished());
    // ...while B runs at once.
    let (v, is_error) = b.exec(json!({"code": "return 'b'"})).await;
    assert!(!is_error, "{v}");
    assert_eq!(v["result"], json!("b"));
    drop(upstream);
    assert_eq!(first.await.unwrap().0["result"], json!("first"));
    assert_eq!(second.await.unwrap().0["result"], json!("second"));
    // A's third execution this minute is its last; the fourth is refused as busy, B's is not.
    let (v, _) = a.exec(json!({"code": "return 3"})).await;
    assert_eq!(v["result"], json!(3));
    let (v, is_error) = a.exec(json!({"code": "return 4"})).await;
    assert!(is_error, "{v}");
    let (name, message) = error_of(&v);
    assert_eq!(name, "BusyError", "{v}");
    assert!(
        message.contains("\"token:p0\" is over its rate of 3 executions per minute"),
        "{message}"
    );
    let (v, is_error) = b.exec(json!({"code": "return 'b again'"})).await;
    assert!(!is_error, "{v}");
}

/// Skills are shared by the principals of one server, but one principal cannot change the
/// code another runs under its own rights: alice's skill is saved over only by alice; bob
/// runs it (with his own rights) and saves his own under another name; both generations.
#[tokio::test]
async fn a_principal_cannot_save_over_anothers_skill() {
    let dir = test_support::TempDir::new("http-skills");
    let (s, toks, _d) = server(2, &[], json!({"skills": {"dir": dir.0}})).await;
    let save =
        |code: &str| json!({"code": code, "save": {"name": "report", "description": "A report."}});
    for (i, generation) in BOTH.into_iter().enumerate() {
        let alice = McpHttp::connect(&s.url, Some(&toks[0]), generation).await;
        let bob = McpHttp::connect(&s.url, Some(&toks[1]), generation).await;
        let r = alice
            .call("execute_typescript", save("return 'alice'"))
            .await;
        assert_ne!(r["isError"], true, "{r}");
        assert_eq!(r["structuredContent"]["result"]["version"], i + 1, "{r}");
        let r = bob.call("execute_typescript", save("return 'bob'")).await;
        assert_eq!(r["isError"], true, "{r}");
        let m = r["structuredContent"]["error"]["message"]
            .as_str()
            .unwrap_or("");
        assert!(
            m.contains("was saved by token:p0") && m.contains("another name"),
            "{r}"
        );
        let r = bob
            .call("execute_typescript", json!({"skill": "report"}))
            .await;
        assert_eq!(r["structuredContent"]["result"], "alice", "{r}");
    }
    // A check that cannot decide refuses: once alice's SKILL.md cannot be read back (grown
    // past what is read), nobody saves over it, bob nor alice, and nobody runs it.
    let md = dir.0.join("report/SKILL.md");
    let mut text = std::fs::read_to_string(&md).unwrap();
    text.push_str(&"\"enum value\", ".repeat(100_000));
    std::fs::write(&md, text).unwrap();
    for tok in [&toks[1], &toks[0]] {
        let c = McpHttp::connect(&s.url, Some(tok), BOTH[0]).await;
        let r = c.call("execute_python", save("'taken over'")).await;
        assert_eq!(r["isError"], true, "{r}");
        let m = r["structuredContent"]["error"]["message"]
            .as_str()
            .unwrap_or("");
        assert!(m.contains("nobody may save over it"), "{r}");
        let r = c.call("execute_python", json!({"skill": "report"})).await;
        assert_eq!(r["isError"], true, "{r}");
    }
    assert_eq!(
        std::fs::read_to_string(dir.0.join("report/skill.ts")).unwrap(),
        "return 'alice'"
    );
}

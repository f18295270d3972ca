//! Model calls from code answered by a configured provider (the client here has no sampling):
//! a mock provider on loopback speaks both API styles (Anthropic Messages, OpenAI-compatible
//! chat), and fails, stalls, or answers, as each test needs. The built server is driven by an
//! rmcp client over stdio.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use test_support::{Harness, TempDir};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::common::EXE;

const KEY: &str = "sk-mock-key-0123456789";
const SECRET: &str = "upstream-secret-98765";

/// One request the mock received: path, headers (lowercase names), JSON body.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub(crate) path: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Value,
}

/// A loopback HTTP server answering like a model provider. The last user message decides:
/// `FAIL` -> 500 with an error message, `SLOW` -> no answer for 10 s, `GARBAGE` -> not JSON,
/// else an answer `reply to: <text>` with usage 7 in / 3 out.
pub(crate) async fn mock_provider() -> (String, Arc<Mutex<Vec<Seen>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let log = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            let log = log.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 8192];
                let (head, body_start) = loop {
                    let n = sock.read(&mut chunk).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        break (String::from_utf8_lossy(&buf[..i]).to_string(), i + 4);
                    }
                };
                let mut lines = head.lines();
                let path = lines
                    .next()
                    .and_then(|l| l.split(' ').nth(1))
                    .unwrap_or_default()
                    .to_string();
                let headers: Vec<(String, String)> = lines
                    .filter_map(|l| l.split_once(':'))
                    .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
                    .collect();
                let len: usize = headers
                    .iter()
                    .find(|(k, _)| k == "content-length")
                    .and_then(|(_, v)| v.parse().ok())
                    .unwrap_or(0);
                while buf.len() < body_start + len {
                    let n = sock.read(&mut chunk).await.unwrap_or(0);
                    if n == 0 {
                        break;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                }
                let body: Value = serde_json::from_slice(&buf[body_start..]).unwrap_or(Value::Null);
                log.lock().unwrap().push(Seen {
                    path: path.clone(),
                    headers,
                    body: body.clone(),
                });
                let last = body["messages"]
                    .as_array()
                    .and_then(|m| m.last())
                    .and_then(|m| m["content"].as_str())
                    .unwrap_or_default()
                    .to_string();
                let (status, text) = if last.contains("FAIL") {
                    (
                        500,
                        json!({"error": {"message": "mock provider is down"}}).to_string(),
                    )
                } else if last.contains("SLOW") {
                    tokio::time::sleep(std::time::Duration::from_secs(10)).await;
                    (200, "{}".into())
                } else if last.contains("GARBAGE") {
                    (200, "<html>not json</html>".into())
                } else if path.ends_with("/v1/messages") {
                    (
                        200,
                        json!({
                            "model": "mock-claude", "stop_reason": "end_turn",
                            "content": [{"type": "text", "text": format!("reply to: {last}")}],
                            "usage": {"input_tokens": 7, "output_tokens": 3}
                        })
                        .to_string(),
                    )
                } else {
                    (200, json!({
                        "model": "mock-gpt",
                        "choices": [{"message": {"role": "assistant", "content": format!("reply to: {last}")}}],
                        "usage": {"prompt_tokens": 7, "completion_tokens": 3}
                    }).to_string())
                };
                let reason = if status == 200 {
                    "OK"
                } else {
                    "Internal Server Error"
                };
                let resp = format!(
                    "HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                    text.len()
                );
                let _ = sock.write_all(resp.as_bytes()).await;
            });
        }
    });
    (format!("http://{addr}"), seen)
}

/// The server with `llm` settings `llm` and a fixture upstream whose env holds a secret.
async fn server(llm: Value, dir: &TempDir) -> Harness {
    let settings: PathBuf = dir.0.join("settings.json");
    std::fs::write(&settings, json!({ "llm": llm }).to_string()).unwrap();
    let mut fix = test_support::fixture_entry("fix");
    fix["env"] = json!({ "FIX_TOKEN": SECRET });
    Harness::start(
        std::path::Path::new(EXE),
        json!({ "fix": fix }),
        &[],
        &[
            ("CODE_EXECUTOR_CONFIG_PATH", settings.to_str().unwrap()),
            ("MOCK_PROVIDER_KEY", KEY),
        ],
    )
    .await
}

fn header<'a>(s: &'a Seen, name: &str) -> Option<&'a str> {
    s.headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

#[tokio::test]
async fn anthropic_style_provider_answers_with_key_from_env_and_secrets_redacted() {
    let (url, seen) = mock_provider().await;
    let dir = TempDir::new("llm-anthropic");
    let h = server(
        json!({"enabled": true, "provider": {"api": "anthropic", "baseUrl": url, "model": "m1", "apiKeyEnv": "MOCK_PROVIDER_KEY"}}),
        &dir,
    )
    .await;
    let (v, err) = h
        .exec(&format!(
            "return await llm.ask('hello {SECRET} and {KEY}', {{ system: 'terse', maxTokens: 40 }})"
        ))
        .await;
    assert!(!err, "{v}");
    assert_eq!(v["result"], "reply to: hello [redacted] and [redacted]");
    assert_eq!(
        v["llm"],
        json!({"calls": 1, "inputTokens": 7, "outputTokens": 3})
    );
    let s = seen.lock().unwrap()[0].clone();
    assert_eq!(s.path, "/v1/messages");
    assert_eq!(header(&s, "x-api-key"), Some(KEY));
    assert!(header(&s, "anthropic-version").is_some());
    assert_eq!(s.body["model"], "m1");
    assert_eq!(s.body["system"], "terse");
    assert_eq!(s.body["max_tokens"], 40);
    assert!(!s.body.to_string().contains(SECRET));
}

#[tokio::test]
async fn openai_style_provider_answers_python_think_with_the_whole_conversation() {
    let (url, seen) = mock_provider().await;
    let dir = TempDir::new("llm-openai");
    let h = server(
        json!({"provider": {"api": "openai", "baseUrl": format!("{url}/v1"), "model": "gpt-mock", "apiKeyEnv": "MOCK_PROVIDER_KEY"}}),
        &dir,
    )
    .await;
    // Off in the settings: the per-call switch turns it on.
    let (v, err) = h
        .exec_python_with(json!({"code": "llm.think([{'role': 'user', 'content': 'a'}, {'role': 'assistant', 'content': 'b'}, {'role': 'user', 'content': 'c'}], system='s')", "enableSampling": true}))
        .await;
    assert!(!err, "{v}");
    assert_eq!(v["result"], "reply to: c");
    let s = seen.lock().unwrap()[0].clone();
    assert_eq!(s.path, "/v1/chat/completions");
    assert_eq!(
        header(&s, "authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(
        s.body["messages"],
        json!([{"role": "system", "content": "s"}, {"role": "user", "content": "a"},
               {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"}])
    );
    // Without the switch, and not enabled in the settings: a PolicyError that says how.
    let (v, err) = h.exec("return await llm.ask('x')").await;
    assert!(err, "{v}");
    assert_eq!(v["error"]["name"], "PolicyError");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("enableSampling")
    );
}

#[tokio::test]
async fn provider_errors_timeouts_and_garbage_are_catchable_tool_errors() {
    let (url, _) = mock_provider().await;
    let dir = TempDir::new("llm-errors");
    let h = server(
        json!({"enabled": true, "provider": {"api": "openai", "baseUrl": url, "model": "m", "timeoutMs": 500}}),
        &dir,
    )
    .await;
    let (v, err) = h
        .exec(
            "const out = {};
             for (const p of ['FAIL', 'SLOW', 'GARBAGE']) {
               try { await llm.ask(p); out[p] = 'answered'; } catch (e) { out[p] = [e.name, e.message]; }
             }
             out.ok = await llm.ask('fine');
             return out;",
        )
        .await;
    assert!(!err, "{v}");
    let r = &v["result"];
    assert_eq!(r["FAIL"][0], "ToolError");
    assert!(
        r["FAIL"][1]
            .as_str()
            .unwrap()
            .contains("mock provider is down"),
        "{r}"
    );
    assert!(
        r["SLOW"][1]
            .as_str()
            .unwrap()
            .contains("did not answer within 500 ms"),
        "{r}"
    );
    assert!(
        r["GARBAGE"][1].as_str().unwrap().contains("not JSON"),
        "{r}"
    );
    assert_eq!(r["ok"], "reply to: fine");
    assert_eq!(v["llm"]["calls"], 4);
}

#[tokio::test]
async fn budgets_end_a_loop_of_calls_with_a_limit_error() {
    let (url, seen) = mock_provider().await;
    let dir = TempDir::new("llm-budget");
    let h = server(
        json!({"enabled": true, "maxCalls": 3, "maxOutputTokens": 100,
               "provider": {"api": "anthropic", "baseUrl": url, "model": "m"}}),
        &dir,
    )
    .await;
    let (v, err) = h
        .exec(
            "const got = [];
             try { for (let i = 0; i < 5; i++) got.push(await llm.ask('q' + i)); }
             catch (e) { return { got, name: e.name, message: e.message }; }
             return { got };",
        )
        .await;
    assert!(!err, "{v}");
    assert_eq!(v["result"]["got"].as_array().unwrap().len(), 3, "{v}");
    assert_eq!(v["result"]["name"], "LimitError");
    assert!(
        v["result"]["message"]
            .as_str()
            .unwrap()
            .contains("llm.maxCalls")
    );
    assert_eq!(seen.lock().unwrap().len(), 3);
    // The output budget caps one answer's length too.
    assert!(seen.lock().unwrap()[0].body["max_tokens"].as_u64().unwrap() <= 100);
    // A prompt past the input budget is refused before anything is sent.
    let dir2 = TempDir::new("llm-budget-in");
    let h2 = server(
        json!({"enabled": true, "maxInputTokens": 10, "provider": {"api": "anthropic", "baseUrl": url, "model": "m"}}),
        &dir2,
    )
    .await;
    let before = seen.lock().unwrap().len();
    let (v, err) = h2.exec("return await llm.ask('x'.repeat(400))").await;
    assert!(err, "{v}");
    assert_eq!(v["error"]["name"], "LimitError");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("llm.maxInputTokens")
    );
    assert_eq!(seen.lock().unwrap().len(), before);
}

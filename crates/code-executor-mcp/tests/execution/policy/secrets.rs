//! No configured secret an upstream echoes (in any shape, over stdio or HTTP, to either
//! language) reaches the client, the server's log or the audit log
//! (`policy::redact` in the server).

use serde_json::{Value, json};

use super::EXE;

/// Credentials of the leaking upstreams: a stdio server's env value, one with what JSON
/// escapes (a quote, a backslash, non-ASCII), and a failing server's own.
const TOKEN: &str = "ghp_StdioEnvSecret0123456789";
const QUOTED: &str = "q\"uo\\te-é-secret-42";
const DYING: &str = "dying-server-secret-77";

/// The leaking fixture (`leak` echoes `env:TOK` in any shape, its description quotes it) and
/// one that fails to start saying its token on stderr.
fn leaking_servers() -> Value {
    let fixture = test_support::workspace_bin("fixture-server");
    json!({
        "fx": {"command": fixture, "args": ["fx"], "env": {
            "TOK": TOKEN, "QUOTED": QUOTED, "MODE": "production", "USR": "admin",
            "FIXTURE_META_TOOLS": "1", "FIXTURE_LEAK_IN_DESCRIPTION": "TOK"}},
        "dead": {"command": fixture, "args": ["dead"], "env": {
            "FIXTURE_FAIL_TO_START": "1", "FIXTURE_FAIL_SAYS": "TOK", "TOK": DYING}},
    })
}

/// Drives the built server over raw stdio with `calls` (`tools/call` params, each with a
/// progress token), returning every line it wrote (answers and notifications alike), its
/// log and its audit file.
async fn raw_stdio(servers: Value, calls: &[Value]) -> (String, String, String) {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let config = test_support::TempConfig::new(servers);
    let log = config.dir.join("server.log");
    let mut child = tokio::process::Command::new(EXE)
        .args(["--config", config.path.to_str().unwrap(), "--no-discover"])
        .env("XDG_STATE_HOME", config.dir.join("state"))
        .env("CODE_EXECUTOR_CACHE_DIR", config.dir.join("cache"))
        .env("RUST_LOG", "debug")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::fs::File::create(&log).unwrap())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut wire = String::new();
    let mut send = async |m: Value| {
        stdin.write_all(format!("{m}\n").as_bytes()).await.unwrap();
    };
    send(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}}),
    )
    .await;
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
    for (i, call) in calls.iter().enumerate() {
        let mut params = call.clone();
        params["_meta"] = json!({"progressToken": format!("p{i}")});
        send(json!({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call", "params": params}))
            .await;
        loop {
            let line = lines
                .next_line()
                .await
                .unwrap()
                .expect("the server answers");
            wire.push_str(&line);
            wire.push('\n');
            let m: Value = serde_json::from_str(&line).expect("every line is JSON");
            if m["id"] == json!(i + 1) {
                break;
            }
        }
    }
    drop(stdin);
    while let Ok(Some(line)) = lines.next_line().await {
        wire.push_str(&line);
        wire.push('\n');
    }
    let _ = child.wait().await;
    let audit = config.dir.join("state/code-executor-mcp/audit.jsonl");
    (
        wire,
        std::fs::read_to_string(log).unwrap_or_default(),
        std::fs::read_to_string(audit).unwrap_or_default(),
    )
}

/// No secret, and none of the forms it was echoed in, is anywhere in `text`.
fn assert_no_secret(what: &str, text: &str) {
    for secret in [TOKEN, QUOTED, DYING] {
        let escaped = serde_json::to_string(secret).unwrap();
        for form in [secret, &escaped[1..escaped.len() - 1], "uo\\\\te-\\u00e9"] {
            assert!(!text.contains(form), "{form} is in the {what}:\n{text}");
        }
    }
}

/// Every shape an upstream can echo its own env token in (a result, an error, a JSON-RPC
/// error, progress, a log message, resource links, embedded resources, image metadata,
/// structured content, a 2 MiB text, a text split over two blocks, JSON with escapes, a tool
/// description, a dying server's stderr), read from TypeScript and Python (through the typed
/// proxies, whose structured shape keeps the two blocks apart) and returned in full: the
/// client's whole wire, the server's log and the audit file hold none of it; what merely
/// resembles a secret (a common word, a short value) comes back whole.
#[tokio::test]
async fn no_configured_secret_an_upstream_echoes_reaches_the_client_log_or_audit() {
    let ts = r#"
        const out = {};
        for (const as of ['text', 'error', 'rpc_error', 'blocks', 'split', 'progress', 'log']) {
          try { out[as] = await tools.fx.leak({ what: 'env:TOK', as }); }
          catch (e) { out[as] = e.name + ': ' + e.message; }
        }
        out.joined = out.split.join('');
        out.quoted = await callMCPTool('fx', 'leak', { what: 'env:QUOTED', as: 'json' });
        out.word = await callMCPTool('fx', 'leak', { what: 'env:MODE' });
        out.short = await callMCPTool('fx', 'leak', { what: 'env:USR' });
        try { await tools.dead.echo({ message: 'x' }); } catch (e) { out.dead = e.message; }
        out.described = (await searchTools('echoes a credential', { detail: 'full' })).tools;
        console.log(JSON.stringify(out.text));
        return out;
    "#;
    let py = r#"
out = {}
for shape in ['text', 'error', 'rpc_error', 'blocks', 'split']:
    try:
        out[shape] = tools.fx.leak({'what': 'env:TOK', 'as': shape})
    except Exception as e:
        out[shape] = type(e).__name__ + ': ' + str(e)
out['joined'] = ''.join(out['split'])
out['quoted'] = call_mcp_tool('fx', 'leak', {'what': 'env:QUOTED', 'as': 'json'})
print(out['text'])
out
"#;
    let big_ts = "return await callMCPTool('fx', 'leak', { what: 'env:TOK', as: 'big' });";
    let big_py = "r = call_mcp_tool('fx', 'leak', {'what': 'env:TOK', 'as': 'big'})\nr";
    let (wire, log, audit) = raw_stdio(
        leaking_servers(),
        &[
            json!({"name": "execute_typescript", "arguments": {"code": ts}}),
            json!({"name": "execute_python", "arguments": {"code": py}}),
            json!({"name": "execute_typescript", "arguments": {"code": big_ts}}),
            json!({"name": "execute_python", "arguments": {"code": big_py}}),
            json!({"name": "list_servers", "arguments": {}}),
            json!({"name": "health", "arguments": {}}),
            json!({"name": "search_tools", "arguments": {"query": "leak credential", "detail": "full"}}),
            json!({"name": "get_tool_schema", "arguments": {"name": "mcp__fx__leak"}}),
        ],
    )
    .await;
    assert_no_secret("client's wire", &wire);
    assert_no_secret("server log", &log);
    assert_no_secret("audit log", &audit);
    let answers: Vec<Value> = wire
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|m| m["id"].as_u64().is_some_and(|id| id >= 1))
        .collect();
    let ts = &answers[0]["result"]["structuredContent"];
    assert_eq!(ts["result"]["text"], "upstream says: [redacted]", "{ts}");
    assert_eq!(
        ts["result"]["error"], "ToolError: bad credentials: [redacted]",
        "{ts}"
    );
    assert_eq!(
        ts["result"]["quoted"],
        json!({"token": "[redacted]"}),
        "{ts}"
    );
    // Split across two blocks, each piece was cut before code saw it.
    assert_eq!(ts["result"]["joined"], "[redacted][redacted]", "{ts}");
    assert_eq!(ts["result"]["word"], "upstream says: production", "{ts}");
    assert_eq!(ts["result"]["short"], "upstream says: admin", "{ts}");
    assert!(
        ts["result"]["dead"]
            .as_str()
            .unwrap()
            .contains("failed to start"),
        "{ts}"
    );
    let py = &answers[1]["result"]["structuredContent"];
    assert_eq!(py["result"]["text"], "upstream says: [redacted]", "{py}");
    assert_eq!(py["result"]["joined"], "[redacted][redacted]", "{py}");
    // The large result kept its size class and lost only the secrets.
    for big in [&answers[2], &answers[3]] {
        let r = big["result"]["structuredContent"]["result"]
            .as_str()
            .unwrap_or_default();
        assert!(
            r.len() > 2_000_000 && r.starts_with("[redacted]xxx"),
            "{}",
            &r[..r.len().min(200)]
        );
        assert!(r.ends_with("xxx[redacted]"));
    }
    assert!(wire.contains("[redacted]"));
}

/// An HTTP upstream's credentials (a header, a token from `bearer_token_env_var`, a
/// `user:password@` URL, also one whose connection fails) echoed back or quoted in an error:
/// the whole HTTP answer of either protocol generation, the log and the audit hold none.
#[tokio::test]
async fn no_http_upstream_credential_reaches_an_http_client() {
    use test_support::http::{Generation, HttpServer, McpHttp};
    const BEARER: &str = "bearer-from-env-0123456789";
    const KEY: &str = "x-api-key-secret-abcdef";
    const PASS: &str = "url-pass-w0rd-secret";
    let up = test_support::recording::RecordingUpstream::start("web").await;
    let with_user = |url: &str| url.replacen("http://", &format!("http://alice:{PASS}@"), 1);
    let servers = json!({
        "web": {"type": "http", "url": up.url, "headers": {"X-Api-Key": KEY},
                "bearer_token_env_var": "WEB_TOKEN"},
        "basic": {"type": "http", "url": with_user(&up.url)},
        "gone": {"type": "http", "url": with_user("http://127.0.0.1:9/mcp")},
    });
    let s = HttpServer::start(EXE.as_ref(), servers, &[], &[("WEB_TOKEN", BEARER)]).await;
    let code = r#"
        const out = {};
        const leak = async (server, what, as) => {
          try { return await callMCPTool(server, 'leak', { what, as }); }
          catch (e) { return e.name + ': ' + e.message; }
        };
        out.auth = await leak('web', 'header:authorization');
        out.key = await leak('web', 'header:x-api-key', 'error');
        out.basic = await leak('basic', 'header:authorization', 'rpc_error');
        out.headers = await callMCPTool('web', 'request_meta', {});
        try { await callMCPTool('gone', 'echo', { message: 'x' }); } catch (e) { out.gone = e.message; }
        return out;
    "#;
    let basic = base64_of(&format!("alice:{PASS}"));
    for generation in [Generation::Sessions, Generation::Stateless] {
        let c = McpHttp::connect(&s.url, None, generation).await;
        let mut bodies = String::new();
        for (tool, args) in [
            ("execute_typescript", json!({"code": code})),
            ("list_servers", json!({})),
            ("health", json!({})),
        ] {
            let r = c
                .request("tools/call", json!({"name": tool, "arguments": args}))
                .await;
            assert_eq!(r.status, 200, "{r:?}");
            bodies.push_str(&r.body);
        }
        for secret in [BEARER, KEY, PASS, &basic] {
            assert!(
                !bodies.contains(secret),
                "{secret} reached the client:\n{bodies}"
            );
        }
        assert!(bodies.contains("upstream says: [redacted]"), "{bodies}");
        // The Basic header made from the URL's userinfo, echoed in a JSON-RPC error.
        assert!(
            bodies.contains("token Basic [redacted] was rejected"),
            "{bodies}"
        );
    }
    // The upstream did get them: redaction is of what comes back, not of what we send.
    let sent = up.tool_calls();
    assert!(
        sent.iter()
            .any(|(r, _)| r.header("authorization") == Some(&format!("Bearer {BEARER}")))
    );
    for secret in [BEARER, KEY, PASS, &basic] {
        assert!(!s.log().contains(secret), "{secret} is in the log");
        let audit = std::fs::read_to_string(s.audit_path()).unwrap_or_default();
        assert!(!audit.contains(secret), "{secret} is in the audit log");
    }
}

fn base64_of(s: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(s)
}

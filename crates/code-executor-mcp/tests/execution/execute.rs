//! End to end through the built binary: a real MCP client (rmcp) over stdio, fixture MCP
//! servers upstream, code running in real worker processes. Scenarios that hold for both
//! languages live in `languages.rs`; this file covers the server, its upstreams and the
//! JavaScript-only surface.

use serde_json::{Value, json};
use test_support::{Harness, fixture_entry};

use crate::common::EXE;

async fn harness() -> Harness {
    Harness::start(
        EXE.as_ref(),
        json!({ "fx": fixture_entry("fx"), "other-server": fixture_entry("other") }),
        &[],
        &[],
    )
    .await
}

fn error_name(v: &Value) -> &str {
    v["error"]["name"].as_str().unwrap_or("")
}

fn error_message(v: &Value) -> &str {
    v["error"]["message"].as_str().unwrap_or("")
}

#[tokio::test]
async fn trivial_typescript_returns_its_value_with_the_documented_structure() {
    let h = harness().await;
    let (v, is_error) = h
        .exec("interface P { x: number }\nconst p: P = { x: 41 };\nreturn p.x + 1;")
        .await;
    assert!(!is_error, "{v}");
    assert_eq!(v["result"], json!(42));
    assert_eq!(v["logs"], json!([]));
    assert_eq!(v["toolCalls"], json!(0));
    assert!(v["durationMs"].as_f64().unwrap() > 0.0);
    assert!(v.get("error").is_none());
}

#[tokio::test]
async fn web_apis_are_available() {
    let h = harness().await;
    let (v, is_error) = h
        .exec(
            r#"
            const u = new URL('../c?x=1&y=a+b#h', 'https://Example.com:443/a/b');
            const bytes = new TextEncoder().encode('€😀');
            let timer = 'not fired';
            const t = setTimeout(() => { timer = 'fired'; }, 5);
            const cancelled = setTimeout(() => { timer = 'cancelled one fired'; }, 1);
            clearTimeout(cancelled);
            await new Promise(r => setTimeout(r, 20));
            const clone = structuredClone({ m: new Map([[1, { d: new Date(0) }]]) });
            return {
              href: u.href, y: u.searchParams.get('y'), bytes: Array.from(bytes),
              text: new TextDecoder().decode(bytes), b64: btoa('hi'), raw: atob('aGk='),
              uuid: /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(crypto.randomUUID()),
              timer, cloneOk: clone.m.get(1).d instanceof Date,
            };
            "#,
        )
        .await;
    assert!(!is_error, "{v}");
    assert_eq!(
        v["result"],
        json!({
            "href": "https://example.com/c?x=1&y=a+b#h", "y": "a b",
            "bytes": [226, 130, 172, 240, 159, 152, 128], "text": "€😀", "b64": "aGk=", "raw": "hi",
            "uuid": true, "timer": "fired", "cloneOk": true,
        })
    );
}

#[tokio::test]
async fn discovery_tools_answer_over_mcp() {
    let h = harness().await;
    let r = h.call("list_servers", json!({})).await;
    let servers = &r.structured_content.unwrap()["servers"];
    assert_eq!(servers[0]["name"], "fx");
    assert_eq!(servers[0]["status"], "available");
    let r = h
        .call(
            "search_tools",
            json!({"query": "add numbers", "detail": "full"}),
        )
        .await;
    let tools = &r.structured_content.unwrap()["tools"];
    assert_eq!(tools[0]["name"], "mcp__fx__add");
    assert!(tools[0]["inputSchema"]["properties"]["a"].is_object());
    let r = h
        .call("get_tool_schema", json!({"name": "mcp__fx__add"}))
        .await;
    let s = r.structured_content.unwrap();
    assert_eq!(s["name"], "mcp__fx__add");
    assert!(s["outputSchema"]["properties"]["sum"].is_object());
    let r = h
        .call("get_tool_schema", json!({"name": "mcp__fx__nope"}))
        .await;
    assert_eq!(r.is_error, Some(true));
    let r = h.call("list_servers", json!({})).await;
    let servers = &r.structured_content.unwrap()["servers"];
    assert_eq!(servers[0]["status"], "connected");
    assert!(servers[0]["toolCount"].as_u64().unwrap() >= 10);
    let r = h.call("health", json!({})).await;
    let health = r.structured_content.unwrap();
    assert_eq!(health["version"], env!("CARGO_PKG_VERSION"));
    assert!(health["pools"][0]["started"].as_u64().is_some());
}

#[tokio::test]
async fn a_crashed_upstream_is_named_the_others_keep_working_and_it_restarts() {
    let h = harness().await;
    let (v, is_error) = h.exec("await tools.fx.crash();").await;
    assert!(is_error);
    assert_eq!(error_name(&v), "ToolError");
    assert!(error_message(&v).contains("\"fx\""), "{v}");
    let (v, is_error) = h.exec("return await tools.other_server.whoami();").await;
    assert!(!is_error, "{v}");
    assert_eq!(v["result"], "other");
    let (v, is_error) = h
        .exec("return await tools.fx.echo({message: 'back'});")
        .await;
    assert!(!is_error, "{v}");
    assert_eq!(v["result"], "Echo: back");
}

#[tokio::test]
async fn a_server_that_fails_to_start_is_named_and_the_others_work() {
    let h = Harness::start(
        EXE.as_ref(),
        json!({
            "broken": {"command": "/nonexistent/server-binary"},
            "fx": fixture_entry("fx"),
        }),
        &[],
        &[],
    )
    .await;
    let (v, is_error) = h.exec("return await tools.broken.anything();").await;
    assert!(is_error);
    assert!(
        error_message(&v).contains("MCP server \"broken\" failed to start"),
        "{v}"
    );
    let (v, _) = h.exec("return await tools.fx.whoami();").await;
    assert_eq!(v["result"], "fx");
    let r = h.call("list_servers", json!({})).await;
    let servers = r.structured_content.unwrap();
    assert_eq!(servers["servers"][0]["status"], "failed");
    assert!(
        servers["servers"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("/nonexistent/server-binary")
    );
}

#[tokio::test]
async fn upstream_call_timeout_is_bounded_by_the_execution_deadline() {
    let h = harness().await;
    let (v, is_error) = h
        .exec_with(json!({"code": "await tools.fx.sleep({ms: 5000});", "timeoutMs": 400}))
        .await;
    assert!(is_error);
    assert!(
        ["TimeoutError", "ToolError"].contains(&error_name(&v)),
        "{v}"
    );
    assert!(v["durationMs"].as_f64().unwrap() < 3000.0, "{v}");
}

#[tokio::test]
async fn secrets_in_our_environment_never_reach_an_upstream() {
    let h = Harness::start(
        EXE.as_ref(),
        json!({ "fx": {"command": test_support::workspace_bin("fixture-server"), "args": ["fx"], "env": {"GIVEN": "yes"}} }),
        &[],
        &[("CANARY_SECRET_TOKEN", "sk-canary-1234")],
    )
    .await;
    let (v, is_error) = h
        .exec("return [await tools.fx.env({name: 'CANARY_SECRET_TOKEN'}), await tools.fx.env({name: 'GIVEN'}), await tools.fx.env({name: 'PATH'}) !== null];")
        .await;
    assert!(!is_error, "{v}");
    assert_eq!(v["result"], json!([null, "yes", true]));
}

#[tokio::test]
async fn our_tools_list_fits_the_token_budget() {
    let h = harness().await;
    let tools = h.client.peer().list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| &*t.name).collect();
    assert_eq!(
        names,
        [
            "execute_typescript",
            "execute_python",
            "search_tools",
            "get_tool_schema",
            "list_servers",
            "wait",
            "health"
        ]
    );
    for t in &tools {
        // An execution's result is declared; elsewhere `{"type": "object"}` would say nothing
        // for 8 tokens a turn (each still answers with `structuredContent`).
        let execute = t.name.starts_with("execute_");
        assert_eq!(t.output_schema.is_some(), execute, "{}", t.name);
        assert!(
            t.description.as_deref().unwrap_or("").len() > 20,
            "{}",
            t.name
        );
    }
    let json = serde_json::to_string(&tools).unwrap();
    let tokens = tiktoken_rs::cl100k_base()
        .unwrap()
        .encode_with_special_tokens(&json)
        .len();
    eprintln!("tools/list: {tokens} cl100k tokens");
    assert!(
        tokens < 500,
        "tools/list is {tokens} tokens, over the 500 budget"
    );
    // With five upstream tools pinned (`directTools`), our own part is the very same list
    // (so the same tokens); the pins come after it, each with its own schemas.
    let (pinned, _settings) = Harness::with_settings(
        EXE.as_ref(),
        json!({"fx": fixture_entry("fx")}),
        &json!({"directTools": ["mcp__fx__echo", "mcp__fx__add", "mcp__fx__fail", "mcp__fx__sleep", "mcp__fx__env"]}),
        &[],
    )
    .await;
    let all = pinned.client.peer().list_all_tools().await.unwrap();
    assert_eq!(all.len(), names.len() + 5, "{all:?}");
    let own: Vec<&rmcp::model::Tool> = all.iter().filter(|t| names.contains(&&*t.name)).collect();
    assert_eq!(serde_json::to_string(&own).unwrap(), json);
    let with = tiktoken_rs::cl100k_base()
        .unwrap()
        .encode_with_special_tokens(&serde_json::to_string(&all).unwrap())
        .len();
    eprintln!("tools/list: {tokens} cl100k tokens of our own; {with} with 5 pinned direct tools");
}

/// Shortening `tools/list` must not lose what an agent needs to start: each fact is a
/// pattern over the compact JSON of `tools/list`, and the long reference it points to
/// (`get_tool_schema` with our own tool's name) carries the rest.
#[tokio::test]
async fn our_tools_list_keeps_the_facts_an_agent_needs() {
    let h = harness().await;
    let tools = h.client.peer().list_all_tools().await.unwrap();
    let list = serde_json::to_string(&tools).unwrap();
    let listed: &[(&str, &[&str])] = &[
        (
            "typed proxies (TypeScript)",
            &[r#"await tools.server.tool(args)"#],
        ),
        (
            "qualified name form",
            &[r#"callMCPTool('mcp__server__tool'"#],
        ),
        ("server, tool name form", &[r#"server, tool, args)"#]),
        ("typed proxies (Python)", &[r#"tools.server.tool(**args)"#]),
        ("Python calls", &[r#"call_mcp_tool"#]),
        (
            "Python in parallel",
            &[r#"acall_mcp_tool for asyncio.gather"#],
        ),
        ("what a TypeScript run returns", &[r#"return sets result"#]),
        (
            "what a Python run returns",
            &[r#"last expression is the result"#],
        ),
        (
            "what a tool call returns",
            &[r#"structuredContent/parsed text"#],
        ),
        (
            "what callMCPTool returns",
            &[
                r#"callMCPTool('mcp__server__tool'"#,
                r#"args): text, throws ToolError"#,
            ],
        ),
        ("how a failed call shows", &[r#"throws ToolError"#]),
        (
            "the run's answer",
            &[r#""outputSchema":{"type":"object","properties":{"result":{},"logs":{},"error""#],
        ),
        (
            "discovery from code",
            &[r#"searchTools, getToolSchema, listServers"#],
        ),
        (
            "discovery tools",
            &[r#""search_tools""#, r#"detail: names|summary|full"#],
        ),
        (
            "the default deadline",
            &[r#""timeoutMs":{"default":30000}"#],
        ),
        (
            "sessions",
            &[r#""session":{"description":"new|id: keeps state, store/load, /workspace"#],
        ),
        (
            "long runs",
            &[
                r#""yieldAfterMs""#,
                r#""name":"wait","description":"Poll a yieldAfterMs run"#,
            ],
        ),
        (
            "files and network are granted",
            &[r#""permissions":{"description":"{read,write,net} for fs, fetch"#],
        ),
        ("progress and model calls", &[r#"progress, llm.ask"#]),
        (
            "limits and allowlists",
            &[r#""allowedTools":{},"limits":{}"#],
        ),
        (
            "where the reference is",
            &[r#"Docs: get_tool_schema execute_typescript"#],
        ),
    ];
    for &(fact, pattern) in listed {
        assert!(
            in_order(&list, pattern),
            "tools/list lost a fact: {fact} ({pattern:?})\n{list}"
        );
    }
    let own_forms: [(&str, &[&str]); 2] = [
        (
            "execute_typescript",
            &[r#"callMCPTool(server, tool, args)"#],
        ),
        ("execute_python", &[r#"call_mcp_tool(server, tool, args)"#]),
    ];
    for (name, own) in own_forms {
        let r = h.call("get_tool_schema", json!({"name": name})).await;
        assert_ne!(r.is_error, Some(true), "{r:?}");
        let v = r.structured_content.unwrap();
        let text = v["reference"].as_str().unwrap();
        let facts: &[(&str, &[&str])] = &[
            ("name forms", own),
            (
                "results",
                &[r#"structuredContent when it has one, else its text parsed as JSON"#],
            ),
            (
                "errors",
                &[
                    r#"PolicyError "#,
                    r#" LimitError "#,
                    r#" ApprovalDenied extend ToolError"#,
                ],
            ),
            (
                "discovery",
                &[r#"searchTools(query, {detail: names|summary|full"#],
            ),
            ("approvals", &[r#"waits while the client asks a person"#]),
            ("model calls", &[r#"llm.ask(prompt)"#]),
            (
                "sessions",
                &[r#"session: "new" starts one; its id comes back in result.session.id"#],
            ),
            ("store and load", &[r#"store(key, value) / load(key)"#]),
            (
                "long runs",
                &[r#"yieldAfterMs answers early with running.handle; call wait"#],
            ),
            ("progress", &[r#"progress(done, total?, message?)"#]),
            (
                "files and network",
                &[r#"permissions {read: [path], write: true, net: [host]}"#],
            ),
            (
                "limits",
                &[r#"timeoutMs 30000 "#, r#"memoryMb 256, maxToolCalls 1000"#],
            ),
            ("output cap", &[r#"captured output 1 MiB"#]),
            (
                "result fields",
                &[r#"{result, logs, error?, toolCalls, durationMs"#],
            ),
        ];
        for &(fact, pattern) in facts {
            assert!(
                in_order(text, pattern),
                "{name} reference lost a fact: {fact} ({pattern:?})\n{text}"
            );
        }
        for param in [
            "code",
            "timeoutMs",
            "allowedTools",
            "limits",
            "session",
            "reset",
            "yieldAfterMs",
            "permissions",
        ] {
            assert!(
                v["inputSchema"]["properties"][param]["description"].is_string() || param == "code",
                "{name}: {param} undescribed"
            );
        }
    }
}

/// Whether `pieces` occur in `text` in this order.
fn in_order(text: &str, pieces: &[&str]) -> bool {
    let mut rest = text;
    pieces.iter().all(|p| match rest.find(p) {
        Some(i) => {
            rest = &rest[i + p.len()..];
            true
        }
        None => false,
    })
}

#[tokio::test]
async fn an_entry_that_launches_this_server_is_skipped() {
    let h = Harness::start(
        EXE.as_ref(),
        json!({ "me": {"command": EXE}, "fx": fixture_entry("fx") }),
        &[],
        &[],
    )
    .await;
    let r = h.call("list_servers", json!({})).await;
    let names: Vec<String> = r.structured_content.unwrap()["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["fx"]);
}

#[tokio::test]
async fn a_malformed_request_is_a_protocol_error() {
    let h = harness().await;
    let err = h
        .client
        .peer()
        .call_tool(rmcp::model::CallToolRequestParams::new(
            "execute_typescript",
        ))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("code"), "{err}");
}

#[tokio::test]
async fn in_flight_upstream_calls_are_cancelled_when_the_execution_times_out() {
    let h = harness().await;
    let marker = std::env::temp_dir().join(format!("cem-cancel-{}", std::process::id()));
    let _ = std::fs::remove_file(&marker);
    let code = format!(
        "await tools.fx.sleep_marked({{ ms: 20000, marker: {:?} }});",
        marker.display().to_string()
    );
    let (v, is_error) = h.exec_with(json!({"code": code, "timeoutMs": 500})).await;
    assert!(is_error);
    assert_eq!(error_name(&v), "TimeoutError", "{v}");
    // The upstream saw notifications/cancelled and dropped the call.
    let mut cancelled = false;
    for _ in 0..50 {
        if marker.exists() {
            cancelled = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let _ = std::fs::remove_file(&marker);
    assert!(cancelled, "the upstream call was not cancelled");
}

/// The client cancelling its `tools/call` (`notifications/cancelled`) cancels the run, and
/// the run's in-flight upstream calls, all of them, get `notifications/cancelled` in turn.
#[tokio::test]
async fn a_client_cancelling_its_call_cancels_every_upstream_call_of_the_run() {
    use rmcp::model::{CallToolRequest, CallToolRequestParams, ClientRequest};
    let h = harness().await;
    let file = |what: &str, i: usize| {
        std::env::temp_dir().join(format!("cem-client-{what}-{}-{i}", std::process::id()))
    };
    let markers: Vec<std::path::PathBuf> = (0..2).map(|i| file("cancelled", i)).collect();
    let started: Vec<std::path::PathBuf> = (0..2).map(|i| file("started", i)).collect();
    for m in markers.iter().chain(&started) {
        let _ = std::fs::remove_file(m);
    }
    let code = format!(
        "await Promise.all([[{:?}, {:?}], [{:?}, {:?}]].map(([marker, started]) => tools.fx.sleep_marked({{ ms: 60000, marker, started }})));",
        markers[0].display().to_string(),
        started[0].display().to_string(),
        markers[1].display().to_string(),
        started[1].display().to_string()
    );
    let args = json!({"code": code, "timeoutMs": 120000});
    let Value::Object(args) = args else {
        unreachable!()
    };
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(
        CallToolRequestParams::new("execute_typescript").with_arguments(args),
    ));
    let handle = h
        .client
        .peer()
        .send_cancellable_request(request, rmcp::service::PeerRequestOptions::no_options())
        .await
        .unwrap();
    // Both calls reach the upstream before the client gives up (polling for the files
    // they write when they start, not waiting for time to pass).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !started.iter().all(|m| m.exists()) {
        assert!(
            std::time::Instant::now() < deadline,
            "the calls never started"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    handle
        .cancel(Some("the user stopped it".into()))
        .await
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !markers.iter().all(|m| m.exists()) {
        assert!(
            std::time::Instant::now() < deadline,
            "not every upstream call was cancelled: {:?}",
            markers.iter().map(|m| m.exists()).collect::<Vec<_>>()
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    for m in markers.iter().chain(&started) {
        let _ = std::fs::remove_file(m);
    }
    // The server goes on serving.
    let (v, is_error) = h.exec("return 3;").await;
    assert!(!is_error, "{v}");
}

#[tokio::test]
async fn a_changed_upstream_tool_list_is_picked_up() {
    let h = harness().await;
    let (v, _) = h
        .exec("return (await searchTools('surprise', { server: 'fx', detail: 'names' })).tools.map(t => t.name);")
        .await;
    assert!(
        !v["result"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n == "mcp__fx__surprise"),
        "{v}"
    );
    let (v, is_error) = h.exec("return await tools.fx.add_surprise_tool();").await;
    assert!(!is_error, "{v}");
    let mut found = json!(null);
    for _ in 0..20 {
        let (v, _) = h.exec("return (await searchTools('surprise', { server: 'fx', detail: 'names' })).tools.map(t => t.name);").await;
        found = v["result"].clone();
        if found
            .as_array()
            .is_some_and(|a| a.iter().any(|n| n == "mcp__fx__surprise"))
        {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(
        found
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n == "mcp__fx__surprise"),
        "{found}"
    );
    let (v, is_error) = h.exec("return await tools.fx.surprise();").await;
    assert!(!is_error, "{v}");
    assert_eq!(v["result"], "surprise!");
}

#[tokio::test]
async fn an_execution_keeps_the_tool_list_it_started_with() {
    let h = harness().await;
    // Inside one run: the list changes upstream, the run's view does not.
    let (v, is_error) = h
        .exec(
            "await tools.fx.add_surprise_tool();
             await new Promise(r => setTimeout(r, 600));
             const names = (await searchTools('surprise', { server: 'fx', detail: 'names' })).tools.map(t => t.name);
             const all = (await discoverMCPTools()).tools.map(t => t.name);
             let call;
             try { await callMCPTool('fx', 'surprise', {}); call = 'called'; } catch (e) { call = e.name + ': ' + e.message; }
             let schema;
             try { await getToolSchema('mcp__fx__surprise'); schema = 'found'; } catch (e) { schema = e.message; }
             return { names, seen: all.includes('mcp__fx__surprise'), call, schema };",
        )
        .await;
    assert!(!is_error, "{v}");
    let r = &v["result"];
    assert!(
        !r["names"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n == "mcp__fx__surprise"),
        "{v}"
    );
    assert_eq!(r["seen"], false, "{v}");
    assert!(
        r["call"].as_str().unwrap().contains("surprise") && r["call"] != "called",
        "{v}"
    );
    assert_ne!(r["schema"], "found", "{v}");
    // The next run sees the new list.
    let mut answer = json!(null);
    for _ in 0..20 {
        let (v, _) = h.exec("return await tools.fx.surprise();").await;
        answer = v["result"].clone();
        if answer == "surprise!" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(answer, "surprise!");
}

#[tokio::test]
async fn a_thousand_tools_arrive_through_pagination() {
    let h = Harness::start(
        EXE.as_ref(),
        json!({ "many": {"command": test_support::workspace_bin("fixture-server"), "args": ["many"], "env": {"FIXTURE_EXTRA_TOOLS": "1000"}} }),
        &[],
        &[],
    )
    .await;
    let (v, is_error) = h
        .exec("const all = await discoverMCPTools(); return [all.tools.length, await tools.many.bulk_0999()];")
        .await;
    assert!(!is_error, "{v}");
    let count = v["result"][0].as_u64().unwrap();
    assert!(count >= 1010, "{count}");
    assert_eq!(v["result"][1], "bulk_0999");
}

#[tokio::test]
async fn a_server_that_hangs_at_start_times_out_and_is_named() {
    let dir = test_support::TempConfig::new(json!({}));
    let settings = dir.dir.join("settings.json");
    std::fs::write(&settings, r#"{"connectTimeoutMs": 500}"#).unwrap();
    let h = Harness::start(
        EXE.as_ref(),
        json!({
            "hangs": {"command": test_support::workspace_bin("fixture-server"), "env": {"FIXTURE_HANG_AT_START": "1"}},
            "fx": fixture_entry("fx"),
        }),
        &[],
        &[("CODE_EXECUTOR_CONFIG_PATH", settings.to_str().unwrap())],
    )
    .await;
    let (v, is_error) = h
        .exec("return await tools.hangs.echo({message: 'x'});")
        .await;
    assert!(is_error);
    assert!(
        error_message(&v).contains(
            "\"hangs\" failed to start: no answer to initialize/tools/list within 500 ms"
        ),
        "{v}"
    );
    let (v, _) = h.exec("return await tools.fx.whoami();").await;
    assert_eq!(v["result"], "fx");
}

#[tokio::test]
async fn concurrent_tool_calls_of_one_execution_are_capped() {
    let h = harness().await;
    // 33 calls that each wait for 33 to be in flight together: with the cap of 32 they never
    // meet, so the rendezvous reports that only 32 arrived.
    let (v, _) = h
        .exec("const r = await Promise.allSettled(Array.from({ length: 33 }, () => tools.fx.rendezvous({ key: 'cap', n: 33 }))); return r.filter(x => x.status === 'rejected').map(x => x.reason.message)[0];")
        .await;
    assert!(
        v["result"].as_str().unwrap_or("").contains("only 32 of 33"),
        "{v}"
    );
}

#[tokio::test]
async fn a_server_that_hangs_at_start_is_named_within_the_execution_deadline() {
    let h = Harness::start(
        EXE.as_ref(),
        json!({ "hangs": {"command": test_support::workspace_bin("fixture-server"), "env": {"FIXTURE_HANG_AT_START": "1"}} }),
        &[],
        &[],
    )
    .await;
    let (v, _) = h
        .exec_with(json!({
            "code": "try { await tools.hangs.echo({message: 'x'}); } catch (e) { return e.message; }",
            "timeoutMs": 1000
        }))
        .await;
    assert!(
        v["result"]
            .as_str()
            .unwrap_or("")
            .starts_with("hangs: the MCP server did not start"),
        "{v}"
    );
}

/// A harness whose `fx` server is connected, so runs receive its tools (bindings list the
/// tools of servers already connected).
async fn harness_with_fx_connected() -> Harness {
    let h = harness().await;
    let (v, _) = h
        .exec("return await tools.fx.echo({ message: 'warm' });")
        .await;
    assert_eq!(v["result"], "Echo: warm");
    h
}

#[tokio::test]
async fn tool_proxies_behave_as_plain_objects_of_functions() {
    let h = harness_with_fx_connected().await;
    // The proxies are made on first use; they must still enumerate, compare and fail as
    // plain objects would.
    let (v, is_error) = h
        .exec(
            "const fx = tools.fx;\n\
             const keys = Object.keys(fx);\n\
             let unknown;\n\
             const read = typeof fx.nope;\n\
             try { await fx.nope(); } catch (e) { unknown = `${e.name}: ${e.message}`; }\n\
             fx.mine = 1;\n\
             return {\n\
               servers: Object.keys(tools).includes('fx'),\n\
               dotted: keys.includes('get.page') && keys.includes('get_page'),\n\
               same: fx['get.page'] === fx.get_page && fx.echo === fx.echo,\n\
               has: 'echo' in fx && !('nope' in fx),\n\
               entries: Object.entries(fx).filter(([, f]) => typeof f === 'function').length === keys.length,\n\
               name: fx.get_page.name,\n\
               unknown,\n\
               read,\n\
               mine: fx.mine,\n\
               echoed: await fx['echo']({ message: 'again' }),\n\
             };",
        )
        .await;
    assert!(!is_error, "{v}");
    let r = &v["result"];
    for key in ["servers", "dotted", "same", "has", "entries"] {
        assert_eq!(r[key], true, "{key}: {v}");
    }
    assert_eq!(r["name"], "get.page", "{v}");
    assert_eq!(r["mine"], 1, "{v}");
    assert_eq!(r["echoed"], "Echo: again", "{v}");
    // Reading an unknown name is a function; calling it, the host's ToolError naming the
    // nearest names.
    assert_eq!(r["read"], "function", "{v}");
    let unknown = r["unknown"].as_str().unwrap_or("");
    assert!(
        unknown.starts_with(
            "ToolError: unknown tool mcp__fx__nope: no tool of server \"fx\" named \"nope\"; nearest: "
        ),
        "{v}"
    );
}

#[tokio::test]
async fn declarations_are_asked_for_while_calls_are_in_flight() {
    // A declaration is fetched from the host when read; replies to calls already in flight
    // arrive while the worker waits for it and must still reach their callers.
    let h = harness_with_fx_connected().await;
    let (v, is_error) = h
        .exec(
            "const calls = Promise.all([1, 2, 3].map((i) => tools.fx.echo({ message: `m${i}` })));\n\
             const until = Date.now() + 200;\n\
             while (Date.now() < until) {} // let the replies reach the pipe first\n\
             const sig = tools.fx.add.signature;\n\
             return [sig.includes('AddArgs'), await calls, tools.fx.add.signature === sig];",
        )
        .await;
    assert!(!is_error, "{v}");
    assert_eq!(
        v["result"],
        json!([true, ["Echo: m1", "Echo: m2", "Echo: m3"], true]),
        "{v}"
    );
    let (v, is_error) = h
        .exec_python(
            "import asyncio\n\
             calls = asyncio.gather(*[acall_mcp_tool('fx', 'echo', {'message': f'm{i}'}) for i in (1, 2, 3)])\n\
             sig = tools.fx.add.signature\n\
             ['AddArgs' in sig, await calls]",
        )
        .await;
    assert!(!is_error, "{v}");
    assert_eq!(
        v["result"],
        json!([true, ["Echo: m1", "Echo: m2", "Echo: m3"]]),
        "{v}"
    );
    // Reading a declaration is not a tool call.
    assert_eq!(v["toolCalls"], 3, "{v}");
}

#[tokio::test]
async fn proxies_carry_typed_declarations_in_both_languages() {
    let h = harness_with_fx_connected().await;
    let (v, is_error) = h
        .exec("return [tools.fx.add.signature, String(tools.fx.get_page)];")
        .await;
    assert!(!is_error, "{v}");
    let ts = v["result"][0].as_str().unwrap();
    assert!(
        ts.contains("a: number") && ts.contains("tools.fx.add(args: AddArgs): Promise<AddResult>"),
        "{ts}"
    );
    assert!(
        v["result"][1].as_str().unwrap().contains("tools.fx["),
        "{v}"
    );
    let (v, is_error) = h.exec_python("tools.fx.add.signature").await;
    assert!(!is_error, "{v}");
    let py = v["result"].as_str().unwrap();
    assert!(
        py.contains("class AddArgs(TypedDict") && py.contains("a: float"),
        "{py}"
    );
}

/// A multi-megabyte upstream result reaches code whole, goes back upstream as arguments, and
/// comes back to the client exactly: every string byte for byte (non-ASCII, emoji, escapes,
/// control characters), every number, a chain nested 60 levels deep; in both languages. The
/// host passes the upstream's JSON text on without decoding it (see `bridge::unwrap_result`),
/// so this is what checks that nothing is lost on the way.
#[tokio::test]
async fn a_multi_megabyte_result_round_trips_exactly_in_both_languages() {
    const BYTES: usize = 3 << 20;
    let h = harness().await;
    let text = test_support::fixture::document(BYTES);
    assert!(text.len() >= BYTES, "{}", text.len());
    let doc: Value = serde_json::from_str(&text).unwrap();
    let want = json!([doc, doc, true]);
    let ts = format!(
        "const doc = await tools.fx.document({{ bytes: {BYTES} }});\n\
         const back = await callMCPTool('mcp__fx__reflect', {{ value: doc }});\n\
         return [doc, back, JSON.stringify(doc) === JSON.stringify(back)];"
    );
    let py = format!(
        "doc = tools.fx.document(bytes={BYTES})\n\
         back = call_mcp_tool('fx', 'reflect', {{'value': doc}})\n\
         [doc, back, doc == back]"
    );
    for (tool, code) in [("execute_typescript", ts), ("execute_python", py)] {
        let r = h.call(tool, json!({ "code": code })).await;
        assert_ne!(r.is_error, Some(true), "{tool}: {:?}", r.content);
        let v = r.structured_content.unwrap();
        let got = &v["result"];
        if let Some(at) = first_difference(got, &want, "result".into()) {
            panic!("{tool}: the result differs from the document at {at}");
        }
        // Byte for byte as JSON text too (same key order, same number forms).
        let got_text = serde_json::to_string(got).unwrap();
        assert_eq!(
            got_text.len(),
            serde_json::to_string(&want).unwrap().len(),
            "{tool}"
        );
        assert!(
            got_text.starts_with(&format!("[{text},")),
            "{tool}: not byte-equal"
        );
        // The text rendering carries the same JSON, its first 256 KiB (it is longer).
        let rendered = r.content[0].as_text().unwrap().text.as_str();
        let head = rendered.lines().next().unwrap_or_default();
        assert!(
            head.len() > (256 << 10) - 4 && got_text.starts_with(head),
            "{tool}: text rendering differs"
        );
    }
}

/// Large values take the shortest way through each hop (an upstream's plain text or JSON
/// string reaches code as a string without a parse in the engine; a string result is encoded
/// natively; see docs/protocol.md, "Large values"), and every way gives back exactly what the
/// slow one did, in both languages, through the real fixture upstream: a large string from a
/// text that is not JSON, from a text that is a JSON string, changed by the code after the
/// call; a large object returned whole and changed after the call; escapes, U+2028/U+2029,
/// NUL, combining marks and emoji outside the BMP (surrogate pairs in JavaScript); a lone
/// surrogate, which has no UTF-8 form, in a large result. The text block carries the same
/// JSON as `structuredContent`.
#[tokio::test]
async fn large_values_take_their_fast_paths_exactly_in_both_languages() {
    const BYTES: usize = 2 << 20;
    let h = harness().await;
    let unit = "quote \" backslash \\ tab \t nl \n cr \r nul \u{0} ls \u{2028} ps \u{2029} \
                Zoë 名前 🚀 e\u{301} ";
    let n = BYTES / unit.len() + 1;
    let message = unit.repeat(n);
    let unit_lit = serde_json::to_string(unit).unwrap();
    let doc_text = test_support::fixture::document(BYTES);
    let doc: Value = serde_json::from_str(&doc_text).unwrap();
    let mut changed = doc.clone();
    changed["records"][1]["name"] = json!("changed ✓ 🚀");
    changed["records"].as_array_mut().unwrap().pop();
    changed["extra"] = json!({"n": 1, "s": "\u{2028}"});
    let ts_head = format!("const message = {unit_lit}.repeat({n});\n");
    let py_head = format!("message = {unit_lit} * {n}\n");
    let cases: Vec<(&str, String, String, Value)> = vec![
        (
            "a text that is not JSON, returned whole",
            "return await tools.fx.echo({ message });".into(),
            "call_mcp_tool('fx', 'echo', {'message': message})".into(),
            json!(format!("Echo: {message}")),
        ),
        (
            "a text that is a JSON string, returned whole",
            "return await tools.fx.reflect({ value: message });".into(),
            "tools.fx.reflect(value=message)".into(),
            json!(message),
        ),
        (
            "a string changed after the call",
            "const s = await tools.fx.echo({ message });\n\
             return s.slice(6) + '!' + s.length;"
                .into(),
            "s = call_mcp_tool('fx', 'echo', {'message': message})\n\
             s[6:] + '!' + str(len(s.encode('utf-16-le')) // 2)"
                .into(),
            json!(format!(
                "{message}!{}",
                format!("Echo: {message}").encode_utf16().count()
            )),
        ),
        (
            "a string inside an object",
            "const s = await tools.fx.echo({ message });\n\
             return { s, n: [1, 2.5], t: true };"
                .into(),
            "s = call_mcp_tool('fx', 'echo', {'message': message})\n\
             {'s': s, 'n': [1, 2.5], 't': True}"
                .into(),
            json!({"s": format!("Echo: {message}"), "n": [1, 2.5], "t": true}),
        ),
        (
            "an object returned whole",
            format!("return await tools.fx.document({{ bytes: {BYTES} }});"),
            format!("tools.fx.document(bytes={BYTES})"),
            doc.clone(),
        ),
        (
            "an object changed after the call",
            format!(
                "const doc = await tools.fx.document({{ bytes: {BYTES} }});\n\
                 doc.records[1].name = 'changed ✓ 🚀';\n\
                 doc.records.pop();\n\
                 doc.extra = {{ n: 1, s: '\\u2028' }};\n\
                 return doc;"
            ),
            format!(
                "doc = tools.fx.document(bytes={BYTES})\n\
                 doc['records'][1]['name'] = 'changed ✓ 🚀'\n\
                 doc['records'].pop()\n\
                 doc['extra'] = {{'n': 1, 's': '\\u2028'}}\n\
                 doc"
            ),
            changed,
        ),
        (
            "a large ASCII text",
            format!("return await tools.fx.big({{ bytes: {BYTES} }});"),
            format!("tools.fx.big(bytes={BYTES})"),
            json!("x".repeat(BYTES)),
        ),
        (
            "a large argument of only whitespace",
            "return await tools.fx.echo({ message: ' \\n\\t'.repeat(40000) });".into(),
            "call_mcp_tool('fx', 'echo', {'message': ' \\n\\t' * 40000})".into(),
            json!(format!("Echo: {}", " \n\t".repeat(40000))),
        ),
    ];
    expect_results(&h, &ts_head, &py_head, &cases).await;
    // A lone surrogate has no UTF-8 form. JavaScript: a result with one is an error, as it
    // always was, however large; Python replaces it (its `_clean`).
    let (v, is_error) = h
        .exec(&format!(
            "{ts_head}return (await tools.fx.echo({{ message }})) + '\\ud800';"
        ))
        .await;
    assert!(is_error, "{}", v["result"].as_str().map_or(0, str::len));
    assert_eq!(error_name(&v), "InternalError", "{}", v["error"]);
    let (v, is_error) = h
        .exec(&format!(
            "{ts_head}const s = await tools.fx.echo({{ message }});\n\
             return s.slice(0, 6) + '\\udc00' + s.slice(6);"
        ))
        .await;
    assert!(is_error);
    assert_eq!(error_name(&v), "InternalError", "{}", v["error"]);
    let (v, is_error) = h
        .exec_python(&format!(
            "{py_head}call_mcp_tool('fx', 'echo', {{'message': message}}) + '\\ud800'"
        ))
        .await;
    assert!(!is_error, "{}", v["error"]);
    assert_eq!(v["result"], json!(format!("Echo: {message}?")), "python");
    // In Python's arguments too, large or small, at the top or nested, in keys and values.
    let (v, is_error) = h
        .exec_python(&format!(
            "{py_head}[call_mcp_tool('fx', 'echo', {{'message': message + '\\udc00'}}),\n\
             call_mcp_tool('fx', 'echo', {{'message': 'a\\ud800b'}}),\n\
             call_mcp_tool('fx', 'echo', message='\\ud83d' + message[:5])]"
        ))
        .await;
    assert!(!is_error, "{}", v["error"]);
    assert_eq!(
        v["result"],
        json!([
            format!("Echo: {message}?"),
            "Echo: a?b",
            format!("Echo: ?{}", &message[..5])
        ]),
        "python arguments"
    );
}

/// A run whose result is the very string a tool gave it (the latest large one) sends a
/// reference instead of the text, and the host answers with the string it kept
/// (`worker_protocol::RunOutcome::Reply`). Every shape around it must give exactly what the
/// text would: the kept string returned after other calls, an earlier large string (no longer
/// kept) returned instead, one of two parallel calls, a string equal to the kept one but not
/// it, and a session whose next run returns a string kept by the run before (reply ids are a
/// run's own, so that one goes back as text). In both languages.
#[tokio::test]
async fn a_result_that_is_a_tools_own_string_comes_back_exactly() {
    const BYTES: usize = 1536 << 10;
    let h = harness().await;
    let (message, ts_head, py_head) = large_message(BYTES);
    let echoed = format!("Echo: {message}");
    let big = "x".repeat(BYTES);
    let cases: Vec<(&str, String, String, Value)> = vec![
        (
            "the kept string, after a small call",
            "const s = await tools.fx.echo({ message });\n\
             await tools.fx.echo({ message: 'small' });\n\
             return s;"
                .into(),
            "s = call_mcp_tool('fx', 'echo', {'message': message})\n\
             call_mcp_tool('fx', 'echo', {'message': 'small'})\n\
             s"
            .into(),
            json!(echoed),
        ),
        (
            "an earlier large string, after a later large one",
            format!(
                "const s = await tools.fx.echo({{ message }});\n\
                 const b = await tools.fx.big({{ bytes: {BYTES} }});\n\
                 return b.length > 0 ? s : b;"
            ),
            format!(
                "s = call_mcp_tool('fx', 'echo', {{'message': message}})\n\
                 b = tools.fx.big(bytes={BYTES})\n\
                 s if b else b"
            ),
            json!(echoed),
        ),
        (
            "the later of two large strings",
            format!(
                "const s = await tools.fx.echo({{ message }});\n\
                 const b = await tools.fx.big({{ bytes: {BYTES} }});\n\
                 return s.length > 0 ? b : s;"
            ),
            format!(
                "s = call_mcp_tool('fx', 'echo', {{'message': message}})\n\
                 b = tools.fx.big(bytes={BYTES})\n\
                 b if s else s"
            ),
            json!(big),
        ),
        (
            "one of two parallel calls",
            format!(
                "const [s, b] = await Promise.all([tools.fx.echo({{ message }}), \
                 tools.fx.big({{ bytes: {BYTES} }})]);\n\
                 return s;"
            ),
            format!(
                "import asyncio\n\
                 async def both():\n    \
                     return await asyncio.gather(acall_mcp_tool('fx', 'echo', {{'message': message}}), \
                     acall_mcp_tool('fx', 'big', {{'bytes': {BYTES}}}))\n\
                 s, b = await both()\n\
                 s"
            ),
            json!(echoed),
        ),
        (
            "an equal string that is not the tool's",
            "const s = await tools.fx.echo({ message });\n\
             return ('Echo: ' + message).slice(0);"
                .into(),
            "s = call_mcp_tool('fx', 'echo', {'message': message})\n\
             ''.join(['Echo: ', message])"
                .into(),
            json!(echoed),
        ),
    ];
    expect_results(&h, &ts_head, &py_head, &cases).await;
    // A session: the first run returns the kept string, the next one returns it again from
    // the session's variables, after a call of its own.
    for (tool, first, second) in [
        (
            "execute_typescript",
            format!("{ts_head}globalThis.kept = await tools.fx.echo({{ message }});\nreturn kept;"),
            "await tools.fx.echo({ message: 'x'.repeat(2 << 20) });\nreturn kept;".to_string(),
        ),
        (
            "execute_python",
            format!("{py_head}kept = call_mcp_tool('fx', 'echo', {{'message': message}})\nkept"),
            "call_mcp_tool('fx', 'echo', {'message': 'x' * (2 << 20)})\nkept".to_string(),
        ),
    ] {
        let r = h
            .call(tool, json!({ "code": first, "session": "new" }))
            .await;
        let v = r.structured_content.unwrap_or_default();
        assert_eq!(
            v["result"],
            json!(echoed),
            "{tool}, session run 1: {}",
            v["error"]
        );
        let session = v["session"]["id"]
            .as_str()
            .expect("a session handle")
            .to_string();
        let r = h
            .call(tool, json!({ "code": second, "session": session }))
            .await;
        let v = r.structured_content.unwrap_or_default();
        assert_eq!(
            v["result"],
            json!(echoed),
            "{tool}, session run 2: {}",
            v["error"]
        );
    }
}

/// A program whose last statement is a tool call returns that call's large text as it is,
/// in every form the call can take; Python makes it a tail call (the host keeps the text and
/// never sends it to the worker), and what is not our tool function (one of the code's own
/// with the same name) is called as written. A tail call that fails fails the run; a large
/// reply to a concurrent call does not take the tail call's place; a session's run and a
/// one-line program return the same text. In both languages.
#[tokio::test]
async fn a_last_statement_that_is_a_tool_call_returns_its_text_exactly() {
    const BYTES: usize = 1536 << 10;
    let h = harness().await;
    let (message, ts_head, py_head) = large_message(BYTES);
    let echoed = json!(format!("Echo: {message}"));
    let cases: Vec<(&str, String, String, Value)> = vec![
        (
            "a proxy's call",
            "return await tools.fx.echo({ message });".into(),
            "tools.fx.echo(message=message)".into(),
            echoed.clone(),
        ),
        (
            "call_mcp_tool, after a small call",
            "await tools.fx.echo({ message: 'small' });\n\
             return await callMCPTool('fx', 'echo', { message });"
                .into(),
            "call_mcp_tool('fx', 'echo', {'message': 'small'})\n\
             call_mcp_tool('fx', 'echo', {'message': message})"
                .into(),
            echoed.clone(),
        ),
        (
            "awaited",
            "return tools.fx.echo({ message });".into(),
            "await acall_mcp_tool('fx', 'echo', {'message': message})".into(),
            echoed.clone(),
        ),
        (
            "an awaited proxy's call",
            "const m = message;\nreturn await tools.fx['echo']({ message: m });".into(),
            "await atools.fx.echo(message=message)".into(),
            echoed.clone(),
        ),
        (
            "a top-level return",
            "if (!message) return 'none';\nreturn await tools.fx.echo({ message });".into(),
            "if not message:\n    return 'none'\nreturn call_mcp_tool('fx', 'echo', {'message': message})"
                .into(),
            echoed.clone(),
        ),
        (
            "a function of the code's own with the name of ours",
            "const callMCPTool = (...a) => 'mine';\nreturn await callMCPTool('fx', 'echo', { message });"
                .into(),
            "def call_mcp_tool(*a, **k):\n    return 'mine'\ncall_mcp_tool('fx', 'echo', {'message': message})"
                .into(),
            json!("mine"),
        ),
        (
            "a function of the code's own that calls the tool",
            "const f = () => tools.fx.echo({ message });\nreturn await f();".into(),
            "def f():\n    return tools.fx.echo(message=message)\nf()".into(),
            echoed.clone(),
        ),
        (
            "with a concurrent call's large reply",
            format!(
                "const other = tools.fx.big({{ bytes: {BYTES} }});\n\
                 return await tools.fx.echo({{ message }});"
            ),
            format!(
                "import threading\n\
                 t = threading.Thread(target=lambda: tools.fx.big(bytes={BYTES}))\n\
                 t.start()\n\
                 tools.fx.echo(message=message)"
            ),
            echoed.clone(),
        ),
        (
            "a small value",
            "return await tools.fx.echo({ message: 'hi' });".into(),
            "tools.fx.echo(message='hi')".into(),
            json!("Echo: hi"),
        ),
    ];
    expect_results(&h, &ts_head, &py_head, &cases).await;
    let big = json!("x".repeat(BYTES));
    let one_line: [(&str, String, Value); 5] = [
        (
            "execute_python",
            format!("tools.fx.big(bytes={BYTES})"),
            big.clone(),
        ),
        (
            "execute_python",
            format!("call_mcp_tool('fx', 'big', {{'bytes': {BYTES}}})"),
            big.clone(),
        ),
        (
            "execute_python",
            format!("await atools.fx.big(bytes={BYTES})"),
            big.clone(),
        ),
        (
            "execute_typescript",
            format!("return await tools.fx.big({{ bytes: {BYTES} }})"),
            big.clone(),
        ),
        (
            "execute_python",
            "tools.fx.add(a=2, b=2)".into(),
            json!({"sum": 4.0}),
        ),
    ];
    for (tool, code, want) in one_line {
        let r = h.call(tool, json!({ "code": code })).await;
        let v = r.structured_content.unwrap_or_default();
        assert!(
            v["result"] == want,
            "{tool}, one line {code}: {}",
            v["error"]
        );
    }
    for (tool, code) in [
        (
            "execute_typescript",
            "return await tools.fx.fail({ message: 'no such page' });",
        ),
        ("execute_python", "tools.fx.fail(message='no such page')"),
    ] {
        let r = h.call(tool, json!({ "code": code })).await;
        let v = r.structured_content.unwrap_or_default();
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .contains("no such page"),
            "{tool}: a failing last call fails the run: {v}"
        );
    }
    // The same functions awaited (one function, both forms: docs/python.md "Blocking or
    // awaited") are tail calls too, and return the text exactly.
    for code in [
        "await tools.fx.echo(message=message)",
        "await call_mcp_tool('fx', 'echo', {'message': message})",
    ] {
        let r = h
            .call(
                "execute_python",
                json!({ "code": format!("{py_head}{code}") }),
            )
            .await;
        let v = r.structured_content.unwrap_or_default();
        assert!(v["result"] == echoed, "{code} awaited: {}", v["error"]);
    }
    // Python's tail call leaves the text on the host: 15 MiB come back under a 16 MiB memory
    // limit, which the same text made in the worker (the frame and the string) overruns.
    let huge = 15usize << 20;
    let limits = json!({ "memoryMb": 16 });
    let r = h
        .call(
            "execute_python",
            json!({ "code": format!("tools.fx.big(bytes={huge})"), "limits": limits }),
        )
        .await;
    let v = r.structured_content.unwrap_or_default();
    assert!(
        v["result"].as_str().map(str::len) == Some(huge),
        "a tail call under a small memory limit: {}",
        v["error"]
    );
    let r = h
        .call(
            "execute_python",
            json!({ "code": format!("s = tools.fx.big(bytes={huge})\ns"), "limits": limits }),
        )
        .await;
    let v = r.structured_content.unwrap_or_default();
    // Reading the 15 MiB reply runs out of memory in the shim's reader: the frame is skipped
    // and the call raises MemoryError naming the reply and the limit (it ended the worker with
    // exit code 0 before, a WorkerCrashed).
    assert_eq!(
        error_name(&v),
        "MemoryError",
        "the same text made in the worker: {v:.300}"
    );
    assert!(
        error_message(&v).contains("tools.fx.big") && error_message(&v).contains("16 MiB"),
        "{v:.600}"
    );
    // In a session the value is made in the worker as before (code may keep it).
    for (tool, code) in [
        (
            "execute_typescript",
            format!("{ts_head}return await tools.fx.echo({{ message }});"),
        ),
        (
            "execute_python",
            format!("{py_head}tools.fx.echo(message=message)"),
        ),
    ] {
        let r = h
            .call(tool, json!({ "code": code, "session": "new" }))
            .await;
        let v = r.structured_content.unwrap_or_default();
        assert!(
            v["result"] == echoed,
            "{tool}, in a session: {}",
            v["error"]
        );
    }
}

/// A message of about `bytes` (quotes, a newline, characters outside Latin-1 and a combining
/// mark), and the lines that build it as `message` in TypeScript and in Python.
fn large_message(bytes: usize) -> (String, String, String) {
    let unit = "quote \" nl \n Zoë 名前 🚀 e\u{301} ";
    let n = bytes / unit.len() + 1;
    let unit_lit = serde_json::to_string(unit).unwrap();
    (
        unit.repeat(n),
        format!("const message = {unit_lit}.repeat({n});\n"),
        format!("message = {unit_lit} * {n}\n"),
    )
}

/// Runs each case (what it is, TypeScript, Python, the result wanted) in both languages after
/// its language's `head`, and checks the result exactly and that the text block carries its
/// JSON.
async fn expect_results(
    h: &Harness,
    ts_head: &str,
    py_head: &str,
    cases: &[(&str, String, String, Value)],
) {
    for (what, ts, py, want) in cases {
        for (tool, code) in [
            ("execute_typescript", format!("{ts_head}{ts}")),
            ("execute_python", format!("{py_head}{py}")),
        ] {
            let r = h.call(tool, json!({ "code": code })).await;
            let v = r.structured_content.clone().unwrap_or_default();
            assert_ne!(r.is_error, Some(true), "{tool}, {what}: {}", v["error"]);
            if let Some(at) = first_difference(&v["result"], want, "result".into()) {
                panic!("{tool}, {what}: the result differs at {at}");
            }
            let rendered = r.content[0].as_text().unwrap().text.as_str();
            let json_text = serde_json::to_string(want).unwrap();
            // Past 256 KiB of JSON the text carries its head and says so (`structuredContent`
            // has all of it).
            const TEXT_RESULT_BYTES: usize = 256 << 10;
            if json_text.len() <= TEXT_RESULT_BYTES {
                assert!(
                    rendered.starts_with(&format!("{json_text}\n")),
                    "{tool}, {what}: the text block does not carry the result's JSON"
                );
            } else {
                let (head, rest) = rendered.split_once('\n').unwrap();
                assert!(
                    head.len() > TEXT_RESULT_BYTES - 4 && json_text.starts_with(head),
                    "{tool}, {what}: the text block does not start with the result's JSON"
                );
                // The size is the worker's (its done frame's), within an envelope of ours.
                let note = rest.lines().next().unwrap_or_default();
                let about: usize = note
                    .strip_prefix("[host] the result's JSON (about ")
                    .and_then(|t| t.split_once(' '))
                    .and_then(|(n, _)| n.parse().ok())
                    .unwrap_or_else(|| panic!("{tool}, {what}: {note}"));
                assert!(
                    about.abs_diff(json_text.len()) < 64
                        && note.ends_with(&format!(
                            "bytes) is cut here at {} bytes; structuredContent.result holds \
                             all of it. Return less (filter or slice it in code) to read it in \
                             this text.",
                            head.len()
                        )),
                    "{tool}, {what}: {note} (its JSON is {} bytes)",
                    json_text.len()
                );
            }
        }
    }
}

/// Where two JSON values first differ, as a path, with both sides there (cut short).
fn first_difference(got: &Value, want: &Value, path: String) -> Option<String> {
    match (got, want) {
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => a
            .iter()
            .zip(b)
            .enumerate()
            .find_map(|(i, (x, y))| first_difference(x, y, format!("{path}[{i}]"))),
        (Value::Object(a), Value::Object(b)) if a.keys().eq(b.keys()) => a
            .iter()
            .zip(b.values())
            .find_map(|((k, x), y)| first_difference(x, y, format!("{path}.{k}"))),
        _ if got == want => None,
        _ => {
            let cut = |v: &Value| v.to_string().chars().take(300).collect::<String>();
            Some(format!("{path}: got {} want {}", cut(got), cut(want)))
        }
    }
}

/// A JavaScript string can hold a lone surrogate, which has no UTF-8 form. Raw JSON on the
/// way is only scanned, which does not see it: such text takes the decoding path, so a result
/// or a tool call's arguments with one give the code or the client an error, as they always
/// did, never a worker broken by a frame the host cannot read.
#[tokio::test]
async fn a_lone_surrogate_is_an_error_not_a_broken_worker() {
    let h = harness().await;
    let (v, is_error) = h.exec("return { s: 'a\\ud800b' };").await;
    assert!(is_error, "{v}");
    assert_eq!(error_name(&v), "InternalError", "{v}");
    let (v, is_error) = h
        .exec(
            "try { await tools.fx.echo({ message: 'x\\udc00' }); return 'sent'; } \
             catch (e) { return e.name; }",
        )
        .await;
    assert!(!is_error, "{v}");
    assert_eq!(v["result"], "TypeError", "{v}");
    // The same in a large argument, which the engine quotes itself when it has a UTF-8 form.
    let (v, is_error) = h
        .exec(
            "try { await tools.fx.echo({ message: 'x'.repeat(100000) + '\\udc00' }); \
             return 'sent'; } catch (e) { return e.name; }",
        )
        .await;
    assert!(!is_error, "{v}");
    assert_eq!(v["result"], "TypeError", "{v}");
    // A valid pair, escaped or not, is text like any other.
    let (v, is_error) = h
        .exec("return [await tools.fx.echo({ message: '\\ud83d\\ude80' }), JSON.parse('\"\\\\ud83d\\\\ude80\"')];")
        .await;
    assert!(!is_error, "{v}");
    assert_eq!(v["result"], json!(["Echo: 🚀", "🚀"]), "{v}");
}

/// Python code of one line that is one expression compiles straight to its value ("eval"
/// mode) instead of through a syntax tree: every such program answers exactly as the tree's
/// way does (the same code after a comment line, which takes it), results, errors, awaited
/// values and tool calls alike, and one-liners that are not one expression take the tree's way.
#[tokio::test]
async fn python_one_line_expressions_answer_as_the_tree_does() {
    let h = harness().await;
    let cases = [
        "1 + 1",
        "(y := 5)",
        "'return'",
        "[i * i for i in range(4)]",
        "{'a': (1, 2), 'b': None}",
        "print('hi')",
        "tools.fx.echo(message='one line')",
        "await acall_mcp_tool('fx', 'echo', {'message': 'awaited'})",
        "(await __import__('asyncio').sleep(0, 'slept')).upper()",
        "1 / 0",
        "undefined_name",
        "call_mcp_tool('fx', 'fail', {'message': 'no'})",
        "1;",
        "x = 1",
        "return 7",
        "len('ab'); 3",
        "1  # a comment",
        "lambda: 1",
    ];
    for code in cases {
        let (one, one_err) = h.exec_python(code).await;
        let (tree, tree_err) = h.exec_python(&format!("# the tree's way\n{code}")).await;
        assert_eq!(one_err, tree_err, "{code}: {one} / {tree}");
        assert_eq!(error_name(&one), error_name(&tree), "{code}");
        assert_eq!(error_message(&one), error_message(&tree), "{code}");
        if code.starts_with("lambda") {
            // A function's form names its address, which differs between processes.
            assert!(
                one["result"]
                    .as_str()
                    .unwrap()
                    .starts_with("<function <lambda>")
            );
        } else {
            assert_eq!(one["result"], tree["result"], "{code}");
        }
        assert_eq!(one["logs"], tree["logs"], "{code}");
        assert_eq!(one["toolCalls"], tree["toolCalls"], "{code}");
    }
    let (v, is_error) = h.exec_python(" 1").await;
    assert!(is_error);
    assert_eq!(error_name(&v), "IndentationError", "{v}");
}

/// A tool call or a result past the 16 MiB a worker's frame may carry is the code's error,
/// said where it happens and catchable (a call), never a worker the host must kill for
/// breaking the protocol; in both languages, and the server answers the next run.
#[tokio::test]
async fn calls_and_results_past_the_frame_limit_are_the_codes_errors() {
    let h = harness().await;
    let (v, is_error) = h
        .exec(
            "const m = 'x'.repeat(17 * 1024 * 1024);\n\
             try { await tools.fx.echo({ message: m }); return 'sent'; }\n\
             catch (e) { return [e.name, e.message]; }",
        )
        .await;
    assert!(!is_error, "{v}");
    assert_eq!(v["result"][0], "RangeError", "{v}");
    assert!(v["result"][1].as_str().unwrap().contains("17.0 MiB"), "{v}");
    // 17 Mi characters are encoded by JSON.stringify (past what the engine quotes itself);
    // 9 Mi non-ASCII ones by the engine, and are 18 MiB of UTF-8: refused the same way.
    let (v, _) = h
        .exec(
            "try { await tools.fx.echo({ message: 'é'.repeat(9 * 1024 * 1024) }); return 'sent'; }\n\
             catch (e) { return e.name; }",
        )
        .await;
    assert_eq!(v["result"], "RangeError", "{v}");
    let (v, is_error) = h.exec("return 'x'.repeat(17 * 1024 * 1024);").await;
    assert!(is_error);
    assert_eq!(error_name(&v), "RangeError", "{v}");
    assert!(error_message(&v).contains("the result is 17.0 MiB"), "{v}");
    let (v, is_error) = h
        .exec_python(
            "m = 'x' * (17 * 1024 * 1024)\n\
             try:\n    call_mcp_tool('fx', 'echo', {'message': m})\n    r = 'sent'\n\
             except ValueError as e:\n    r = str(e)\n\
             r",
        )
        .await;
    assert!(!is_error, "{v}");
    assert!(v["result"].as_str().unwrap().contains("17.0 MiB"), "{v}");
    let (v, is_error) = h
        .exec_python(
            "import asyncio\n\
             try:\n    await acall_mcp_tool('fx', 'echo', {'message': 'x' * (17 * 1024 * 1024)})\n    r = 'sent'\n\
             except ValueError as e:\n    r = 'refused'\n\
             [r, await acall_mcp_tool('fx', 'echo', {'message': 'after'})]",
        )
        .await;
    assert!(!is_error, "{v}");
    assert_eq!(v["result"], json!(["refused", "Echo: after"]), "{v}");
    // An error whose message (which code writes) is that large is cut, not a broken worker.
    for (tool, code, name) in [
        (
            "execute_typescript",
            "throw new Error('e'.repeat(20 * 1024 * 1024));",
            "Error",
        ),
        (
            "execute_python",
            "raise ValueError('e' * (20 * 1024 * 1024))",
            "ValueError",
        ),
    ] {
        let (v, is_error) = h.run_tool(tool, json!({ "code": code })).await;
        assert!(is_error, "{tool}");
        assert_eq!(error_name(&v), name, "{tool}");
        let message = error_message(&v);
        assert!(
            message.ends_with("(cut: 20.0 MiB in all)"),
            "{tool}: {}",
            message.len()
        );
    }
    let (v, _) = h
        .exec("return await tools.fx.echo({ message: 'still here' });")
        .await;
    assert_eq!(v["result"], "Echo: still here");
}

/// A reply larger than a Python run's memory limit is a MemoryError in the code, raised by the
/// call it answers and naming the reply and the limit; the frame is skipped, so the run goes on
/// (caught) or fails like any uncaught MemoryError, never as a worker crash. TypeScript says the
/// same case clearly too.
#[tokio::test]
async fn a_reply_past_the_python_memory_limit_is_a_memory_error_in_the_code() {
    // A 20 MiB reply must reach the worker: past the default maxResultBytes (16 MiB) the host
    // refuses it before decoding (a ToolError, `robustness`), so raise it here.
    let (h, _settings) = Harness::with_settings(
        EXE.as_ref(),
        json!({ "fx": fixture_entry("fx"), "other-server": fixture_entry("other") }),
        &json!({ "maxResultBytes": 64u64 << 20 }),
        &[],
    )
    .await;
    let limits = json!({ "memoryMb": 16 });
    let big = 20usize << 20;
    // Caught: the next call answers (the stream is still in step), and the run succeeds.
    for code in [
        format!(
            "try:\n    tools.fx.big(bytes={big})\n    r = 'read'\nexcept MemoryError as e:\n    r = str(e)\n\
             [r, tools.fx.echo(message='after')]"
        ),
        format!(
            "import asyncio\n\
             try:\n    await acall_mcp_tool('fx', 'big', {{'bytes': {big}}})\n    r = 'read'\nexcept MemoryError as e:\n    r = str(e)\n\
             [r, await acall_mcp_tool('fx', 'echo', {{'message': 'after'}})]"
        ),
    ] {
        let (v, is_error) = h
            .run_tool("execute_python", json!({ "code": code, "limits": limits }))
            .await;
        assert!(!is_error, "{v:.600}");
        let message = v["result"][0].as_str().unwrap_or_default();
        assert!(
            message.contains("the reply of ")
                && message.contains("over this run's memory limit of 16 MiB")
                && message.contains("limits.memoryMb"),
            "{v:.600}"
        );
        assert_eq!(v["result"][1], "Echo: after", "{v:.600}");
    }
    let (v, _) = h
        .run_tool(
            "execute_python",
            json!({ "code": format!("try:\n    tools.fx.big(bytes={big})\nexcept MemoryError as e:\n    r = str(e)\nr"), "limits": limits }),
        )
        .await;
    assert!(
        v["result"]
            .as_str()
            .unwrap_or_default()
            .contains("the reply of tools.fx.big"),
        "{v:.600}"
    );
    // Uncaught: the run's error is MemoryError, naming the limit.
    let (v, is_error) = h
        .run_tool(
            "execute_python",
            json!({ "code": format!("s = tools.fx.big(bytes={big})\nlen(s)"), "limits": limits }),
        )
        .await;
    assert!(is_error, "{v:.600}");
    assert_eq!(error_name(&v), "MemoryError", "{v:.600}");
    assert!(error_message(&v).contains("16 MiB"), "{v:.600}");
    // TypeScript: the same reply under the same limit is a clear error naming the limit.
    let (v, is_error) = h
        .run_tool(
            "execute_typescript",
            json!({ "code": format!("const s = await tools.fx.big({{ bytes: {big} }}); return s.length;"), "limits": limits }),
        )
        .await;
    assert!(is_error, "{v:.600}");
    assert_eq!(error_name(&v), "MemoryError", "typescript: {v:.600}");
    assert!(error_message(&v).contains("16 MiB"), "typescript: {v:.600}");
    // ... raised by the call, which code may catch, naming the reply; the run goes on.
    let code = format!(
        "let r;\ntry {{ await tools.fx.big({{ bytes: {big} }}); r = 'read'; }}\n\
         catch (e) {{ r = [e.name, e.message]; }}\n\
         return [r, await tools.fx.echo({{ message: 'after' }})];"
    );
    let (v, is_error) = h
        .run_tool(
            "execute_typescript",
            json!({ "code": code, "limits": limits }),
        )
        .await;
    assert!(!is_error, "typescript: {v:.600}");
    assert_eq!(v["result"][0][0], "MemoryError", "typescript: {v:.600}");
    let message = v["result"][0][1].as_str().unwrap_or_default();
    assert!(
        message.contains("the reply of tools.fx.big")
            && message.contains("memory limit of 16 MiB")
            && message.contains("limits.memoryMb"),
        "typescript: {v:.600}"
    );
    assert_eq!(v["result"][1], "Echo: after", "typescript: {v:.600}");
    // The server and a Python worker answer the next run.
    let (v, _) = h.exec_python("tools.fx.echo(message='still here')").await;
    assert_eq!(v["result"], "Echo: still here", "{v}");
}

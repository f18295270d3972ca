//! The executor's own tools by the product line's documents' names, and called from code:
//! `executeTypescript`, `run-python-code`, `execute_code`, `get_tool_signature` ... answer a
//! real client with the documents' parameters and fields and stay out of `tools/list`; odd
//! names and unknown parameters are loud; code reaches `code-executor`'s tools in both
//! languages, and a nested execution never does more than its caller (allowedTools, limits,
//! model calls, time), shares its ledger, and nests at most four deep, from a skill too.

use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};
use test_support::{Harness, Lang, TempConfig};

use crate::common::{BOTH, EXE};

/// The fixture upstream as `fx`, and a mock model provider that answers when a run may make
/// model calls (off unless the request enables them).
async fn server() -> (Harness, TempConfig) {
    let (url, _seen) = crate::llm_provider::mock_provider().await;
    Harness::with_settings(
        EXE.as_ref(),
        json!({ "fx": test_support::fixture_entry("fx") }),
        &json!({"llm": {"provider": {"api": "anthropic", "baseUrl": url, "model": "m"}}}),
        &[],
    )
    .await
}

/// A `tools/call` expected to be refused as a malformed request: its message.
async fn refused(h: &Harness, tool: &str, args: Value) -> String {
    let Value::Object(map) = args else {
        panic!("args must be an object")
    };
    match h
        .client
        .peer()
        .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(map))
        .await
    {
        Ok(r) => panic!("{tool:?} was answered: {r:?}"),
        Err(e) => e.to_string(),
    }
}

/// The documents' tool names run code with the documents' parameters, answer with their
/// fields beside ours, and are not listed; health and list_servers carry the documents'
/// fields with real values.
#[tokio::test]
async fn the_documents_names_answer_and_are_not_listed() {
    let (h, _c) = server().await;
    let listed: Vec<String> = h
        .client
        .peer()
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    assert_eq!(
        listed,
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
    let runs = [
        (
            "executeTypescript",
            json!({"code": "return 6 * 7", "timeoutMs": 20000}),
        ),
        (
            "run-typescript-code",
            json!({"code": "return 6 * 7", "allowedTools": ["mcp__fx__*"]}),
        ),
        (
            "execute_code",
            json!({"code": "return 6 * 7", "timeout_ms": 20000}),
        ),
        (
            "execute_code",
            json!({"code": "6 * 7", "language": "python"}),
        ),
        (
            "executePython",
            json!({"code": "6 * 7", "enableSampling": false}),
        ),
        (
            "run-python-code",
            json!({"code": "6 * 7", "timeout_ms": 20000}),
        ),
        ("run_python", json!({"code": "6 * 7"})),
    ];
    for (tool, args) in runs {
        let (v, err) = h.run_tool(tool, args.clone()).await;
        assert!(!err, "{tool} {args}: {v}");
        assert_eq!(v["result"], 42, "{tool} {args}: {v}");
        assert_eq!(v["success"], true, "{tool}: {v}");
        assert_eq!(v["samplingMetrics"]["totalRounds"], 0, "{tool}: {v}");
        assert_eq!(v["execution_ms"], v["durationMs"], "{tool}: {v}");
    }
    // A timeout in the documents' spelling is honoured, not ignored.
    let (v, err) = h
        .run_tool(
            "execute_code",
            json!({"code": "while (true) {}", "timeout_ms": 1500}),
        )
        .await;
    assert!(err, "{v}");
    assert_eq!(v["error"]["name"], "TimeoutError", "{v}");
    assert_eq!(v["success"], false, "{v}");
    // Our names answer as they always did.
    let (v, _) = h.exec("return 1").await;
    assert!(v.get("samplingMetrics").is_none(), "{v}");

    let (sig, err) = h
        .run_tool("get_tool_signature", json!({"server": "fx", "tool": "add"}))
        .await;
    assert!(!err, "{sig}");
    assert!(sig["signature"].as_str().unwrap().contains("add"), "{sig}");
    assert!(sig["description"].is_string(), "{sig}");
    assert_eq!(sig["inputSchema"]["type"], "object", "{sig}");
    // Our own execute tools' reference, by the documents' names too.
    let (r, _) = h
        .run_tool("get_tool_schema", json!({"name": "executePython"}))
        .await;
    assert_eq!(r["name"], "execute_python", "{r}");

    for detail in ["standard", "minimal"] {
        let (s, err) = h
            .run_tool(
                "search_tools",
                json!({"query": "add numbers", "detail": detail}),
            )
            .await;
        assert!(!err, "{s}");
        let first = &s["tools"][0];
        assert_eq!(
            (&first["server"], &first["tool"]),
            (&json!("fx"), &json!("add")),
            "{s}"
        );
        assert_eq!(
            first.get("description").is_some(),
            detail == "standard",
            "{s}"
        );
    }

    let (servers, _) = h.run_tool("list_servers", json!({})).await;
    let fx = servers["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "fx")
        .unwrap();
    assert_eq!(fx["status"], "connected", "{servers}");
    assert_eq!(servers["totalTools"], fx["toolCount"], "{servers}");
    assert_eq!(servers["available"], json!([]), "{servers}");

    let (health, _) = h.run_tool("health", json!({})).await;
    assert_eq!(health["healthy"], true, "{health}");
    assert_eq!(health["auditLog"]["enabled"], true, "{health}");
    assert_eq!(health["mcpClients"]["connected"], 1, "{health}");
    assert_eq!(
        health["connectionPool"],
        json!({"active": 0, "waiting": 0, "max": 4}),
        "{health}"
    );
    assert!(health["uptime"].as_f64().unwrap() > 0.0, "{health}");
    assert!(
        health["timestamp"].as_str().unwrap().ends_with('Z'),
        "{health}"
    );
    // Ours beside them.
    assert!(
        health["pools"].is_array() && health["uptimeMs"].is_u64(),
        "{health}"
    );
}

/// A tool name is matched exactly; near misses and look-alikes run nothing, and say which
/// name was meant when a person could have meant one. An unknown parameter names the ones
/// the tool takes; two spellings of one parameter must agree.
#[tokio::test]
async fn odd_names_and_unknown_parameters_are_refused() {
    let (h, _c) = server().await;
    let code = json!({"code": "return 1"});
    for (name, hint) in [
        ("ExecuteTypescript", Some("execute_typescript")),
        ("executeTypeScript", Some("execute_typescript")),
        ("RUN-PYTHON-CODE", Some("run-python-code")),
        ("execute-python", Some("execute_python")),
        ("execute-code", Some("execute_code")),
        ("executeTypescrіpt", None), // Cyrillic і
        ("executeTypescript\u{200b}", None),
        ("executeTypescript ", None),
        ("ｅxecuteTypescript", None),
        ("executeTypescript%00", None),
        ("mcp__code-executor__executeTypescript", None),
        ("code-executor__health", None),
    ] {
        let e = refused(&h, name, code.clone()).await;
        assert!(e.contains("unknown tool"), "{name:?}: {e}");
        match hint {
            Some(n) => assert!(
                e.contains(&format!("did you mean \"{n}\"")),
                "{name:?}: {e}"
            ),
            None => assert!(!e.contains("did you mean"), "{name:?}: {e}"),
        }
    }
    let e = refused(
        &h,
        "executeTypescript",
        json!({"code": "return 1", "timeout": 5}),
    )
    .await;
    assert!(e.contains("has no parameter \"timeout\""), "{e}");
    assert!(
        e.contains("timeoutMs (timeout_ms)") && e.contains("allowedTools"),
        "{e}"
    );
    let e = refused(
        &h,
        "execute_python",
        json!({"code": "1", "language": "python"}),
    )
    .await;
    assert!(e.contains("has no parameter \"language\""), "{e}");
    let e = refused(&h, "execute_code", json!({"code": "1", "language": "ruby"})).await;
    assert!(e.contains("language must be"), "{e}");
    let e = refused(
        &h,
        "execute_code",
        json!({"code": "1", "timeoutMs": 10, "timeout_ms": 20}),
    )
    .await;
    assert!(e.contains("different values"), "{e}");
    let e = refused(&h, "health", json!({"verbose": true})).await;
    assert!(e.contains("it accepts none"), "{e}");
    let e = refused(&h, "get_tool_signature", json!({"server": "fx"})).await;
    assert!(e.contains("`server` and `tool`"), "{e}");
    // Our own tools have schemas under the server's name too, by any of their names.
    for (args, has) in [
        (
            json!({"server": "code-executor", "tool": "health"}),
            "Server status",
        ),
        (
            json!({"name": "mcp__code-executor__search_tools"}),
            "Search tools",
        ),
        (
            json!({"server": "code-executor", "tool": "run-python-code"}),
            "is a name of execute_python",
        ),
    ] {
        let r = h.call("get_tool_signature", args.clone()).await;
        assert_ne!(r.is_error, Some(true), "{args}: {r:?}");
        assert!(format!("{:?}", r.content).contains(has), "{args}: {r:?}");
    }
    let e = refused(
        &h,
        "get_tool_schema",
        json!({"server": "code-executor", "tool": "helth"}),
    )
    .await;
    assert!(e.contains("unknown tool") && e.contains("health"), "{e}");
    // A detail neither ours nor the documents' is the search's own error, as before.
    let r = h
        .call("search_tools", json!({"query": "x", "detail": "verbose"}))
        .await;
    assert_eq!(r.is_error, Some(true), "{r:?}");
    assert!(
        format!("{:?}", r.content).contains("\\\"standard\\\""),
        "{r:?}"
    );
    // Nothing ran: no execution started.
    let audit = std::fs::read_to_string(h.audit_path()).unwrap_or_default();
    assert!(!audit.contains("run.start"), "{audit}");
    // From code, the same: a near miss or an unknown parameter is a TypeError, and nothing
    // nested runs.
    for lang in BOTH {
        let code = lang.pick(
            "const out = [];
             for (const [name, args] of [['mcp__code-executor__ExecuteTypescript', {code: 'return 1'}],
                                         ['mcp__code-executor__executeTypescript', {code: 'return 1', timeout: 5}],
                                         ['mcp__code-executor__wait', {handle: 'x'}]]) {
               try { await callMCPTool(name, args); out.push('ran'); }
               catch (e) { out.push(e.name + ': ' + e.message); }
             }
             return out;",
            "out = []
for name, args in [('mcp__code-executor__ExecuteTypescript', {'code': 'return 1'}),
                   ('mcp__code-executor__executeTypescript', {'code': 'return 1', 'timeout': 5}),
                   ('mcp__code-executor__wait', {'handle': 'x'})]:
    try:
        call_mcp_tool(name, args)
        out.append('ran')
    except Exception as e:
        out.append(type(e).__name__ + ': ' + str(e))
out",
        );
        let (v, err) = h.run_tool(lang.tool(), json!({"code": code})).await;
        assert!(!err, "{lang:?}: {v}");
        let r: Vec<String> = serde_json::from_value(v["result"].clone()).unwrap();
        assert!(
            r[0].starts_with(
                "TypeError: unknown tool \"ExecuteTypescript\" (did you mean \"execute_typescript\""
            ),
            "{lang:?}: {r:?}"
        );
        assert!(
            r[1].starts_with("TypeError: executeTypescript has no parameter \"timeout\""),
            "{lang:?}: {r:?}"
        );
        assert!(r[2].contains("code has none"), "{lang:?}: {r:?}");
        // Every attempt counts, as calls of upstream tools do.
        assert_eq!(v["toolCalls"], 3, "{lang:?}: {v}");
    }
    let audit = std::fs::read_to_string(h.audit_path()).unwrap_or_default();
    assert_eq!(audit.matches("\"run.start\"").count(), 2, "{audit}");
}

/// Code calls `code-executor`'s own tools by every form the documents use, in both languages:
/// a nested execution (whose answer carries `samplingMetrics` from our accounting), search,
/// health and the server list.
#[tokio::test]
async fn code_calls_the_executors_own_tools() {
    let (h, _c) = server().await;
    for lang in BOTH {
        let code = lang.pick(
            r#"
            const nested = await callMCPTool('mcp__code-executor__executeTypescript', {
              code: `const r = await callMCPTool('mcp__fx__add', {a: 2, b: 3});
                     return r.sum + (await llm.ask('hi')).length;`,
              enableSampling: true,
              allowedTools: ['mcp__fx__add'],
            });
            const py = await callMCPTool('mcp__code-executor__run-python-code', {code: '6 * 7'});
            const found = await callMCPTool('code-executor', 'search_tools', {query: 'add numbers', detail: 'standard'});
            const health = await callMCPTool('mcp__code-executor__health', {});
            const servers = await callMCPTool('code-executor', 'list_servers', {});
            return {nested: nested.result, rounds: nested.samplingMetrics.totalRounds,
                    tokens: nested.samplingMetrics.totalTokens, py: py.result,
                    found: found.tools.map(t => `${t.server}.${t.tool}`)[0],
                    connected: health.mcpClients.connected, healthy: health.healthy,
                    total: servers.totalTools};
            "#,
            r#"
nested = call_mcp_tool('mcp__code-executor__executePython', {
    'code': "r = call_mcp_tool('mcp__fx__add', {'a': 2, 'b': 3})\nr['sum'] + len(llm.ask('hi'))",
    'enableSampling': True,
    'allowedTools': ['mcp__fx__add'],
})
ts = call_mcp_tool('mcp__code-executor__executeTypescript', {'code': 'return 6 * 7'})
found = call_mcp_tool('code-executor', 'search_tools', {'query': 'add numbers', 'detail': 'standard'})
health = call_mcp_tool('mcp__code-executor__health', {})
servers = call_mcp_tool('code-executor', 'list_servers', {})
{'nested': nested['result'], 'rounds': nested['samplingMetrics']['totalRounds'],
 'tokens': nested['samplingMetrics']['totalTokens'], 'py': ts['result'],
 'found': [f"{t['server']}.{t['tool']}" for t in found['tools']][0],
 'connected': health['mcpClients']['connected'], 'healthy': health['healthy'],
 'total': servers['totalTools']}
"#,
        );
        let (v, err) = h
            .run_tool(lang.tool(), json!({"code": code, "enableSampling": true}))
            .await;
        assert!(!err, "{lang:?}: {v}");
        let r = &v["result"];
        // "reply to: hi" is 12 characters; the mock answers 7 tokens in, 3 out.
        assert_eq!(r["nested"].as_f64(), Some(17.0), "{lang:?}: {v}");
        assert_eq!(
            (&r["rounds"], &r["tokens"]),
            (&json!(1), &json!(10)),
            "{lang:?}: {v}"
        );
        assert_eq!(r["py"], 42, "{lang:?}: {v}");
        assert_eq!(r["found"], "fx.add", "{lang:?}: {v}");
        assert_eq!(
            (&r["connected"], &r["healthy"]),
            (&json!(1), &json!(true)),
            "{lang:?}"
        );
        assert!(r["total"].as_u64().unwrap() > 0, "{lang:?}: {v}");
        // The caller's accounting is the whole tree's.
        assert_eq!(v["llm"]["calls"], 1, "{lang:?}: {v}");
        // Five calls of our tools and the nested run's one.
        assert_eq!(v["toolCalls"], 6, "{lang:?}: {v}");
    }
}

/// One nested call per attack, each from code that may do less than the nested call asks:
/// the nested run is refused or denied, never widened.
#[tokio::test]
async fn a_nested_execution_never_does_more_than_its_caller() {
    let (h, _c) = server().await;
    let nest = |lang: Lang, inner: &str, args: &str| -> String {
        lang.pick(
            format!(
                "return await callMCPTool('mcp__code-executor__executeTypescript', {{code: {}{args}}})",
                json!(inner)
            ),
            format!(
                "call_mcp_tool('mcp__code-executor__executeTypescript', {{'code': {}{}}})",
                json!(inner),
                args.replace("true", "True")
            ),
        )
    };
    let add = "return (await callMCPTool('mcp__fx__add', {a: 1, b: 1})).sum";
    // (outer arguments, nested arguments, error name, words in the message)
    let cases: [(Value, &str, &str, &str); 6] = [
        // Its own allowedTools cannot widen the caller's.
        (
            json!({"allowedTools": ["mcp__fx__echo", "mcp__code-executor__execute_*"]}),
            ", \"allowedTools\": [\"mcp__fx__*\"]",
            "PolicyError",
            "not in the allowedTools of the execution that started this one",
        ),
        // Nor can leaving them out.
        (
            json!({"allowedTools": ["mcp__fx__echo", "mcp__code-executor__executeTypescript"]}),
            "",
            "PolicyError",
            "mcp__fx__add",
        ),
        // Model calls only when the caller may make them.
        (
            json!({}),
            ", \"enableSampling\": true",
            "PolicyError",
            "no more than its caller",
        ),
        // Limits at most the caller's.
        (
            json!({"limits": {"maxToolCalls": 3}}),
            ", \"limits\": {\"maxToolCalls\": 50}",
            "LimitError",
            "more than the calling execution's 3",
        ),
        // A grant of its own is refused.
        (
            json!({}),
            ", \"permissions\": {\"net\": [\"example.com\"]}",
            "TypeError",
            "cannot ask for another",
        ),
        // So is a session.
        (
            json!({}),
            ", \"session\": \"new\"",
            "TypeError",
            "outside any session",
        ),
    ];
    for lang in BOTH {
        for (outer, nested, name, words) in &cases {
            let mut args = outer.clone();
            args["code"] = json!(nest(lang, add, nested));
            let (v, err) = h.run_tool(lang.tool(), args).await;
            assert!(err, "{lang:?} {nested}: {v}");
            let e = &v["error"];
            assert_eq!(e["name"], *name, "{lang:?} {nested}: {v}");
            assert!(
                e["message"].as_str().unwrap().contains(words),
                "{lang:?} {nested}: {v}"
            );
        }
        // The ledger is shared: the caller's maxToolCalls counts the nested run's calls.
        let loop5 =
            "for (let i = 0; i < 5; i++) await callMCPTool('mcp__fx__add', {a: i, b: 0}); return 1";
        let (v, err) = h
            .run_tool(
                lang.tool(),
                json!({"code": nest(lang, loop5, ""), "limits": {"maxToolCalls": 3}}),
            )
            .await;
        assert!(err, "{lang:?}: {v}");
        assert_eq!(v["error"]["name"], "LimitError", "{lang:?}: {v}");
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap()
                .contains("limit of 3 tool calls"),
            "{v}"
        );
        // A nested deadline past the caller's is cut to it: the caller ends on time.
        let started = std::time::Instant::now();
        let (v, err) = h
            .run_tool(
                lang.tool(),
                json!({"code": nest(lang, "while (true) {}", ", \"timeoutMs\": 120000"), "timeoutMs": 2000}),
            )
            .await;
        assert!(err, "{lang:?}: {v}");
        assert_eq!(v["error"]["name"], "TimeoutError", "{lang:?}: {v}");
        assert!(
            started.elapsed() < std::time::Duration::from_secs(20),
            "{lang:?}"
        );
    }
}

/// Code that calls the executor with itself nests until the bound, and fails there with a
/// LimitError that says so; a skill that calls the executor runs one level deeper, inside
/// its caller's allowedTools.
#[tokio::test]
async fn self_calls_are_bounded_and_work_from_a_skill() {
    let (h, _c) = server().await;
    let body = "const r = await callMCPTool('mcp__code-executor__executeTypescript', \
                {code: 'const body = ' + JSON.stringify(body) + '; ' + body}); return r.result + 1;";
    let code = format!("const body = {}; {body}", json!(body));
    let (v, err) = h.exec(&code).await;
    assert!(err, "{v}");
    assert_eq!(v["error"]["name"], "LimitError", "{v}");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(message.contains("at most 4 deep"), "{v}");
    // Every level said which call failed.
    assert_eq!(
        message.matches("executeTypescript failed").count(),
        4,
        "{v}"
    );
    // Python recursing through the other language's name ends the same way.
    let py = r#"import json
src = 'import json\nsrc = XX\ncall_mcp_tool("mcp__code-executor__run-python-code", {"code": src.replace("X" + "X", json.dumps(src), 1)})'
call_mcp_tool('mcp__code-executor__run-python-code', {'code': src.replace('XX', json.dumps(src), 1)})"#;
    let (v, err) = h.exec_python(py).await;
    assert!(err, "{v}");
    assert_eq!(v["error"]["name"], "LimitError", "{v}");

    let skill_code = "return (await callMCPTool('mcp__code-executor__executePython', {code: \"call_mcp_tool('mcp__fx__add', {'a': 40, 'b': 2})['sum']\"})).result";
    let (v, err) = h
        .exec_with(json!({"code": skill_code, "save": {"name": "nested-add", "description": "adds through the executor"}}))
        .await;
    assert!(!err, "{v}");
    let (v, err) = h.exec("return await skills.nested_add({})").await;
    assert!(!err, "{v}");
    assert_eq!(v["result"], 42, "{v}");
    let (v, err) = h
        .exec_python_with(
            json!({"code": "skills.nested_add({})", "allowedTools": ["mcp__fx__echo", "mcp__code-executor__executePython"]}),
        )
        .await;
    assert!(err, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("mcp__fx__add"),
        "{v}"
    );
}

/// A run started by a documents' name and answered later (`yieldAfterMs`, then `wait`)
/// carries their fields in the answer that ends it, not while it runs; one started by our
/// name carries none.
#[tokio::test]
async fn a_documents_run_answered_by_wait_carries_their_fields() {
    let (h, _c) = server().await;
    let code = "await new Promise(r => setTimeout(r, 300)); return 7";
    for (tool, documents) in [("executeTypescript", true), ("execute_typescript", false)] {
        let r = h.call(tool, json!({"code": code, "yieldAfterMs": 0})).await;
        let v = r.structured_content.clone().unwrap_or_default();
        let handle = v["running"]["handle"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(!handle.is_empty(), "{tool}: {v}");
        assert!(
            v.get("success").is_none(),
            "{tool}: a running answer claims nothing: {v}"
        );
        let mut waits = 0;
        let done = loop {
            waits += 1;
            assert!(waits <= 20, "{tool}: the run never ended");
            let r = h
                .call("wait", json!({"handle": handle, "timeoutMs": 5000}))
                .await;
            let w = r.structured_content.clone().unwrap_or_default();
            if w.get("running").is_none_or(Value::is_null) {
                break w;
            }
        };
        assert_eq!(done["result"], 7, "{tool}: {done}");
        assert_eq!(done.get("success").is_some(), documents, "{tool}: {done}");
        if documents {
            assert_eq!(done["success"], true, "{done}");
            assert!(done["execution_ms"].is_number(), "{done}");
            assert_eq!(done["samplingMetrics"]["totalRounds"], 0, "{done}");
        }
    }
}

/// Each call of one of the executor's own tools from code is a tool call: counted on the
/// request's `maxToolCalls` (a loop or a fan-out of nested runs stops there, in both
/// languages), and judged by the policy's rules for `code-executor` and by `allowedTools`
/// under the name code used or ours; the policy's default does not take them away.
#[tokio::test]
async fn own_tools_are_tool_calls_under_the_policy() {
    let (url, _seen) = crate::llm_provider::mock_provider().await;
    let (h, _c) = Harness::with_settings(
        EXE.as_ref(),
        json!({ "fx": test_support::fixture_entry("fx") }),
        &json!({
            "llm": {"provider": {"api": "anthropic", "baseUrl": url, "model": "m"}},
            "policy": {"default": "deny", "servers": {
                "fx": {"allow": ["add"]},
                "code-executor": {"deny": ["execute_python", "run-*"]}
            }}
        }),
        &[],
    )
    .await;
    let failed = |v: &Value, name: &str, words: &str, what: &str| {
        assert_eq!(v["error"]["name"], name, "{what}: {v}");
        let m = v["error"]["message"].as_str().unwrap_or_default();
        assert!(m.contains(words), "{what}: {v}");
    };
    for lang in BOTH {
        // A sequential loop and a parallel fan-out of nested runs stop at maxToolCalls.
        let (seq, fan) = lang.pick(
            (
                "for (let i = 0; i < 40; i++) await callMCPTool('code-executor', 'executeTypescript', {code: 'return 1'}); return 0",
                "await Promise.all(Array.from({length: 40}, () => callMCPTool('mcp__code-executor__execute_typescript', {code: 'return 1'}))); return 0",
            ),
            (
                "for i in range(40):\n    call_mcp_tool('code-executor', 'executeTypescript', {'code': 'return 1'})\n0",
                "import asyncio\nasync def main():\n    await asyncio.gather(*[acall_mcp_tool('mcp__code-executor__execute_typescript', {'code': 'return 1'}) for _ in range(40)])\nasyncio.run(main())\n0",
            ),
        );
        for code in [seq, fan] {
            let (v, err) = h
                .run_tool(
                    lang.tool(),
                    json!({"code": code, "limits": {"maxToolCalls": 6}}),
                )
                .await;
            assert!(err, "{lang:?} {code}: {v}");
            failed(&v, "LimitError", "limit of 6 tool calls", code);
        }
        // Discovery by our tools counts too.
        let search = lang.pick(
            "for (let i = 0; i < 10; i++) await callMCPTool('code-executor', 'search_tools', {query: 'add'}); return 0",
            "for i in range(10):\n    call_mcp_tool('code-executor', 'search_tools', {'query': 'add'})\n0",
        );
        let (v, err) = h
            .run_tool(
                lang.tool(),
                json!({"code": search, "limits": {"maxToolCalls": 3}}),
            )
            .await;
        assert!(err, "{lang:?}: {v}");
        failed(&v, "LimitError", "limit of 3 tool calls", search);

        // The policy's rules for code-executor, by the alias or ours; default deny aside.
        let call = |tool: &str, args: &str| {
            lang.pick(
                format!("return await callMCPTool('code-executor', '{tool}', {args})"),
                format!(
                    "call_mcp_tool('code-executor', '{tool}', {})",
                    args.replace("code:", "'code':")
                        .replace("query:", "'query':")
                ),
            )
        };
        for (tool, args, denied_by) in [
            (
                "execute_python",
                "{code: '1'}",
                Some("deny: execute_python"),
            ),
            ("executePython", "{code: '1'}", Some("deny: execute_python")),
            ("run-python-code", "{code: '1'}", Some("deny: run-*")),
            (
                "run-typescript-code",
                "{code: 'return 1'}",
                Some("deny: run-*"),
            ),
            ("executeTypescript", "{code: 'return 1'}", None),
            ("search_tools", "{query: 'add'}", None),
            ("health", "{}", None),
        ] {
            let (v, err) = h
                .run_tool(lang.tool(), json!({"code": call(tool, args)}))
                .await;
            match denied_by {
                Some(words) => {
                    assert!(err, "{lang:?} {tool}: {v}");
                    failed(&v, "PolicyError", words, tool);
                }
                None => assert!(!err, "{lang:?} {tool}: {v}"),
            }
        }
        // Code reads our tools' schemas by the server's name, as any tool's.
        let schema = lang.pick(
            "return (await getToolSchema('code-executor', 'executePython')).alias",
            "get_tool_schema('code-executor', 'executePython')['alias']",
        );
        let (v, err) = h.run_tool(lang.tool(), json!({"code": schema})).await;
        assert!(!err, "{lang:?}: {v}");
        assert!(
            v["result"]
                .as_str()
                .unwrap_or_default()
                .contains("execute_python"),
            "{v}"
        );
        // The policy judges the call before its arguments are read, as any tool's.
        let (v, err) = h
            .run_tool(
                lang.tool(),
                json!({"code": call("search_tools", "{'bogus': 1}"), "allowedTools": ["mcp__fx__add"]}),
            )
            .await;
        assert!(err, "{lang:?}: {v}");
        failed(
            &v,
            "PolicyError",
            "not in this execution's allowedTools",
            "bogus",
        );
        // allowedTools: a list without the executor leaves its tools out; naming the alias
        // or ours lets it in.
        for (allowed, ok) in [
            (json!(["mcp__fx__add"]), false),
            (
                json!(["mcp__fx__add", "mcp__code-executor__search_tools"]),
                true,
            ),
            (json!(["mcp__code-executor__*"]), true),
        ] {
            let (v, err) = h
                .run_tool(
                    lang.tool(),
                    json!({"code": call("search_tools", "{query: 'add'}"), "allowedTools": allowed}),
                )
                .await;
            assert_eq!(err, !ok, "{lang:?} {allowed}: {v}");
            if !ok {
                failed(
                    &v,
                    "PolicyError",
                    "not in this execution's allowedTools",
                    "allowedTools",
                );
            }
        }
    }
}

/// An upstream configured as `code-executor` wins the name: code reaches that server under
/// it (not this server's own tools), and the configuration says so.
#[tokio::test]
async fn an_upstream_named_code_executor_wins_the_name() {
    let h = Harness::start(
        EXE.as_ref(),
        json!({ "code-executor": test_support::fixture_entry("code-executor") }),
        &[],
        &[],
    )
    .await;
    for lang in BOTH {
        let code = lang.pick(
            "const e = await callMCPTool('code-executor', 'echo', {message: 'upstream'});
             try { await callMCPTool('mcp__code-executor__health', {}); return [e, 'ran']; }
             catch (err) { return [e, err.name, err.message]; }",
            "e = call_mcp_tool('code-executor', 'echo', {'message': 'upstream'})
try:
    call_mcp_tool('mcp__code-executor__health', {})
    r = [e, 'ran']
except Exception as err:
    r = [e, type(err).__name__, str(err)]
r",
        );
        let (v, err) = h.run_tool(lang.tool(), json!({"code": code})).await;
        assert!(!err, "{lang:?}: {v}");
        let r = &v["result"];
        assert!(r[0].as_str().unwrap().contains("upstream"), "{lang:?}: {v}");
        assert_eq!(r[1], "ToolError", "{lang:?}: {v}");
        assert!(
            r[2].as_str()
                .unwrap()
                .contains("no tool of server \"code-executor\""),
            "{v}"
        );
    }
    let (health, _) = h.run_tool("health", json!({})).await;
    assert!(
        health["configWarnings"]
            .to_string()
            .contains("an upstream server is named \\\"code-executor\\\""),
        "{health}"
    );
}

/// `health`'s documents' fields are measured, not constants: an audit log turned off is
/// `auditLog.enabled: false` on a healthy server; one that cannot be written makes the server
/// not healthy, and says why (the checks of `/readyz`).
#[tokio::test]
async fn health_says_what_is_measured() {
    let dir = test_support::TempDir::new("own-tools-health");
    let (off, _c) = Harness::with_settings(
        EXE.as_ref(),
        json!({}),
        &json!({"audit": {"enabled": false}}),
        &[],
    )
    .await;
    let (v, _) = off.exec("return 1").await;
    assert_eq!(v["result"], 1, "{v}");
    let (health, _) = off.run_tool("health", json!({})).await;
    assert_eq!(health["auditLog"]["enabled"], false, "{health}");
    assert_eq!(health["healthy"], true, "{health}");
    assert_eq!(health["problems"], json!([]), "{health}");
    assert_eq!(health["mcpClients"]["connected"], 0, "{health}");
    // A file where the log's directory should be: the log cannot be written.
    let file = dir.0.join("a-file");
    std::fs::write(&file, "").unwrap();
    let (broken, _c) = Harness::with_settings(
        EXE.as_ref(),
        json!({}),
        &json!({"audit": {"path": file.join("audit.jsonl")}}),
        &[],
    )
    .await;
    let (v, _) = broken.exec("return 1").await;
    assert_eq!(v["result"], 1, "{v}");
    let (health, _) = broken.run_tool("health", json!({})).await;
    assert_eq!(health["healthy"], false, "{health}");
    assert!(
        health["problems"][0]
            .as_str()
            .unwrap()
            .contains("audit log is not written"),
        "{health}"
    );
    // Code asking the executor sees the same.
    let (v, _) = broken
        .exec("const h = await callMCPTool('mcp__code-executor__health', {}); return [h.healthy, h.problems.length];")
        .await;
    assert_eq!(v["result"], json!([false, 1]), "{v}");
}

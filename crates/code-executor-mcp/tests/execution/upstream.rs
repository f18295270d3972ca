//! Upstream starts through the built binary: a server that hangs at start does not hold up
//! discovery, a failed start backs off instead of being retried by every request, start
//! errors say in words what happened and what to do, and calls to a server that did not
//! start count and are audited like every other attempt.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use test_support::{Harness, TempConfig, fixture_entry};

use crate::common::EXE;

/// A fixture entry under `name` with extra environment; every start appends a line to
/// `marker`.
fn entry(name: &str, marker: &Path, env: &[(&str, &str)]) -> Value {
    let mut e = fixture_entry(name);
    let mut vars = serde_json::Map::new();
    vars.insert("FIXTURE_START_MARKER".into(), json!(marker));
    for (k, v) in env {
        vars.insert((*k).into(), json!(v));
    }
    e["env"] = Value::Object(vars);
    e
}

fn starts(marker: &Path) -> usize {
    std::fs::read_to_string(marker)
        .map(|s| s.lines().count())
        .unwrap_or(0)
}

/// A server with `settings` and `servers`; returns the harness and the folder for markers.
async fn start(settings: Value, servers: impl FnOnce(&Path) -> Value) -> (Harness, TempConfig) {
    let dir = TempConfig::new(json!({}));
    let path = dir.dir.join("settings.json");
    std::fs::write(&path, settings.to_string()).unwrap();
    let servers = servers(&dir.dir);
    let h = Harness::start(
        EXE.as_ref(),
        servers,
        &[],
        &[("CODE_EXECUTOR_CONFIG_PATH", path.to_str().unwrap())],
    )
    .await;
    (h, dir)
}

fn marker(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("{name}.starts"))
}

/// The structured answer of a discovery tool, and its text.
async fn discovery(h: &Harness, tool: &str, args: Value) -> (Value, String) {
    let r = h.call(tool, args).await;
    assert_ne!(r.is_error, Some(true), "{r:?}");
    let text = r
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n");
    (r.structured_content.unwrap_or(Value::Null), text)
}

fn status_of(servers: &Value, name: &str) -> Value {
    servers["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .cloned()
        .unwrap_or(Value::Null)
}

/// Issue 18: a server that hangs at start held every `search_tools` for the connect
/// timeout. With a connect timeout of ten minutes, the search comes back while that start
/// is still under way (list_servers says `starting` afterwards), answers from the other
/// server, and names the skipped one; a second search does not start it again.
#[tokio::test]
async fn a_server_that_hangs_at_start_does_not_hold_up_search() {
    let (h, dir) = start(json!({"connectTimeoutMs": 600_000}), |dir| {
        json!({
            "hangs": entry("hangs", &marker(dir, "hangs"), &[("FIXTURE_HANG_AT_START", "1")]),
            "fx": fixture_entry("fx"),
        })
    })
    .await;
    let (found, text) = discovery(
        &h,
        "search_tools",
        json!({"query": "echo", "detail": "names"}),
    )
    .await;
    assert!(
        found["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "mcp__fx__echo"),
        "{found}"
    );
    let skipped = "MCP server \"hangs\" is still starting";
    assert!(
        found["unavailable"][0]
            .as_str()
            .unwrap()
            .starts_with(skipped),
        "{found}"
    );
    assert!(text.contains(skipped), "{text}");
    // The start is still under way: the search did not wait for it to end.
    let (servers, _) = discovery(&h, "list_servers", json!({})).await;
    assert_eq!(
        status_of(&servers, "hangs")["status"],
        "starting",
        "{servers}"
    );
    // Again, from code: searchTools, discoverMCPTools and listServers all answer.
    let (v, is_error) = h
        .exec(
            "const s = await searchTools('echo', {detail: 'names'}); const d = await discoverMCPTools(); const l = await listServers(); return [s.unavailable, d.unavailable, l.servers.find(x => x.name === 'hangs').status, d.tools.some(t => t.name === 'mcp__fx__echo')];",
        )
        .await;
    assert!(!is_error, "{v}");
    assert!(
        v["result"][0][0].as_str().unwrap().starts_with(skipped)
            && v["result"][1][0].as_str().unwrap().starts_with(skipped),
        "{v}"
    );
    assert_eq!(v["result"][2], "starting", "{v}");
    assert_eq!(v["result"][3], true, "{v}");
    // One start in all: the later searches joined it.
    assert_eq!(starts(&marker(&dir.dir, "hangs")), 1);
}

/// A start that fails is not retried by the next search: it backs off, and the answer says
/// when the next attempt is.
#[tokio::test]
async fn a_failed_start_backs_off_instead_of_being_retried_by_every_search() {
    let (h, dir) = start(json!({}), |dir| {
        json!({"broken": entry("broken", &marker(dir, "broken"), &[("FIXTURE_FAIL_TO_START", "1")])})
    })
    .await;
    let (first, _) = discovery(&h, "search_tools", json!({"query": "broken echo"})).await;
    assert_eq!(starts(&marker(&dir.dir, "broken")), 1, "{first}");
    let (second, text) = discovery(&h, "search_tools", json!({"query": "broken echo"})).await;
    assert_eq!(starts(&marker(&dir.dir, "broken")), 1, "{second}");
    let reason = second["unavailable"][0].as_str().unwrap();
    assert!(
        reason.starts_with("MCP server \"broken\" failed to start: ")
            && reason.contains("(next attempt in "),
        "{second}"
    );
    assert!(text.contains("next attempt in"), "{text}");
}

/// Start errors are sentences that say what happened and what to do, not Rust type names.
#[tokio::test]
async fn a_start_error_says_what_happened_and_where_to_fix_it() {
    let (h, dir) = start(json!({}), |dir| {
        json!({"broken": entry("broken", &marker(dir, "broken"), &[("FIXTURE_FAIL_TO_START", "1")])})
    })
    .await;
    let (found, _) = discovery(&h, "search_tools", json!({"query": "broken echo"})).await;
    let config = h.config_path().unwrap().display().to_string();
    assert_eq!(
        found["unavailable"][0],
        format!(
            "MCP server \"broken\" failed to start: it exited with status 1 before answering \
             initialize; its stderr ended: \"fixture broken: told to fail | Error: told to fail\"; \
             check its command in {config} (next attempt in 1s)"
        ),
        "{found}"
    );
    drop(dir);
}

/// A command that does not exist: the error names it and the file to fix.
#[tokio::test]
async fn a_missing_command_is_named_with_the_file_to_fix() {
    let (h, _dir) = start(
        json!({}),
        |_| json!({"gone": {"command": "/nonexistent/mcp-server"}}),
    )
    .await;
    let (found, _) = discovery(&h, "list_servers", json!({})).await;
    assert_eq!(status_of(&found, "gone")["status"], "available");
    let (v, _) = h
        .exec("try { await tools.gone.x(); } catch (e) { return e.message; }")
        .await;
    let config = h.config_path().unwrap().display().to_string();
    assert_eq!(
        v["result"],
        format!(
            "MCP server \"gone\" failed to start: cannot run `/nonexistent/mcp-server`: No such \
             file or directory (os error 2); check its command in {config} (next attempt in 1s)"
        ),
        "{v}"
    );
}

/// Issue 18: calls to a server that failed to start were missing from `toolCalls` and the
/// audit log.
#[tokio::test]
async fn calls_to_a_server_that_failed_to_start_are_counted_and_audited() {
    let (h, dir) = start(json!({}), |dir| {
        json!({"broken": entry("broken", &marker(dir, "broken"), &[("FIXTURE_FAIL_TO_START", "1")])})
    })
    .await;
    let (v, is_error) = h
        .exec(
            "for (const f of [() => tools.broken.echo({message: 'a'}), () => callMCPTool('mcp__broken__echo', {message: 'b'})]) { try { await f(); } catch (e) {} } return 1;",
        )
        .await;
    assert!(!is_error, "{v}");
    assert_eq!(v["toolCalls"], 2, "{v}");
    let audit = h.audit_path();
    let calls: Vec<Value> = std::fs::read_to_string(&audit)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["event"] == "tool.call")
        .collect();
    assert_eq!(calls.len(), 2, "{calls:?}");
    for c in &calls {
        assert_eq!(
            (&c["server"], &c["tool"], &c["decision"]),
            (&json!("broken"), &json!("echo"), &json!("deny")),
            "{c}"
        );
        assert!(
            c["reason"]
                .as_str()
                .unwrap()
                .starts_with("MCP server \"broken\" failed to start: "),
            "{c}"
        );
    }
    drop(dir);
}

/// A loop of calls to a name that does not exist is capped like any other calls.
#[tokio::test]
async fn calls_to_unknown_tools_count_against_the_cap() {
    let (h, _dir) = start(json!({}), |_| json!({"fx": fixture_entry("fx")})).await;
    let (v, _) = h
        .exec_with(json!({
            "code": "let last; for (let i = 0; i < 5; i++) { try { await tools.fx.no_such_tool(); } catch (e) { last = e.name + ': ' + e.message; } } return last;",
            "limits": {"maxToolCalls": 3},
        }))
        .await;
    // Five attempts; the count shown stops at the cap.
    assert_eq!(v["toolCalls"], 3, "{v}");
    assert_eq!(
        v["result"], "LimitError: this execution reached its limit of 3 tool calls",
        "{v}"
    );
}

/// The top-level get_tool_schema points to the top-level tools the agent has, not to the
/// sandbox's functions.
#[tokio::test]
async fn top_level_errors_point_to_top_level_tools() {
    let (h, _dir) = start(json!({}), |_| json!({"fx": fixture_entry("fx")})).await;
    let text = |r: rmcp::model::CallToolResult| {
        assert_eq!(r.is_error, Some(true), "{r:?}");
        r.content
            .iter()
            .filter_map(|c| c.as_text().map(|t| t.text.clone()))
            .collect::<String>()
    };
    let cases = [
        (
            "mcp__nosuch__x",
            "unknown tool mcp__nosuch__x: no MCP server named \"nosuch\"; nearest: fx; the \
             list_servers tool lists them",
        ),
        (
            "echo",
            "\"echo\" is not a qualified tool name; write mcp__<server>__<tool>, or find it with \
             the search_tools tool (its server argument and detail \"full\" give its schema)",
        ),
    ];
    for (name, want) in cases {
        let got = text(h.call("get_tool_schema", json!({"name": name})).await);
        assert_eq!(got, want);
    }
}

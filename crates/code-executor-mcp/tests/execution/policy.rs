//! Policy, limits and audit, through the built binary: configured rules deny with the rule's
//! name, arguments are validated against the tool's schema, the server refuses work beyond
//! its limits as busy, and the audit log holds exactly one line per attempt and no secret;
//! no configured secret an upstream echoes (in any shape, over stdio or HTTP, to either
//! language) reaches the client, the server's log or the audit log.

use serde_json::{Value, json};
use test_support::{Harness, TempConfig, fixture_entry};

use crate::common::EXE;

/// A server whose settings file holds `settings`.
async fn with_settings(settings: Value, servers: Value, capture: bool) -> (Harness, TempConfig) {
    let dir = TempConfig::new(json!({}));
    let path = dir.dir.join("settings.json");
    std::fs::write(&path, settings.to_string()).unwrap();
    let env = [("CODE_EXECUTOR_CONFIG_PATH", path.to_str().unwrap())];
    let h = if capture {
        Harness::start_capturing_log(EXE.as_ref(), servers, &[], &env).await
    } else {
        Harness::start(EXE.as_ref(), servers, &[], &env).await
    };
    (h, dir)
}

fn audit_lines(h: &Harness) -> Vec<Value> {
    std::fs::read_to_string(h.audit_path())
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test]
async fn configured_rules_deny_and_name_the_rule() {
    let (h, _d) = with_settings(
        json!({"policy": {"servers": {"fx": {"deny": ["ad*"]}, "ro": {"readOnly": true}}}}),
        json!({"fx": fixture_entry("fx"), "ro": fixture_entry("ro")}),
        false,
    )
    .await;
    let (v, is_error) = h
        .exec(
            r#"
            const out = [await tools.fx.echo({ message: 'ok' })];
            for (const f of [() => tools.fx.add({ a: 1, b: 2 }), () => tools.ro.echo({ message: 'x' })]) {
              try { await f(); out.push('allowed'); } catch (e) { out.push(e.name + ': ' + e.message); }
            }
            return out;
            "#,
        )
        .await;
    assert!(!is_error, "{v}");
    assert_eq!(
        v["result"],
        json!([
            "Echo: ok",
            "PolicyError: mcp__fx__add is denied by the policy for server \"fx\" (deny: ad*)",
            "PolicyError: mcp__ro__echo is denied: server \"ro\" is in read-only mode and the tool is not annotated readOnlyHint"
        ])
    );
    // Denied tools are not visible to discovery either.
    let (v, _) = h.exec("return (await searchTools('add numbers', { server: 'fx', detail: 'names' })).tools.map(t => t.name);").await;
    assert!(
        !v["result"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n == "mcp__fx__add"),
        "{v}"
    );
}

#[tokio::test]
async fn arguments_are_validated_against_the_schema_before_forwarding() {
    let h = Harness::start(EXE.as_ref(), json!({"fx": fixture_entry("fx")}), &[], &[]).await;
    let (v, _) = h
        .exec("try { await tools.fx.add({ a: 'one' }); } catch (e) { return [e.name, e.message]; }")
        .await;
    let msg = v["result"][1].as_str().unwrap();
    assert_eq!(v["result"][0], "TypeError", "{v}");
    assert!(
        msg.starts_with("invalid arguments for mcp__fx__add:"),
        "{msg}"
    );
    assert!(
        msg.contains("arguments/a: \"one\" is not of type \"number\""),
        "{msg}"
    );
    assert!(msg.contains("\"b\" is a required property"), "{msg}");
    assert!(
        msg.ends_with("expected: add({a: number, b: number})"),
        "{msg}"
    );
    // Python sees the same check.
    let (v, _) = h
        .exec_python("try:\n    tools.fx.add(a='one')\nexcept Exception as e:\n    r = [type(e).__name__, str(e)]\nr")
        .await;
    assert!(
        v["result"][1]
            .as_str()
            .unwrap()
            .contains("invalid arguments for mcp__fx__add"),
        "{v}"
    );
}

#[tokio::test]
async fn exactly_one_audit_line_per_attempt_and_no_secret_anywhere() {
    const SECRET_IN_CONFIG: &str = "sk-upstream-secret-9f8e7d";
    const SECRET_IN_ARGS: &str = "pw-argument-secret-1a2b3c";
    let (h, _d) = with_settings(
        json!({"policy": {"servers": {"fx": {"deny": ["fail"]}}}}),
        json!({"fx": {"command": test_support::workspace_bin("fixture-server"), "args": ["fx"], "env": {"API_TOKEN": SECRET_IN_CONFIG}}}),
        true,
    )
    .await;
    let code = format!(
        r#"
        let n = 0;
        for (let i = 0; i < 20; i++) {{ await tools.fx.echo({{ message: '{SECRET_IN_ARGS}' }}); n++; }}
        for (let i = 0; i < 3; i++) {{ try {{ await tools.fx.fail({{ message: 'x' }}); }} catch {{}} }}
        for (let i = 0; i < 2; i++) {{ try {{ await tools.fx.add({{ a: 'bad' }}); }} catch {{}} }}
        return n;
        "#
    );
    let (v, is_error) = h.exec(&code).await;
    assert!(!is_error, "{v}");
    let lines = audit_lines(&h);
    let starts: Vec<&Value> = lines.iter().filter(|l| l["event"] == "run.start").collect();
    assert_eq!(starts.len(), 1, "{lines:?}");
    let exec = starts[0]["execution"].as_str().unwrap();
    let calls: Vec<&Value> = lines
        .iter()
        .filter(|l| l["event"] == "tool.call" && l["execution"] == exec)
        .collect();
    assert_eq!(calls.len(), 25, "one line per attempt");
    assert_eq!(
        calls.iter().filter(|c| c["decision"] == "allow").count(),
        20
    );
    assert_eq!(calls.iter().filter(|c| c["decision"] == "deny").count(), 5);
    assert!(
        calls
            .iter()
            .all(|c| c["v"] == 1 && c["argsSha256"].as_str().unwrap().len() == 64)
    );
    let end: Vec<&Value> = lines.iter().filter(|l| l["event"] == "run.end").collect();
    assert_eq!(end.len(), 1);
    assert_eq!(end[0]["toolCalls"], json!(25));
    assert_eq!(starts[0]["codeSha256"].as_str().unwrap().len(), 64);
    let audit_text = std::fs::read_to_string(h.audit_path()).unwrap();
    let log = h.server_log();
    for secret in [SECRET_IN_CONFIG, SECRET_IN_ARGS] {
        assert!(!audit_text.contains(secret), "{secret} is in the audit log");
        assert!(!log.contains(secret), "{secret} is in the server log");
    }
}

#[tokio::test]
async fn beyond_the_concurrency_limit_and_queue_the_answer_is_busy() {
    let (h, _d) = with_settings(
        json!({"limits": {"maxConcurrentExecutions": 1, "queue": 0}}),
        json!({"fx": fixture_entry("fx")}),
        false,
    )
    .await;
    let h = std::sync::Arc::new(h);
    // The first execution's upstream call connects to this socket when it runs, and returns
    // when the test closes it: while it is connected, the first run holds the only slot.
    let socket = std::env::temp_dir().join(format!("cem-busy-{}.sock", std::process::id()));
    let _ = std::fs::remove_file(&socket);
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let first = {
        let h = h.clone();
        let code = format!(
            "await tools.fx.hold({{ socket: {:?} }}); return 'first';",
            socket.display().to_string()
        );
        tokio::spawn(async move { h.exec(&code).await })
    };
    let (held, _) = tokio::task::spawn_blocking(move || listener.accept())
        .await
        .unwrap()
        .unwrap();
    let (v, is_error) = h.exec("return 'second';").await;
    assert!(is_error, "{v}");
    assert_eq!(v["error"]["name"], "BusyError", "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("busy: 1 executions are running"),
        "{v}"
    );
    drop(held);
    let (v, is_error) = first.await.unwrap();
    let _ = std::fs::remove_file(&socket);
    assert!(!is_error, "{v}");
    assert_eq!(v["result"], "first");
    let (v, _) = h.exec("return 'after';").await;
    assert_eq!(v["result"], "after");
}

#[tokio::test]
async fn a_typo_in_the_settings_is_an_error_naming_the_key() {
    let dir = TempConfig::new(json!({}));
    let path = dir.dir.join("settings.json");
    std::fs::write(&path, r#"{"policy": {"servers": {"fx": {"dney": ["x"]}}}}"#).unwrap();
    let out = std::process::Command::new(EXE)
        .args([
            "--config",
            dir.path.to_str().unwrap(),
            "--no-discover",
            "config",
            "show",
        ])
        .env("CODE_EXECUTOR_CONFIG_PATH", &path)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("settings.json") && err.contains("dney"),
        "{err}"
    );
}

#[tokio::test]
async fn execution_limits_come_from_the_settings() {
    let (h, _d) = with_settings(
        json!({"executionLimits": {"maxToolCalls": 3, "maxTimeoutMs": 2000, "maxCodeBytes": 200}}),
        json!({"fx": fixture_entry("fx")}),
        false,
    )
    .await;
    let (v, _) = h
        .exec("let n = 0; try { for (;;) { await tools.fx.echo({ message: 'x' }); n++; } } catch (e) { return [n, e.name]; }")
        .await;
    assert_eq!(v["result"], json!([3, "LimitError"]), "{v}");
    let (v, is_error) = h
        .exec_with(json!({"code": "return 1", "timeoutMs": 5000}))
        .await;
    assert!(is_error);
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("between 1 and 2000"),
        "{v}"
    );
    let (v, is_error) = h.exec(&format!("return '{}'", "x".repeat(300))).await;
    assert!(is_error);
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("the limit is 200"),
        "{v}"
    );
    let dir = TempConfig::new(json!({}));
    let bad = dir.dir.join("bad.json");
    std::fs::write(&bad, r#"{"executionLimits": {"memoryMb": 4096}}"#).unwrap();
    let out = std::process::Command::new(EXE)
        .args(["--no-discover", "config", "show"])
        .env("CODE_EXECUTOR_CONFIG_PATH", &bad)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("executionLimits.memoryMb"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
async fn a_request_can_tighten_its_own_limits_but_not_loosen_them() {
    let (h, _d) = with_settings(
        json!({"executionLimits": {"maxToolCalls": 5}}),
        json!({"fx": fixture_entry("fx")}),
        false,
    )
    .await;
    let count_calls = "let n = 0; try { for (;;) { await tools.fx.echo({ message: 'x' }); n++; } } catch (e) { return [n, e.name]; }";
    let (v, _) = h
        .exec_with(json!({"code": count_calls, "limits": {"maxToolCalls": 2}}))
        .await;
    assert_eq!(v["result"], json!([2, "LimitError"]), "{v}");
    let (v, _) = h
        .run_tool(
            "execute_python",
            json!({"code": "n = 0\ntry:\n    while True:\n        tools.fx.echo(message='x')\n        n += 1\nexcept Exception as e:\n    r = [n, type(e).__name__]\nr", "limits": {"maxToolCalls": 1}}),
        )
        .await;
    assert_eq!(v["result"], json!([1, "LimitError"]), "{v}");
    let (v, _) = h
        .exec_with(json!({"code": "for (let i = 0; i < 10; i++) console.log('0123456789'); return 1;", "limits": {"maxLogBytes": 25}}))
        .await;
    let logs = v["logs"].as_array().unwrap();
    assert_eq!(logs.len(), 3, "{v}");
    assert!(
        logs[2]["text"]
            .as_str()
            .unwrap()
            .starts_with("[output truncated at the 25 bytes limit"),
        "{v}"
    );
    for (limits, field) in [
        (
            json!({"maxToolCalls": 6}),
            "limits.maxToolCalls must be between 1 and 5",
        ),
        (
            json!({"maxToolCalls": 0}),
            "limits.maxToolCalls must be between 1 and 5",
        ),
        (
            json!({"memoryMb": 100000}),
            "limits.memoryMb must be between 16 and 256",
        ),
    ] {
        let (v, is_error) = h
            .exec_with(json!({"code": "return 1", "limits": limits}))
            .await;
        assert!(is_error, "{v}");
        assert_eq!(v["error"]["name"], "RangeError", "{v}");
        assert!(
            v["error"]["message"].as_str().unwrap().contains(field),
            "{v}"
        );
    }
    // A misspelt limit is refused, naming the fields that exist.
    let r = h
        .client
        .peer()
        .call_tool(
            rmcp::model::CallToolRequestParams::new("execute_typescript").with_arguments(
                json!({"code": "return 1", "limits": {"maxToolCall": 1}})
                    .as_object()
                    .unwrap()
                    .clone(),
            ),
        )
        .await;
    let message = format!("{r:?}");
    assert!(message.contains("maxToolCalls"), "{message}");
}

/// Polls the audit log until `done` holds (lines are written after the answer, or when an
/// abandoned run is torn down).
async fn audit_until(h: &Harness, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let mut lines = Vec::new();
    for _ in 0..50 {
        lines = audit_lines(h);
        if done(&lines) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    lines
}

#[tokio::test]
async fn every_run_and_attempt_has_its_end_even_when_cut_short() {
    let (h, _d) = with_settings(json!({}), json!({"fx": fixture_entry("fx")}), false).await;

    // 1. The deadline cuts off a call in flight: its line says cancelled, the run's end says
    //    why, and the worker's peak memory is measured from outside.
    let (v, is_error) = h
        .exec_with(json!({
            "code": "const big = 'x'.repeat(32 * 1024 * 1024); await Promise.all([1, 2, 3].map(() => tools.fx.sleep({ ms: 20000 }))); return big.length;",
            "timeoutMs": 1500,
            // One call in flight, two waiting for a slot: all three are cut off.
            "limits": {"maxConcurrentToolCalls": 1},
        }))
        .await;
    assert!(is_error, "{v}");
    assert_eq!(v["error"]["name"], "TimeoutError", "{v}");
    let lines = audit_until(&h, |l| {
        l.iter()
            .any(|x| x["event"] == "tool.call" && x["outcome"] == "cancelled")
    })
    .await;
    let first = lines[0]["execution"].clone();
    let call: Vec<&Value> = lines
        .iter()
        .filter(|l| l["event"] == "tool.call" && l["execution"] == first)
        .collect();
    assert_eq!(call.len(), 3, "{lines:?}");
    assert!(
        call.iter()
            .all(|c| c["decision"] == "allow" && c["outcome"] == "cancelled"),
        "{lines:?}"
    );
    let end: Vec<&Value> = lines
        .iter()
        .filter(|l| l["event"] == "run.end" && l["execution"] == first)
        .collect();
    assert_eq!(end.len(), 1, "{lines:?}");
    assert_eq!(end[0]["error"], "TimeoutError", "{lines:?}");
    let peak = end[0]["memoryPeakBytes"].as_u64().unwrap_or(0);
    assert!(
        peak > 32 * 1024 * 1024,
        "peak memory {peak} does not show the 32 MiB string: {lines:?}"
    );

    // 2. The client gives up on the request (notifications/cancelled): the run still gets
    //    its end, and its call in flight a cancelled line.
    let abandoned = tokio::time::timeout(
        std::time::Duration::from_millis(800),
        h.exec("await tools.fx.sleep({ ms: 20000 }); return 1;"),
    )
    .await;
    assert!(abandoned.is_err(), "the run should still be going");
    let lines = audit_until(&h, |l| {
        l.iter()
            .any(|x| x["event"] == "run.end" && x["outcome"] == "cancelled")
    })
    .await;
    let starts: Vec<&Value> = lines.iter().filter(|l| l["event"] == "run.start").collect();
    assert_eq!(starts.len(), 2, "{lines:?}");
    let second = starts[1]["execution"].clone();
    let end: Vec<&Value> = lines
        .iter()
        .filter(|l| l["event"] == "run.end" && l["execution"] == second)
        .collect();
    assert_eq!(end.len(), 1, "{lines:?}");
    assert_eq!(end[0]["outcome"], "cancelled", "{lines:?}");
    assert_eq!(end[0]["toolCalls"], 1, "{lines:?}");
    let call: Vec<&Value> = lines
        .iter()
        .filter(|l| l["event"] == "tool.call" && l["execution"] == second)
        .collect();
    assert_eq!(call.len(), 1, "{lines:?}");
    assert_eq!(call[0]["outcome"], "cancelled", "{lines:?}");

    // The server still serves, with a full pool.
    let (v, is_error) = h.exec("return 2;").await;
    assert!(!is_error, "{v}");
    assert_eq!(v["result"], 2);
}

#[tokio::test]
async fn an_oversized_upstream_result_is_cut_or_refused_at_once() {
    let (h, _d) = with_settings(
        json!({"maxResultBytes": 100000}),
        json!({"fx": fixture_entry("fx")}),
        false,
    )
    .await;
    // A little over the cap: cut, with its start kept and a note saying so.
    let (v, is_error) = h
        .exec("const r = await tools.fx.big({ bytes: 300000 }); return [r[0].slice(0, 60), r[1].length];")
        .await;
    assert!(!is_error, "{v}");
    assert!(
        v["result"][0]
            .as_str()
            .unwrap()
            .starts_with("[result truncated: "),
        "{v}"
    );
    assert_eq!(v["result"][1], 100000, "{v}");
    // Far over it (past the per-message bound): an error at once, not a wait for the
    // timeout, and never buffered whole.
    let started = std::time::Instant::now();
    let (v, _) = h
        .exec_with(json!({
            "code": "try { await tools.fx.big({ bytes: 5000000 }); return 'returned'; } catch (e) { return e.name + ': ' + e.message; }",
            "timeoutMs": 20000,
        }))
        .await;
    let message = v["result"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("ToolError") && message.contains("maxResultBytes"),
        "{v}"
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "took {:?}",
        started.elapsed()
    );
    // The connection is still good.
    let (v, is_error) = h
        .exec("return await tools.fx.echo({ message: 'after' });")
        .await;
    assert!(!is_error, "{v}");
    assert_eq!(v["result"], "Echo: after");
}

/// Servers `gh` and `gh__admin`: an execution allowed `mcp__gh__*`.
async fn gh_and_gh_admin() -> Harness {
    Harness::start(
        EXE.as_ref(),
        json!({"gh": fixture_entry("gh"), "gh__admin": fixture_entry("gh__admin")}),
        &[],
        &[],
    )
    .await
}

#[tokio::test]
async fn allowed_tools_wildcard_cannot_call_a_server_whose_name_extends_the_pattern() {
    let h = gh_and_gh_admin().await;
    let (v, is_error) = h
        .exec_with(json!({
            "code": r#"
            const out = [await tools.gh.whoami()];
            for (const f of [() => tools.gh__admin.whoami(), () => callMCPTool('gh__admin', 'whoami', {})]) {
              try { out.push(await f()); } catch (e) { out.push(e.name + ': ' + e.message); }
            }
            return out;
            "#,
            "allowedTools": ["mcp__gh__*"],
        }))
        .await;
    assert!(!is_error, "{v}");
    let denied =
        "PolicyError: mcp__gh__admin__whoami is not in this execution's allowedTools (mcp__gh__*)";
    assert_eq!(v["result"], json!(["gh", denied, denied]), "{v}");
}

#[tokio::test]
async fn allowed_tools_wildcard_does_not_show_a_server_whose_name_extends_the_pattern() {
    let h = gh_and_gh_admin().await;
    let (v, is_error) = h
        .exec_with(json!({
            "code": "await tools.gh.whoami(); await tools.gh__admin.whoami().catch(() => 0); return [...new Set((await discoverMCPTools()).tools.map(t => t.server)), ...new Set((await searchTools('whoami', {detail: 'names', limit: 50})).tools.map(t => t.server))];",
            "allowedTools": ["mcp__gh__*"],
        }))
        .await;
    assert!(!is_error, "{v}");
    assert_eq!(v["result"], json!(["gh", "gh"]), "{v}");
}

#[tokio::test]
async fn an_allowed_tools_pattern_that_can_match_nothing_is_refused_with_the_fix() {
    let h = gh_and_gh_admin().await;
    let r = h
        .client
        .peer()
        .call_tool(
            rmcp::model::CallToolRequestParams::new("execute_typescript").with_arguments(
                json!({"code": "return 1", "allowedTools": ["mcp__gh"]})
                    .as_object()
                    .unwrap()
                    .clone(),
            ),
        )
        .await;
    let message = format!("{r:?}");
    assert!(
        message.contains(
            "allowedTools: \\\"mcp__gh\\\" names no tool: write mcp__gh__<tool>, or mcp__gh__* for all of its tools"
        ),
        "{message}"
    );
}

/// Personal data stays out of the model (`pii`).
mod pii;
/// No configured secret an upstream echoes leaves the server.
mod secrets;

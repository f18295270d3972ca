//! A client's `skill` (an execute tool called with a saved skill's name instead of code) runs
//! in one worker of the skill's own language (`runtime::door::Work::Skill`), not as generated
//! code that starts the skill in a second: one `run.start` with the skill's name and no parent,
//! its own output, errors of its own kind; refusals (unknown, arguments that do not fit, a
//! session) before any worker starts. And the kind of a nested run's failure reaches the code
//! that called it typed (`NestedEnd::call_error`): a skill's `RangeError` is caught as one.

use serde_json::{Value, json};
use test_support::{Harness, Lang, TempConfig, TempDir, fixture_entry};

use crate::common::EXE;

async fn with_skills(dir: &std::path::Path) -> (Harness, TempConfig) {
    Harness::with_settings(
        EXE.as_ref(),
        json!({ "fx": fixture_entry("fx") }),
        &json!({"skills": {"dir": dir}}),
        &[],
    )
    .await
}

async fn ok(h: &Harness, lang: Lang, args: Value) -> Value {
    let (v, is_error) = h.run_tool(lang.tool(), args.clone()).await;
    assert!(!is_error, "{lang:?}: {args}\n{v}");
    v
}

/// The `run.start` lines of the audit log.
fn starts(h: &Harness) -> Vec<Value> {
    std::fs::read_to_string(h.audit_path())
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["event"] == "run.start")
        .collect()
}

const ADD_ONE: &str = r#"return await saveSkill('add-one', {code: 'console.log("adding", args.a); return {sum: args.a + 1, lang: "ts"}', description: 'Adds one.', inputSchema: {type: 'object', properties: {a: {type: 'number'}}, required: ['a']}})"#;
const GREET: &str = r#"save_skill('greet', 'print("greeting", args["who"])\n{"greeting": tools.fx.echo(message="hello " + args["who"]), "lang": "python"}', 'Greets someone.')"#;
const RANGED: &str = r#"return await saveSkill('ranged', {code: 'throw new RangeError("out of range: " + args.n)', description: 'Always out of range.'})"#;

#[tokio::test]
async fn a_clients_skill_runs_in_one_worker_of_its_own_language() {
    let dir = TempDir::new("skill-calls");
    let (h, _c) = with_skills(&dir.0).await;
    ok(&h, Lang::Ts, json!({ "code": ADD_ONE })).await;
    ok(&h, Lang::Py, json!({ "code": GREET })).await;
    ok(&h, Lang::Ts, json!({ "code": RANGED })).await;
    for lang in [Lang::Ts, Lang::Py] {
        for (skill, args, want) in [
            ("add-one", json!({"a": 5}), json!({"sum": 6, "lang": "ts"})),
            (
                "greet",
                json!({"who": "client"}),
                json!({"greeting": "Echo: hello client", "lang": "python"}),
            ),
        ] {
            let before = starts(&h).len();
            let v = ok(&h, lang, json!({"skill": skill, "args": args})).await;
            assert_eq!(v["result"], want, "{lang:?} {skill}: {v}");
            // Its own lines, as its code printed them (not relayed by a caller).
            let logs = v["logs"].to_string();
            assert!(
                logs.contains("adding 5") || logs.contains("greeting client"),
                "{lang:?} {skill}: {v}"
            );
            assert!(!logs.contains("[skill "), "{lang:?} {skill}: {v}");
            // One run: one start line, naming the skill, with no parent.
            let new = starts(&h)[before..].to_vec();
            assert_eq!(new.len(), 1, "{lang:?} {skill}: {new:?}");
            assert_eq!(new[0]["skill"], skill, "{new:?}");
            assert!(new[0].get("parent").is_none_or(Value::is_null), "{new:?}");
            let ran = if skill == "greet" {
                "python"
            } else {
                "typescript"
            };
            assert_eq!(new[0]["language"], ran, "{new:?}");
        }
        // The skill's own error, of its own kind.
        let (v, is_error) = h
            .run_tool(lang.tool(), json!({"skill": "ranged", "args": {"n": 7}}))
            .await;
        assert!(is_error, "{v}");
        assert_eq!(v["error"]["name"], "RangeError", "{v}");
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .contains("out of range: 7"),
            "{v}"
        );
    }
}

#[tokio::test]
async fn a_clients_skill_is_refused_before_any_worker_when_it_cannot_run() {
    let dir = TempDir::new("skill-refusals");
    let (h, _c) = with_skills(&dir.0).await;
    ok(&h, Lang::Ts, json!({ "code": ADD_ONE })).await;
    let before = starts(&h).len();
    for (args, name, says) in [
        (
            json!({"skill": "nothing-here"}),
            "TypeError",
            "no skill is named",
        ),
        (
            json!({"skill": "add-one", "args": {"a": "five"}}),
            "TypeError",
            "invalid arguments for skill add-one",
        ),
        (
            json!({"skill": "add-one", "args": {}}),
            "TypeError",
            "\"a\" is a required property",
        ),
        // Names that reach for a path are no skill's name.
        (json!({"skill": "../add-one"}), "TypeError", ""),
        (json!({"skill": "add-one/../add-one"}), "TypeError", ""),
        (json!({"skill": "%2e%2e/add-one"}), "TypeError", ""),
    ] {
        let (v, is_error) = h.run_tool("execute_typescript", args.clone()).await;
        assert!(is_error, "{args}: {v}");
        assert_eq!(v["error"]["name"], name, "{args}: {v}");
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .contains(says),
            "{args}: {v}"
        );
    }
    // Nothing ran for any of them.
    assert_eq!(starts(&h).len(), before);
    // Shapes the tool cannot take are invalid parameters, saying what to give.
    for (args, says) in [
        (
            json!({"skill": "add-one", "args": [1]}),
            "object of named values",
        ),
        (
            json!({"skill": "add-one", "args": {"a": 1}, "session": "new"}),
            "outside any session",
        ),
        (
            json!({"skill": "add-one", "code": "return 1"}),
            "give one or the other",
        ),
    ] {
        let Value::Object(map) = args.clone() else {
            unreachable!()
        };
        let e = h
            .client
            .peer()
            .call_tool(
                rmcp::model::CallToolRequestParams::new("execute_typescript").with_arguments(map),
            )
            .await
            .expect_err("refused");
        assert!(e.to_string().contains(says), "{args}: {e}");
    }
}

#[tokio::test]
async fn a_clients_skill_keeps_the_requests_limits_and_rules() {
    let dir = TempDir::new("skill-limits");
    let (h, _c) = with_skills(&dir.0).await;
    ok(&h, Lang::Py, json!({ "code": GREET })).await;
    ok(
        &h,
        Lang::Ts,
        json!({"code": "return await saveSkill('slow', {code: 'await new Promise(r => setTimeout(r, 20000)); return 1', description: 'Takes twenty seconds.'})"}),
    )
    .await;
    // The request's allowedTools bind the skill.
    let (v, is_error) = h
        .run_tool(
            "execute_typescript",
            json!({"skill": "greet", "args": {"who": "x"}, "allowedTools": ["mcp__fx__add"]}),
        )
        .await;
    assert!(is_error, "{v}");
    assert_eq!(v["error"]["name"], "PolicyError", "{v}");
    // And its deadline.
    let (v, is_error) = h
        .run_tool("execute_python", json!({"skill": "slow", "timeoutMs": 500}))
        .await;
    assert!(is_error, "{v}");
    assert_eq!(v["error"]["name"], "TimeoutError", "{v}");
    // An early answer with a handle (`yieldAfterMs`) works for a skill as for code.
    let (v, is_error) = h
        .run_tool(
            "execute_typescript",
            json!({"skill": "greet", "args": {"who": "later"}, "yieldAfterMs": 20000}),
        )
        .await;
    assert!(!is_error, "{v}");
    assert_eq!(v["result"]["greeting"], "Echo: hello later", "{v}");
}

#[tokio::test]
async fn a_nested_runs_failure_reaches_its_caller_as_its_kind() {
    let dir = TempDir::new("skill-kinds");
    let (h, _c) = with_skills(&dir.0).await;
    ok(&h, Lang::Ts, json!({ "code": RANGED })).await;
    ok(&h, Lang::Py, json!({ "code": GREET })).await;
    // The skill's RangeError is a RangeError in TypeScript, a ValueError in Python.
    let v = ok(
        &h,
        Lang::Ts,
        json!({"code": "try { await skills.ranged({n: 1}) } catch (e) { return [e.name, e.message] }"}),
    )
    .await;
    assert_eq!(v["result"][0], "RangeError", "{v}");
    assert!(
        v["result"][1]
            .as_str()
            .unwrap_or_default()
            .contains("skill ranged failed: RangeError: out of range: 1"),
        "{v}"
    );
    let v = ok(
        &h,
        Lang::Py,
        json!({"code": "try:\n    skills.ranged(n=2)\nexcept ValueError as e:\n    r = type(e).__name__\nr"}),
    )
    .await;
    assert_eq!(v["result"], "ValueError", "{v}");
    // A run the host refused (the caller's allowedTools) is a PolicyError, typed at its
    // source; a run stopped at its deadline is a LimitError or the caller's own TimeoutError.
    let v = ok(
        &h,
        Lang::Ts,
        json!({"code": "try { await skills.greet({who: 'x'}) } catch (e) { return e.name }", "allowedTools": ["mcp__fx__add"]}),
    )
    .await;
    assert_eq!(v["result"], "PolicyError", "{v}");
}

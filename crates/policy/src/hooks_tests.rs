//! `policy::hooks` by value: matchers, files read, answers read, precedence.

use super::error::SettingError;
use super::hooks::*;
use serde_json::json;
use std::time::Duration;

fn origin() -> Origin {
    Origin("test.json".into())
}

#[test]
fn matchers_follow_claude_codes_three_forms() {
    let cases: &[(Option<&str>, &str, bool)] = &[
        (None, "mcp__gh__create_issue", true),
        (Some(""), "mcp__gh__create_issue", true),
        (Some("*"), "anything", true),
        (Some("mcp__gh__create_issue"), "mcp__gh__create_issue", true),
        // Exact: no prefix match.
        (Some("mcp__gh"), "mcp__gh__create_issue", false),
        (
            Some("mcp__gh__create_issue"),
            "mcp__gh__create_issue2",
            false,
        ),
        (
            Some("mcp__a__x|mcp__gh__create_issue"),
            "mcp__gh__create_issue",
            true,
        ),
        (Some("mcp__my-srv__t"), "mcp__my-srv__t", true),
        (Some("mcp__my-srv__t"), "mcp__my-srv__tt", false),
        // Regular expressions are searched, unanchored.
        (Some("mcp__gh__.*"), "mcp__gh__create_issue", true),
        (Some("mcp__.*__create.*"), "mcp__fs__create_file", true),
        (Some("^mcp__fs__"), "mcp__gh__create_issue", false),
        // Case matters.
        (Some("MCP__GH__.*"), "mcp__gh__x", false),
    ];
    for (m, name, want) in cases {
        let matcher = Matcher::parse(*m).unwrap();
        assert_eq!(matcher.matches(name), *want, "{m:?} on {name}");
    }
    assert!(Matcher::parse(Some("mcp__(?<=x)")).is_err());
}

#[test]
fn if_rules_narrow_by_name_and_run_when_unreadable() {
    for (rule, name, want) in [
        ("mcp__gh__create_issue", "mcp__gh__create_issue", true),
        ("mcp__gh", "mcp__gh__create_issue", true),
        ("mcp__gh", "mcp__ghx__create_issue", false),
        ("mcp__gh__*", "mcp__gh__anything", true),
        ("mcp__fs__read", "mcp__gh__create_issue", false),
        ("Bash(rm *)", "mcp__gh__create_issue", false),
        (
            "mcp__gh__create_issue(title:*)",
            "mcp__gh__create_issue",
            true,
        ),
        ("", "mcp__gh__x", true),
    ] {
        assert_eq!(rule_applies(rule, name), want, "{rule} on {name}");
    }
}

#[test]
fn claude_code_files_parse_and_what_cannot_be_read_refuses() {
    let file = json!({
        "PreToolUse": [
            {"matcher": "mcp__gh__.*", "hooks": [
                {"type": "command", "command": "a.sh", "timeout": 5},
                {"type": "command", "command": "b.sh", "async": true},
                {"type": "prompt", "prompt": "is it ok?"}
            ]},
            {"matcher": "(", "hooks": [{"type": "command", "command": "c.sh"}]},
            {"hooks": "nope"}
        ],
        "Stop": [{"hooks": [{"type": "command", "command": "not ours"}]}],
        "PostToolUse": {"not": "a list"}
    });
    let groups = parse_events(&file, &origin());
    assert_eq!(groups.len(), 4, "{groups:#?}");
    assert_eq!(
        groups[0].handlers[0].action,
        Action::Command {
            command: "a.sh".into(),
            timeout: Duration::from_secs(5),
            background: false
        }
    );
    assert!(matches!(
        &groups[0].handlers[1].action,
        Action::Command { background: true, timeout, .. } if *timeout == DEFAULT_HOOK_TIMEOUT
    ));
    assert!(
        matches!(&groups[0].handlers[2].action, Action::Refuse(w) if w.contains("\"prompt\" hook cannot be run")),
        "{:?}",
        groups[0].handlers[2]
    );
    // A bad matcher and a bad group match every tool and refuse, naming the file.
    for g in &groups[1..] {
        assert_eq!(g.matcher, Matcher::All);
        assert!(
            matches!(&g.handlers[0].action, Action::Refuse(w) if w.starts_with("test.json: hooks.")),
            "{g:?}"
        );
    }
    assert_eq!(groups[3].event, Event::PostToolUse);
    let hooks = Hooks {
        groups,
        ..Hooks::default()
    };
    // The bad groups judge every tool; the good one only GitHub's.
    assert_eq!(hooks.matching(Event::PreToolUse, "mcp__fs__read").len(), 2);
    assert_eq!(hooks.matching(Event::PreToolUse, "mcp__gh__x").len(), 5);
    assert!(hooks.matching(Event::PreExecute, "x").is_empty());
    let not_object = parse_events(&json!([1]), &origin());
    assert_eq!(not_object.len(), 3);
}

#[test]
fn a_name_matches_as_claude_code_writes_it_too() {
    let file = json!({"PreToolUse": [
        {"matcher": "mcp__my_server__get_page", "hooks": [{"type": "command", "command": "exact.sh"}]},
        {"matcher": "mcp__my\\.server__.*", "hooks": [{"type": "command", "command": "ours.sh"}]},
        {"matcher": "*", "hooks": [{"type": "command", "command": "if.sh", "if": "mcp__my_server"}]}
    ]});
    let hooks = Hooks {
        groups: parse_events(&file, &origin()),
        ..Hooks::default()
    };
    let got: Vec<&str> = hooks
        .matching(Event::PreToolUse, "mcp__my.server__get.page")
        .iter()
        .map(|h| h.label())
        .collect();
    assert_eq!(got, ["exact.sh", "ours.sh", "if.sh"]);
    assert!(
        hooks
            .matching(Event::PreToolUse, "mcp__other__x")
            .is_empty()
    );
}

#[test]
fn identical_commands_run_once() {
    let file = json!({"PreToolUse": [
        {"matcher": "*", "hooks": [{"type": "command", "command": "same.sh"}]},
        {"matcher": "mcp__a__b", "hooks": [{"type": "command", "command": "same.sh"}]}
    ]});
    let hooks = Hooks {
        groups: parse_events(&file, &origin()),
        ..Hooks::default()
    };
    assert_eq!(hooks.matching(Event::PreToolUse, "mcp__a__b").len(), 1);
}

#[test]
fn our_setting_refuses_what_cannot_run_at_start() {
    let ok: HookSettings = serde_json::from_value(json!({
        "PreToolUse": [{"matcher": "mcp__.*", "hooks": [{"type": "command", "command": "x"}]}],
        "env": {"OPA_URL": "http://x"}
    }))
    .unwrap();
    assert!(ok.validate().is_ok());
    for bad in [
        json!({"PreToolUse": [{"hooks": [{"type": "prompt", "prompt": "p"}]}]}),
        json!({"PreToolUse": [{"matcher": "[", "hooks": []}]}),
        json!({"PreExecute": [{"hooks": [{"type": "command"}]}]}),
        json!({"PostToolUse": [{"hooks": [{"type": "command", "command": "x", "timeout": -1}]}]}),
        json!({"env": {"1BAD": "x"}}),
    ] {
        let s: HookSettings = serde_json::from_value(bad.clone()).unwrap();
        assert!(matches!(s.validate(), Err(SettingError::Hooks(_))), "{bad}");
    }
    assert!(serde_json::from_value::<HookSettings>(json!({"Stop": []})).is_err());
}

fn answer(event: Event, exit: Exit, out: &str, err: &str) -> Result<Answer, HookFailure> {
    read_answer(event, exit, out.as_bytes(), err.as_bytes())
}

/// One case: the event, how the hook ended, its stdout and stderr, the verdict (`Err`: refused).
type Row<'a> = (Event, Exit, &'a str, &'a str, Result<Verdict, ()>);

#[test]
fn answers_by_exit_code_and_json() {
    use Event::*;
    let v = |r: Result<Answer, HookFailure>| r.map(|a| a.verdict);
    let table: Vec<Row> = vec![
        (PreToolUse, Exit::Code(0), "", "", Ok(Verdict::Nothing)),
        (
            PreToolUse,
            Exit::Code(0),
            " \n",
            "log line",
            Ok(Verdict::Nothing),
        ),
        (
            PreToolUse,
            Exit::Code(2),
            "{\"hookSpecificOutput\":{\"permissionDecision\":\"allow\"}}",
            "no writes\n",
            Ok(Verdict::Deny("no writes".into())),
        ),
        (
            PreToolUse,
            Exit::Code(0),
            r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"db writes"}}"#,
            "",
            Ok(Verdict::Deny("db writes".into())),
        ),
        (
            PreToolUse,
            Exit::Code(0),
            r#"{"hookSpecificOutput":{"permissionDecision":"allow"}}"#,
            "",
            Ok(Verdict::Allow),
        ),
        (
            PreToolUse,
            Exit::Code(0),
            r#"{"hookSpecificOutput":{"permissionDecision":"ask","permissionDecisionReason":"prod"}}"#,
            "",
            Ok(Verdict::Ask("prod".into())),
        ),
        (
            PreToolUse,
            Exit::Code(0),
            r#"{"hookSpecificOutput":{"permissionDecision":"defer"}}"#,
            "",
            Ok(Verdict::Ask(String::new())),
        ),
        (
            PreToolUse,
            Exit::Code(0),
            r#"{"decision":"block","reason":"old style"}"#,
            "",
            Ok(Verdict::Deny("old style".into())),
        ),
        (
            PreToolUse,
            Exit::Code(0),
            r#"{"decision":"approve"}"#,
            "",
            Ok(Verdict::Allow),
        ),
        (
            PreToolUse,
            Exit::Code(0),
            r#"{"decision":"block","reason":"r","hookSpecificOutput":{"permissionDecision":"allow"}}"#,
            "",
            Ok(Verdict::Deny("r".into())),
        ),
        (
            PreToolUse,
            Exit::Code(0),
            r#"{"continue":false,"stopReason":"stop all"}"#,
            "",
            Ok(Verdict::Deny("stop all".into())),
        ),
        (
            PreToolUse,
            Exit::Code(0),
            r#"{"systemMessage":"fyi","suppressOutput":true}"#,
            "",
            Ok(Verdict::Nothing),
        ),
        (
            PostToolUse,
            Exit::Code(0),
            r#"{"decision":"block","reason":"leaks a key"}"#,
            "",
            Ok(Verdict::Deny("leaks a key".into())),
        ),
        (
            PostToolUse,
            Exit::Code(2),
            "",
            "",
            Ok(Verdict::Deny(
                "a hook blocked it (exit 2) without giving a reason".into(),
            )),
        ),
        (
            PreExecute,
            Exit::Code(0),
            r#"{"decision":"block","reason":"uses eval"}"#,
            "",
            Ok(Verdict::Deny("uses eval".into())),
        ),
        // Failing closed where Claude Code goes on.
        (PreToolUse, Exit::Code(1), "", "boom", Err(())),
        (
            PreToolUse,
            Exit::Code(0),
            r#"{"hookSpecificOutput":{"permissionDecision":"allow"}}"#.trim_end_matches('}'),
            "",
            Err(()),
        ),
        (PreToolUse, Exit::Signal(9), "", "", Err(())),
        (PreToolUse, Exit::Code(0), "OK", "", Err(())),
        (PreToolUse, Exit::Code(0), "[1,2]", "", Err(())),
        (PreToolUse, Exit::Code(0), "\"allow\"", "", Err(())),
        (
            PreToolUse,
            Exit::Code(0),
            r#"{"hookSpecificOutput":{"permissionDecision":"maybe"}}"#,
            "",
            Err(()),
        ),
        (
            PreToolUse,
            Exit::Code(0),
            r#"{"hookSpecificOutput":{"permissionDecision":true}}"#,
            "",
            Err(()),
        ),
        (
            PreToolUse,
            Exit::Code(0),
            r#"{"hookSpecificOutput":{"hookEventName":"PostToolUse","permissionDecision":"allow"}}"#,
            "",
            Err(()),
        ),
        (
            PreToolUse,
            Exit::Code(0),
            r#"{"hookSpecificOutput":"deny"}"#,
            "",
            Err(()),
        ),
        (
            PreToolUse,
            Exit::Code(0),
            r#"{"continue":"no"}"#,
            "",
            Err(()),
        ),
        (
            PreToolUse,
            Exit::Code(0),
            r#"{"decision":"maybe"}"#,
            "",
            Err(()),
        ),
        (
            PostToolUse,
            Exit::Code(0),
            r#"{"hookSpecificOutput":{"permissionDecision":"allow"}}"#,
            "",
            Err(()),
        ),
        (
            PreToolUse,
            Exit::Code(0),
            r#"{"hookSpecificOutput":{"updatedInput":[1]}}"#,
            "",
            Err(()),
        ),
    ];
    for (event, exit, out, err, want) in table {
        let got = v(answer(event, exit, out, err));
        match want {
            Ok(w) => assert_eq!(got, Ok(w), "{event:?} {exit:?} {out} {err}"),
            Err(()) => assert!(got.is_err(), "{event:?} {exit:?} {out}: {got:?}"),
        }
    }
    // Binary stdout is refused, not decoded lossily.
    assert!(matches!(
        read_answer(Event::PreToolUse, Exit::Code(0), &[0xff, 0xfe, 0, 1], b""),
        Err(HookFailure::Garbage(_))
    ));
}

#[test]
fn replacements_are_read_where_they_belong() {
    let a = answer(
        Event::PreToolUse,
        Exit::Code(0),
        r#"{"hookSpecificOutput":{"permissionDecision":"allow","updatedInput":{"a":1}}}"#,
        "",
    )
    .unwrap();
    assert_eq!(a.updated_input, json!({"a": 1}).as_object().cloned());
    let a = answer(
        Event::PostToolUse,
        Exit::Code(0),
        r#"{"hookSpecificOutput":{"hookEventName":"PostToolUse","updatedMCPToolOutput":"[cleaned]"}}"#,
        "",
    )
    .unwrap();
    assert_eq!(a.updated_output, Some(json!("[cleaned]")));
}

#[test]
fn the_strictest_answer_wins() {
    let a = |v: Verdict| Answer {
        verdict: v,
        updated_input: None,
        updated_output: None,
    };
    let all = [
        a(Verdict::Allow),
        a(Verdict::Ask("a".into())),
        a(Verdict::Nothing),
        a(Verdict::Deny("d".into())),
        a(Verdict::Deny("e".into())),
    ];
    assert_eq!(strictest(&all).verdict, Verdict::Deny("d".into()));
    assert_eq!(strictest(&all[..3]).verdict, Verdict::Ask("a".into()));
    assert_eq!(strictest(&[]).verdict, Verdict::Nothing);
}

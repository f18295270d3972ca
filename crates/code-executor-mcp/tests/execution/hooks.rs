//! Hooks (`hooks` and Claude Code's settings files, `policy::hooks`) through the built
//! binary, with real hook scripts in Python and shell: they judge every upstream call made
//! from code (both languages), from a skill, and through a pinned direct tool, and every run
//! (`PreExecute`), over stdio and HTTP. Block, allow and ask answer as Claude Code documents;
//! a hook that hangs, crashes, prints garbage (text, binary, megabytes) or cannot be run
//! refuses; a hook's children do not hold the call; a hook sees only the environment it was
//! given; an untrusted project's hooks never run.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use test_support::{Harness, Lang, TempDir, fixture_entry};

use crate::common::{BOTH, EXE};

/// The Python hook judging `echo`: what it does is the message's first word. It logs the
/// input it got (one JSON line) to `$HOOK_LOG`.
const PY_HOOK: &str = r#"#!/usr/bin/env python3
import json, os, subprocess, sys, time
data = json.load(sys.stdin)
with open(os.environ["HOOK_LOG"], "a") as f:
    f.write(json.dumps(data) + "\n")
msg = str(data.get("tool_input", {}).get("message", ""))
word = msg.split(" ")[0]
if word == "block":
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse",
        "permissionDecision": "deny", "permissionDecisionReason": "echoing block is not allowed"}}))
elif word == "ask":
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse",
        "permissionDecision": "ask", "permissionDecisionReason": "a person should see this"}}))
elif word == "rewrite":
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse",
        "permissionDecision": "allow", "updatedInput": {"message": "rewritten by the hook"}}}))
elif word == "hang":
    time.sleep(120)
elif word == "crash":
    raise RuntimeError("the hook fell over")
elif word == "garbage":
    print("looks fine to me!")
elif word == "huge":
    sys.stdout.write("{" + "x" * (2 << 20))
elif word == "binary":
    sys.stdout.buffer.write(b"\xff\xfe\x00\x01{}")
elif word == "fork":
    # A child in our group keeps stdout open, and one that left the group too.
    kid = subprocess.Popen(["sleep", "300"], stdout=sys.stdout)
    away = subprocess.Popen(["sleep", "300"], stdout=sys.stdout, start_new_session=True)
    with open(os.environ["HOOK_LOG"] + ".pids", "w") as f:
        f.write(f"{kid.pid} {away.pid}")
    print(json.dumps({"hookSpecificOutput": {"permissionDecision": "allow"}}), flush=True)
elif word == "gauge":
    # How many of these hooks run at once: a count under a lock, its peak kept.
    import fcntl
    base = os.environ["HOOK_LOG"] + ".gauge"
    def bump(d):
        with open(base + ".lock", "a") as l:
            fcntl.flock(l, fcntl.LOCK_EX)
            try:
                now = int(open(base).read() or 0)
            except FileNotFoundError:
                now = 0
            now += d
            open(base, "w").write(str(now))
            try:
                peak = int(open(base + ".peak").read() or 0)
            except FileNotFoundError:
                peak = 0
            open(base + ".peak", "w").write(str(max(peak, now)))
    bump(1)
    time.sleep(0.1)
    bump(-1)
elif word == "spoof":
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse",
        "permissionDecision": "deny", "permissionDecisionReason": "fine\x1b[2J\x07 \u202e0001 \u200b\u200bhidden"}}))
elif word == "env":
    with open(os.environ["HOOK_LOG"] + ".env", "w") as f:
        json.dump(dict(os.environ), f)
"#;

/// The shell hook judging `add`: exit 2 with a reason for a negative `a`, else nothing.
const SH_HOOK: &str = r#"#!/bin/sh
input=$(cat)
case "$input" in
  *'"a":-'*) echo "no negative numbers, said the shell hook" >&2; exit 2 ;;
esac
exit 0
"#;

/// The shell PreExecute hook: refuses code that says FORBIDDEN_RUN, logs what it got.
const RUN_HOOK: &str = r#"#!/bin/sh
input=$(cat)
printf '%s\n' "$input" >> "$HOOK_LOG.runs"
case "$input" in
  *FORBIDDEN_RUN*) printf '{"decision":"block","reason":"this code may not run"}'; exit 0 ;;
esac
exit 0
"#;

/// The PostToolUse hook (Python): holds back a result that says "secret".
const POST_HOOK: &str = r#"#!/usr/bin/env python3
import json, sys
data = json.load(sys.stdin)
if "secret" in json.dumps(data.get("tool_response")):
    print(json.dumps({"decision": "block", "reason": "the result holds a secret"}))
"#;

struct Hooked {
    dir: TempDir,
    log: PathBuf,
}

/// Writes the hook scripts into a directory whose path has spaces and a `..`, and the
/// `hooks` setting naming them there (quoted, as a user would).
fn hooked() -> (Hooked, Value) {
    let dir = TempDir::new("hooks e2e");
    let scripts = dir.0.join("hook scripts");
    std::fs::create_dir_all(scripts.join("sub")).unwrap();
    let write = |name: &str, body: &str| {
        let p = scripts.join(name);
        std::fs::write(&p, body).unwrap();
        test_support::set_mode(&p, 0o755);
    };
    write("judge echo.py", PY_HOOK);
    write("judge add.sh", SH_HOOK);
    write("run.sh", RUN_HOOK);
    write("post.py", POST_HOOK);
    // Reached through a `..` from a directory beside them.
    let via = |name: &str| format!("\"{}/sub/../{name}\"", scripts.display());
    let log = dir.0.join("hook.log");
    let settings = json!({
        "directTools": ["mcp__fx__echo"],
        "executionLimits": {"maxConcurrentToolCalls": 2},
        "audit": {"path": dir.0.join("audit.jsonl")},
        "hooks": {
            "PreToolUse": [
                {"matcher": "mcp__fx__echo", "hooks": [
                    {"type": "command", "command": format!("python3 {}", via("judge echo.py")), "timeout": 3}
                ]},
                {"matcher": "mcp__fx__a.*", "hooks": [
                    {"type": "command", "command": via("judge add.sh")}
                ]}
            ],
            "PostToolUse": [
                {"matcher": "mcp__fx__echo", "hooks": [
                    {"type": "command", "command": format!("python3 {}", via("post.py"))}
                ]}
            ],
            "PreExecute": [
                {"hooks": [{"type": "command", "command": via("run.sh")}]}
            ],
            "env": {"HOOK_LOG": log.display().to_string(), "PASSED_ON": "${HOOKS_TEST_PASSED}"}
        }
    });
    (Hooked { dir, log }, settings)
}

async fn start() -> (Harness, test_support::TempConfig, Hooked) {
    let (hooked, settings) = hooked();
    let mut fx = fixture_entry("fx");
    fx["env"] = json!({"FX_TOKEN": "${HOOKS_TEST_SECRET}"});
    let (h, cfg) = Harness::with_settings(
        EXE.as_ref(),
        json!({ "fx": fx }),
        &settings,
        &[
            ("HOOKS_TEST_SECRET", "s3cr3t-upstream-token"),
            ("HOOKS_TEST_PASSED", "given-on-purpose"),
        ],
    )
    .await;
    (h, cfg, hooked)
}

fn echo(lang: Lang, message: &str) -> String {
    lang.pick(
        format!("return await tools.fx.echo({{message: {message:?}}})"),
        format!("tools.fx.echo(message={message:?})"),
    )
}

async fn run(h: &Harness, lang: Lang, code: &str) -> (Value, bool) {
    h.run_tool(lang.tool(), json!({ "code": code, "timeoutMs": 20000 }))
        .await
}

fn error(v: &Value) -> (String, String) {
    (
        v["error"]["name"].as_str().unwrap_or_default().to_string(),
        v["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    )
}

fn logged(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn audit(dir: &Path, event: &str) -> Vec<Value> {
    std::fs::read_to_string(dir.join("audit.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|l| l["event"] == event)
        .collect()
}

#[tokio::test]
async fn hooks_judge_calls_from_code_in_both_languages() {
    let (h, _cfg, hooked) = start().await;
    for lang in BOTH {
        // Nothing to say: the call goes on, and the hook saw the real name and arguments.
        let (v, is_err) = run(&h, lang, &echo(lang, "hello")).await;
        assert!(!is_err, "{lang:?}: {v}");
        assert_eq!(v["result"], "Echo: hello", "{lang:?}");
        let seen = logged(&hooked.log);
        let last = seen.last().unwrap();
        assert_eq!(last["hook_event_name"], "PreToolUse");
        assert_eq!(last["tool_name"], "mcp__fx__echo");
        assert_eq!(last["tool_input"], json!({"message": "hello"}));
        assert_eq!(last["code_executor"]["caller"], "code");
        // Blocked: a PolicyError with the hook's reason, and nothing reached the upstream.
        let (v, _) = run(
            &h,
            lang,
            lang.pick(
                "try { await tools.fx.echo({message: 'block me'}) } catch (e) { return [e.name, e.message] }",
                "try:\n    tools.fx.echo(message='block me')\nexcept Exception as e:\n    result = [type(e).__name__, str(e)]\nresult",
            ),
        )
        .await;
        assert_eq!(v["result"][0], "PolicyError", "{lang:?}: {v}");
        let msg = v["result"][1].as_str().unwrap();
        assert!(msg.contains("echoing block is not allowed"), "{msg}");
        assert!(msg.contains("mcp__fx__echo"), "{msg}");
        // The shell hook: exit 2, stderr is the reason.
        let (v, _) = run(
            &h,
            lang,
            lang.pick(
                "return await tools.fx.add({a: -1, b: 2})",
                "tools.fx.add(a=-1, b=2)",
            ),
        )
        .await;
        let (name, msg) = error(&v);
        assert_eq!(name, "PolicyError", "{lang:?}: {v}");
        assert!(
            msg.contains("no negative numbers, said the shell hook"),
            "{msg}"
        );
        let (v, is_err) = run(
            &h,
            lang,
            lang.pick(
                "return (await tools.fx.add({a: 1, b: 2})).sum",
                "tools.fx.add(a=1, b=2)['sum']",
            ),
        )
        .await;
        assert!(!is_err, "{v}");
        assert_eq!(v["result"].as_f64(), Some(3.0), "{v}");
        // updatedInput replaces the arguments.
        let (v, _) = run(&h, lang, &echo(lang, "rewrite this")).await;
        assert_eq!(v["result"], "Echo: rewritten by the hook", "{lang:?}: {v}");
        // ask: our approval path; this client cannot be asked, so the fallback denies.
        let (v, _) = run(&h, lang, &echo(lang, "ask about this")).await;
        let (name, msg) = error(&v);
        assert_eq!(name, "ApprovalDenied", "{lang:?}: {v}");
        assert!(msg.contains("a person should see this"), "{msg}");
        // PostToolUse holds a result back.
        let (v, _) = run(&h, lang, &echo(lang, "a secret value")).await;
        let (name, msg) = error(&v);
        assert_eq!(name, "PolicyError", "{lang:?}: {v}");
        assert!(msg.contains("the result holds a secret"), "{msg}");
    }
    // Every hook that ran is audited with its answer.
    let lines = audit(&hooked.dir.0, "hook");
    let answers: Vec<(&str, &str)> = lines
        .iter()
        .map(|l| {
            (
                l["hookEvent"].as_str().unwrap(),
                l["answer"].as_str().unwrap(),
            )
        })
        .collect();
    for want in [
        ("PreToolUse", "none"),
        ("PreToolUse", "deny"),
        ("PreToolUse", "allow"),
        ("PreToolUse", "ask"),
        ("PostToolUse", "deny"),
        ("PreExecute", "none"),
    ] {
        assert!(answers.contains(&want), "{want:?} not in {answers:?}");
    }
    assert!(lines.iter().all(|l| l["source"] == "our settings (hooks)"));
}

#[tokio::test]
async fn hooks_that_hang_crash_or_print_garbage_refuse() {
    let (h, _cfg, hooked) = start().await;
    for lang in BOTH {
        for (word, says) in [
            ("crash", "crashed (exit status 1"),
            ("garbage", "stdout is not JSON"),
            ("huge", "more than 64 KiB on stdout"),
            ("binary", "stdout is not UTF-8"),
            ("hang", "did not answer within"),
        ] {
            let started = Instant::now();
            let (v, _) = run(&h, lang, &echo(lang, word)).await;
            let (name, msg) = error(&v);
            assert_eq!(name, "PolicyError", "{lang:?} {word}: {v}");
            assert!(msg.contains(says), "{lang:?} {word}: {msg}");
            assert!(msg.contains("judge echo.py"), "names the hook: {msg}");
            // The hang is cut at the hook's 3 s timeout.
            assert!(started.elapsed() < Duration::from_secs(15), "{word}");
        }
    }
    // A hang is also cut by the run's own deadline, whatever the hook's timeout.
    let started = Instant::now();
    let (v, is_err) = h
        .run_tool(
            "execute_typescript",
            json!({"code": echo(Lang::Ts, "hang"), "timeoutMs": 1000}),
        )
        .await;
    assert!(is_err, "{v}");
    assert!(started.elapsed() < Duration::from_secs(3), "{v}");
    let failed = audit(&hooked.dir.0, "hook")
        .into_iter()
        .filter(|l| l["answer"] == "failed")
        .count();
    assert!(failed >= 10, "{failed}");
}

#[tokio::test]
async fn a_hooks_children_do_not_hold_the_call_and_die_with_it() {
    let (h, _cfg, hooked) = start().await;
    let started = Instant::now();
    let (v, is_err) = run(&h, Lang::Ts, &echo(Lang::Ts, "fork")).await;
    assert!(!is_err, "{v}");
    assert_eq!(v["result"], "Echo: fork");
    assert!(started.elapsed() < Duration::from_secs(10));
    let pids = std::fs::read_to_string(format!("{}.pids", hooked.log.display())).unwrap();
    let pids: Vec<i32> = pids.split(' ').map(|p| p.parse().unwrap()).collect();
    // The child in the hook's group is gone (or a zombie of its reaper); the one that left
    // the group could not hold the call, and is ended here.
    let alive = |pid: i32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| !s.contains(") Z "))
            .unwrap_or(false)
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    while alive(pids[0]) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!alive(pids[0]), "the hook's child outlived it");
    let _ = std::process::Command::new("kill")
        .arg("-9")
        .arg(pids[1].to_string())
        .status();
}

#[tokio::test]
async fn parallel_calls_run_their_hooks_within_the_requests_permits() {
    let (h, _cfg, hooked) = start().await;
    let (v, is_err) = run(
        &h,
        Lang::Ts,
        "const all = []; for (let i = 0; i < 12; i++) all.push(tools.fx.echo({message: 'gauge ' + i})); return (await Promise.all(all)).length",
    )
    .await;
    assert!(!is_err, "{v}");
    assert_eq!(v["result"], 12);
    let peak: u32 = std::fs::read_to_string(format!("{}.gauge.peak", hooked.log.display()))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!((1..=2).contains(&peak), "{peak} hooks ran at once");
}

#[tokio::test]
async fn a_hook_sees_only_the_environment_it_was_given() {
    let (h, _cfg, hooked) = start().await;
    let (v, is_err) = run(&h, Lang::Py, &echo(Lang::Py, "env")).await;
    assert!(!is_err, "{v}");
    let env: Value = serde_json::from_str(
        &std::fs::read_to_string(format!("{}.env", hooked.log.display())).unwrap(),
    )
    .unwrap();
    let all = env.to_string();
    assert!(!all.contains("s3cr3t-upstream-token"), "{all}");
    assert!(env.get("HOOKS_TEST_SECRET").is_none(), "{all}");
    assert!(env.get("CODE_EXECUTOR_CONFIG_PATH").is_none(), "{all}");
    assert_eq!(env["PASSED_ON"], "given-on-purpose");
    assert!(env["CLAUDE_PROJECT_DIR"].is_string(), "{all}");
    assert!(env["PATH"].is_string(), "{all}");
}

#[tokio::test]
async fn pre_execute_hooks_see_the_code_language_principal_and_tools_and_can_refuse() {
    let (h, _cfg, hooked) = start().await;
    for lang in BOTH {
        let code = lang.pick("// FORBIDDEN_RUN\nreturn 1", "# FORBIDDEN_RUN\n1");
        let (v, is_err) = run(&h, lang, code).await;
        assert!(is_err, "{v}");
        let (name, msg) = error(&v);
        assert_eq!(name, "PolicyError", "{lang:?}: {v}");
        assert!(msg.contains("this code may not run"), "{msg}");
        let (v, is_err) = run(&h, lang, &echo(lang, "named")).await;
        assert!(!is_err, "{v}");
    }
    let runs: Vec<Value> = std::fs::read_to_string(format!("{}.runs", hooked.log.display()))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let last = runs.last().unwrap();
    assert_eq!(last["hook_event_name"], "PreExecute");
    assert_eq!(last["language"], "python");
    assert_eq!(last["tools"], json!(["mcp__fx__echo"]), "{last}");
    assert!(last["code"].as_str().unwrap().contains("named"));
    assert!(last["principal"].is_string());
    assert!(runs.iter().any(|r| r["language"] == "typescript"));
}

#[tokio::test]
async fn hooks_judge_skills_calls_and_pinned_direct_tools() {
    let (h, _cfg, hooked) = start().await;
    let (v, is_err) = run(
        &h,
        Lang::Ts,
        "return await saveSkill('echo-it', {code: 'return await tools.fx.echo({message: args.m})', description: 'Echoes.'})",
    )
    .await;
    assert!(!is_err, "{v}");
    for lang in BOTH {
        let code = lang.pick(
            "return await skills.echo_it({m: 'block from a skill'})",
            "skills.echo_it(m='block from a skill')",
        );
        let (v, _) = run(&h, lang, code).await;
        let (_, msg) = error(&v);
        assert!(
            msg.contains("echoing block is not allowed"),
            "{lang:?}: {v}"
        );
    }
    let seen = logged(&hooked.log);
    assert!(
        seen.iter().any(|l| l["code_executor"]["caller"] == "skill"
            && l["tool_input"]["message"] == "block from a skill"),
        "{seen:?}"
    );
    // The pinned direct tool: the same hooks.
    let r = h
        .call("fx__echo", json!({"message": "block the direct call"}))
        .await;
    assert_eq!(r.is_error, Some(true));
    let text = serde_json::to_string(&r.content).unwrap();
    assert!(text.contains("echoing block is not allowed"), "{text}");
    let r = h.call("fx__echo", json!({"message": "fine"})).await;
    assert_ne!(r.is_error, Some(true), "{r:?}");
    assert!(
        logged(&hooked.log)
            .iter()
            .any(|l| l["code_executor"]["caller"] == "direct")
    );
}

#[tokio::test]
async fn hooks_judge_calls_over_http() {
    let (hooked, settings) = hooked();
    let path = hooked.dir.0.join("settings.json");
    std::fs::write(&path, settings.to_string()).unwrap();
    let s = test_support::http::HttpServer::start(
        EXE.as_ref(),
        json!({"fx": fixture_entry("fx")}),
        &[],
        &[("CODE_EXECUTOR_CONFIG_PATH", path.to_str().unwrap())],
    )
    .await;
    let c = test_support::http::McpHttp::connect(
        &s.url,
        None,
        test_support::http::Generation::Sessions,
    )
    .await;
    let (v, _) = c
        .exec(json!({"code": "return await tools.fx.echo({message: 'block over http'})"}))
        .await;
    let (name, msg) = error(&v);
    assert_eq!(name, "PolicyError", "{v}");
    assert!(msg.contains("echoing block is not allowed"), "{msg}");
    let r = c
        .call("execute_python", json!({"code": "tools.fx.add(a=-5, b=1)"}))
        .await;
    let (name, msg) = error(&r["structuredContent"]);
    assert_eq!(name, "PolicyError", "{r}");
    assert!(msg.contains("said the shell hook"), "{msg}");
}

/// A home with Claude Code's user settings and a project with its own, for the server run
/// with discovery on (as users run it).
async fn claude_code_user(
    trusted: bool,
) -> (
    TempDir,
    rmcp::service::RunningService<rmcp::RoleClient, ()>,
    PathBuf,
) {
    let root = TempDir::new("hooks claude");
    let home = root.0.join("home");
    let project = root.0.join("a project");
    std::fs::create_dir_all(home.join(".claude")).unwrap();
    std::fs::create_dir_all(project.join(".claude")).unwrap();
    let marker = root.0.join("project-hook-ran");
    std::fs::write(
        home.join(".claude/settings.json"),
        json!({"hooks": {"PreToolUse": [{"matcher": "mcp__fx__.*", "hooks": [
            {"type": "command", "command": "grep -q forbidden && { echo 'the user hook says no' >&2; exit 2; }; exit 0"}
        ]}]}})
        .to_string(),
    )
    .unwrap();
    // The project's own file may have come with a cloned repository.
    std::fs::write(
        project.join(".claude/settings.json"),
        json!({"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [
            {"type": "command", "command": format!("touch '{}'", marker.display())}
        ]}]}})
        .to_string(),
    )
    .unwrap();
    let mut settings = json!({});
    if trusted {
        settings["trustedProjects"] = json!([project]);
    }
    let config_dir = home.join(".config/code-executor-mcp");
    std::fs::create_dir_all(&config_dir).unwrap();
    std::fs::write(config_dir.join("config.json"), settings.to_string()).unwrap();
    let mcp = root.0.join("mcp.json");
    std::fs::write(
        &mcp,
        json!({"mcpServers": {"fx": fixture_entry("fx")}}).to_string(),
    )
    .unwrap();
    let mut cmd = tokio::process::Command::new(EXE);
    cmd.arg("--config")
        .arg(&mcp)
        .current_dir(&project)
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_STATE_HOME", root.0.join("state"))
        .env("XDG_DATA_HOME", root.0.join("data"))
        .env("CODE_EXECUTOR_CACHE_DIR", root.0.join("cache"))
        .env_remove("CODE_EXECUTOR_CONFIG_PATH")
        .kill_on_drop(true);
    let (transport, _) = rmcp::transport::TokioChildProcess::builder(cmd)
        .spawn()
        .unwrap();
    let client = rmcp::ServiceExt::serve((), transport).await.unwrap();
    (root, client, marker)
}

/// Runs `code` through a client of our own; (structuredContent, isError).
async fn run_with(
    client: &rmcp::service::RunningService<rmcp::RoleClient, ()>,
    lang: Lang,
    code: &str,
) -> (Value, bool) {
    let Value::Object(args) = json!({"code": code, "timeoutMs": 20000}) else {
        unreachable!()
    };
    let r = client
        .peer()
        .call_tool(rmcp::model::CallToolRequestParams::new(lang.tool()).with_arguments(args))
        .await
        .unwrap();
    (
        r.structured_content.unwrap_or(Value::Null),
        r.is_error == Some(true),
    )
}

#[tokio::test]
async fn claude_codes_own_settings_files_are_read_with_its_trust_rules() {
    for trusted in [false, true] {
        let (_root, client, marker) = claude_code_user(trusted).await;
        let (v, _) = run_with(
            &client,
            Lang::Ts,
            "return await tools.fx.echo({message: 'forbidden'})",
        )
        .await;
        let (name, msg) = error(&v);
        assert_eq!(name, "PolicyError", "{v}");
        assert!(msg.contains("the user hook says no"), "{msg}");
        assert!(
            msg.contains(".claude/settings.json"),
            "names the file: {msg}"
        );
        let (v, is_err) = run_with(&client, Lang::Py, "tools.fx.echo(message='fine')").await;
        assert!(!is_err, "{v}");
        // The project's own hooks ran only once the project was trusted.
        assert_eq!(marker.exists(), trusted, "trusted: {trusted}");
    }
}

/// The pids of live processes whose command line contains `marker`, with their parents.
fn processes_with(marker: &str) -> Vec<(i32, i32)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if !String::from_utf8_lossy(&cmdline).contains(marker) {
            continue;
        }
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // "pid (comm) state ppid ...": the fields after the last ')'.
        let after = stat.rsplit_once(") ").map(|(_, a)| a).unwrap_or("");
        let mut fields = after.split(' ');
        let state = fields.next().unwrap_or("Z");
        if state == "Z" {
            continue;
        }
        if let Some(ppid) = fields.next().and_then(|p| p.parse().ok()) {
            found.push((pid, ppid));
        }
    }
    found
}

/// A server that dies while a hook runs takes the hook with it (a parent-death signal, as
/// upstreams and workers have): a crashed server leaves no hook behind. `async` hooks run
/// at most 32 at once in a server; one more is not started, and the audit says so.
#[tokio::test]
async fn hooks_die_with_the_server_and_async_ones_are_bounded() {
    let dir = TempDir::new("hooks bounded");
    let marker = dir.0.join("hang forever.py");
    std::fs::write(&marker, "import time\ntime.sleep(299)\n").unwrap();
    let settings = json!({
        "audit": {"path": dir.0.join("audit.jsonl")},
        "hooks": {"PreToolUse": [
            {"matcher": "mcp__fx__add", "hooks": [
                {"type": "command", "command": format!("python3 \"{}\"", marker.display()), "timeout": 600}
            ]},
            {"matcher": "mcp__fx__echo", "hooks": [
                {"type": "command", "command": "sleep 20", "async": true, "timeout": 20}
            ]}
        ]}
    });
    let (h, _cfg) = Harness::with_settings(
        EXE.as_ref(),
        json!({ "fx": fixture_entry("fx") }),
        &settings,
        &[],
    )
    .await;
    // 40 calls at once: 32 async hooks start, 8 are not started; every call goes on.
    let (v, is_err) = run(
        &h,
        Lang::Ts,
        "return (await Promise.all(Array.from({length: 40}, (_, i) => tools.fx.echo({message: 'n' + i})))).length",
    )
    .await;
    assert!(!is_err, "{v}");
    assert_eq!(v["result"], 40);
    let skipped = audit(&dir.0, "hook")
        .into_iter()
        .filter(|l| {
            l["answer"] == "failed"
                && l["reason"]
                    .as_str()
                    .is_some_and(|r| r.contains("32 `async` hooks are running already"))
        })
        .count();
    assert!(skipped >= 8, "{skipped} async hooks were not started");

    // A call waiting on a hook that hangs; the server is killed under it.
    let hung = tokio::spawn(async move {
        let _ = h.exec("return await tools.fx.add({a: 1, b: 2})").await;
    });
    let marker = marker.display().to_string();
    let deadline = Instant::now() + Duration::from_secs(30);
    let (hook, server) = loop {
        if let Some(&(pid, ppid)) = processes_with(&marker).first() {
            break (pid, ppid);
        }
        assert!(Instant::now() < deadline, "the hook never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let server_cmd = std::fs::read(format!("/proc/{server}/cmdline")).unwrap_or_default();
    assert!(
        String::from_utf8_lossy(&server_cmd).contains("code-executor-mcp"),
        "the hook's parent is the server: {}",
        String::from_utf8_lossy(&server_cmd)
    );
    let _ = std::process::Command::new("kill")
        .args(["-9", &server.to_string()])
        .status();
    let deadline = Instant::now() + Duration::from_secs(10);
    while processes_with(&marker).iter().any(|&(p, _)| p == hook) {
        assert!(Instant::now() < deadline, "hook {hook} outlived its server");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    hung.abort();
}

/// A hook's reason reaches code and the model with what a reader would not see written out:
/// terminal controls, a direction override and hidden characters cannot act or pass.
#[tokio::test]
async fn a_hooks_reason_shows_its_controls_and_hidden_characters() {
    let (h, _cfg, _hooked) = start().await;
    for lang in BOTH {
        let (v, _) = run(&h, lang, &echo(lang, "spoof")).await;
        let (name, msg) = error(&v);
        assert_eq!(name, "PolicyError", "{lang:?}: {v}");
        assert!(
            msg.contains("fine⟨U+001B⟩[2J⟨U+0007⟩ ⟨U+202E⟩0001 ⟨U+200B⟩⟨U+200B⟩hidden"),
            "{lang:?}: {msg}"
        );
        assert!(
            !msg.chars().any(|c| c == '\u{1b}' || c == '\u{202e}'),
            "{msg}"
        );
    }
}

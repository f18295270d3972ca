//! `code-executor-mcp eval`: over the five reference servers (interop) it reproduces its own
//! numbers (tokens and turns exactly, wall times within a generous bound) and draws its
//! chart; over the built-in synthetic catalog (no install needed) it counts hundreds of
//! tools, reports hostile task files and failing steps or code as clear rows or errors, and
//! drives a scripted mock model provider in both modes and both API styles.
//!
//! The reference tests need `scripts/setup-interop.sh`: without it they print a loud SKIP,
//! unless `CODE_EXECUTOR_REQUIRE_INTEROP=1` makes that a failure.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use test_support::TempDir;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::common::EXE;

fn interop() -> Option<PathBuf> {
    crate::common::interop::prefix(&[])
}

/// `eval ARGS` with a scratch home and working directory (no user settings), `env` added.
fn eval(dir: &Path, config: Option<&Path>, args: &[&str], env: &[(&str, &str)]) -> Output {
    let home = dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let mut cmd = Command::new(EXE);
    cmd.current_dir(dir)
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env_remove("MCP_CONFIG_PATH")
        .env_remove("CODE_EXECUTOR_CONFIG_PATH")
        .arg("--no-discover");
    if let Some(c) = config {
        cmd.arg("--config").arg(c);
    }
    cmd.arg("eval").args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "eval panicked: {stderr}");
    out
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn read_json(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// The bars of one side in an SVG chart, as their `data-task`s.
fn bars(svg: &str, side: &str) -> Vec<String> {
    svg.split(&format!("class=\"bar {side}\" data-task=\""))
        .skip(1)
        .map(|s| s.split('"').next().unwrap().to_string())
        .collect()
}

/// Wall times of two runs agree within this: a factor of 5 plus 100 ms either way. Generous,
/// because the machine is shared and a tool call is milliseconds; what must not happen is a
/// run 10x the other, or a lost measurement.
fn close(a: f64, b: f64) -> bool {
    a <= 5.0 * b + 100.0 && b <= 5.0 * a + 100.0
}

#[test]
fn reference_eval_reproduces_its_own_numbers_and_draws_its_chart() {
    let Some(prefix) = interop() else { return };
    let dir = TempDir::new("eval-ref");
    let fx = dir.0.join("fixture");
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/eval-fixture.sh");
    // The script of the source tree makes the same fixture as `--fixture` (it runs the one
    // built into the binary).
    let made = Command::new("bash")
        .arg(&script)
        .arg(dir.0.join("from-script"))
        .arg(&prefix)
        .output()
        .unwrap();
    assert!(made.status.success(), "{}", text(&made));
    let prefix_env = prefix.display().to_string();
    let mut reports = Vec::new();
    for run in 0..2 {
        let json = dir.0.join(format!("run{run}.json"));
        let chart = dir.0.join(format!("run{run}.svg"));
        let (json_arg, chart_arg) = (json.to_str().unwrap(), chart.to_str().unwrap());
        let common = ["--runs", "3", "--json", json_arg, "--chart", chart_arg];
        // The first eval makes the fixture and runs on it; the second runs on its config as
        // a user's own (GIT_REPO from the git server's --repository, no --var).
        let out = if run == 0 {
            let mut args = vec!["--fixture", fx.to_str().unwrap()];
            args.extend(common);
            eval(
                &dir.0,
                None,
                &args,
                &[("CODE_EXECUTOR_INTEROP", &prefix_env)],
            )
        } else {
            eval(&dir.0, Some(&fx.join("upstreams.json")), &common, &[])
        };
        let shown = text(&out);
        assert!(out.status.success(), "{shown}");
        eprintln!("{shown}");
        assert!(
            shown.contains("context cost of the tool definitions"),
            "{shown}"
        );
        reports.push((read_json(&json), std::fs::read_to_string(&chart).unwrap()));
    }
    let (a, svg) = &reports[0];
    let (b, _) = &reports[1];
    // The shape.
    assert_eq!(a["version"], 1);
    assert_eq!(a["tokenizer"], "cl100k_base");
    assert_eq!(a["runs"], 3);
    let servers: Vec<&str> = a["context"]["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["server"].as_str().unwrap())
        .collect();
    assert_eq!(
        servers,
        ["everything", "filesystem", "git", "memory", "time"]
    );
    assert!(
        a["context"]["direct_tokens"].as_u64().unwrap() > 5000,
        "{a}"
    );
    assert!(
        a["context"]["ours"]["tokens"].as_u64().unwrap() < 1000,
        "{a}"
    );
    assert_eq!(a["context"], b["context"]);
    let tasks = a["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 6);
    for (ta, tb) in tasks.iter().zip(b["tasks"].as_array().unwrap()) {
        let name = ta["task"].as_str().unwrap();
        for way in ["direct", "code"] {
            let (sa, sb) = (&ta[way], &tb[way]);
            assert_eq!(sa["ok"], true, "{name} {way}: {sa}");
            assert_eq!(sa["tokens_stable"], true, "{name} {way}: {sa}");
            assert_eq!(sa["ms_runs"].as_array().unwrap().len(), 3);
            // Tokens and turns: the same in both evals.
            assert_eq!(sa["tokens"], sb["tokens"], "{name} {way}");
            assert_eq!(sa["turns"], sb["turns"], "{name} {way}");
            let (ma, mb) = (sa["ms"].as_f64().unwrap(), sb["ms"].as_f64().unwrap());
            assert!(
                ma > 0.0 && close(ma, mb),
                "{name} {way}: {ma} ms vs {mb} ms"
            );
            let t = &sa["tokens"];
            let parts: u64 = ["schemas", "prompt", "calls", "results", "answer"]
                .iter()
                .map(|k| t[k].as_u64().unwrap())
                .sum();
            assert_eq!(t["context"].as_u64().unwrap(), parts, "{name} {way}");
        }
        assert_eq!(ta["code"]["turns"], 2, "{name}");
        assert!(ta["direct"]["turns"].as_u64().unwrap() >= 2, "{name}");
    }
    // The chart: valid SVG, a bar per task and side in each of its two panels.
    assert!(
        svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""),
        "{svg}"
    );
    assert!(svg.trim_end().ends_with("</svg>"));
    let names: Vec<String> = tasks
        .iter()
        .map(|t| t["task"].as_str().unwrap().to_string())
        .collect();
    let twice: Vec<String> = names.iter().chain(&names).cloned().collect();
    assert_eq!(bars(svg, "direct"), twice);
    assert_eq!(bars(svg, "code"), twice);
    assert_eq!(svg.matches("<rect").count(), 1 + 2 + 4 * names.len());
}

/// `--fixture DIR` says exactly what it lacks, and never replaces a directory holding
/// anything but an earlier fixture.
#[test]
fn the_fixture_says_what_it_needs_and_replaces_only_an_earlier_fixture() {
    let dir = TempDir::new("eval-fixture-needs");
    // A PATH with bash and git only, and a prefix without the servers.
    let bin = dir.0.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for tool in ["bash", "git"] {
        let found = ["/usr/local/bin", "/usr/bin", "/bin"]
            .iter()
            .map(|d| Path::new(d).join(tool))
            .find(|p| p.exists())
            .unwrap();
        std::os::unix::fs::symlink(found, bin.join(tool)).unwrap();
    }
    let nothing = dir.0.join("no-prefix");
    std::fs::create_dir_all(&nothing).unwrap();
    let fx = dir.0.join("fx");
    let out = eval(
        &dir.0,
        None,
        &["--fixture", fx.to_str().unwrap()],
        &[
            ("PATH", bin.to_str().unwrap()),
            ("CODE_EXECUTOR_INTEROP", nothing.to_str().unwrap()),
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let said = text(&out);
    assert!(
        said.contains("needs node (with npx), uv (uvx) on PATH")
            && said.contains("scripts/setup-interop.sh")
            && said.contains("error: --fixture"),
        "{said}"
    );
    // A directory with other data in it is refused, and left as it was.
    let mine = dir.0.join("mine");
    std::fs::create_dir_all(&mine).unwrap();
    std::fs::write(mine.join("notes.txt"), "keep me").unwrap();
    let out = eval(&dir.0, None, &["--fixture", mine.to_str().unwrap()], &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("is not empty and not an earlier fixture"),
        "{}",
        text(&out)
    );
    assert_eq!(
        std::fs::read_to_string(mine.join("notes.txt")).unwrap(),
        "keep me"
    );
}

/// A task file over the synthetic catalog.
fn synthetic_file(dir: &Path, tasks: Value) -> PathBuf {
    let p = dir.join("tasks.json");
    std::fs::write(
        &p,
        json!({"name": "t", "servers": "synthetic", "tasks": tasks}).to_string(),
    )
    .unwrap();
    p
}

fn one_account_task() -> Value {
    json!({
        "name": "one-account",
        "prompt": "Show the Salesforce account account-1003.",
        "direct": [{"server": "salesforce", "tool": "get-account", "arguments": {"account_id": "account-1003"}}],
        "code": {"language": "typescript", "source": "return await callMCPTool('salesforce', 'get-account', { account_id: 'account-1003' });"},
        "expect": {"contains": ["account-1003"]}
    })
}

#[test]
fn the_synthetic_catalog_costs_hundreds_of_tools_directly_and_few_through_us() {
    let dir = TempDir::new("eval-syn");
    // Progress asked for (as on a terminal): on stderr, a line per step; stdout is the JSON.
    let out = eval(
        &dir.0,
        None,
        &["--tasks", "synthetic", "--runs", "1", "--json"],
        &[("CODE_EXECUTOR_PROGRESS", "1")],
    );
    assert!(out.status.success(), "{}", text(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("eval [") && stderr.contains("starting 10 servers"),
        "{stderr}"
    );
    let tasks = v["tasks"].as_array().unwrap().len();
    assert_eq!(
        stderr.matches(": task ").count(),
        tasks,
        "a line per task: {stderr}"
    );
    assert!(v["context"]["direct_tools"].as_u64().unwrap() >= 500, "{v}");
    assert!(
        v["context"]["direct_tokens"].as_u64().unwrap() > 20_000,
        "{v}"
    );
    assert!(v["context"]["ratio"].as_f64().unwrap() < 0.05, "{v}");
    for t in v["tasks"].as_array().unwrap() {
        assert_eq!(t["direct"]["ok"], true, "{t}");
        assert_eq!(t["code"]["ok"], true, "{t}");
        assert!(t["ratios"]["tokens"].as_f64().unwrap() < 0.1, "{t}");
    }
}

#[test]
fn hostile_task_files_end_in_errors_that_say_what_to_do() {
    let dir = TempDir::new("eval-hostile");
    let cases: &[(&str, &str)] = &[
        ("{ not json", "is not a valid task file"),
        ("{\"tasks\": []}", "the file has no tasks"),
        (
            "{\"tasks\": [{\"name\": \"x\", \"prompt\": \"p\", \"direct\": [], \"code\": {\"language\": \"ts\", \"source\": \"1\"}}]}",
            "\"direct\" has no steps",
        ),
        (
            "{\"tasks\": [{\"name\": \"x\", \"prompt\": \"p\", \"direct\": [{\"server\": \"s\", \"tool\": \"t\"}], \"code\": {\"language\": \"cobol\", \"source\": \"1\"}}]}",
            "use \"typescript\" or \"python\"",
        ),
        (
            "{\"tasks\": [{\"name\": \"x\", \"prompt\": \"p\", \"direct\": [{\"server\": \"s\", \"tool\": \"t\", \"arguments\": {\"a\": \"${NOPE}\"}}], \"code\": {\"language\": \"ts\", \"source\": \"1\"}}]}",
            "--var NOPE=VALUE",
        ),
    ];
    for (i, (file, says)) in cases.iter().enumerate() {
        let p = dir.0.join(format!("bad{i}.json"));
        std::fs::write(&p, file).unwrap();
        let out = eval(&dir.0, None, &["--tasks", p.to_str().unwrap()], &[]);
        assert!(!out.status.success(), "{file}");
        assert!(text(&out).contains(says), "{file}: {}", text(&out));
    }
    // The reference tasks without their servers: stopped before anything runs, saying how.
    let empty = dir.0.join("empty.json");
    std::fs::write(
        &empty,
        "{\"mcpServers\": {\"time\": {\"command\": \"true\"}}}",
    )
    .unwrap();
    let none = eval(&dir.0, Some(&empty), &[], &[]);
    assert_eq!(none.status.code(), Some(1));
    let said = text(&none);
    assert!(
        said.contains("everything, filesystem, git, memory are not configured")
            && said.contains("hint: `code-executor-mcp eval --fixture DIR`"),
        "{said}"
    );
    let missing = eval(&dir.0, None, &["--tasks", "/nonexistent/tasks.json"], &[]);
    assert!(
        text(&missing).contains("--tasks reference"),
        "{}",
        text(&missing)
    );
}

#[test]
fn failing_steps_and_code_are_report_rows_that_say_what_failed() {
    let dir = TempDir::new("eval-fail");
    let code = |source: &str| json!({"language": "typescript", "source": source});
    let tasks = json!([
        {"name": "unknown-server", "prompt": "p",
         "direct": [{"server": "nowhere", "tool": "x"}], "code": code("return 1")},
        {"name": "unknown-tool", "prompt": "p",
         "direct": [{"server": "github", "tool": "list_issuez"}], "code": code("return 1")},
        {"name": "step-error", "prompt": "p",
         "direct": [{"server": "github", "tool": "get_issue", "arguments": {}}], "code": code("return 1")},
        {"name": "bad-reference", "prompt": "p",
         "direct": [{"server": "github", "tool": "list_issues", "arguments": {"limit": 1}},
                    {"server": "github", "tool": "get_issue", "arguments": {"issue_id": {"$from": 0, "pointer": "/nothing"}}}],
         "code": code("return 1")},
        {"name": "code-throws", "prompt": "p",
         "direct": [{"server": "github", "tool": "list_issues", "arguments": {"limit": 1}}],
         "code": code("throw new Error('boom from the task')")},
        {"name": "expectation-missed", "prompt": "p",
         "direct": [{"server": "github", "tool": "list_issues", "arguments": {"limit": 1}}],
         "code": code("return 'nothing here'"), "expect": {"contains": ["zebra"]}},
    ]);
    let file = synthetic_file(&dir.0, tasks);
    let json = dir.0.join("out.json");
    let out = eval(
        &dir.0,
        None,
        &[
            "--tasks",
            file.to_str().unwrap(),
            "--runs",
            "1",
            "--warmup",
            "0",
            "--json",
            json.to_str().unwrap(),
        ],
        &[],
    );
    // Failing tasks: exit 1, with the report written and every row saying what failed.
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let table = text(&out);
    let v = read_json(&json);
    let row = |name: &str| {
        v["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["task"] == name)
            .unwrap()
            .clone()
    };
    let says = |name: &str, way: &str, what: &str| {
        let r = row(name);
        assert_eq!(r[way]["ok"], false, "{name} {way}: {r}");
        let e = r[way]["error"].as_str().unwrap();
        assert!(e.contains(what), "{name} {way}: {e}");
        assert!(table.contains(e), "the table shows {e}");
    };
    says(
        "unknown-server",
        "direct",
        "no server named \"nowhere\" is configured",
    );
    says(
        "unknown-tool",
        "direct",
        "has no tool \"list_issuez\" (it has: list_issues",
    );
    // Arguments the tool's schema refuses: refused before the call, as a pinned direct
    // call's would be.
    says("step-error", "direct", "was refused and not made");
    says(
        "step-error",
        "direct",
        "\"issue_id\" is a required property",
    );
    says("step-error", "direct", "fix the task's arguments");
    assert_eq!(row("step-error")["direct"]["refused"]["error"], "TypeError");
    says("bad-reference", "direct", "has nothing at \"/nothing\"");
    says("code-throws", "code", "boom from the task");
    says("code-throws", "code", "fix the task's code");
    says(
        "expectation-missed",
        "code",
        "does not contain the expected \"zebra\"",
    );
    says(
        "expectation-missed",
        "direct",
        "do not contain the expected \"zebra\"",
    );
    assert_eq!(row("code-throws")["direct"]["ok"], true);
    assert_eq!(row("unknown-server")["code"]["ok"], true);
}

/// What the scripted mock provider saw: the tool names it was offered and the tool results
/// it was given, per request.
type Log = Arc<Mutex<Vec<Value>>>;

/// A loopback model provider that follows a script: offered `execute_typescript` (code
/// mode), it first writes a program, else (direct mode) it calls
/// `salesforce__get-account`; on its second turn it answers with the id it finds in the last
/// tool result. Each answer reports usage: 100 x turn in, 10 out.
async fn scripted_provider() -> (String, Log) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let log: Log = Arc::default();
    let seen = log.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            let seen = seen.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 65536];
                let (head, start) = loop {
                    let n = sock.read(&mut chunk).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        break (String::from_utf8_lossy(&buf[..i]).to_string(), i + 4);
                    }
                };
                let len: usize = head
                    .lines()
                    .filter_map(|l| l.split_once(':'))
                    .find(|(k, _)| k.trim().eq_ignore_ascii_case("content-length"))
                    .and_then(|(_, v)| v.trim().parse().ok())
                    .unwrap_or(0);
                while buf.len() < start + len {
                    let n = sock.read(&mut chunk).await.unwrap_or(0);
                    if n == 0 {
                        break;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                }
                let body: Value = serde_json::from_slice(&buf[start..]).unwrap_or(Value::Null);
                let anthropic = head.starts_with("POST /v1/messages");
                let tools: Vec<String> = body["tools"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|t| {
                        t["name"]
                            .as_str()
                            .or(t["function"]["name"].as_str())
                            .unwrap()
                            .to_string()
                    })
                    .collect();
                let messages = body["messages"].as_array().unwrap();
                let turn = 1 + messages.iter().filter(|m| m["role"] == "assistant").count();
                let last = messages.last().unwrap().to_string();
                seen.lock()
                    .unwrap()
                    .push(json!({"tools": tools.len(), "turn": turn, "last": last}));
                let code = tools.iter().any(|t| t == "execute_typescript");
                let (name, args) = if code {
                    (
                        "execute_typescript",
                        json!({"code": "const a = await callMCPTool('salesforce', 'get-account', {account_id: 'account-1003'}); return a.id;"}),
                    )
                } else {
                    (
                        "salesforce__get-account",
                        json!({"account_id": "account-1003"}),
                    )
                };
                let text = if last.contains("account-1003") {
                    "The account is account-1003."
                } else {
                    "I could not find it."
                };
                let answer = match (anthropic, turn) {
                    (true, 1) => {
                        json!({"content": [{"type": "tool_use", "id": "c1", "name": name, "input": args}],
                        "usage": {"input_tokens": 100, "output_tokens": 10}})
                    }
                    (true, _) => json!({"content": [{"type": "text", "text": text}],
                        "usage": {"input_tokens": 200, "output_tokens": 10}}),
                    (false, 1) => {
                        json!({"choices": [{"message": {"role": "assistant", "content": null,
                        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": name, "arguments": args.to_string()}}]}}],
                        "usage": {"prompt_tokens": 100, "completion_tokens": 10}})
                    }
                    (false, _) => {
                        json!({"choices": [{"message": {"role": "assistant", "content": text}}],
                        "usage": {"prompt_tokens": 200, "completion_tokens": 10}})
                    }
                };
                let answer = answer.to_string();
                let resp = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{answer}",
                    answer.len()
                );
                let _ = sock.write_all(resp.as_bytes()).await;
            });
        }
    });
    (format!("http://{addr}"), log)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_mode_reports_what_a_scripted_provider_did_in_both_modes_and_api_styles() {
    let (url, log) = scripted_provider().await;
    for api in ["anthropic", "openai"] {
        log.lock().unwrap().clear();
        let dir = TempDir::new("eval-model");
        let settings = dir.0.join("settings.json");
        std::fs::write(
            &settings,
            json!({"llm": {"provider": {"api": api, "baseUrl": url, "model": "scripted", "apiKeyEnv": "EVAL_MOCK_KEY"}}})
                .to_string(),
        )
        .unwrap();
        let file = synthetic_file(&dir.0, json!([one_account_task()]));
        let dir_path = dir.0.clone();
        let out = tokio::task::spawn_blocking(move || {
            eval(
                &dir_path,
                None,
                &[
                    "--tasks",
                    file.to_str().unwrap(),
                    "--runs",
                    "1",
                    "--model",
                    "--json",
                ],
                &[
                    ("CODE_EXECUTOR_CONFIG_PATH", settings.to_str().unwrap()),
                    ("EVAL_MOCK_KEY", "sk-eval-mock"),
                ],
            )
        })
        .await
        .unwrap();
        assert!(out.status.success(), "{api}: {}", text(&out));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let row = &v["model"][0];
        assert_eq!(row["task"], "one-account");
        for way in ["direct", "code"] {
            let s = &row[way];
            assert_eq!(s["ok"], true, "{api} {way}: {s}");
            assert_eq!(s["input_tokens"], 300, "{api} {way}");
            assert_eq!(s["output_tokens"], 20, "{api} {way}");
            assert_eq!(s["turns"], 2, "{api} {way}");
            assert_eq!(s["tool_calls"], 1, "{api} {way}");
            assert_eq!(s["answer"], "The account is account-1003.", "{api} {way}");
        }
        // Direct mode was offered every synthetic tool, code mode ours; each second turn
        // carried the real tool result.
        let seen = log.lock().unwrap().clone();
        assert_eq!(seen.len(), 4, "{api}: {seen:?}");
        let offered: Vec<u64> = seen.iter().map(|s| s["tools"].as_u64().unwrap()).collect();
        assert!(offered[0] >= 500 && offered[1] >= 500, "{api}: {offered:?}");
        assert!(offered[2] < 20 && offered[3] < 20, "{api}: {offered:?}");
        for s in [&seen[1], &seen[3]] {
            assert!(
                s["last"].as_str().unwrap().contains("account-1003"),
                "{api}: {s}"
            );
        }
    }
}

#[test]
fn model_mode_without_a_provider_says_how_to_configure_one() {
    let dir = TempDir::new("eval-noprovider");
    let out = eval(&dir.0, None, &["--tasks", "synthetic", "--model"], &[]);
    assert!(!out.status.success());
    assert!(
        text(&out).contains("\"llm\": {\"provider\""),
        "{}",
        text(&out)
    );
}

/// The direct side obeys the user's policy as a pinned direct tool does: a step the rules
/// deny (by a tool pattern, by the server's default, by a read-only server) or that needs an
/// approval nobody can give in `eval` is refused and not made, reported as a refused step;
/// every direct call, made or refused, has its audit line, as a pinned call's.
#[test]
fn direct_steps_obey_the_rules_approvals_and_audit_of_pinned_direct_tools() {
    let dir = TempDir::new("eval-policy");
    let audit = dir.0.join("audit.jsonl");
    let settings = dir.0.join("home/.config/code-executor-mcp/config.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(
        &settings,
        json!({
            "policy": {"default": "deny", "servers": {
                "github": {"allow": ["list_*", "get_*"], "deny": ["get_iss*"]},
                "stripe": {"allow": ["*"], "readOnly": true},
                "salesforce": {"allow": ["*"]},
                "linear": {"allow": ["*"]}
            }},
            // A server pattern: every get- tool of a server whose name starts with "sales".
            "approvals": {"approve": ["mcp__sales*__get-*"], "fallback": "deny"},
            "audit": {"path": audit}
        })
        .to_string(),
    )
    .unwrap();
    let code = json!({"language": "typescript", "source": "return 'done'"});
    let task = |name: &str, steps: Value| json!({"name": name, "prompt": "p", "direct": steps, "code": code});
    let tasks = json!([
        task(
            "allowed",
            json!([{"server": "github", "tool": "list_issues", "arguments": {"limit": 1}}])
        ),
        task(
            "denied-by-tool-pattern",
            json!([
            {"server": "github", "tool": "list_issues", "arguments": {"limit": 1}},
            {"server": "github", "tool": "get_issue", "arguments": {"issue_id": "x"}}])
        ),
        task(
            "denied-by-default",
            json!([{"server": "jira", "tool": "list-issues", "arguments": {"limit": 1}}])
        ),
        task(
            "read-only-server",
            json!([{"server": "stripe", "tool": "list_customers", "arguments": {"limit": 1}}])
        ),
        task(
            "needs-approval",
            json!([{"server": "salesforce", "tool": "get-account", "arguments": {"account_id": "account-1003"}}])
        ),
        task(
            "linear-allowed",
            json!([{"server": "linear", "tool": "list_issues", "arguments": {"limit": 1}}])
        ),
    ]);
    let file = synthetic_file(&dir.0, tasks);
    let out = eval(
        &dir.0,
        None,
        &[
            "--tasks",
            file.to_str().unwrap(),
            "--runs",
            "1",
            "--warmup",
            "0",
            "--json",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    // Not a terminal: no progress.
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("eval ["),
        "{}",
        text(&out)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let row = |name: &str| {
        v["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["task"] == name)
            .unwrap()["direct"]
            .clone()
    };
    for ok in ["allowed", "linear-allowed"] {
        assert_eq!(row(ok)["ok"], true, "{ok}: {}", row(ok));
        assert!(row(ok).get("refused").is_none(), "{}", row(ok));
    }
    let refused = |name: &str, step: u64, error: &str, why: &str| {
        let r = row(name);
        assert_eq!(r["ok"], false, "{name}: {r}");
        let f = &r["refused"];
        assert_eq!(f["step"], step, "{name}: {r}");
        assert_eq!(f["error"], error, "{name}: {r}");
        assert!(f["reason"].as_str().unwrap().contains(why), "{name}: {r}");
        let e = r["error"].as_str().unwrap();
        assert!(
            e.contains("was refused and not made") && e.contains(why),
            "{name}: {e}"
        );
    };
    refused(
        "denied-by-tool-pattern",
        1,
        "PolicyError",
        "(deny: get_iss*)",
    );
    refused(
        "denied-by-default",
        0,
        "PolicyError",
        "denied by the default policy",
    );
    refused("read-only-server", 0, "PolicyError", "read-only mode");
    refused("needs-approval", 0, "ApprovalDenied", "needs approval");
    assert!(
        row("needs-approval")["error"]
            .as_str()
            .unwrap()
            .contains("set approvals.fallback to allow"),
        "{}",
        row("needs-approval")
    );
    // The audit: one tool.call line per direct call, as a pinned call writes it, the refused
    // ones `deny` with their reason, the made ones `allow`; the approval's fallback too.
    let lines: Vec<Value> = std::fs::read_to_string(&audit)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let calls = |server: &str, tool: &str| -> Vec<Value> {
        lines
            .iter()
            .filter(|l| l["event"] == "tool.call" && l["server"] == server && l["tool"] == tool)
            .cloned()
            .collect()
    };
    let one = |server: &str, tool: &str, decision: &str| {
        let c = calls(server, tool);
        assert_eq!(c.len(), 1, "{server}.{tool}: {c:?}");
        assert_eq!(c[0]["decision"], decision, "{c:?}");
        assert!(
            c[0]["execution"].as_str().is_some_and(|e| !e.is_empty()),
            "{c:?}"
        );
        c[0].clone()
    };
    // list_issues: the allowed task's step and the denied task's first step.
    let listed = calls("github", "list_issues");
    assert_eq!(listed.len(), 2, "{listed:?}");
    assert!(
        listed
            .iter()
            .all(|l| l["decision"] == "allow" && l["outcome"] == "ok")
    );
    assert!(
        one("github", "get_issue", "deny")["reason"]
            .as_str()
            .unwrap()
            .contains("get_iss*")
    );
    one("jira", "list-issues", "deny");
    one("stripe", "list_customers", "deny");
    one("salesforce", "get-account", "deny");
    one("linear", "list_issues", "allow");
    let approvals: Vec<&Value> = lines.iter().filter(|l| l["event"] == "approval").collect();
    assert_eq!(approvals.len(), 1, "{approvals:?}");
    assert_eq!(approvals[0]["via"], "fallback");
    assert_eq!(approvals[0]["answer"], "denied");
    assert_eq!(approvals[0]["tool"], "get-account");

    // With `approvals.fallback: allow`, the call that needs approval is made, as a pinned
    // call's would be, and its approval line says the fallback allowed it.
    std::fs::write(
        &settings,
        json!({
            "approvals": {"approve": ["mcp__*__get-account"], "fallback": "allow"},
            "audit": {"path": audit}
        })
        .to_string(),
    )
    .unwrap();
    std::fs::remove_file(&audit).unwrap();
    let one = synthetic_file(
        &dir.0,
        json!([task(
            "needs-approval",
            json!([
        {"server": "salesforce", "tool": "get-account", "arguments": {"account_id": "account-1003"}}])
        )]),
    );
    let out = eval(
        &dir.0,
        None,
        &[
            "--tasks",
            one.to_str().unwrap(),
            "--runs",
            "1",
            "--warmup",
            "0",
            "--json",
        ],
        &[],
    );
    assert!(out.status.success(), "{}", text(&out));
    let lines: Vec<Value> = std::fs::read_to_string(&audit)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let approval: Vec<&Value> = lines.iter().filter(|l| l["event"] == "approval").collect();
    assert_eq!(approval.len(), 1, "{lines:?}");
    assert_eq!(approval[0]["answer"], "approved");
    assert!(
        lines.iter().any(|l| l["event"] == "tool.call"
            && l["tool"] == "get-account"
            && l["decision"] == "allow"),
        "{lines:?}"
    );
}

//! What the command line prints when something goes wrong: a user's error is an `error: ...`
//! line on stderr (a `hint: ...` line where one helps) and a non-zero exit, never a
//! timestamped log line; a reader that goes away (`| head -1`) ends a command quietly, never
//! with a panic, whichever command was writing.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::json;
use test_support::TempDir;

use crate::common::EXE;

/// The binary with a scratch home and working directory and no configured servers.
fn command(dir: &Path) -> Command {
    let home = dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let mut c = Command::new(EXE);
    c.current_dir(dir)
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("CODE_EXECUTOR_CACHE_DIR", "off")
        .env_remove("MCP_CONFIG_PATH")
        .env_remove("CODE_EXECUTOR_CONFIG_PATH")
        .env_remove("RUST_LOG")
        // The approvals commands look for servers there: none of this machine's.
        .env_remove("XDG_RUNTIME_DIR")
        .env_remove("EVERYTHING_JS")
        .stdin(Stdio::null());
    c
}

/// `cmd` with its stdout a pipe whose reader is already gone: every write is EPIPE.
fn closed_stdout(mut cmd: Command) -> Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    cmd.stdout(writer).stderr(Stdio::piped()).output().unwrap()
}

/// A config with the fixture server, for the discovery commands.
fn one_server(dir: &Path) -> std::path::PathBuf {
    let p = dir.join("servers.json");
    std::fs::write(
        &p,
        json!({"mcpServers": {"fx": {"command": test_support::workspace_bin("fixture-server")}}})
            .to_string(),
    )
    .unwrap();
    p
}

#[test]
fn commands_writing_to_a_closed_pipe_end_quietly() {
    let dir = TempDir::new("cli-epipe");
    let config = one_server(&dir.0);
    let config = config.to_str().unwrap();
    let audit = dir.0.join("audit.jsonl");
    std::fs::write(
        &audit,
        "{\"event\":\"run.start\",\"ts\":\"2026-01-01T00:00:00Z\"}\n".repeat(50),
    )
    .unwrap();
    let settings = dir.0.join("home/.config/code-executor-mcp/config.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(&settings, json!({"audit": {"path": audit}}).to_string()).unwrap();
    let runs: &[&[&str]] = &[
        &["completions", "zsh"],
        &["completions", "bash"],
        &["completions", "fish"],
        &[
            "--no-discover",
            "--config",
            config,
            "tools",
            "search",
            "echo",
        ],
        &[
            "--no-discover",
            "--config",
            config,
            "tools",
            "search",
            "echo",
            "--json",
        ],
        &[
            "--no-discover",
            "--config",
            config,
            "tools",
            "show",
            "mcp__fx__echo",
        ],
        &["--no-discover", "--config", config, "config", "show"],
        &["audit", "tail", "-n", "50"],
        &["--help"],
        &["--version"],
    ];
    for args in runs {
        let mut cmd = command(&dir.0);
        cmd.args(*args);
        let out = closed_stdout(cmd);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !stderr.contains("panicked") && !stderr.contains("Broken pipe"),
            "{args:?}: {stderr}"
        );
        assert!(stderr.trim().is_empty(), "{args:?} said: {stderr}");
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
    }
}

#[test]
fn user_errors_are_error_lines_with_hints_and_a_failing_exit() {
    let dir = TempDir::new("cli-errors");
    let empty = dir.0.join("empty.json");
    std::fs::write(&empty, "{\"mcpServers\": {}}").unwrap();
    let empty = empty.to_str().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&["exec", "nosuch.ts"], "error: cannot read nosuch.ts"),
        (
            &["exec", "missing/dir/x.py"],
            "error: cannot read missing/dir/x.py",
        ),
        (
            &["exec", "-", "--permissions", "{not json"],
            "error: --permissions: expected",
        ),
        (
            &[
                "--no-discover",
                "--config",
                empty,
                "tools",
                "show",
                "mcp__nope__x",
            ],
            "error: ",
        ),
        (
            &[
                "--no-discover",
                "--config",
                "/nonexistent/servers.json",
                "config",
                "show",
            ],
            "error: ",
        ),
        (
            &["eval", "--tasks", "/nonexistent/tasks.json"],
            "error: cannot read the task file",
        ),
        (
            &["--no-discover", "--config", empty, "eval"],
            "error: the reference tasks run on",
        ),
        (&["setup"], "error: standard input is not a terminal"),
        (
            &["--no-discover", "--config", empty, "login", "nosuch"],
            "error: no MCP server named",
        ),
        (&["bench"], "error: pass --everything"),
        (&["audit", "tail"], "error: cannot read the audit log"),
        (
            &["approvals", "approve", "1/../2"],
            "error: `1/../2` is not an approval id",
        ),
        (
            &["approvals", "deny", "7"],
            "error: no approval 7 is waiting",
        ),
        (
            &[
                "--pool-max",
                "999",
                "--no-discover",
                "--config",
                empty,
                "config",
                "show",
            ],
            "error: --pool-max",
        ),
    ];
    for (args, says) in cases {
        let out = command(&dir.0).args(*args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.starts_with("error: "), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        // Not a log line: no level, no target, no timestamp.
        assert!(
            !stderr.contains("ERROR") && !stderr.contains("code_executor_mcp::"),
            "{args:?}: {stderr}"
        );
        assert!(
            !stderr
                .lines()
                .any(|l| l.len() > 20 && l.as_bytes()[4] == b'-' && l.contains('T')),
            "{args:?}: {stderr}"
        );
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    // The hints where one helps.
    let exec = command(&dir.0)
        .args(["exec", "nosuch.ts"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&exec.stderr);
    assert!(
        stderr.lines().nth(1).is_some_and(|l| l.starts_with("hint: ") && l.contains("- to read the code from stdin")),
        "{stderr}"
    );
    let eval = command(&dir.0)
        .args(["--no-discover", "--config", empty, "eval"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&eval.stderr);
    assert!(
        stderr.contains("\nhint: ") && stderr.contains("eval --fixture DIR"),
        "{stderr}"
    );
    // A long command's progress, when asked for (as on a terminal), comes first on stderr;
    // the error still ends it.
    let bench = command(&dir.0)
        .args(["bench"])
        .env("CODE_EXECUTOR_PROGRESS", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&bench.stderr);
    assert!(
        stderr.starts_with("bench [")
            && stderr.contains("the JSON report is printed when it is done"),
        "{stderr}"
    );
    assert!(stderr.contains("\nerror: pass --everything"), "{stderr}");
    assert!(bench.stdout.is_empty());
    // Usage errors stay clap's: exit 2.
    let usage = command(&dir.0).args(["exec"]).output().unwrap();
    assert_eq!(usage.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&usage.stderr).starts_with("error: "));
}

/// Output that cannot be written for another reason than a closed pipe (a full disk) fails
/// the command with an error line.
#[test]
fn an_unwritable_stdout_is_an_error() {
    let dir = TempDir::new("cli-full");
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        eprintln!("SKIP: no /dev/full");
        return;
    };
    let out = command(&dir.0)
        .args(["completions", "bash"])
        .stdout(full)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.starts_with("error: cannot write to stdout"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}

//! `setup` against the real clients (Claude Code, Codex, Gemini CLI from npm, installed by
//! `scripts/setup-interop.sh`): what it writes equals what each client's own `mcp add`
//! writes, and each client's own `mcp list`/`get` reads it back, starts our server from it
//! (its health check gets an answer to `initialize`), and sees the other servers switched
//! off where the client shows that.
//!
//! Without the clients these tests print a loud SKIP, unless `CODE_EXECUTOR_REQUIRE_INTEROP=1`
//! (set by scripts/test.sh) makes that a failure.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::common::EXE;
use crate::common::setup::{Machine, skip_or_fail};

/// The installed client `name`, or `None` after a loud SKIP (a failure when required).
fn client(name: &str) -> Option<PathBuf> {
    let prefix = std::env::var_os("CODE_EXECUTOR_INTEROP")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp/code-executor-interop"));
    let bin = prefix.join("clients/node_modules/.bin").join(name);
    if bin.exists() {
        return Some(bin);
    }
    skip_or_fail(&format!(
        "{name} not installed under {}; run scripts/setup-interop.sh",
        prefix.display()
    ));
    None
}

fn run(m: &Machine, program: &Path, args: &[&str]) -> String {
    let (out, err) = run2(m, program, args);
    format!("{out}{err}")
}

/// stdout and stderr of a client command that must succeed.
fn run2(m: &Machine, program: &Path, args: &[&str]) -> (String, String) {
    // The clients are node programs: they need node on PATH.
    let node_dir = which("node").and_then(|p| p.parent().map(Path::to_path_buf));
    let mut path = String::from("/usr/local/bin:/usr/bin:/bin");
    if let Some(d) = node_dir {
        path = format!("{}:{path}", d.display());
    }
    let out = m
        .command(program)
        .args(args)
        .env("PATH", path)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let (o, e) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(
        out.status.success(),
        "{} {args:?}: {o}{e}",
        program.display()
    );
    (o, e)
}

fn which(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|f| f.is_file())
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn codex_servers(m: &Machine) -> Value {
    let text = std::fs::read_to_string(m.home().join(".codex/config.toml")).unwrap();
    let v: toml::Value = toml::from_str(&text).unwrap();
    serde_json::to_value(&v["mcp_servers"]).unwrap()
}

#[test]
fn setup_writes_what_each_clients_own_mcp_add_writes() {
    let (Some(claude), Some(codex), Some(gemini)) =
        (client("claude"), client("codex"), client("gemini"))
    else {
        return;
    };
    // Without arguments (what setup writes by default), with one, and with variables
    // (`--env`, each client's `-e`/`--env`).
    for (case, extra, env) in [
        (0, vec![], vec![]),
        (1, vec!["serve"], vec![]),
        (
            2,
            vec!["serve"],
            vec!["RUST_LOG=warn", "CODE_EXECUTOR_CONFIG_PATH=/etc/ce.json"],
        ),
    ] {
        let theirs = Machine::new(&format!("theirs{case}"));
        std::fs::create_dir_all(theirs.home().join(".codex")).unwrap();
        let mut a = vec!["mcp", "add", "-s", "user", "code-executor"];
        for e in &env {
            a.extend(["-e", e]);
        }
        a.extend(["--", EXE]);
        a.extend(&extra);
        run(&theirs, &claude, &a);
        let mut a = vec!["mcp", "add"];
        for e in &env {
            a.extend(["--env", e]);
        }
        a.extend(["code-executor", "--", EXE]);
        a.extend(&extra);
        run(&theirs, &codex, &a);
        let mut a = vec!["mcp", "add", "-s", "user"];
        for e in &env {
            a.extend(["-e", e]);
        }
        a.extend(["code-executor", EXE]);
        a.extend(&extra);
        run(&theirs, &gemini, &a);

        let ours = Machine::new(&format!("ours{case}"));
        let mut a = vec![
            "--yes",
            "--client",
            "claude-code",
            "--client",
            "codex",
            "--client",
            "gemini",
            "--command",
            EXE,
        ];
        for x in &extra {
            a.extend(["--arg", x]);
        }
        for e in &env {
            a.extend(["--env", e]);
        }
        let out = ours.setup(&a);
        assert!(out.ok, "{}", out.text);

        assert_eq!(
            read_json(&ours.home().join(".claude.json"))["mcpServers"],
            read_json(&theirs.home().join(".claude.json"))["mcpServers"],
            "Claude Code"
        );
        assert_eq!(codex_servers(&ours), codex_servers(&theirs), "Codex");
        assert_eq!(
            read_json(&ours.home().join(".gemini/settings.json")),
            read_json(&theirs.home().join(".gemini/settings.json")),
            "Gemini CLI"
        );
        // Codex's file is even the same text.
        assert_eq!(
            std::fs::read_to_string(ours.home().join(".codex/config.toml")).unwrap(),
            std::fs::read_to_string(theirs.home().join(".codex/config.toml")).unwrap()
        );
    }
}

#[test]
fn the_clients_own_mcp_list_reads_what_setup_wrote_and_starts_us() {
    let (Some(claude), Some(codex), Some(gemini)) =
        (client("claude"), client("codex"), client("gemini"))
    else {
        return;
    };
    let m = Machine::new("lists");
    let project = m.project().display().to_string();
    m.write(
        ".claude.json",
        &json!({"mcpServers": {"other": {"type": "stdio", "command": "false", "args": [], "env": {}}}})
            .to_string(),
    );
    m.write(
        ".codex/config.toml",
        "[mcp_servers.other]\ncommand = \"false\"\n",
    );
    m.write(
        ".gemini/settings.json",
        &json!({"mcpServers": {"Other": {"command": "false"}}}).to_string(),
    );
    m.write(
        ".gemini/trustedFolders.json",
        &json!({ project.clone(): "TRUST_FOLDER" }).to_string(),
    );
    let out = m.setup(&["--yes", "--switch-off-others"]);
    assert!(out.ok, "{}", out.text);

    // Claude Code: its `mcp get` reads our entry and its health check gets our answer.
    let got = run(&m, &claude, &["mcp", "get", "code-executor"]);
    assert!(got.contains("Type: stdio"), "{got}");
    assert!(got.contains(&format!("Command: {EXE}")), "{got}");
    assert!(got.contains("Connected"), "{got}");
    // Its list still shows both (it lists disabled servers too); the switch is where
    // Claude Code's /mcp toggle keeps it.
    let list = run(&m, &claude, &["mcp", "list"]);
    assert!(
        list.contains("code-executor:") && list.contains("other:"),
        "{list}"
    );
    assert_eq!(
        read_json(&m.home().join(".claude.json"))["projects"][&project]["disabledMcpServers"],
        json!(["other"])
    );

    // Codex: its JSON list, ours enabled with our command, the other switched off.
    let (text, _) = run2(&m, &codex, &["mcp", "list", "--json"]);
    let listed: Value = serde_json::from_str(&text).unwrap();
    let by_name = |n: &str| {
        listed
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == n)
            .cloned()
            .unwrap_or_else(|| panic!("{n} not in {listed}"))
    };
    assert_eq!(by_name("code-executor")["enabled"], true);
    assert_eq!(by_name("code-executor")["transport"]["command"], EXE);
    assert_eq!(by_name("other")["enabled"], false);

    // Gemini CLI: connected to us, the other disabled (by its lower-cased id).
    let list = run(&m, &gemini, &["mcp", "list"]);
    let line = |n: &str| {
        list.lines()
            .find(|l| l.contains(&format!("{n}: ")))
            .unwrap_or_else(|| panic!("{n} not in {list}"))
            .to_string()
    };
    assert!(line("code-executor").ends_with("Connected"), "{list}");
    assert!(line("Other").ends_with("Disabled"), "{list}");
}

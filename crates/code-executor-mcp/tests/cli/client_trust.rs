//! Our trust rules against the real clients: for client config files built in a temporary
//! home and project, the servers `claude mcp list`, `gemini mcp list` and `codex mcp list`
//! would start are exactly those `config show` lists as servers (the rest held back).
//!
//! Needs the clients from `scripts/setup-interop.sh` (npm); without them these tests print a
//! loud SKIP, unless `CODE_EXECUTOR_REQUIRE_INTEROP=1` (set in CI) makes that a failure.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::common::EXE;

/// The installed client `name`, or a loud SKIP (a failure when interop is required).
fn client(name: &str) -> Option<PathBuf> {
    let prefix = std::env::var_os("CODE_EXECUTOR_INTEROP")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp/code-executor-interop"));
    let bin = prefix.join("clients/node_modules/.bin").join(name);
    if bin.exists() {
        return Some(bin);
    }
    let msg = format!(
        "{name} not installed under {}; run scripts/setup-interop.sh",
        prefix.display()
    );
    if std::env::var_os("CODE_EXECUTOR_REQUIRE_INTEROP").is_some() {
        panic!("{msg} (CODE_EXECUTOR_REQUIRE_INTEROP is set)");
    }
    eprintln!("\n==================== SKIP: {msg} ====================\n");
    None
}

/// A temporary home and project (a git work tree, as a cloned repository is).
struct Machine {
    root: PathBuf,
}

impl Machine {
    fn new(tag: &str) -> Machine {
        let root = std::env::temp_dir().join(format!("cem-ct-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("home")).unwrap();
        std::fs::create_dir_all(root.join("project")).unwrap();
        let root = std::fs::canonicalize(root).unwrap();
        assert!(
            Command::new("git")
                .args(["init", "-q"])
                .arg(root.join("project"))
                .status()
                .unwrap()
                .success()
        );
        Machine { root }
    }

    fn write(&self, rel: &str, text: &str) -> &Self {
        let p = self.root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
        self
    }

    fn home(&self) -> PathBuf {
        self.root.join("home")
    }

    fn project(&self) -> PathBuf {
        self.root.join("project")
    }

    fn run(&self, program: &Path, args: &[&str]) -> String {
        let out = Command::new(program)
            .args(args)
            .current_dir(self.project())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.home())
            .env("XDG_CONFIG_HOME", self.home().join(".config"))
            .env("CODEX_HOME", self.home().join(".codex"))
            .env("CODE_EXECUTOR_CACHE_DIR", "off")
            .output()
            .expect("run");
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    }

    /// The servers of `client` that we would start.
    fn ours(&self, client: &str) -> BTreeSet<String> {
        let out = Command::new(EXE)
            .args(["config", "show"])
            .current_dir(self.project())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.home())
            .env("XDG_CONFIG_HOME", self.home().join(".config"))
            .env("CODEX_HOME", self.home().join(".codex"))
            .env("CODE_EXECUTOR_CACHE_DIR", "off")
            .output()
            .expect("config show");
        assert!(out.status.success(), "{out:?}");
        let shown: Value = serde_json::from_slice(&out.stdout).unwrap();
        shown["servers"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["client"] == client)
            .map(|s| s["name"].as_str().unwrap().to_string())
            .collect()
    }
}

impl Drop for Machine {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| s.to_string()).collect()
}

/// `name: command - status` lines of `claude mcp list`; pending ones are not started, and
/// rejected ones are not listed.
fn claude_started(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter(|l| l.contains(" - ") && !l.contains("Pending approval"))
        .filter_map(|l| l.split_once(':').map(|(n, _)| n.trim().to_string()))
        .collect()
}

#[test]
fn claude_code_starts_the_project_servers_we_start() {
    let Some(claude) = client("claude") else {
        return;
    };
    let m = Machine::new("claude");
    let servers = json!({"mcpServers": {
        "approved": {"command": "true"}, "rejected": {"command": "true"},
        "pending": {"command": "true"}, "self-approved": {"command": "true"}}});
    m.write("project/.mcp.json", &servers.to_string())
        .write(
            "home/.claude/settings.json",
            r#"{"enabledMcpjsonServers": ["approved", "rejected"], "disabledMcpjsonServers": ["rejected"]}"#,
        )
        .write(
            "project/.claude/settings.json",
            r#"{"enabledMcpjsonServers": ["self-approved"]}"#,
        );
    let want = set(&["approved"]);
    assert_eq!(claude_started(&m.run(&claude, &["mcp", "list"])), want);
    assert_eq!(m.ours("claude-code"), want);
    // Once the workspace is trusted, the project's own settings count.
    let key = m.project().display().to_string();
    m.write(
        "home/.claude.json",
        &json!({"projects": {key: {"hasTrustDialogAccepted": true}}}).to_string(),
    );
    let want = set(&["approved", "self-approved"]);
    assert_eq!(claude_started(&m.run(&claude, &["mcp", "list"])), want);
    assert_eq!(m.ours("claude-code"), want);
}

/// `✓ name: command (stdio) - status` lines of `gemini mcp list`.
fn gemini_started(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter(|l| l.contains("(stdio)") && !l.ends_with("Disabled") && !l.ends_with("Blocked"))
        .filter_map(|l| {
            let (head, _) = l.split_once(':')?;
            Some(head.split_whitespace().last()?.to_string())
        })
        .collect()
}

#[test]
fn gemini_cli_starts_the_servers_we_start() {
    let Some(gemini) = client("gemini") else {
        return;
    };
    let m = Machine::new("gemini");
    m.write(
        "home/.gemini/settings.json",
        r#"{"mcp": {"excluded": ["blocked"]},
            "mcpServers": {"user": {"command": "true"}, "blocked": {"command": "true"}}}"#,
    )
    .write(
        "project/.gemini/settings.json",
        r#"{"mcpServers": {"repo": {"command": "true"}}}"#,
    );
    // Untrusted folder: nothing starts, the user's servers included.
    assert_eq!(gemini_started(&m.run(&gemini, &["mcp", "list"])), set(&[]));
    assert_eq!(m.ours("gemini"), set(&[]));
    let key = m.project().display().to_string();
    for (rules, want) in [
        (json!({key.clone(): "TRUST_FOLDER"}), set(&["user", "repo"])),
        (
            json!({m.root.display().to_string(): "TRUST_FOLDER", key.clone(): "DO_NOT_TRUST"}),
            set(&[]),
        ),
        (
            json!({format!("{key}/x"): "TRUST_PARENT"}),
            set(&["user", "repo"]),
        ),
    ] {
        m.write("home/.gemini/trustedFolders.json", &rules.to_string());
        assert_eq!(
            gemini_started(&m.run(&gemini, &["mcp", "list"])),
            want,
            "gemini, {rules}"
        );
        assert_eq!(m.ours("gemini"), want, "ours, {rules}");
    }
}

#[test]
fn codex_starts_the_project_servers_we_start() {
    let Some(codex) = client("codex") else {
        return;
    };
    let m = Machine::new("codex");
    let user = "[mcp_servers.user]\ncommand = \"true\"\n";
    m.write("home/.codex/config.toml", user).write(
        "project/.codex/config.toml",
        "[mcp_servers.repo]\ncommand = \"true\"\n",
    );
    let listed = |m: &Machine| -> BTreeSet<String> {
        let text = m.run(&codex, &["mcp", "list", "--json"]);
        let start = text.find('[').unwrap_or_else(|| panic!("{text}"));
        // The JSON document first, then whatever else the client printed.
        let v: Value = serde_json::Deserializer::from_str(&text[start..])
            .into_iter()
            .next()
            .and_then(Result::ok)
            .unwrap_or_else(|| panic!("{text}"));
        v.as_array()
            .unwrap()
            .iter()
            .filter(|s| s["enabled"] == true)
            .map(|s| s["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(listed(&m), set(&["user"]));
    assert_eq!(m.ours("codex"), set(&["user"]));
    for (level, want) in [
        ("trusted", set(&["user", "repo"])),
        ("untrusted", set(&["user"])),
    ] {
        m.write(
            "home/.codex/config.toml",
            &format!(
                "{user}[projects.\"{}\"]\ntrust_level = \"{level}\"\n",
                m.project().display()
            ),
        );
        assert_eq!(listed(&m), want, "codex, {level}");
        assert_eq!(m.ours("codex"), want, "ours, {level}");
    }
}

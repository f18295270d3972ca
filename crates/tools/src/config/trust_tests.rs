//! Which servers we would start, for client config files built in a temporary home and
//! project: each client's trust and approval rules, the new entry keys, and the escape hatch.

use super::*;
use std::path::PathBuf;
use std::time::Duration;

/// A temporary home (with `.config`, `.codex`) and a project directory.
struct Machine {
    root: PathBuf,
}

impl Machine {
    fn new(tag: &str) -> Machine {
        let root = std::env::temp_dir().join(format!("cem-trust-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("home")).unwrap();
        std::fs::create_dir_all(root.join("project")).unwrap();
        Machine { root }
    }

    fn write(&self, rel: &str, text: &str) -> &Self {
        let p = self.root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
        self
    }

    fn project(&self) -> PathBuf {
        self.root.join("project")
    }

    fn git_init(&self) -> &Self {
        let ok = std::process::Command::new("git")
            .args(["init", "-q"])
            .arg(self.project())
            .status()
            .unwrap()
            .success();
        assert!(ok, "git init");
        self
    }

    fn load_with(&self, trusted: &[PathBuf]) -> Config {
        let home = self.root.join("home");
        Config::load(&LoadOptions {
            discover: true,
            places: Places {
                config_dir: Some(home.join(".config")),
                codex_home: Some(home.join(".codex")),
                home: Some(home),
                cwd: self.project(),
                claude_managed_dir: None,
            },
            trusted_projects: trusted.to_vec(),
            ..LoadOptions::default()
        })
        .unwrap()
    }

    fn load(&self) -> Config {
        self.load_with(&[])
    }

    /// `~/.claude.json` with `project` settings for the project directory.
    fn claude_json(&self, project: serde_json::Value) -> &Self {
        let key = self.project().display().to_string();
        self.write(
            "home/.claude.json",
            &json!({"projects": {key: project}}).to_string(),
        )
    }
}

impl Drop for Machine {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn names(c: &Config) -> Vec<&str> {
    c.servers.keys().map(String::as_str).collect()
}

fn held(c: &Config) -> Vec<&str> {
    c.held_back.keys().map(String::as_str).collect()
}

const MCP_JSON: &str = r#"{"mcpServers": {"repo": {"command": "sh", "args": ["-c", "evil"]}}}"#;

#[test]
fn cloned_repo_mcp_json_not_yet_approved_is_held_back_with_how_to_allow_it() {
    let m = Machine::new("pending");
    m.write("project/.mcp.json", MCP_JSON);
    let c = m.load();
    assert_eq!(names(&c), Vec::<&str>::new());
    assert_eq!(held(&c), ["repo"]);
    let reason = &c.held_back["repo"].reason;
    assert!(
        reason.contains("Claude Code has not approved this server")
            && reason.contains("enabledMcpjsonServers")
            && reason.contains("\"trustedProjects\""),
        "{reason}"
    );
    let shown = c.describe();
    assert_eq!(shown["heldBack"][0]["name"], "repo");
    assert_eq!(shown["heldBack"][0]["reason"], json!(reason));
}

#[test]
fn repo_settings_approving_its_own_servers_in_an_untrusted_workspace_are_ignored() {
    let m = Machine::new("selfapprove");
    m.write("project/.mcp.json", MCP_JSON).write(
        "project/.claude/settings.json",
        r#"{"enableAllProjectMcpServers": true, "enabledMcpjsonServers": ["repo"]}"#,
    );
    assert_eq!(held(&m.load()), ["repo"]);
    // The same file counts once the user trusted the workspace in Claude Code.
    m.claude_json(json!({"hasTrustDialogAccepted": true}));
    assert_eq!(names(&m.load()), ["repo"]);
}

#[test]
fn repo_shipped_settings_local_json_does_not_approve_outside_git_or_when_tracked() {
    let m = Machine::new("local");
    m.write("project/.mcp.json", MCP_JSON).write(
        "project/.claude/settings.local.json",
        r#"{"enabledMcpjsonServers": ["repo"]}"#,
    );
    // Not in a git work tree: Claude Code does not trust the file either.
    assert_eq!(held(&m.load()), ["repo"]);
    // In a git repository, untracked (written by Claude Code's approval dialog): it counts.
    m.git_init();
    assert_eq!(names(&m.load()), ["repo"]);
    // Tracked: it came with the repository.
    let ok = std::process::Command::new("git")
        .arg("-C")
        .arg(m.project())
        .args(["add", "-f", ".claude/settings.local.json"])
        .status()
        .unwrap()
        .success();
    assert!(ok);
    assert_eq!(held(&m.load()), ["repo"]);
}

#[test]
fn claude_approvals_from_the_users_own_files_start_the_server() {
    let m = Machine::new("approved");
    m.write("project/.mcp.json", MCP_JSON);
    m.write(
        "home/.claude/settings.json",
        r#"{"enabledMcpjsonServers": ["repo"]}"#,
    );
    assert_eq!(names(&m.load()), ["repo"]);
    std::fs::remove_file(m.root.join("home/.claude/settings.json")).unwrap();
    // Older Claude Code versions kept approvals in ~/.claude.json.
    m.claude_json(json!({"enableAllProjectMcpServers": true}));
    assert_eq!(names(&m.load()), ["repo"]);
}

#[test]
fn a_server_rejected_in_claude_code_stays_held_back_even_when_we_trust_the_project() {
    let m = Machine::new("rejected");
    m.write("project/.mcp.json", MCP_JSON).claude_json(
        json!({"disabledMcpjsonServers": ["repo"], "enableAllProjectMcpServers": true}),
    );
    let c = m.load_with(&[m.project()]);
    assert_eq!(held(&c), ["repo"]);
    assert!(
        c.held_back["repo"]
            .reason
            .starts_with("Claude Code rejected this project server"),
        "{}",
        c.held_back["repo"].reason
    );
}

#[test]
fn claude_disabled_mcp_servers_stay_available_marked_disabled() {
    let m = Machine::new("disabled");
    let key = m.project().display().to_string();
    m.write(
        "home/.claude.json",
        &json!({"mcpServers": {"u": {"command": "u"}},
                "projects": {key: {"disabledMcpServers": ["u"]}}})
        .to_string(),
    );
    let c = m.load();
    assert_eq!(names(&c), ["u"]);
    assert!(c.servers["u"].disabled);
}

#[test]
fn gemini_starts_nothing_in_a_folder_it_does_not_trust() {
    let m = Machine::new("gemini");
    m.write(
        "home/.gemini/settings.json",
        r#"{"mcpServers": {"guser": {"command": "g"}}}"#,
    )
    .write(
        "project/.gemini/settings.json",
        r#"{"mcpServers": {"gproj": {"command": "evil"}}}"#,
    );
    let c = m.load();
    assert_eq!((names(&c), held(&c)), (vec![], vec!["gproj", "guser"]));
    assert!(
        c.held_back["gproj"].reason.contains("TRUST_FOLDER"),
        "{}",
        c.held_back["gproj"].reason
    );
    let project = m.project().display().to_string();
    let parent = m.root.display().to_string();
    let cases = [
        (json!({project.clone(): "TRUST_FOLDER"}), true),
        (json!({parent.clone(): "TRUST_FOLDER"}), true),
        (json!({format!("{project}/child"): "TRUST_PARENT"}), true),
        (json!({project.clone(): "TRUST_PARENT"}), true), // its parent holds the project
        (
            json!({parent.clone(): "TRUST_FOLDER", project.clone(): "DO_NOT_TRUST"}),
            false,
        ),
        (
            json!({parent.clone(): "DO_NOT_TRUST", project.clone(): "TRUST_FOLDER"}),
            true,
        ),
        (json!({format!("{project}-other"): "TRUST_FOLDER"}), false),
    ];
    for (rules, trusted) in cases {
        m.write("home/.gemini/trustedFolders.json", &rules.to_string());
        assert_eq!(m.load().held_back.is_empty(), trusted, "{rules}");
    }
    // Folder trust switched off in the user's settings: everything starts.
    m.write("home/.gemini/trustedFolders.json", "{}").write(
        "home/.gemini/settings.json",
        r#"{"security": {"folderTrust": {"enabled": false}}, "mcpServers": {"guser": {"command": "g"}}}"#,
    );
    assert_eq!(names(&m.load()), ["gproj", "guser"]);
}

#[test]
fn gemini_block_lists_hold_back_and_the_enablement_file_disables() {
    let m = Machine::new("gemini-lists");
    let project = m.project().display().to_string();
    m.write(
        "home/.gemini/trustedFolders.json",
        &json!({project: "TRUST_FOLDER"}).to_string(),
    )
    .write(
        "home/.gemini/settings.json",
        r#"{"mcp": {"excluded": ["Ex"], "allowed": ["a", "ex", "off", "B"]},
            "mcpServers": {"a": {"command": "a"}, "b": {"command": "b"}, "ex": {"command": "e"},
                           "off": {"command": "o"}, "c": {"command": "c"}}}"#,
    )
    .write(
        "project/.gemini/settings.json",
        r#"{"mcp": {"allowed": ["a", "b", "ex", "off"]}}"#,
    )
    .write(
        "home/.gemini/mcp-server-enablement.json",
        r#"{"off": {"enabled": false}}"#,
    );
    let c = m.load();
    assert_eq!(
        (names(&c), held(&c)),
        (vec!["a", "b", "off"], vec!["c", "ex"])
    );
    assert!(c.servers["off"].disabled);
    assert!(
        c.held_back["ex"].reason.contains("mcp.excluded"),
        "{}",
        c.held_back["ex"].reason
    );
    assert!(
        c.held_back["c"].reason.contains("not in mcp.allowed"),
        "{}",
        c.held_back["c"].reason
    );
}

#[test]
fn codex_project_config_needs_a_trusted_project() {
    let m = Machine::new("codex");
    m.git_init()
        .write(
            "home/.codex/config.toml",
            "[mcp_servers.cu]\ncommand = \"u\"\n",
        )
        .write(
            "project/.codex/config.toml",
            "[mcp_servers.cp]\ncommand = \"evil\"\n",
        );
    let c = m.load();
    assert_eq!((names(&c), held(&c)), (vec!["cu"], vec!["cp"]));
    assert!(
        c.held_back["cp"]
            .reason
            .contains("trust_level = \"trusted\""),
        "{}",
        c.held_back["cp"].reason
    );
    for (level, starts) in [("trusted", true), ("untrusted", false)] {
        m.write(
            "home/.codex/config.toml",
            &format!(
                "[mcp_servers.cu]\ncommand = \"u\"\n[projects.\"{}\"]\ntrust_level = \"{level}\"\n",
                m.project().display()
            ),
        );
        assert_eq!(m.load().servers.contains_key("cp"), starts, "{level}");
    }
}

#[test]
fn vscode_and_cursor_workspace_servers_are_held_back_unless_we_trust_the_project() {
    let m = Machine::new("ide");
    m.write(
        "project/.vscode/mcp.json",
        r#"{"servers": {"v": {"type": "stdio", "command": "evil"}}}"#,
    )
    .write(
        "project/.cursor/mcp.json",
        r#"{"mcpServers": {"cu": {"command": "evil"}}}"#,
    )
    .write("project/.mcp.json", MCP_JSON);
    assert_eq!(held(&m.load()), ["cu", "repo", "v"]);
    // Our escape hatch, for the project or a directory above it.
    assert_eq!(names(&m.load_with(&[m.project()])), ["cu", "repo", "v"]);
    assert_eq!(
        names(&m.load_with(std::slice::from_ref(&m.root))),
        ["cu", "repo", "v"]
    );
    let sibling = m.root.join("proj");
    assert_eq!(names(&m.load_with(&[sibling])), Vec::<&str>::new());
}

#[test]
fn a_held_back_entry_never_displaces_one_that_can_start() {
    let m = Machine::new("shadow");
    m.write(
        "home/.cursor/mcp.json",
        r#"{"mcpServers": {"github": {"command": "real-github"}}}"#,
    )
    .write(
        "project/.mcp.json",
        r#"{"mcpServers": {"github": {"command": "evil"}}}"#,
    );
    let c = m.load();
    assert_eq!(stdio_command(&c, "github"), "real-github");
    assert!(c.held_back.is_empty());
    assert!(
        c.warnings
            .iter()
            .any(|w| w.contains("mcpServers.github is held back")),
        "{:?}",
        c.warnings
    );
}

fn stdio_command(c: &Config, name: &str) -> String {
    match &c.servers[name].transport {
        Transport::Stdio { command, .. } => command.clone(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_project_settings_file_cannot_trust_its_own_project() {
    let m = Machine::new("settings");
    m.write(
        "project/.code-executor.json",
        &json!({"trustedProjects": [m.project()]}).to_string(),
    );
    // Not trusted: the file is not applied at all.
    let s = Settings::load(&m.project(), Some(&m.root.join("home/.config"))).unwrap();
    assert!(s.trusted_projects.is_empty());
    assert!(
        matches!(s.project, Some(settings::ProjectSettings::Ignored { .. })),
        "{:?}",
        s.project
    );
    m.write(
        "home/.config/code-executor-mcp/config.json",
        &json!({"trustedProjects": [m.project()]}).to_string(),
    );
    std::fs::remove_file(m.project().join(".code-executor.json")).unwrap();
    let s = Settings::load(&m.project(), Some(&m.root.join("home/.config"))).unwrap();
    assert_eq!(s.trusted_projects, [m.project()]);
    assert_eq!(
        Settings::parse(r#"{"trustedProjects": ["relative/dir"]}"#)
            .unwrap_err()
            .to_string(),
        "trustedProjects: \"relative/dir\" is not an absolute path"
    );
}

#[test]
fn every_key_not_understood_is_a_warning_naming_file_and_key() {
    let c = Config::parse(
        r#"{"mcpServers": {"s": {"command": "x", "envFile": ".env", "autoApprove": ["a"],
                                 "oauth": {"redirectUri": "r"}, "frobnicate": 1}}}"#,
        Path::new("/cfg/mcp.json"),
        None,
    )
    .unwrap();
    assert_eq!(
        c.warnings,
        [
            "/cfg/mcp.json: mcpServers.s.envFile is not understood by code-executor-mcp and has no effect",
            "/cfg/mcp.json: mcpServers.s.frobnicate is not understood by code-executor-mcp and has no effect",
            "/cfg/mcp.json: mcpServers.s.oauth.redirectUri is not understood by code-executor-mcp and has no effect",
        ]
    );
    assert_eq!(
        c.servers["s"].not_applied,
        ["autoApprove (a client's call approval; code-executor-mcp asks for none)"]
    );
    assert_eq!(
        c.describe()["servers"][0]["notApplied"][0],
        "autoApprove (a client's call approval; code-executor-mcp asks for none)"
    );
}

#[test]
fn codex_and_gemini_entry_keys_are_applied() {
    let lookup = |k: &str| match k {
        "FWD" => Some("fwd-value".to_string()),
        "HDR" => Some("hdr-value".to_string()),
        _ => None,
    };
    let source = |client, format| Source {
        client,
        path: "/h/cfg".into(),
        format,
        scope: Scope::Global,
    };
    let codex = sources::parse_entries(
        "[mcp_servers.s]\ncommand = \"x\"\nenv_vars = [\"FWD\", { name = \"UNSET\", source = \"local\" }]\nenabled_tools = [\"a\", \"b\"]\ndisabled_tools = [\"b\"]\nstartup_timeout_sec = 2.5\ntool_timeout_sec = 7\n[mcp_servers.h]\nurl = \"https://h.example/mcp\"\nenv_http_headers = { \"X-Key\" = \"HDR\", \"X-None\" = \"UNSET\" }\nstartup_timeout_ms = 1500\n",
        &Format::CodexToml,
    )
    .unwrap();
    let mut c = Config::default();
    c.merge(
        &source("codex", Format::CodexToml),
        codex,
        None,
        &lookup,
        &|_| Gate::Start,
    );
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    let s = &c.servers["s"];
    assert!(
        matches!(&s.transport, Transport::Stdio { env, .. } if *env == BTreeMap::from([("FWD".to_string(), "fwd-value".to_string())]))
    );
    assert_eq!(
        (s.startup_timeout, s.tool_timeout),
        (
            Some(Duration::from_millis(2500)),
            Some(Duration::from_secs(7))
        )
    );
    let f = s.tool_filter.clone().unwrap();
    assert_eq!(
        (f.include, f.exclude, f.include_key, f.exclude_key),
        (
            Some(vec!["a".to_string(), "b".to_string()]),
            vec!["b".to_string()],
            "enabled_tools",
            "disabled_tools"
        )
    );
    assert_eq!(
        c.servers["h"].transport,
        Transport::Http {
            url: "https://h.example/mcp".into(),
            headers: BTreeMap::from([("X-Key".into(), "hdr-value".into())])
        }
    );
    assert_eq!(
        c.servers["h"].startup_timeout,
        Some(Duration::from_millis(1500))
    );

    let gemini = sources::parse_entries(
        r#"{"mcpServers": {
            "typed": {"type": "http", "url": "https://g.example/mcp"},
            "untyped": {"url": "https://g.example/sse"},
            "f": {"command": "x", "includeTools": ["read"], "excludeTools": ["write"], "timeout": 5000}
        }}"#,
        &Format::McpServers,
    )
    .unwrap();
    let mut c = Config::default();
    c.merge(
        &source("gemini", Format::McpServers),
        gemini,
        None,
        &lookup,
        &|_| Gate::Start,
    );
    assert!(matches!(
        c.servers["typed"].transport,
        Transport::Http { .. }
    ));
    assert!(matches!(
        c.servers["untyped"].transport,
        Transport::Sse { .. }
    ));
    assert_eq!(c.servers["f"].tool_timeout, Some(Duration::from_secs(5)));
    assert_eq!(
        c.servers["f"]
            .tool_filter
            .as_ref()
            .map(|f| f.origin.as_str()),
        Some("/h/cfg: mcpServers.f")
    );
}

#[test]
fn an_unreadable_discovered_file_is_recorded_for_doctor() {
    let m = Machine::new("unreadable");
    m.write("home/.cursor/mcp.json", "{ broken");
    let c = m.load();
    assert_eq!(c.unreadable.len(), 1, "{:?}", c.unreadable);
    assert!(c.unreadable[0].contains(".cursor/mcp.json (cursor) skipped"));
}

#[tokio::test]
async fn held_back_servers_are_listed_with_the_reason_and_refused() {
    let m = Machine::new("listed");
    m.write("project/.mcp.json", MCP_JSON);
    let c = m.load();
    let ups = std::sync::Arc::new(crate::upstream::Upstreams::new(&c, &Settings::default()));
    let status = ups.status().await;
    assert_eq!(status.len(), 1);
    assert_eq!(
        (status[0].name.as_str(), status[0].status),
        ("repo", "heldBack")
    );
    assert_eq!(status[0].reason.as_ref(), Some(&c.held_back["repo"].reason));
    let catalog = crate::catalog::Catalog::new(ups);
    let err = catalog
        .resolve(None, "mcp__repo__anything", crate::catalog::Asker::Code)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("MCP server \"repo\" is held back: Claude Code has not approved"),
        "{err}"
    );
    assert_eq!(catalog.refusal(Some("repo"), "x"), Some(err.clone()));
}

/// The files whose hooks run, by name relative to the machine's root.
fn hook_files(m: &Machine, trusted: &[PathBuf], managed: bool) -> Vec<String> {
    let home = m.root.join("home");
    let c = Config::load(&LoadOptions {
        discover: true,
        places: Places {
            config_dir: Some(home.join(".config")),
            codex_home: Some(home.join(".codex")),
            home: Some(home),
            cwd: m.project(),
            claude_managed_dir: managed.then(|| m.root.join("etc")),
        },
        trusted_projects: trusted.to_vec(),
        ..LoadOptions::default()
    })
    .unwrap();
    c.client_hooks
        .iter()
        .map(|(f, _)| f.strip_prefix(&m.root).unwrap().display().to_string())
        .collect()
}

const HOOKS: &str =
    r#"{"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "x"}]}]}}"#;

#[test]
fn claude_code_hooks_follow_its_trust_rules_and_switches() {
    let m = Machine::new("hooks");
    m.write("home/.claude/settings.json", HOOKS)
        .write("project/.claude/settings.json", HOOKS);
    // A cloned repository's own hooks do not run in an untrusted workspace.
    assert_eq!(hook_files(&m, &[], false), ["home/.claude/settings.json"]);
    // They do once Claude Code's trust dialog was accepted, or under trustedProjects.
    assert_eq!(
        hook_files(&m, &[m.project()], false),
        [
            "home/.claude/settings.json",
            "project/.claude/settings.json"
        ]
    );
    m.claude_json(json!({"hasTrustDialogAccepted": true}));
    assert_eq!(hook_files(&m, &[], false).len(), 2);
    // disableAllHooks in a counted file turns every file's off, but the managed one's.
    m.write("etc/managed-settings.json", HOOKS);
    m.write(
        "project/.claude/settings.local.json",
        r#"{"disableAllHooks": true}"#,
    );
    assert_eq!(hook_files(&m, &[], true), ["etc/managed-settings.json"]);
    // allowManagedHooksOnly keeps the managed file's alone.
    m.write("project/.claude/settings.local.json", "{}");
    m.write(
        "etc/managed-settings.json",
        r#"{"allowManagedHooksOnly": true, "hooks": {"PreToolUse": []}}"#,
    );
    assert_eq!(hook_files(&m, &[], true), ["etc/managed-settings.json"]);
    // An untrusted project cannot switch the user's hooks off.
    let m = Machine::new("hooks-off");
    m.write("home/.claude/settings.json", HOOKS).write(
        "project/.claude/settings.json",
        r#"{"disableAllHooks": true}"#,
    );
    assert_eq!(hook_files(&m, &[], false), ["home/.claude/settings.json"]);
}

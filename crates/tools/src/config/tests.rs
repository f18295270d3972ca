use super::spec::OAuthConfig;
use super::*;
use std::path::PathBuf;

fn parse(text: &str) -> Config {
    Config::parse(text, Path::new("/cfg/mcp.json"), None).unwrap()
}

fn stdio(config: &Config, name: &str) -> (String, Vec<String>) {
    match &config.servers[name].transport {
        Transport::Stdio { command, args, .. } => (command.clone(), args.clone()),
        other => panic!("{name} is {other:?}"),
    }
}

#[test]
fn reads_stdio_entries_and_resolves_relative_cwd() {
    let c = parse(
        r#"{"mcpServers": {"fs": {"command": "node", "args": ["a.js"], "env": {"K": "V"}, "cwd": "sub"}}}"#,
    );
    assert_eq!(
        c.servers["fs"],
        ServerSpec {
            name: "fs".into(),
            transport: Transport::Stdio {
                command: "node".into(),
                args: vec!["a.js".into()],
                env: BTreeMap::from([("K".into(), "V".into())]),
                cwd: Some(PathBuf::from("/cfg/sub")),
            },
            disabled: false,
            source: PathBuf::from("/cfg/mcp.json"),
            client: "explicit",
            oauth: None,
            tool_filter: None,
            startup_timeout: None,
            tool_timeout: None,
            not_applied: Vec::new(),
            referenced: Vec::new(),
        }
    );
    assert!(c.warnings.is_empty());
}

#[test]
fn broken_entry_is_skipped_with_file_and_key_and_the_rest_loads() {
    let c = parse(r#"{"mcpServers": {"bad": {"args": 3}, "nocmd": {}, "ok": {"command": "x"}}}"#);
    assert_eq!(c.servers.keys().collect::<Vec<_>>(), ["ok"]);
    assert_eq!(c.warnings.len(), 2);
    assert!(
        c.warnings[0].contains("/cfg/mcp.json: mcpServers.bad skipped"),
        "{:?}",
        c.warnings
    );
    assert!(
        c.warnings[1].contains("\"command\" is missing"),
        "{:?}",
        c.warnings
    );
}

#[test]
fn entries_that_launch_this_server_are_skipped() {
    let c = parse(
        r#"{"mcpServers": {
            "me": {"command": "/usr/local/bin/code-executor-mcp"},
            "npx": {"command": "npx", "args": ["-y", "code-executor-mcp@latest"]},
            "other": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]}
        }}"#,
    );
    assert_eq!(c.servers.keys().collect::<Vec<_>>(), ["other"]);
}

#[test]
fn invalid_json_names_the_file() {
    let err = Config::parse("{", Path::new("/x.json"), None).unwrap_err();
    assert!(err.to_string().contains("/x.json"), "{err}");
}

#[test]
fn http_and_sse_entries_in_every_dialect() {
    let c = parse(
        r#"{"mcpServers": {
            "a": {"type": "http", "url": "https://a.example/mcp", "headers": {"X-Key": "k"}},
            "b": {"url": "https://b.example/mcp"},
            "c": {"type": "sse", "url": "https://c.example/sse"},
            "d": {"serverUrl": "https://d.example/mcp"},
            "e": {"httpUrl": "https://e.example/mcp"},
            "f": {"type": "carrier-pigeon", "url": "https://f.example"},
            "g": {"type": "http", "url": "ftp://g.example"},
            "h": {"type": "stdio"}
        }}"#,
    );
    let http = |n: &str| matches!(&c.servers[n].transport, Transport::Http { .. });
    assert!(http("a") && http("b") && http("d") && http("e"));
    assert!(matches!(&c.servers["c"].transport, Transport::Sse { .. }));
    assert_eq!(
        c.servers["a"].transport,
        Transport::Http {
            url: "https://a.example/mcp".into(),
            headers: BTreeMap::from([("X-Key".into(), "k".into())])
        }
    );
    assert_eq!(c.warnings.len(), 3, "{:?}", c.warnings);
    assert!(
        c.warnings
            .iter()
            .any(|w| w.contains("unknown transport type \"carrier-pigeon\""))
    );
    assert!(
        c.warnings
            .iter()
            .any(|w| w.contains("is not an http(s) URL"))
    );
}

#[test]
fn variable_references_are_expanded_in_env_args_url_and_headers() {
    let lookup = |k: &str| match k {
        "TOKEN" => Some("t0k".to_string()),
        "ROOT" => Some("/data".to_string()),
        _ => None,
    };
    let source = Source {
        client: "explicit",
        path: "/cfg/mcp.json".into(),
        format: Format::McpServers,
        scope: Scope::Explicit,
    };
    let entries = sources::parse_entries(
        r#"{"mcpServers": {
            "s": {"command": "srv", "args": ["${ROOT}/x", "${NOPE:-dflt}"], "env": {"KEY": "env:TOKEN"}},
            "h": {"url": "https://h.example/${ROOT}", "headers": {"Authorization": "Bearer ${TOKEN}"}},
            "missing": {"command": "x", "env": {"K": "${UNSET_VAR}"}}
        }}"#,
        &Format::McpServers,
    )
    .unwrap();
    let mut c = Config::default();
    c.merge(&source, entries, None, &lookup, &|_| Gate::Start);
    assert_eq!(
        c.servers["s"].transport,
        Transport::Stdio {
            command: "srv".into(),
            args: vec!["/data/x".into(), "dflt".into()],
            env: BTreeMap::from([("KEY".into(), "t0k".into())]),
            cwd: None
        }
    );
    assert_eq!(
        c.servers["h"].transport,
        Transport::Http {
            url: "https://h.example//data".into(),
            headers: BTreeMap::from([("Authorization".into(), "Bearer t0k".into())])
        }
    );
    assert!(!c.servers.contains_key("missing"));
    assert!(
        c.warnings[0]
            .contains("mcpServers.missing skipped: K: environment variable UNSET_VAR is not set"),
        "{:?}",
        c.warnings
    );
}

/// A fake home and project holding every client's format.
struct FakeMachine {
    root: PathBuf,
}

impl FakeMachine {
    fn new() -> FakeMachine {
        let root = std::env::temp_dir().join(format!(
            "cem-config-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&root);
        let w = |rel: &str, text: &str| {
            let p = root.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        let proj = "project";
        w(
            "home/.config/Claude/claude_desktop_config.json",
            r#"{"mcpServers": {"desktop": {"command": "d"}, "shared": {"command": "from-desktop"}}}"#,
        );
        w(
            "home/.config/Code/User/mcp.json",
            r#"{"servers": {"vscode-user": {"type": "stdio", "command": "vu"}}}"#,
        );
        w(
            "home/.codeium/windsurf/mcp_config.json",
            r#"{"mcpServers": {"windsurf": {"serverUrl": "https://w.example/mcp"}}}"#,
        );
        w(
            "home/.cursor/mcp.json",
            r#"{"mcpServers": {"cursor": {"command": "c"}, "shared": {"command": "from-cursor"}}}"#,
        );
        w(
            "home/.codex/config.toml",
            "[mcp_servers.codex]\ncommand = \"cx\"\n[mcp_servers.off]\ncommand = \"o\"\nenabled = false\n",
        );
        w(
            "home/.gemini/settings.json",
            r#"{"theme": "x", "mcpServers": {"gemini-sse": {"url": "https://g.example/sse"}, "gemini-http": {"httpUrl": "https://g.example/mcp"}}}"#,
        );
        let claude = format!(
            r#"{{"mcpServers": {{"claude-user": {{"command": "cu"}}, "shared": {{"command": "from-claude-user"}}}},
               "projects": {{"{}": {{"mcpServers": {{"claude-local": {{"command": "cl"}}, "shared": {{"command": "from-claude-local"}}}}}}}}}}"#,
            root.join(proj).display()
        );
        w("home/.claude.json", &claude);
        w(
            "project/.vscode/mcp.json",
            "{\n // comment\n \"servers\": {\"vscode-proj\": {\"type\": \"http\", \"url\": \"https://v.example/mcp\"},},\n \"inputs\": []\n}",
        );
        w(
            "project/.cursor/mcp.json",
            r#"{"mcpServers": {"cursor-proj": {"command": "cp"}}}"#,
        );
        w(
            "project/.gemini/settings.json",
            r#"{"mcpServers": {"gemini-proj": {"command": "gp"}}}"#,
        );
        w(
            "project/.mcp.json",
            r#"{"mcpServers": {"claude-proj": {"command": "cpj"}, "shared": {"command": "from-project"}}}"#,
        );
        w("home/broken/.cursor/mcp.json", "{ not json");
        FakeMachine { root }
    }

    fn places(&self) -> Places {
        let home = self.root.join("home");
        Places {
            config_dir: Some(home.join(".config")),
            codex_home: Some(home.join(".codex")),
            home: Some(home),
            cwd: self.root.join("project"),
            claude_managed_dir: None,
        }
    }
}

impl Drop for FakeMachine {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

#[test]
fn every_clients_format_is_discovered_and_merged_by_precedence() {
    let m = FakeMachine::new();
    let explicit = m.root.join("explicit.json");
    std::fs::write(&explicit, r#"{"mcpServers": {"shared": {"command": "from-explicit"}, "only-explicit": {"command": "e"}}}"#).unwrap();
    let c = Config::load(&LoadOptions {
        explicit: Some(explicit.clone()),
        discover: true,
        places: m.places(),
        self_exe: None,
        trusted_projects: vec![m.root.join("project")],
    })
    .unwrap();
    assert_eq!(
        c.servers.keys().map(String::as_str).collect::<Vec<_>>(),
        [
            "claude-local",
            "claude-proj",
            "claude-user",
            "codex",
            "cursor",
            "cursor-proj",
            "desktop",
            "gemini-http",
            "gemini-proj",
            "gemini-sse",
            "off",
            "only-explicit",
            "shared",
            "vscode-proj",
            "vscode-user",
            "windsurf"
        ]
    );
    assert_eq!(stdio(&c, "shared").0, "from-explicit");
    assert_eq!(c.servers["shared"].source, explicit);
    assert!(c.servers["off"].disabled);
    assert!(matches!(
        c.servers["gemini-sse"].transport,
        Transport::Sse { .. }
    ));
    assert!(matches!(
        c.servers["gemini-http"].transport,
        Transport::Http { .. }
    ));
    assert!(matches!(
        c.servers["windsurf"].transport,
        Transport::Http { .. }
    ));
    assert!(matches!(
        c.servers["vscode-proj"].transport,
        Transport::Http { .. }
    ));
    assert_eq!(c.servers["claude-local"].client, "claude-code");
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);

    // Without the explicit file: the Claude Code local (per-project) entry beats the project
    // file, which beats every global one.
    let c = Config::load(&LoadOptions {
        explicit: None,
        discover: true,
        places: m.places(),
        self_exe: None,
        trusted_projects: vec![m.root.join("project")],
    })
    .unwrap();
    assert_eq!(stdio(&c, "shared").0, "from-claude-local");
    std::fs::remove_file(m.root.join("home/.claude.json")).unwrap();
    let c = Config::load(&LoadOptions {
        discover: true,
        places: m.places(),
        trusted_projects: vec![m.root.join("project")],
        ..LoadOptions::default()
    })
    .unwrap();
    assert_eq!(stdio(&c, "shared").0, "from-project");
    std::fs::remove_file(m.root.join("project/.mcp.json")).unwrap();
    let c = Config::load(&LoadOptions {
        discover: true,
        places: m.places(),
        trusted_projects: vec![m.root.join("project")],
        ..LoadOptions::default()
    })
    .unwrap();
    assert_eq!(stdio(&c, "shared").0, "from-cursor");
}

#[test]
fn a_broken_discovered_file_is_a_warning_but_a_broken_explicit_file_is_an_error() {
    let m = FakeMachine::new();
    let mut places = m.places();
    places.home = Some(m.root.join("home/broken"));
    let c = Config::load(&LoadOptions {
        discover: true,
        places,
        trusted_projects: vec![m.root.join("project")],
        ..LoadOptions::default()
    })
    .unwrap();
    assert!(
        c.warnings
            .iter()
            .any(|w| w.contains("broken/.cursor/mcp.json (cursor) skipped")),
        "{:?}",
        c.warnings
    );
    assert!(c.servers.contains_key("claude-proj"));
    let err = Config::load(&LoadOptions {
        explicit: Some(m.root.join("home/broken/.cursor/mcp.json")),
        ..LoadOptions::default()
    })
    .unwrap_err();
    assert!(err.to_string().contains("broken/.cursor/mcp.json"), "{err}");
    let err = Config::load(&LoadOptions {
        explicit: Some(m.root.join("nope.json")),
        ..LoadOptions::default()
    })
    .unwrap_err();
    assert!(err.to_string().contains("nope.json: no such file"), "{err}");
}

#[test]
fn discovery_off_reads_only_the_explicit_file() {
    let m = FakeMachine::new();
    let c = Config::load(&LoadOptions {
        discover: false,
        places: m.places(),
        ..LoadOptions::default()
    })
    .unwrap();
    assert!(c.servers.is_empty());
}

#[test]
fn config_show_masks_secrets() {
    let c = parse(
        r#"{"mcpServers": {
            "s": {"command": "srv", "env": {"API_KEY": "sk-live-123456", "PATH": "/usr/bin"}},
            "h": {"url": "https://user:pw@h.example/mcp?token=abc&x=1", "headers": {"Authorization": "Bearer abcdef"}}
        }}"#,
    );
    let shown = c.describe().to_string();
    assert!(
        !shown.contains("sk-live-123456") && !shown.contains("abcdef") && !shown.contains("pw@"),
        "{shown}"
    );
    assert!(!shown.contains("token=abc"), "{shown}");
    assert!(shown.contains("/usr/bin"), "{shown}");
    assert!(shown.contains("sk…(14 chars, masked)"), "{shown}");
}

#[test]
fn oauth_objects_are_read_in_either_spelling_and_their_secret_masked() {
    let c = parse(
        r#"{"mcpServers": {
            "a": {"type": "http", "url": "https://a.example/mcp",
                  "oauth": {"clientId": "cid", "clientSecret": "s3cr3t-value", "scopes": ["read", "write"], "callbackPort": 8765}},
            "b": {"type": "sse", "url": "https://b.example/sse", "oauth": {"client_id": "x", "scope": "one two", "enabled": true}},
            "c": {"url": "https://c.example/mcp"},
            "s": {"command": "srv", "oauth": {"clientId": "ignored"}},
            "bad": {"url": "https://d.example/mcp", "oauth": {"scopes": [3]}}
        }}"#,
    );
    assert_eq!(
        c.servers["a"].oauth,
        Some(OAuthConfig {
            client_id: Some("cid".into()),
            client_secret: Some("s3cr3t-value".into()),
            scopes: vec!["read".into(), "write".into()],
            callback_port: Some(8765),
        })
    );
    let b = c.servers["b"].oauth.clone().unwrap();
    assert_eq!(b.client_id.as_deref(), Some("x"));
    assert_eq!(b.scopes, ["one", "two"]);
    assert_eq!(c.servers["c"].oauth, None);
    assert_eq!(c.servers["s"].oauth, None);
    assert!(!c.servers.contains_key("bad"));
    assert!(
        c.warnings
            .iter()
            .any(|w| w.contains("bad") && w.contains("oauth")),
        "{:?}",
        c.warnings
    );
    let shown = c.describe().to_string();
    assert!(!shown.contains("s3cr3t-value"), "{shown}");
    assert!(shown.contains("\"clientId\":\"cid\""), "{shown}");
    assert!(!format!("{:?}", c.servers["a"]).contains("s3cr3t"));
}

//! `code-executor-mcp setup` against a scratch home holding every client's config: the diff,
//! backups, idempotence (a second run changes nothing), `--undo`, `--switch-off-others` in
//! each client's own way (and the switched-off servers still reachable through us),
//! `--client`, the non-interactive rules, hostile files, and the interactive prompts in a
//! real terminal (tmux).
//!
//! That what we write is what the clients' own `mcp add` writes, and that their `mcp list`
//! reads it, is checked against the real clients in `setup_clients` (this suite).

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Value, json};

use crate::common::EXE;
use crate::common::setup::{Machine, every_client};

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Every file under `dir`, by relative path, with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            let meta = std::fs::symlink_metadata(&p).unwrap();
            if meta.is_dir() {
                walk(root, &p, out);
            } else if meta.is_file() {
                let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

#[test]
fn dry_run_shows_each_clients_diff_and_writes_nothing() {
    let m = every_client("dry");
    let before = snapshot(&m.home());
    let out = m.setup(&["--dry-run"]);
    assert!(out.ok, "{}", out.text);
    for title in [
        "Claude Code",
        "Claude Desktop",
        "Cursor",
        "VS Code",
        "Windsurf",
        "Codex",
        "Gemini CLI",
    ] {
        assert!(
            out.text.contains(&format!("== {title} (")),
            "{title}: {}",
            out.text
        );
    }
    // A unified diff per file, our command on an added line.
    assert_eq!(out.text.matches("\n--- ").count(), 7, "{}", out.text);
    assert!(
        out.text
            .contains(&format!("+      \"command\": \"{EXE}\",")),
        "{}",
        out.text
    );
    assert!(
        out.text.contains(&format!("+command = \"{EXE}\"")),
        "{}",
        out.text
    );
    assert!(
        out.text.contains("--dry-run: nothing written"),
        "{}",
        out.text
    );
    assert_eq!(snapshot(&m.home()), before, "a dry run wrote something");
}

#[test]
fn setup_writes_each_clients_entry_backs_up_is_idempotent_and_undoes() {
    let m = every_client("cycle");
    let before = snapshot(&m.home());
    let out = m.setup(&["--yes"]);
    assert!(out.ok, "{}", out.text);
    let h = m.home();

    // Each file holds our entry in its client's shape, and everything it had before.
    let claude = read_json(&h.join(".claude.json"));
    assert_eq!(
        claude["mcpServers"]["code-executor"],
        json!({"type": "stdio", "command": EXE, "args": [], "env": {}})
    );
    assert_eq!(claude["numStartups"], 7);
    assert_eq!(claude["mcpServers"]["cc-user"]["command"], "false");
    let plain = json!({"command": EXE, "args": []});
    for file in [
        ".config/Claude/claude_desktop_config.json",
        ".cursor/mcp.json",
        ".codeium/windsurf/mcp_config.json",
        ".gemini/settings.json",
    ] {
        let v = read_json(&h.join(file));
        assert_eq!(v["mcpServers"]["code-executor"], plain, "{file}");
        assert_eq!(v["mcpServers"].as_object().unwrap().len(), 2, "{file}: {v}");
    }
    assert_eq!(
        read_json(&h.join(".gemini/settings.json"))["ui"]["theme"],
        "Default"
    );
    let vscode = read_json(&h.join(".config/Code/User/mcp.json"));
    assert_eq!(
        vscode["servers"]["code-executor"],
        json!({"type": "stdio", "command": EXE, "args": []})
    );
    assert_eq!(vscode["inputs"], json!([]));
    let codex = std::fs::read_to_string(h.join(".codex/config.toml")).unwrap();
    assert_eq!(
        codex,
        format!(
            "# my codex settings\nmodel = \"o3\"\n\n[mcp_servers.cx]\ncommand = \"false\" # keep this\n\n[mcp_servers.code-executor]\ncommand = \"{EXE}\"\n"
        )
    );
    // ~/.claude.json keeps its permissions.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(h.join(".claude.json"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);

    // One backup run: the manifest names every file, the copies are the files as they were.
    let runs: Vec<_> = std::fs::read_dir(h.join(".config/code-executor-mcp/setup-backups"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(runs.len(), 1);
    let manifest = read_json(&runs[0].join("manifest.json"));
    let files = manifest["files"].as_array().unwrap();
    assert_eq!(files.len(), 7, "{manifest}");
    for f in files {
        let path = Path::new(f["path"].as_str().unwrap());
        let rel = path
            .strip_prefix(&h)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let copy = std::fs::read(runs[0].join(f["backup"].as_str().unwrap())).unwrap();
        assert_eq!(copy, before[&rel], "{rel}");
    }
    assert!(out.text.contains("setup --undo"), "{}", out.text);

    // A second run changes nothing and backs nothing up.
    let after = snapshot(&h);
    let again = m.setup(&["--yes"]);
    assert!(again.ok, "{}", again.text);
    assert_eq!(
        again
            .text
            .matches("already set up: nothing to change")
            .count(),
        7,
        "{}",
        again.text
    );
    assert!(again.text.contains("Nothing written."), "{}", again.text);
    assert_eq!(snapshot(&h), after);

    // Undo puts every file back, byte for byte.
    let undo = m.setup(&["--undo", "--yes"]);
    assert!(undo.ok, "{}", undo.text);
    let restored = snapshot(&h);
    for (rel, bytes) in &before {
        assert_eq!(&restored[rel], bytes, "{rel} not restored");
    }
    let undo2 = m.setup(&["--undo", "--yes"]);
    assert!(
        undo2.ok && undo2.text.contains("Nothing to undo"),
        "{}",
        undo2.text
    );
}

#[test]
fn switching_the_others_off_uses_each_clients_own_switch_and_we_still_reach_them() {
    let m = every_client("off");
    let out = m.setup(&["--yes", "--switch-off-others"]);
    assert!(out.ok, "{}", out.text);
    let h = m.home();
    let project = m.project().to_string_lossy().into_owned();

    // Claude Code: per project, its user-scope and project-local servers.
    let claude = read_json(&h.join(".claude.json"));
    assert_eq!(
        claude["projects"][&project]["disabledMcpServers"],
        json!(["cc-user", "cc-local"])
    );
    assert_eq!(claude["projects"][&project]["allowedTools"], json!([]));
    // Windsurf: disabled: true.
    let ws = read_json(&h.join(".codeium/windsurf/mcp_config.json"));
    assert_eq!(ws["mcpServers"]["ws"]["disabled"], true);
    assert!(ws["mcpServers"]["code-executor"].get("disabled").is_none());
    // Codex: enabled = false.
    let codex = std::fs::read_to_string(h.join(".codex/config.toml")).unwrap();
    assert!(
        codex.contains("[mcp_servers.cx]\ncommand = \"false\" # keep this\nenabled = false\n"),
        "{codex}"
    );
    // Gemini CLI: its enablement file, as `gemini mcp disable` writes it.
    assert_eq!(
        read_json(&h.join(".gemini/mcp-server-enablement.json")),
        json!({"gem": {"enabled": false}})
    );
    // Clients without a switch in their file are left on, and the output says so.
    assert_eq!(
        read_json(&h.join(".cursor/mcp.json"))["mcpServers"]["cur"],
        json!({"command": "false"})
    );
    for title in ["Claude Desktop", "Cursor", "VS Code"] {
        assert!(
            out.text
                .contains(&format!("{title} has no switch in its file")),
            "{title}: {}",
            out.text
        );
    }

    // We keep reaching every one of them: the loader lists them, marked disabled.
    let shown = m.config_show();
    let servers: BTreeMap<String, Value> = shown["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["name"].as_str().unwrap().to_string(), s.clone()))
        .collect();
    for name in ["cc-user", "cc-local", "ws", "cx", "gem"] {
        assert_eq!(servers[name]["disabled"], true, "{name}: {shown}");
    }
    for name in ["desk", "cur", "vs"] {
        assert!(servers.contains_key(name), "{name}: {shown}");
    }
    assert!(
        !servers.contains_key("code-executor"),
        "we skip ourselves: {shown}"
    );

    // Idempotent with the switches too.
    let snap = snapshot(&h);
    let again = m.setup(&["--yes", "--switch-off-others"]);
    assert_eq!(
        again.text.matches("already set up").count(),
        7,
        "{}",
        again.text
    );
    assert_eq!(snapshot(&h), snap);
}

#[test]
fn client_flag_limits_setup_and_creates_a_missing_file() {
    let m = Machine::new("only");
    let out = m.setup(&["--yes", "--client", "codex"]);
    assert!(out.ok, "{}", out.text);
    assert_eq!(
        std::fs::read_to_string(m.home().join(".codex/config.toml")).unwrap(),
        format!("[mcp_servers.code-executor]\ncommand = \"{EXE}\"\n")
    );
    let files: Vec<String> = snapshot(&m.home())
        .into_keys()
        .filter(|k| !k.contains("setup-backups"))
        .collect();
    assert_eq!(files, [".codex/config.toml"]);
    // Undo removes a file setup created.
    assert!(m.setup(&["--undo", "--yes"]).ok);
    assert!(!m.home().join(".codex/config.toml").exists());

    // Nothing installed, no --client: nothing to do, and it says how to name one.
    let none = Machine::new("none").setup(&["--yes"]);
    assert!(
        none.ok && none.text.contains("No MCP client found"),
        "{}",
        none.text
    );
    assert!(none.text.contains("--client"), "{}", none.text);

    // A client is found by its directory alone.
    let dir = Machine::new("dir");
    std::fs::create_dir_all(dir.home().join(".cursor")).unwrap();
    let out = dir.setup(&["--yes"]);
    assert!(out.ok, "{}", out.text);
    assert_eq!(
        read_json(&dir.home().join(".cursor/mcp.json")),
        json!({"mcpServers": {"code-executor": {"command": EXE, "args": []}}})
    );
}

#[test]
fn an_entry_already_there_is_left_as_it_is_however_the_file_is_formatted() {
    let m = Machine::new("there");
    let text = format!(
        "{{\"mcpServers\":{{\"code-executor\":{{\"command\":\"{EXE}\",\"env\":{{\"K\":\"v\"}}}}}}}}"
    );
    m.write(".cursor/mcp.json", &text);
    let out = m.setup(&["--yes"]);
    assert!(
        out.ok && out.text.contains("already set up: nothing to change"),
        "{}",
        out.text
    );
    assert_eq!(
        std::fs::read_to_string(m.home().join(".cursor/mcp.json")).unwrap(),
        text
    );
}

#[test]
fn without_a_terminal_setup_writes_only_with_yes() {
    let m = every_client("noterm");
    let before = snapshot(&m.home());
    let out = m.setup(&[]);
    assert!(!out.ok);
    assert!(
        out.text.contains("pass --yes to write, or --dry-run"),
        "{}",
        out.text
    );
    assert_eq!(snapshot(&m.home()), before);
}

#[test]
fn hostile_files_are_reported_and_the_other_clients_set_up() {
    let m = every_client("hostile");
    let h = m.home();
    // Cursor's file is a FIFO (reading it must not block), Claude Desktop's is not JSON,
    // VS Code's has comments (a rewrite would drop them), Codex's has mcp_servers = 3.
    std::fs::remove_file(h.join(".cursor/mcp.json")).unwrap();
    nix_mkfifo(&h.join(".cursor/mcp.json"));
    std::fs::write(
        h.join(".config/Claude/claude_desktop_config.json"),
        "{not json",
    )
    .unwrap();
    std::fs::write(
        h.join(".config/Code/User/mcp.json"),
        "{\n  // mine\n  \"servers\": {}\n}\n",
    )
    .unwrap();
    std::fs::write(h.join(".codex/config.toml"), "mcp_servers = 3\n").unwrap();
    let out = m.setup(&["--yes"]);
    assert!(!out.ok, "a client failed: the exit status says so");
    let t = &out.text;
    assert!(
        t.contains("Cursor: skipped: cannot read") && t.contains(".cursor/mcp.json"),
        "{t}"
    );
    assert!(
        t.contains("Claude Desktop: skipped:") && t.contains("not valid JSON"),
        "{t}"
    );
    assert!(
        t.contains("VS Code: skipped:") && t.contains("comments"),
        "{t}"
    );
    assert!(
        t.contains("\"code-executor\": {"),
        "the snippet to add by hand: {t}"
    );
    assert!(
        t.contains("Codex: skipped:") && t.contains("expected a map"),
        "{t}"
    );
    assert_eq!(
        std::fs::read_to_string(h.join(".config/Code/User/mcp.json")).unwrap(),
        "{\n  // mine\n  \"servers\": {}\n}\n"
    );
    // The others were set up.
    for file in [
        ".claude.json",
        ".gemini/settings.json",
        ".codeium/windsurf/mcp_config.json",
    ] {
        assert_eq!(
            read_json(&h.join(file))["mcpServers"]["code-executor"]["command"],
            EXE,
            "{file}"
        );
    }
}

fn nix_mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn undo_leaves_a_file_changed_since_alone_unless_forced() {
    let m = every_client("changed");
    let h = m.home();
    let before = snapshot(&h);
    assert!(m.setup(&["--yes"]).ok);
    std::fs::write(h.join(".codex/config.toml"), "# edited by hand since\n").unwrap();
    let out = m.setup(&["--undo", "--yes"]);
    assert!(!out.ok, "{}", out.text);
    assert!(
        out.text
            .contains("changed since setup wrote it; left alone"),
        "{}",
        out.text
    );
    assert_eq!(
        std::fs::read_to_string(h.join(".codex/config.toml")).unwrap(),
        "# edited by hand since\n"
    );
    assert_eq!(
        std::fs::read(h.join(".cursor/mcp.json")).unwrap(),
        before[".cursor/mcp.json"]
    );
    let forced = m.setup(&["--undo", "--yes", "--force"]);
    assert!(forced.ok, "{}", forced.text);
    assert_eq!(
        snapshot(&h)[".codex/config.toml"],
        before[".codex/config.toml"]
    );
}

#[test]
fn a_symlinked_config_stays_a_link() {
    let m = Machine::new("link");
    let h = m.home();
    std::fs::create_dir_all(h.join("dotfiles")).unwrap();
    std::fs::create_dir_all(h.join(".cursor")).unwrap();
    std::fs::write(h.join("dotfiles/cursor.json"), "{\"mcpServers\": {}}\n").unwrap();
    std::os::unix::fs::symlink(h.join("dotfiles/cursor.json"), h.join(".cursor/mcp.json")).unwrap();
    assert!(m.setup(&["--yes", "--client", "cursor"]).ok);
    assert!(
        std::fs::symlink_metadata(h.join(".cursor/mcp.json"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(
        read_json(&h.join("dotfiles/cursor.json"))["mcpServers"]["code-executor"]["command"],
        EXE
    );
}

fn is_link(p: &Path) -> bool {
    std::fs::symlink_metadata(p)
        .map(|m| m.file_type().is_symlink())
        .unwrap_or(false)
}

#[test]
fn undo_writes_the_old_text_through_a_link_made_since_and_keeps_the_link() {
    let m = Machine::new("undo-link");
    let h = m.home();
    let before = "{\"mcpServers\": {}}\n";
    m.write(".cursor/mcp.json", before);
    assert!(m.setup(&["--yes", "--client", "cursor"]).ok);
    // The person moves the file into their dotfiles and links it back.
    std::fs::create_dir_all(h.join("dotfiles")).unwrap();
    std::fs::rename(h.join(".cursor/mcp.json"), h.join("dotfiles/cursor.json")).unwrap();
    std::os::unix::fs::symlink(h.join("dotfiles/cursor.json"), h.join(".cursor/mcp.json")).unwrap();
    let out = m.setup(&["--undo", "--yes"]);
    assert!(out.ok, "{}", out.text);
    assert!(is_link(&h.join(".cursor/mcp.json")), "{}", out.text);
    assert_eq!(
        std::fs::read_to_string(h.join("dotfiles/cursor.json")).unwrap(),
        before
    );
}

#[test]
fn undo_never_removes_a_created_file_moved_into_dotfiles_and_linked_back() {
    let m = Machine::new("undo-moved");
    let h = m.home();
    std::fs::create_dir_all(h.join(".cursor")).unwrap();
    assert!(m.setup(&["--yes", "--client", "cursor"]).ok);
    let written = std::fs::read_to_string(h.join(".cursor/mcp.json")).unwrap();
    std::fs::create_dir_all(h.join("dotfiles")).unwrap();
    std::fs::rename(h.join(".cursor/mcp.json"), h.join("dotfiles/cursor.json")).unwrap();
    std::os::unix::fs::symlink(h.join("dotfiles/cursor.json"), h.join(".cursor/mcp.json")).unwrap();
    for force in [false, true] {
        let args: &[&str] = if force {
            &["--undo", "--yes", "--force"]
        } else {
            &["--undo", "--yes"]
        };
        let out = m.setup(args);
        assert!(!out.ok, "{}", out.text);
        assert!(out.text.contains("undo does not remove it"), "{}", out.text);
        assert!(is_link(&h.join(".cursor/mcp.json")));
        assert_eq!(
            std::fs::read_to_string(h.join("dotfiles/cursor.json")).unwrap(),
            written
        );
    }
}

/// A file setup created below a directory that is itself a link (`~/.cursor` kept in a
/// dotfiles repository) is setup's own: undo removes it (it was recorded where it really is,
/// not where the link's path seemed to put it before it existed).
#[test]
fn undo_removes_a_file_setup_created_below_a_linked_directory() {
    let m = Machine::new("undo-linked-dir");
    let h = m.home();
    std::fs::create_dir_all(h.join("dotfiles/cursor")).unwrap();
    std::os::unix::fs::symlink(h.join("dotfiles/cursor"), h.join(".cursor")).unwrap();
    assert!(m.setup(&["--yes", "--client", "cursor"]).ok);
    assert!(h.join("dotfiles/cursor/mcp.json").is_file());
    let out = m.setup(&["--undo", "--yes"]);
    assert!(out.ok, "{}", out.text);
    assert!(!h.join("dotfiles/cursor/mcp.json").exists(), "{}", out.text);
    assert!(is_link(&h.join(".cursor")), "the user's link stays");
}

#[test]
fn undo_touches_nothing_through_a_dangling_link_even_forced() {
    let m = Machine::new("undo-dangling");
    let h = m.home();
    m.write(".cursor/mcp.json", "{\"mcpServers\": {}}\n");
    assert!(m.setup(&["--yes", "--client", "cursor"]).ok);
    std::fs::create_dir_all(h.join("dotfiles")).unwrap();
    std::fs::rename(h.join(".cursor/mcp.json"), h.join("dotfiles/cursor.json")).unwrap();
    std::os::unix::fs::symlink(h.join("dotfiles/cursor.json"), h.join(".cursor/mcp.json")).unwrap();
    // ...and moves the dotfiles copy again: the link dangles.
    std::fs::rename(
        h.join("dotfiles/cursor.json"),
        h.join("dotfiles/moved.json"),
    )
    .unwrap();
    let moved = std::fs::read(h.join("dotfiles/moved.json")).unwrap();
    let out = m.setup(&["--undo", "--yes", "--force"]);
    assert!(!out.ok, "{}", out.text);
    assert!(out.text.contains("which does not exist"), "{}", out.text);
    assert!(is_link(&h.join(".cursor/mcp.json")));
    assert!(!h.join("dotfiles/cursor.json").exists(), "{}", out.text);
    assert_eq!(std::fs::read(h.join("dotfiles/moved.json")).unwrap(), moved);
}

#[test]
fn undo_through_a_directory_replaced_by_a_link() {
    // A file setup edited: restored inside the linked directory, the link kept.
    let m = Machine::new("undo-dirlink");
    let h = m.home();
    let before = "{\"mcpServers\": {}}\n";
    m.write(".cursor/mcp.json", before);
    assert!(m.setup(&["--yes", "--client", "cursor"]).ok);
    std::fs::create_dir_all(h.join("dotfiles")).unwrap();
    std::fs::rename(h.join(".cursor"), h.join("dotfiles/cursor")).unwrap();
    std::os::unix::fs::symlink(h.join("dotfiles/cursor"), h.join(".cursor")).unwrap();
    let out = m.setup(&["--undo", "--yes"]);
    assert!(out.ok, "{}", out.text);
    assert!(is_link(&h.join(".cursor")));
    assert_eq!(
        std::fs::read_to_string(h.join("dotfiles/cursor/mcp.json")).unwrap(),
        before
    );

    // A file setup created, whose directory moved since: it is the person's now.
    let m = Machine::new("undo-dirlink-new");
    let h = m.home();
    std::fs::create_dir_all(h.join(".cursor")).unwrap();
    assert!(m.setup(&["--yes", "--client", "cursor"]).ok);
    std::fs::create_dir_all(h.join("dotfiles")).unwrap();
    std::fs::rename(h.join(".cursor"), h.join("dotfiles/cursor")).unwrap();
    std::os::unix::fs::symlink(h.join("dotfiles/cursor"), h.join(".cursor")).unwrap();
    let out = m.setup(&["--undo", "--yes", "--force"]);
    assert!(!out.ok, "{}", out.text);
    assert!(out.text.contains("undo does not remove it"), "{}", out.text);
    assert!(h.join("dotfiles/cursor/mcp.json").is_file());
}

#[test]
fn undo_of_a_created_file_edited_since_keeps_it_unless_forced_and_then_keeps_a_copy() {
    let m = Machine::new("undo-edited");
    let h = m.home();
    std::fs::create_dir_all(h.join(".cursor")).unwrap();
    assert!(m.setup(&["--yes", "--client", "cursor"]).ok);
    let edited = "{\"mcpServers\": {\"mine\": {\"command\": \"x\"}}}\n";
    std::fs::write(h.join(".cursor/mcp.json"), edited).unwrap();
    let out = m.setup(&["--undo", "--yes"]);
    assert!(!out.ok, "{}", out.text);
    assert_eq!(
        std::fs::read_to_string(h.join(".cursor/mcp.json")).unwrap(),
        edited
    );
    let out = m.setup(&["--undo", "--yes", "--force"]);
    assert!(out.ok, "{}", out.text);
    assert!(!h.join(".cursor/mcp.json").exists());
    let kept = out
        .text
        .lines()
        .find_map(|l| {
            l.split_once("is kept in ")
                .map(|(_, p)| p.trim().to_string())
        })
        .unwrap_or_else(|| panic!("no copy named: {}", out.text));
    assert_eq!(std::fs::read_to_string(kept).unwrap(), edited);
}

#[test]
fn values_setup_does_not_own_come_back_byte_identical() {
    let m = Machine::new("bytes");
    let project = m.project();
    let key = serde_json::to_string(&project.display().to_string()).unwrap();
    // What a JSON round trip would change: numbers beyond 64 bits or f64, `1.0`, `-0`,
    // escapes, duplicate keys, key order and spacing.
    let text = format!(
        "{{\n  \"numStartups\": 123456789012345678901234567890,\n  \"huge\": 1e400,\n  \"precise\": 0.1000000000000000055511151231257827,\n  \"one\": 1.0, \"neg\": -0,\n  \"name\": \"caf\\u00e9\",\n  \"dup\": 1,\n  \"dup\": 2,\n  \"mcpServers\": {{\n    \"fs\": {{\"command\": \"npx\", \"args\": [\"-y\", \"fs\"], \"env\": {{\"N\": 98765432109876543210}}}}\n  }},\n  \"projects\": {{\n    {key}: {{\"allowedTools\": [], \"big\": 1E+400}}\n  }}\n}}\n"
    );
    m.write(".claude.json", &text);
    let out = m.setup(&["--yes", "--client", "claude-code", "--switch-off-others"]);
    assert!(out.ok, "{}", out.text);
    let after = std::fs::read_to_string(m.home().join(".claude.json")).unwrap();
    for kept in [
        "\"numStartups\": 123456789012345678901234567890,",
        "\"huge\": 1e400,",
        "\"precise\": 0.1000000000000000055511151231257827,",
        "\"one\": 1.0, \"neg\": -0,",
        "\"name\": \"caf\\u00e9\",",
        "\"dup\": 1,\n  \"dup\": 2,",
        "\"fs\": {\"command\": \"npx\", \"args\": [\"-y\", \"fs\"], \"env\": {\"N\": 98765432109876543210}}",
        "\"allowedTools\": [], \"big\": 1E+400",
    ] {
        assert!(after.contains(kept), "lost {kept}:\n{after}");
    }
    assert!(after.contains("\"disabledMcpServers\": ["), "{after}");
    // Undo gives the very bytes back.
    assert!(m.setup(&["--undo", "--yes"]).ok);
    assert_eq!(
        std::fs::read_to_string(m.home().join(".claude.json")).unwrap(),
        text
    );
}

#[test]
fn command_and_name_can_be_chosen() {
    let m = Machine::new("cmd");
    let out = m.setup(&[
        "--yes",
        "--client",
        "gemini",
        "--name",
        "ce",
        "--command",
        "uvx",
        "--arg",
        "code-executor-mcp",
    ]);
    assert!(out.ok, "{}", out.text);
    assert_eq!(
        read_json(&m.home().join(".gemini/settings.json")),
        json!({"mcpServers": {"ce": {"command": "uvx", "args": ["code-executor-mcp"]}}})
    );
    let bad = m.setup(&["--yes", "--client", "gemini", "--name", "a.b"]);
    assert!(!bad.ok && bad.text.contains("--name"), "{}", bad.text);
}

/// `--arg` without `--command` appends to the default command; `--env KEY=VALUE` lands in
/// each client's entry in that client's own format, beside the user's own variables, and a
/// second run changes nothing. Bad `--env` values are usage errors that say the format.
#[test]
fn args_extend_the_default_command_and_env_lands_in_every_clients_format() {
    let m = every_client("env");
    // A variable the user had set on our entry already is kept beside ours.
    let out = m.setup(&[
        "--yes",
        "--arg",
        "serve",
        "--arg",
        "--pool-size=3",
        "--env",
        "CODE_EXECUTOR_CONFIG_PATH=/etc/ce/settings.json",
        "--env",
        "RUST_LOG=warn,x=a b",
    ]);
    assert!(out.ok, "{}", out.text);
    let h = m.home();
    let args = json!(["serve", "--pool-size=3"]);
    let env =
        json!({"CODE_EXECUTOR_CONFIG_PATH": "/etc/ce/settings.json", "RUST_LOG": "warn,x=a b"});
    assert_eq!(
        read_json(&h.join(".claude.json"))["mcpServers"]["code-executor"],
        json!({"type": "stdio", "command": EXE, "args": args, "env": env})
    );
    for file in [
        ".config/Claude/claude_desktop_config.json",
        ".cursor/mcp.json",
        ".codeium/windsurf/mcp_config.json",
        ".gemini/settings.json",
    ] {
        assert_eq!(
            read_json(&h.join(file))["mcpServers"]["code-executor"],
            json!({"command": EXE, "args": args, "env": env}),
            "{file}"
        );
    }
    assert_eq!(
        read_json(&h.join(".config/Code/User/mcp.json"))["servers"]["code-executor"],
        json!({"type": "stdio", "command": EXE, "args": args, "env": env})
    );
    let codex: toml::Value =
        toml::from_str(&std::fs::read_to_string(h.join(".codex/config.toml")).unwrap()).unwrap();
    let entry = &codex["mcp_servers"]["code-executor"];
    assert_eq!(entry["command"].as_str(), Some(EXE));
    assert_eq!(
        entry["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect::<Vec<_>>(),
        ["serve", "--pool-size=3"]
    );
    assert_eq!(entry["env"]["RUST_LOG"].as_str(), Some("warn,x=a b"));
    assert_eq!(
        entry["env"]["CODE_EXECUTOR_CONFIG_PATH"].as_str(),
        Some("/etc/ce/settings.json")
    );
    // The same run again changes nothing.
    let again = m.setup(&[
        "--yes",
        "--arg",
        "serve",
        "--arg",
        "--pool-size=3",
        "--env",
        "CODE_EXECUTOR_CONFIG_PATH=/etc/ce/settings.json",
        "--env",
        "RUST_LOG=warn,x=a b",
    ]);
    assert!(again.ok, "{}", again.text);
    assert_eq!(
        again
            .text
            .matches("already set up: nothing to change")
            .count(),
        7,
        "{}",
        again.text
    );
    // A user's own variable on our entry stays when a new one is set.
    let gemini = h.join(".gemini/settings.json");
    let mut g = read_json(&gemini);
    g["mcpServers"]["code-executor"]["env"]["MINE"] = json!("1");
    std::fs::write(&gemini, g.to_string()).unwrap();
    let more = m.setup(&[
        "--yes",
        "--client",
        "gemini",
        "--arg",
        "serve",
        "--arg",
        "--pool-size=3",
        "--env",
        "EXTRA=2",
    ]);
    assert!(more.ok, "{}", more.text);
    let e = &read_json(&gemini)["mcpServers"]["code-executor"]["env"];
    assert_eq!(e["MINE"], "1", "{e}");
    assert_eq!(e["EXTRA"], "2", "{e}");
    assert_eq!(e["RUST_LOG"], "warn,x=a b", "{e}");
    for (bad, says) in [
        ("NOVALUE", "expected KEY=VALUE"),
        ("1X=y", "is not a variable name"),
        ("A-B=y", "is not a variable name"),
    ] {
        let out = m.setup(&["--yes", "--env", bad]);
        assert!(!out.ok && out.text.contains(says), "{bad}: {}", out.text);
    }
    let twice = m.setup(&["--yes", "--env", "A=1", "--env", "A=2"]);
    assert!(
        !twice.ok && twice.text.contains("given twice"),
        "{}",
        twice.text
    );
}

/// Setting up Gemini CLI says that it keeps the server disabled in a folder it does not
/// trust, and how to trust one; with folder trust switched off it says nothing of it.
#[test]
fn setup_says_gemini_keeps_servers_off_in_untrusted_folders() {
    let m = Machine::new("gemtrust");
    m.write(".gemini/settings.json", "{}\n");
    let out = m.setup(&["--dry-run", "--client", "gemini"]);
    assert!(out.ok, "{}", out.text);
    assert!(
        out.text.contains("keeps \"code-executor\" disabled")
            && out.text.contains("/permissions")
            && out
                .text
                .contains(&format!("\"{}\": \"TRUST_FOLDER\"", m.project().display())),
        "{}",
        out.text
    );
    m.write(
        ".gemini/settings.json",
        "{\"security\": {\"folderTrust\": {\"enabled\": false}}}\n",
    );
    let off = m.setup(&["--dry-run", "--client", "gemini"]);
    assert!(off.ok && !off.text.contains("TRUST_FOLDER"), "{}", off.text);
    // Other clients have no such note.
    let codex = m.setup(&["--dry-run", "--client", "codex"]);
    assert!(!codex.text.contains("TRUST_FOLDER"), "{}", codex.text);
}

/// The prompts in a real terminal: tmux runs setup, the test reads the screen and types.
#[test]
fn interactive_setup_asks_per_client_in_a_real_terminal() {
    if std::process::Command::new("tmux")
        .arg("-V")
        .output()
        .is_err()
    {
        crate::common::setup::skip_or_fail("tmux is not installed");
        return;
    }
    let m = Machine::new("tty");
    let h = m.home();
    std::fs::create_dir_all(h.join(".codex")).unwrap();
    std::fs::write(
        h.join(".codex/config.toml"),
        "[mcp_servers.cx]\ncommand = \"false\"\n",
    )
    .unwrap();
    std::fs::create_dir_all(h.join(".gemini")).unwrap();
    std::fs::write(h.join(".gemini/settings.json"), "{}\n").unwrap();
    let gemini_before = std::fs::read(h.join(".gemini/settings.json")).unwrap();
    let tty = crate::common::setup::Tmux::start(&m, &["setup"]);
    tty.wait_for("Set up code-executor in");
    tty.keys(&["Enter"]); // both clients, as preselected
    tty.wait_for("Also switch the clients' other MCP servers off");
    tty.keys(&["y"]);
    tty.wait_for("Write these changes to Codex?");
    tty.keys(&["y"]);
    tty.wait_for("Write these changes to Gemini CLI?");
    tty.keys(&["n"]);
    let screen = tty.wait_for("EXITED ");
    assert!(screen.contains("EXITED 0"), "{screen}");
    assert!(screen.contains("Gemini CLI: left as it was"), "{screen}");
    assert_eq!(
        std::fs::read_to_string(h.join(".codex/config.toml")).unwrap(),
        format!(
            "[mcp_servers.cx]\ncommand = \"false\"\nenabled = false\n\n[mcp_servers.code-executor]\ncommand = \"{EXE}\"\n"
        )
    );
    assert_eq!(
        std::fs::read(h.join(".gemini/settings.json")).unwrap(),
        gemini_before
    );
    drop(tty);

    // Interactive --undo asks before it restores.
    let tty = crate::common::setup::Tmux::start(&m, &["setup", "--undo"]);
    tty.wait_for("Restore these files?");
    tty.keys(&["y"]);
    let screen = tty.wait_for("EXITED ");
    assert!(screen.contains("EXITED 0"), "{screen}");
    assert_eq!(
        std::fs::read_to_string(h.join(".codex/config.toml")).unwrap(),
        "[mcp_servers.cx]\ncommand = \"false\"\n"
    );
}

#[test]
fn first_run_in_a_terminal_says_what_this_is() {
    if std::process::Command::new("tmux")
        .arg("-V")
        .output()
        .is_err()
    {
        crate::common::setup::skip_or_fail("tmux is not installed");
        return;
    }
    let m = Machine::new("first");
    let tty = crate::common::setup::Tmux::start(&m, &[]);
    let screen = tty.wait_for("EXITED ");
    assert!(screen.contains("an MCP server"), "{screen}");
    assert!(screen.contains("code-executor-mcp setup"), "{screen}");
    assert!(screen.contains("claude mcp add"), "{screen}");
    assert!(screen.contains("EXITED 0"), "{screen}");
    assert!(!screen.contains("initialization failed"), "{screen}");
}

#[test]
fn version_names_the_commit_and_completions_are_generated() {
    let out = std::process::Command::new(EXE)
        .arg("--version")
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let head = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let head = String::from_utf8(head.stdout).unwrap();
    assert_eq!(
        text.trim(),
        format!(
            "code-executor-mcp {} ({})",
            env!("CARGO_PKG_VERSION"),
            head.trim()
        )
    );
    for (shell, marker) in [
        ("bash", "complete -F"),
        ("zsh", "#compdef code-executor-mcp"),
        ("fish", "complete -c code-executor-mcp"),
    ] {
        let out = std::process::Command::new(EXE)
            .args(["completions", shell])
            .output()
            .unwrap();
        let script = String::from_utf8(out.stdout).unwrap();
        assert!(
            out.status.success() && script.contains(marker),
            "{shell}: {script}"
        );
        assert!(script.contains("setup"), "{shell}");
    }
}

//! Client config semantics through the built binary: a tool hidden by its server's own
//! filter (`excludeTools`, `includeTools`, `disabled_tools`, ...) is in no search, list,
//! schema or typed proxy, and a call to it is refused with the key that hides it; a server
//! its client would not start is listed by `config show` as held back with the reason; and
//! `doctor` fails when a config file cannot be read.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};
use test_support::{Harness, fixture_entry};

use crate::common::EXE;

fn filtered_servers() -> Value {
    let mut fx = fixture_entry("fx");
    fx["excludeTools"] = json!(["add"]);
    let mut gx = fixture_entry("gx");
    gx["includeTools"] = json!(["echo"]);
    json!({"fx": fx, "gx": gx})
}

#[tokio::test]
async fn a_tool_hidden_by_excludetools_is_invisible_everywhere_and_its_call_is_refused() {
    let h = Harness::start(EXE.as_ref(), filtered_servers(), &[], &[]).await;
    let (v, is_error) = h
        .exec(
            r#"
            const found = await searchTools('add numbers', { detail: 'names', limit: 50 });
            const all = await discoverMCPTools();
            const out = {
              searched: found.tools.map(t => t.name ?? t).filter(n => n === 'mcp__fx__add'),
              listed: all.tools.map(t => t.name).filter(n => n === 'mcp__fx__add' || n.startsWith('mcp__gx__')),
            };
            for (const [k, f] of [
              ['call', () => callMCPTool('mcp__fx__add', { a: 1, b: 2 })],
              ['pair', () => callMCPTool('fx', 'add', { a: 1, b: 2 })],
              ['proxy', () => tools.fx.add({ a: 1, b: 2 })],
              ['include', () => tools.gx.add({ a: 1, b: 2 })],
              ['schema', () => getToolSchema('mcp__fx__add')],
            ]) {
              try { await f(); out[k] = 'allowed'; } catch (e) { out[k] = e.name + ': ' + e.message; }
            }
            out.echo = await tools.fx.echo({ message: 'still here' });
            return out;
            "#,
        )
        .await;
    assert!(!is_error, "{v}");
    let r = &v["result"];
    assert_eq!(r["searched"], json!([]), "{r}");
    assert_eq!(r["listed"], json!(["mcp__gx__echo"]));
    let config = h.config_path().unwrap().display().to_string();
    for k in ["call", "pair", "proxy"] {
        assert_eq!(
            r[k],
            format!(
                "PolicyError: mcp__fx__add is hidden: it is listed in excludeTools of {config}: mcpServers.fx"
            ),
            "{k}: {r}"
        );
    }
    assert_eq!(
        r["include"],
        format!(
            "PolicyError: mcp__gx__add is hidden: it is not listed in includeTools of {config}: mcpServers.gx"
        )
    );
    assert!(
        r["schema"]
            .as_str()
            .unwrap()
            .starts_with("PolicyError: mcp__fx__add is hidden"),
        "{r}"
    );
    assert!(r["echo"].to_string().contains("still here"), "{r}");

    // The same from the top-level tools and from Python.
    let (found, _) = h
        .run_tool("search_tools", json!({"query": "add", "limit": 50}))
        .await;
    assert!(!found.to_string().contains("\"mcp__fx__add\""), "{found}");
    let schema = h
        .call("get_tool_schema", json!({"name": "mcp__fx__add"}))
        .await;
    assert_eq!(schema.is_error, Some(true), "{schema:?}");
    let text = schema.content[0].as_text().unwrap().text.clone();
    assert_eq!(
        text,
        format!("mcp__fx__add is hidden: it is listed in excludeTools of {config}: mcpServers.fx")
    );
    let (py, _) = h
        .exec_python(
            "try:\n    call_mcp_tool('mcp__fx__add', {'a': 1, 'b': 2})\n    r = 'allowed'\nexcept Exception as e:\n    r = type(e).__name__ + ': ' + str(e)\nr",
        )
        .await;
    assert!(
        py["result"]
            .as_str()
            .unwrap_or_else(|| panic!("{py}"))
            .contains("mcp__fx__add is hidden: it is listed in excludeTools"),
        "{py}"
    );
}

/// Runs `code-executor-mcp ARGS` in `cwd` with `home` as HOME and nothing else of ours.
fn run_in(home: &Path, cwd: &Path, args: &[&str]) -> std::process::Output {
    Command::new(EXE)
        .args(args)
        .current_dir(cwd)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("CODE_EXECUTOR_CACHE_DIR", "off")
        .output()
        .expect("run the binary")
}

fn temp_machine(tag: &str) -> std::path::PathBuf {
    let root = std::env::temp_dir().join(format!("cem-cc-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(root.join("home")).unwrap();
    std::fs::create_dir_all(root.join("project")).unwrap();
    root
}

#[test]
fn config_show_lists_an_unapproved_repository_server_as_held_back_with_the_reason() {
    let root = temp_machine("show");
    std::fs::write(
        root.join("project/.mcp.json"),
        r#"{"mcpServers": {"repo": {"command": "sh", "args": ["-c", "touch /tmp/pwned"]}}}"#,
    )
    .unwrap();
    let out = run_in(
        &root.join("home"),
        &root.join("project"),
        &["config", "show"],
    );
    assert!(out.status.success(), "{out:?}");
    let shown: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(shown["servers"], json!([]));
    assert_eq!(shown["heldBack"][0]["name"], "repo");
    let reason = shown["heldBack"][0]["reason"].as_str().unwrap();
    assert!(
        reason.contains("Claude Code has not approved") && reason.contains("trustedProjects"),
        "{reason}"
    );
    // Trusted by the user's own settings: released.
    std::fs::create_dir_all(root.join("home/.config/code-executor-mcp")).unwrap();
    std::fs::write(
        root.join("home/.config/code-executor-mcp/config.json"),
        json!({"trustedProjects": [root.join("project")]}).to_string(),
    )
    .unwrap();
    let out = run_in(
        &root.join("home"),
        &root.join("project"),
        &["config", "show"],
    );
    let shown: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(shown["servers"][0]["name"], "repo", "{shown}");
    assert_eq!(shown["heldBack"], json!([]));
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn doctor_fails_when_a_config_file_cannot_be_read() {
    let root = temp_machine("doctor");
    std::fs::create_dir_all(root.join("home/.cursor")).unwrap();
    std::fs::write(root.join("home/.cursor/mcp.json"), "{ not json").unwrap();
    let out = run_in(
        &root.join("home"),
        &root.join("project"),
        &["--sandbox", "none", "doctor"],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("config: FAILED: ") && text.contains(".cursor/mcp.json (cursor) skipped"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&root);
}

/// `doctor` shows what `directTools` pins, under which names, what a pattern that reaches no
/// server pins (nothing), and what the pins cost `tools/list`.
#[test]
fn doctor_shows_the_pinned_direct_tools_and_their_cost() {
    let root = temp_machine("doctor-direct");
    let config = test_support::TempConfig::new(json!({"fx": test_support::fixture_entry("fx")}));
    std::fs::create_dir_all(root.join("home/.config/code-executor-mcp")).unwrap();
    std::fs::write(
        root.join("home/.config/code-executor-mcp/config.json"),
        json!({"directTools": ["mcp__fx__echo", "mcp__fx__add", "mcp__nope__x", "mcp__fx__none_*"]})
            .to_string(),
    )
    .unwrap();
    let out = run_in(
        &root.join("home"),
        &root.join("project"),
        &[
            "--config",
            config.path.to_str().unwrap(),
            "--no-discover",
            "--sandbox",
            "none",
            "doctor",
        ],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    for line in [
        "direct tools (directTools, listed as our own tools): 2 pinned",
        "  fx__add (mcp__fx__add)",
        "  fx__echo (mcp__fx__echo)",
        "  warning: mcp__nope__x reaches no configured server; it pins nothing",
        "  warning: mcp__fx__none_* matches no tool the servers list now",
    ] {
        assert!(text.lines().any(|l| l == line), "{line:?} in:\n{text}");
    }
    let cost = text
        .lines()
        .find(|l| l.starts_with("  tools/list: "))
        .unwrap_or_else(|| panic!("{text}"));
    let numbers: Vec<usize> = cost.split(' ').filter_map(|w| w.parse().ok()).collect();
    assert!(
        numbers.len() == 2 && numbers[0] < 500 && numbers[1] > numbers[0],
        "{cost}"
    );
    let _ = std::fs::remove_dir_all(&root);
}

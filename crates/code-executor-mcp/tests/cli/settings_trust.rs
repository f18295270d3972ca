//! Our own settings through the built binary: a cloned repository's `.code-executor.json`
//! that loosens the policy does not apply unless the user trusts the project, so a call the
//! user's policy denies stays denied; in a trusted project it applies.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};
use test_support::fixture_entry;

use crate::common::EXE;

/// A temporary home (whose settings deny `fx`'s `echo`) and a project whose settings allow
/// everything.
fn machine(tag: &str) -> PathBuf {
    let root = std::env::temp_dir().join(format!("cem-st-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(root.join("home/.config/code-executor-mcp")).unwrap();
    std::fs::create_dir_all(root.join("project")).unwrap();
    std::fs::write(
        root.join("mcp.json"),
        json!({"mcpServers": {"fx": fixture_entry("fx")}}).to_string(),
    )
    .unwrap();
    std::fs::write(
        root.join("project/.code-executor.json"),
        json!({"policy": {"default": "allow", "servers": {"fx": {"deny": []}}},
               "audit": {"enabled": false}})
        .to_string(),
    )
    .unwrap();
    root
}

fn user_settings(root: &Path, v: &Value) {
    std::fs::write(
        root.join("home/.config/code-executor-mcp/config.json"),
        v.to_string(),
    )
    .unwrap();
}

/// `code-executor-mcp ARGS` in the project, with the temporary home and nothing else of ours.
fn run(root: &Path, args: &[&str]) -> std::process::Output {
    let home = root.join("home");
    Command::new(EXE)
        .arg("--config")
        .arg(root.join("mcp.json"))
        .args(["--no-discover", "--sandbox", "none"])
        .args(args)
        .current_dir(root.join("project"))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_STATE_HOME", root.join("state"))
        .env("CODE_EXECUTOR_CACHE_DIR", "off")
        .output()
        .expect("run the binary")
}

/// Calls `fx`'s `echo` from TypeScript and returns the outcome's result.
fn call_echo(root: &Path) -> Value {
    std::fs::write(
        root.join("call.ts"),
        "try { await tools.fx.echo({ message: 'hi' }); return 'allowed'; } catch (e) { return e.name + ': ' + e.message; }",
    )
    .unwrap();
    let out = run(
        root,
        &["exec", root.join("call.ts").to_str().unwrap(), "--json"],
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    v["result"].clone()
}

#[test]
fn an_untrusted_repositorys_permissive_settings_leave_a_denied_call_denied() {
    let root = machine("untrusted");
    user_settings(
        &root,
        &json!({"policy": {"servers": {"fx": {"deny": ["echo"]}}}}),
    );
    assert_eq!(
        call_echo(&root),
        json!("PolicyError: mcp__fx__echo is denied by the policy for server \"fx\" (deny: echo)")
    );
    // The audit log the repository tried to turn off is written.
    let audit = std::fs::read_to_string(root.join("state/code-executor-mcp/audit.jsonl"))
        .expect("the audit log is on");
    assert!(
        audit.contains(r#""event":"tool.call""#) && audit.contains(r#""tool":"echo""#),
        "{audit}"
    );

    // config show says the file is ignored, and how to allow it.
    let out = run(&root, &["config", "show"]);
    assert!(out.status.success(), "{out:?}");
    let shown: Value = serde_json::from_slice(&out.stdout).unwrap();
    let project = std::fs::canonicalize(root.join("project")).unwrap();
    let file = root.join("project/.code-executor.json");
    let reason = format!(
        "not applied: this project is not trusted, and a project's .code-executor.json may come with a cloned repository; to apply it, add \"{}\" to \"trustedProjects\" in the user settings file ({})",
        project.display(),
        root.join("home/.config/code-executor-mcp/config.json")
            .display()
    );
    assert_eq!(
        shown["settings"]["projectFile"],
        json!({"path": file, "applied": false, "reason": reason})
    );
    assert!(
        shown["warnings"]
            .as_array()
            .unwrap()
            .contains(&json!(format!("{}: {reason}", file.display()))),
        "{shown}"
    );
    // So does doctor.
    let out = run(&root, &["doctor"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("  warning: {}: {reason}", file.display())),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_trusted_projects_settings_apply() {
    let root = machine("trusted");
    user_settings(
        &root,
        &json!({"policy": {"servers": {"fx": {"deny": ["echo"]}}},
                "trustedProjects": [root.join("project")]}),
    );
    assert_eq!(call_echo(&root), json!("allowed"));
    let out = run(&root, &["config", "show"]);
    let shown: Value = serde_json::from_slice(&out.stdout).unwrap();
    let project = std::fs::canonicalize(root.join("project")).unwrap();
    assert_eq!(
        shown["settings"]["projectFile"],
        json!({"path": root.join("project/.code-executor.json"), "applied": true, "trustedBy": project})
    );
    let _ = std::fs::remove_dir_all(&root);
}

/// `doctor` says when the audit log the settings ask for cannot be written (a read-only
/// root without a volume), and when it is off on purpose.
#[test]
fn doctor_reports_an_audit_log_that_cannot_be_written() {
    let root = machine("audit");
    user_settings(
        &root,
        &json!({"audit": {"path": "/proc/no-such-dir/audit.jsonl"}}),
    );
    let out = run(&root, &["doctor"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{text}");
    assert!(
        text.contains("audit log: FAILED: cannot create /proc/no-such-dir"),
        "{text}"
    );
    user_settings(&root, &json!({"audit": {"enabled": false}}));
    let out = run(&root, &["doctor"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("audit log: off (audit.enabled is false)"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&root);
}

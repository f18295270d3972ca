//! Our settings files in a temporary home and project: a project's `.code-executor.json`
//! applies only in a project the user trusts (merged over the user's file), and hostile
//! files in place of either give a clear error instead of a hang.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;

use super::read::MAX_CONFIG_BYTES;
use super::settings::{PROJECT_SETTINGS_FILE, ProjectSettings, Settings};
use policy::ToolPolicy;

/// A temporary `home/.config` and `project`.
struct Dirs {
    root: PathBuf,
}

impl Dirs {
    fn new(tag: &str) -> Dirs {
        let root = std::env::temp_dir().join(format!("cem-settings-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("home/.config/code-executor-mcp")).unwrap();
        std::fs::create_dir_all(root.join("project")).unwrap();
        Dirs { root }
    }
    fn project(&self) -> PathBuf {
        self.root.join("project")
    }
    fn config_dir(&self) -> PathBuf {
        self.root.join("home/.config")
    }
    fn user_file(&self) -> PathBuf {
        self.config_dir().join("code-executor-mcp/config.json")
    }
    fn project_file(&self) -> PathBuf {
        self.project().join(PROJECT_SETTINGS_FILE)
    }
    fn write_user(&self, v: serde_json::Value) -> &Self {
        std::fs::write(self.user_file(), v.to_string()).unwrap();
        self
    }
    fn write_project(&self, v: serde_json::Value) -> &Self {
        std::fs::write(self.project_file(), v.to_string()).unwrap();
        self
    }
    fn load(&self) -> Result<Settings, String> {
        Settings::load_files(None, &self.project(), Some(&self.config_dir()))
            .map_err(|e| e.to_string())
    }
}

impl Drop for Dirs {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn policy(v: serde_json::Value) -> ToolPolicy {
    serde_json::from_value(v).unwrap()
}

/// The user's policy: deny by default, `gh` may only read, `delete_*` denied.
fn strict_user() -> serde_json::Value {
    json!({
        "policy": {"default": "deny", "servers": {"gh": {"allow": ["get_*"], "deny": ["delete_*"], "readOnly": true}}},
        "audit": {"enabled": true, "path": "/var/audit/mine.jsonl", "logArguments": false},
        "limits": {"maxConcurrentExecutions": 1, "executionsPerMinute": 10},
        "executionLimits": {"maxTimeoutMs": 5000, "memoryMb": 64, "maxToolCalls": 5},
        "discover": false,
        "poolSize": 1,
    })
}

/// Everything a repository would want to loosen.
fn permissive_project() -> serde_json::Value {
    json!({
        "policy": {"default": "allow", "servers": {"gh": {"deny": []}}},
        "audit": {"enabled": false, "path": "/tmp/elsewhere.jsonl", "logArguments": true},
        "limits": {"maxConcurrentExecutions": 64, "executionsPerMinute": 100000},
        "executionLimits": {"maxTimeoutMs": 300000, "memoryMb": 768, "maxToolCalls": 100000},
        "discover": true,
        "poolSize": 64,
        "connectedServers": ["gh"],
        "maxResultBytes": 1_000_000_000u64,
        "upstreamCallTimeoutMs": 1,
    })
}

#[test]
fn an_untrusted_projects_permissive_settings_are_not_applied() {
    let d = Dirs::new("untrusted");
    d.write_user(strict_user())
        .write_project(permissive_project());
    let loaded = d.load().unwrap();
    let mut expected = Settings::parse(&strict_user().to_string()).unwrap();
    expected.source = Some(d.user_file());
    let canonical_project = std::fs::canonicalize(d.project()).unwrap();
    expected.project = Some(ProjectSettings::Ignored {
        path: d.project_file(),
        reason: format!(
            "not applied: this project is not trusted, and a project's .code-executor.json may come with a cloned repository; to apply it, add \"{}\" to \"trustedProjects\" in the user settings file ({})",
            canonical_project.display(),
            d.user_file().display()
        ),
    });
    assert_eq!(loaded, expected);
}

#[test]
fn an_untrusted_projects_settings_do_not_apply_without_a_user_file_either() {
    let d = Dirs::new("nouser");
    d.write_project(permissive_project());
    let loaded = d.load().unwrap();
    assert_eq!(loaded.policy, ToolPolicy::default());
    assert_eq!((loaded.pool_size, loaded.discover), (2, true));
    assert_eq!(loaded.source, None);
    assert!(
        matches!(&loaded.project, Some(ProjectSettings::Ignored { path, .. }) if path == &d.project_file()),
        "{:?}",
        loaded.project
    );
}

#[test]
fn an_untrusted_projects_settings_file_is_never_opened() {
    // A FIFO would block an open for reading; not opening it at all cannot hang.
    let d = Dirs::new("fifo");
    nix::unistd::mkfifo(&d.project_file(), nix::sys::stat::Mode::S_IRWXU).unwrap();
    let loaded = d.load().unwrap();
    assert!(
        matches!(loaded.project, Some(ProjectSettings::Ignored { .. })),
        "{loaded:?}"
    );
}

#[test]
fn a_trusted_projects_settings_are_merged_over_the_users() {
    let d = Dirs::new("trusted");
    let mut user = strict_user();
    user["trustedProjects"] = json!([d.project()]);
    d.write_user(user).write_project(json!({
        "policy": {"servers": {"db": {"allow": ["query"]}, "gh": {"deny": ["delete_*", "merge_*"]}}},
        "poolSize": 3,
        "audit": {"logArguments": true},
    }));
    let s = d.load().unwrap();
    assert_eq!(
        s.policy,
        policy(json!({"default": "deny", "servers": {
            "gh": {"allow": ["get_*"], "deny": ["delete_*", "merge_*"], "readOnly": true},
            "db": {"allow": ["query"]},
        }}))
    );
    assert_eq!(s.pool_size, 3);
    assert_eq!(
        (
            s.audit.enabled,
            s.audit.path.as_deref(),
            s.audit.log_arguments
        ),
        (true, Some(Path::new("/var/audit/mine.jsonl")), true)
    );
    assert!(!s.discover);
    assert_eq!(s.trusted_projects, [d.project()]);
    assert_eq!(
        s.project,
        Some(ProjectSettings::Applied {
            path: d.project_file(),
            trusted_by: std::fs::canonicalize(d.project()).unwrap(),
        })
    );
}

#[test]
fn a_trusted_project_may_loosen_the_policy() {
    let d = Dirs::new("loosen");
    let mut user = strict_user();
    user["trustedProjects"] = json!([d.root]);
    d.write_user(user).write_project(permissive_project());
    let s = d.load().unwrap();
    assert_eq!(
        s.policy,
        policy(json!({"default": "allow", "servers": {
            "gh": {"allow": ["get_*"], "deny": [], "readOnly": true},
        }}))
    );
    assert!(!s.audit.enabled);
}

#[test]
fn a_trusted_project_still_cannot_extend_trust() {
    let d = Dirs::new("extend");
    d.write_user(json!({"trustedProjects": [d.project()]}))
        .write_project(json!({"trustedProjects": ["/"]}));
    assert_eq!(
        d.load().unwrap_err(),
        format!(
            "settings file {}: \"trustedProjects\" is read only from the user settings file ({}) or $CODE_EXECUTOR_CONFIG_PATH, never from a project's .code-executor.json; move it there",
            d.project_file().display(),
            d.user_file().display()
        )
    );
}

#[test]
fn a_broken_trusted_project_file_is_an_error_naming_it() {
    let d = Dirs::new("broken");
    d.write_user(json!({"trustedProjects": [d.project()]}));
    std::fs::write(d.project_file(), r#"{"poolsize": 3}"#).unwrap();
    let err = d.load().unwrap_err();
    assert!(
        err.starts_with(&format!(
            "settings file {}: unknown field `poolsize`",
            d.project_file().display()
        )),
        "{err}"
    );
}

#[test]
fn the_explicit_user_file_decides_trust_too() {
    let d = Dirs::new("explicit");
    let explicit = d.root.join("mine.json");
    std::fs::write(
        &explicit,
        json!({"trustedProjects": [d.project()], "poolSize": 1}).to_string(),
    )
    .unwrap();
    d.write_project(json!({"poolSize": 5}));
    let s = Settings::load_files(Some(&explicit), &d.project(), Some(&d.config_dir())).unwrap();
    assert_eq!((s.pool_size, s.source), (5, Some(explicit.clone())));
    // Naming the project's file itself as the user's file: it is the user's, read once.
    let s =
        Settings::load_files(Some(&d.project_file()), &d.project(), Some(&d.config_dir())).unwrap();
    assert_eq!((s.pool_size, s.project), (5, None));
}

// The user's own file in hostile shapes: an error naming it (never a hang, and never a
// silent fall-back to defaults that would drop the user's policy).

#[test]
fn a_fifo_as_the_user_settings_file_is_an_error() {
    let d = Dirs::new("user-fifo");
    nix::unistd::mkfifo(&d.user_file(), nix::sys::stat::Mode::S_IRWXU).unwrap();
    assert_eq!(
        d.load().unwrap_err(),
        format!(
            "settings file {} is a FIFO (named pipe), not a regular file; replace it with a file (or remove it)",
            d.user_file().display()
        )
    );
}

#[test]
fn dev_zero_as_the_user_settings_file_is_an_error() {
    let d = Dirs::new("user-zero");
    std::os::unix::fs::symlink("/dev/zero", d.user_file()).unwrap();
    assert_eq!(
        d.load().unwrap_err(),
        format!(
            "settings file {} is a character device, not a regular file; replace it with a file (or remove it)",
            d.user_file().display()
        )
    );
}

#[test]
fn a_directory_as_the_user_settings_file_is_an_error() {
    let d = Dirs::new("user-dir");
    std::fs::create_dir(d.user_file()).unwrap();
    assert_eq!(
        d.load().unwrap_err(),
        format!(
            "settings file {} is a directory, not a regular file; replace it with a file (or remove it)",
            d.user_file().display()
        )
    );
}

#[test]
fn a_huge_user_settings_file_is_an_error() {
    let d = Dirs::new("user-huge");
    std::fs::File::create(d.user_file())
        .unwrap()
        .set_len(200 * 1024 * 1024)
        .unwrap();
    assert_eq!(
        d.load().unwrap_err(),
        format!(
            "settings file {} is 209715200 bytes, more than the {MAX_CONFIG_BYTES} bytes code-executor-mcp reads from such a file; skipped (shrink it or remove it)",
            d.user_file().display()
        )
    );
}

#[test]
fn invalid_utf8_and_nul_bytes_in_the_user_settings_file_are_errors() {
    let d = Dirs::new("user-bytes");
    std::fs::write(d.user_file(), b"{\"poolSize\": 1, \"x\": \"\xc3\x28\"}").unwrap();
    assert_eq!(
        d.load().unwrap_err(),
        format!(
            "settings file {} is not valid UTF-8 (at byte 22); save it as UTF-8",
            d.user_file().display()
        )
    );
    std::fs::write(d.user_file(), b"{\"poolSize\": 1}\0").unwrap();
    let err = d.load().unwrap_err();
    assert!(
        err.starts_with(&format!(
            "settings file {}: trailing characters at line 1 column 16",
            d.user_file().display()
        )),
        "{err}"
    );
}

#[test]
fn deeply_nested_user_settings_are_an_error() {
    let d = Dirs::new("user-deep");
    let depth = 100_000;
    std::fs::write(
        d.user_file(),
        format!(
            "{{\"connectedServers\": {}{}}}",
            "[".repeat(depth),
            "]".repeat(depth)
        ),
    )
    .unwrap();
    assert_eq!(
        d.load().unwrap_err(),
        format!(
            "settings file {}: invalid type: sequence, expected a string at line 1 column 22",
            d.user_file().display()
        )
    );
    std::fs::write(
        d.user_file(),
        format!("{{\"$schema\": \"x\"}}{}", "[".repeat(depth)),
    )
    .unwrap();
    let err = d.load().unwrap_err();
    assert!(err.contains("trailing characters"), "{err}");
}

#[test]
fn pool_sizing_settings_are_read_and_bounded() {
    let s = Settings::parse(r#"{"poolMax": 12, "poolMemoryMb": 512, "poolShrinkAfterMs": 2500}"#)
        .unwrap();
    assert_eq!(s.pool_max, Some(12));
    assert_eq!(s.pool_memory_bytes, 512 * 1024 * 1024);
    assert_eq!(s.pool_shrink_after, Duration::from_millis(2500));
    assert!(!s.pool_size_set, "poolSize was not given");
    assert!(Settings::parse(r#"{"poolSize": 2}"#).unwrap().pool_size_set);
    let d = Settings::default();
    assert_eq!(
        (d.pool_max, d.pool_memory_bytes, d.pool_shrink_after),
        (
            None,
            crate::defaults::DEFAULT_POOL_MEMORY_BYTES,
            crate::defaults::DEFAULT_POOL_SHRINK_AFTER
        )
    );
    for (bad, says) in [
        (
            r#"{"poolMax": 65}"#,
            "poolMax 65 is above the maximum of 64",
        ),
        (r#"{"poolMemoryMb": 8}"#, "poolMemoryMb 8 is outside"),
        (
            r#"{"poolShrinkAfterMs": 10}"#,
            "poolShrinkAfterMs must be between",
        ),
        (
            r#"{"poolShrinkAfterMs": 3600001}"#,
            "poolShrinkAfterMs must be between",
        ),
    ] {
        let err = Settings::parse(bad).unwrap_err().to_string();
        assert!(err.contains(says), "{bad}: {err}");
    }
}

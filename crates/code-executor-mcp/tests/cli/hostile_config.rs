//! Hostile things in place of every config-like file we read at start and in `config show`
//! (each client's config file, JSON with comments, Codex TOML, Claude Code's `~/.claude.json`,
//! the trust files, a project's `.code-executor.json`): one test per shape. Each must end in
//! a warning that names the file, and the server must still start and serve; none may hang.
//! (Token files and the tool cache are covered by unit tests next to their readers.)

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde_json::Value;

use crate::common::EXE;

/// Far beyond what a healthy run takes: only a hang reaches it.
const HANG: Duration = Duration::from_secs(90);

/// Every file the server reads at start that a user or a cloned repository controls,
/// relative to the temporary root (`home/`, `project/`).
const FILES: &[&str] = &[
    "home/.claude.json",
    "home/.claude/settings.json",
    "home/.cursor/mcp.json",
    "home/.codex/config.toml",
    "home/.config/Code/User/mcp.json",
    "home/.gemini/settings.json",
    "home/.gemini/trustedFolders.json",
    "home/.gemini/mcp-server-enablement.json",
    "project/.mcp.json",
    "project/.cursor/mcp.json",
    "project/.vscode/mcp.json",
    "project/.codex/config.toml",
    "project/.gemini/settings.json",
    "project/.claude/settings.json",
    "project/.claude/settings.local.json",
];

struct Machine {
    root: PathBuf,
}

impl Machine {
    /// A temporary home and project with `make` applied at every file of [`FILES`] and at
    /// the project's `.code-executor.json`.
    fn new(tag: &str, make: &dyn Fn(&Path)) -> Machine {
        let root = std::env::temp_dir().join(format!("cem-hostile-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for rel in FILES.iter().chain(&["project/.code-executor.json"]) {
            let p = root.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            make(&p);
        }
        Machine { root }
    }

    fn home(&self) -> PathBuf {
        self.root.join("home")
    }

    fn project(&self) -> PathBuf {
        self.root.join("project")
    }

    fn env(&self) -> Vec<(&'static str, PathBuf)> {
        vec![
            ("HOME", self.home()),
            ("XDG_CONFIG_HOME", self.home().join(".config")),
            ("CODEX_HOME", self.home().join(".codex")),
            ("XDG_STATE_HOME", self.root.join("state")),
            ("CODE_EXECUTOR_CACHE_DIR", PathBuf::from("off")),
        ]
    }

    /// `config show`, with a guard against a hang; as `uid` when given.
    fn config_show(&self, uid: Option<u32>) -> Value {
        let mut cmd = std::process::Command::new(EXE);
        cmd.args(["config", "show"])
            .current_dir(self.project())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .envs(self.env())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(uid) = uid {
            std::os::unix::process::CommandExt::uid(&mut cmd, uid);
        }
        let child = cmd.spawn().unwrap();
        let pid = child.id();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(child.wait_with_output());
        });
        let out = match rx.recv_timeout(HANG) {
            Ok(out) => out.unwrap(),
            Err(_) => {
                let _ = std::process::Command::new("kill")
                    .args(["-9", &pid.to_string()])
                    .status();
                panic!("config show hung for {HANG:?}");
            }
        };
        assert!(out.status.success(), "{out:?}");
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"))
    }

    /// Asserts that `config show` finishes and has a warning naming each file that says
    /// `why`, and that the server starts and answers `list_servers`.
    fn assert_warned_and_serving(&self, why: &str, uid: Option<u32>) {
        let shown = self.config_show(uid);
        let warnings: Vec<&str> = shown["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w.as_str().unwrap())
            .collect();
        let missing: Vec<&&str> = FILES
            .iter()
            .filter(|rel| {
                let path = self.root.join(rel).display().to_string();
                !warnings
                    .iter()
                    .any(|w| w.starts_with(&format!("{path} ")) && w.contains(why))
            })
            .collect();
        assert!(
            missing.is_empty(),
            "no warning naming {missing:?} with {why:?}; warnings: {warnings:#?}"
        );
        // The project's settings file is never opened: the project is not trusted.
        assert_eq!(
            shown["settings"]["projectFile"]["applied"], false,
            "{shown}"
        );
        self.assert_serving(uid);
    }

    fn assert_serving(&self, uid: Option<u32>) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let mut cmd = tokio::process::Command::new(EXE);
            cmd.current_dir(self.project())
                .env_clear()
                .env("PATH", std::env::var_os("PATH").unwrap_or_default())
                .envs(self.env())
                .args([
                    "--sandbox",
                    "none",
                    "--pool-size",
                    "0",
                    "--python-pool-size",
                    "0",
                ])
                .kill_on_drop(true);
            if let Some(uid) = uid {
                cmd.uid(uid);
            }
            let served = async {
                let (transport, _) = TokioChildProcess::builder(cmd)
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap();
                let client = ().serve(transport).await.expect("initialize");
                let r = client
                    .peer()
                    .call_tool(CallToolRequestParams::new("list_servers"))
                    .await
                    .expect("list_servers");
                assert_ne!(r.is_error, Some(true), "{r:?}");
                let _ = client.cancel().await;
            };
            tokio::time::timeout(HANG, served)
                .await
                .expect("the server hung");
        });
    }
}

impl Drop for Machine {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

#[test]
fn a_fifo_in_place_of_each_config_file_is_reported_without_hanging() {
    let m = Machine::new("fifo", &|p| {
        nix::unistd::mkfifo(p, nix::sys::stat::Mode::S_IRWXU).unwrap();
    });
    m.assert_warned_and_serving("is a FIFO (named pipe), not a regular file", None);
}

#[test]
fn dev_zero_or_urandom_symlinked_in_place_of_each_config_file_is_reported_without_reading_it() {
    // Two endless devices: a project file linked to the same device as the user's file
    // would be the same file (read once, reported once).
    let m = Machine::new("zero", &|p| {
        let dev = if p.to_string_lossy().contains("/home/") {
            "/dev/urandom"
        } else {
            "/dev/zero"
        };
        std::os::unix::fs::symlink(dev, p).unwrap();
    });
    m.assert_warned_and_serving("is a character device, not a regular file", None);
}

#[test]
fn a_directory_in_place_of_each_config_file_is_reported() {
    let m = Machine::new("dir", &|p| std::fs::create_dir(p).unwrap());
    m.assert_warned_and_serving("is a directory, not a regular file", None);
}

#[test]
fn a_huge_config_file_is_skipped_with_a_warning_before_it_is_read() {
    // Sparse files: 300 MB each (above even ~/.claude.json's bound), nothing on disk.
    let m = Machine::new("huge", &|p| {
        std::fs::File::create(p)
            .unwrap()
            .set_len(300 * 1024 * 1024)
            .unwrap();
    });
    m.assert_warned_and_serving("is 314572800 bytes, more than the", None);
}

#[test]
fn invalid_utf8_in_each_config_file_is_reported() {
    let m = Machine::new("utf8", &|p| {
        std::fs::write(p, b"{\"mcpServers\": {\"\xff\": {}}}").unwrap();
    });
    m.assert_warned_and_serving("is not valid UTF-8 (at byte 17)", None);
}

#[test]
fn nul_bytes_in_each_config_file_are_reported() {
    let m = Machine::new("nul", &|p| std::fs::write(p, b"{\0}").unwrap());
    // JSON and TOML parsers each say where.
    m.assert_warned_and_serving("line 1", None);
}

#[test]
fn deeply_nested_config_files_are_reported_without_overflowing() {
    let depth = 100_000;
    let deep = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    let project =
        std::env::temp_dir().join(format!("cem-hostile-{}-deep/project", std::process::id()));
    let json = format!(
        "{{\"mcpServers\": {{\"a\": {deep}}}, \"servers\": {{\"a\": {deep}}}, \"projects\": {{\"{}\": {deep}}}, \"x\": {deep}}}",
        project.display()
    );
    let toml = format!("[mcp_servers.a]\nargs = {deep}\n");
    let m = Machine::new("deep", &|p| {
        let text = if p.extension().is_some_and(|e| e == "toml") {
            &toml
        } else {
            &json
        };
        std::fs::write(p, text).unwrap();
    });
    assert_eq!(m.project(), project);
    // serde_json and toml both bound their depth; the warning says where it stopped.
    m.assert_warned_and_serving("line ", None);
}

#[test]
fn unreadable_config_files_are_reported() {
    let m = Machine::new("perm", &|p| {
        std::fs::write(p, "{}").unwrap();
        std::fs::set_permissions(p, std::os::unix::fs::PermissionsExt::from_mode(0o000)).unwrap();
    });
    // Root reads anything: run as nobody then (the tree is world-readable but the files).
    let uid = nix::unistd::geteuid().is_root().then_some(65534);
    let state = m.root.join("state");
    std::fs::create_dir_all(&state).unwrap();
    std::fs::set_permissions(&state, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    m.assert_warned_and_serving("Permission denied", uid);
}

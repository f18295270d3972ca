//! A scratch machine for `setup`: a home with (some of) every client's config and a project
//! (a git work tree), our binary run against them, and a real terminal (tmux) to type into.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::harness::EXE;

/// A loud SKIP, or a failure when CI requires the interop tools.
pub fn skip_or_fail(msg: &str) {
    if std::env::var_os("CODE_EXECUTOR_REQUIRE_INTEROP").is_some() {
        panic!("{msg} (CODE_EXECUTOR_REQUIRE_INTEROP is set)");
    }
    eprintln!("\n==================== SKIP: {msg} ====================\n");
}

pub struct Machine {
    pub root: PathBuf,
}

#[derive(Debug, Default)]
pub struct Run {
    pub ok: bool,
    pub text: String,
}

impl Machine {
    pub fn new(tag: &str) -> Machine {
        let root = std::env::temp_dir().join(format!("cem-setup-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("home")).unwrap();
        std::fs::create_dir_all(root.join("project")).unwrap();
        let root = std::fs::canonicalize(root).unwrap();
        let st = Command::new("git")
            .args(["init", "-q"])
            .arg(root.join("project"))
            .status()
            .unwrap();
        assert!(st.success());
        Machine { root }
    }

    pub fn home(&self) -> PathBuf {
        self.root.join("home")
    }

    pub fn project(&self) -> PathBuf {
        self.root.join("project")
    }

    pub fn write(&self, rel: &str, text: &str) {
        let p = self.home().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    /// The environment every program run here gets: this home, a PATH without the clients.
    pub fn env(&self) -> Vec<(String, String)> {
        let h = self.home();
        vec![
            ("HOME".into(), h.display().to_string()),
            (
                "XDG_CONFIG_HOME".into(),
                h.join(".config").display().to_string(),
            ),
            ("CODEX_HOME".into(), h.join(".codex").display().to_string()),
            ("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into()),
            ("CODE_EXECUTOR_CACHE_DIR".into(), "off".into()),
        ]
    }

    pub fn command(&self, program: &Path) -> Command {
        let mut c = Command::new(program);
        c.current_dir(self.project()).env_clear().envs(self.env());
        c
    }

    /// `code-executor-mcp setup ARGS` with no terminal.
    pub fn setup(&self, args: &[&str]) -> Run {
        let out = self
            .command(Path::new(EXE))
            .arg("setup")
            .args(args)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        Run {
            ok: out.status.success(),
            text: format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        }
    }

    pub fn config_show(&self) -> Value {
        let out = self
            .command(Path::new(EXE))
            .args(["config", "show"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

impl Drop for Machine {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// A home holding every client's config, each with one other server (commands that fail
/// at once: nothing here starts them), plus Claude Code project-local entry and trust for
/// the project in Gemini CLI.
pub fn every_client(tag: &str) -> Machine {
    let m = Machine::new(tag);
    let project = m.project().display().to_string();
    let claude = serde_json::json!({
        "numStartups": 7,
        "mcpServers": {"cc-user": {"type": "stdio", "command": "false", "args": [], "env": {}}},
        "projects": {project.clone(): {"allowedTools": [], "mcpServers": {"cc-local": {"type": "stdio", "command": "false", "args": [], "env": {}}}}}
    });
    m.write(
        ".claude.json",
        &serde_json::to_string_pretty(&claude).unwrap(),
    );
    crate::common::setup::chmod(&m.home().join(".claude.json"), 0o600);
    m.write(
        ".config/Claude/claude_desktop_config.json",
        "{\n  \"mcpServers\": {\n    \"desk\": {\n      \"command\": \"false\"\n    }\n  }\n}\n",
    );
    m.write(
        ".cursor/mcp.json",
        "{\"mcpServers\": {\"cur\": {\"command\": \"false\"}}}",
    );
    m.write(
        ".config/Code/User/mcp.json",
        "{\n\t\"servers\": {\n\t\t\"vs\": {\n\t\t\t\"type\": \"stdio\",\n\t\t\t\"command\": \"false\"\n\t\t}\n\t},\n\t\"inputs\": []\n}\n",
    );
    m.write(
        ".codeium/windsurf/mcp_config.json",
        "{\n  \"mcpServers\": {\n    \"ws\": {\n      \"command\": \"false\"\n    }\n  }\n}\n",
    );
    m.write(
        ".codex/config.toml",
        "# my codex settings\nmodel = \"o3\"\n\n[mcp_servers.cx]\ncommand = \"false\" # keep this\n",
    );
    m.write(
        ".gemini/settings.json",
        "{\n  \"ui\": {\n    \"theme\": \"Default\"\n  },\n  \"mcpServers\": {\n    \"gem\": {\n      \"command\": \"false\"\n    }\n  }\n}\n",
    );
    m.write(
        ".gemini/trustedFolders.json",
        &serde_json::json!({ project: "TRUST_FOLDER" }).to_string(),
    );
    m
}

pub fn chmod(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Our binary in a real terminal: a tmux server of its own, one window, 200x50.
pub struct Tmux {
    socket: String,
}

impl Tmux {
    pub fn start(m: &Machine, args: &[&str]) -> Tmux {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let socket = format!("cem-setup-{}-{n}", std::process::id());
        let quote = |s: &str| format!("'{}'", s.replace('\'', "'\\''"));
        let mut line = String::from("env -i");
        for (k, v) in m.env() {
            line.push_str(&format!(" {k}={}", quote(&v)));
        }
        line.push_str(" TERM=xterm-256color ");
        line.push_str(&quote(EXE));
        for a in args {
            line.push(' ');
            line.push_str(&quote(a));
        }
        // The pane stays after the program ends, with its status on screen.
        line.push_str("; echo EXITED $?; exec cat");
        let st = Command::new("tmux")
            .args([
                "-L",
                &socket,
                "new-session",
                "-d",
                "-x",
                "200",
                "-y",
                "50",
                "-c",
            ])
            .arg(m.project())
            .args(["sh", "-c", &line])
            .status()
            .unwrap();
        assert!(st.success(), "tmux new-session");
        Tmux { socket }
    }

    pub fn screen(&self) -> String {
        let out = Command::new("tmux")
            .args([
                "-L",
                &self.socket,
                "capture-pane",
                "-p",
                "-J",
                "-S",
                "-2000",
            ])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Polls the screen until `text` shows (30 s at most).
    pub fn wait_for(&self, text: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let s = self.screen();
            if s.contains(text) {
                return s;
            }
            assert!(
                Instant::now() < deadline,
                "waited for {text:?}; the screen:\n{s}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn keys(&self, keys: &[&str]) {
        let st = Command::new("tmux")
            .args(["-L", &self.socket, "send-keys", "-t", "0"])
            .args(keys)
            .status()
            .unwrap();
        assert!(st.success());
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .status();
    }
}

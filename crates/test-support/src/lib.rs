//! Fixture MCP servers and helpers for code-executor-mcp's tests.
//!
//! - [`fixture`]: an MCP server with one tool per behaviour under test (the
//!   `fixture-server` binary serves it on stdio);
//! - [`Harness`]: starts the built `code-executor-mcp` binary with a config and talks to it
//!   as a real MCP client (rmcp) over stdio;
//! - [`oauth`]: a mock OAuth authorization server and an MCP server it protects, on
//!   loopback, for the login and refresh flows;
//! - [`otlp`]: an OTLP/HTTP trace receiver (JSON parsed into spans, protobuf kept raw);
//! - [`recording`]: the fixture over streamable HTTP, recording every request it receives;
//! - [`haproxy`]: HAProxy with the shipped configuration in front of replicas of the server;
//! - [`standin`]: stand-ins for the servers the product line's documents name (`zen`, `git`,
//!   `playwright`, `notion-workspace`), and a path-mapping proxy in front of a real server.

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers fail loudly"
)]

pub mod fixture;
pub mod haproxy;
pub mod http;
pub mod jwt;
pub mod oauth;
pub mod otlp;
pub mod postgres;
pub mod prism;
pub mod rawhttp;
pub mod recording;
pub mod standin;
mod temp;
mod tls;

use std::path::{Path, PathBuf};
use std::process::Stdio;

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};

pub use temp::TempConfig;
pub use tls::install_tls_provider;

/// Path of a binary of this workspace. The `test-support` binaries are (re)built once per
/// test process, so a fixture is never stale: `cargo test` does not build another
/// package's binaries by itself.
pub fn workspace_bin(name: &str) -> PathBuf {
    static BUILT: std::sync::Once = std::sync::Once::new();
    BUILT.call_once(|| {
        let status = nested_cargo()
            .args(["build", "--quiet", "-p", "test-support", "--bins"])
            .status();
        assert!(
            matches!(status, Ok(s) if s.success()),
            "cannot build the test-support binaries"
        );
    });
    let dir = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .map(|d| {
            if d.ends_with("deps") {
                d.parent().map(Path::to_path_buf).unwrap_or(d)
            } else {
                d
            }
        })
        .unwrap_or_else(|| PathBuf::from("target/debug"));
    let path = dir.join(name);
    if !path.exists() {
        let status = nested_cargo()
            .args(["build", "-p", "test-support", "--bins"])
            .status();
        assert!(
            matches!(status, Ok(s) if s.success()),
            "cannot build {name}"
        );
    }
    path
}

/// Cargo, run from a test, without the variables `cargo test` set for the test itself
/// (`CARGO_PKG_NAME`, `CARGO_MANIFEST_DIR`, ...). Build scripts watch some of them (ring's
/// does, through `rerun-if-env-changed`): inherited, they would make this build and the outer
/// one rebuild half the dependency tree for each other, every time.
fn nested_cargo() -> std::process::Command {
    let mut cmd = std::process::Command::new(env!("CARGO"));
    const SET_FOR_TESTS: &[&str] = &[
        "CARGO_PKG_",
        "CARGO_MANIFEST_",
        "CARGO_BIN_",
        "CARGO_CRATE_",
        "CARGO_PRIMARY_PACKAGE",
        "CARGO_TARGET_TMPDIR",
        "CARGO_RUSTC_CURRENT_DIR",
        "OUT_DIR",
    ];
    for (key, _) in std::env::vars_os() {
        if let Some(k) = key.to_str()
            && SET_FOR_TESTS.iter().any(|p| k.starts_with(p))
        {
            cmd.env_remove(&key);
        }
    }
    cmd
}

/// A config entry starting the fixture server under `name`.
pub fn fixture_entry(name: &str) -> Value {
    json!({ "command": workspace_bin("fixture-server"), "args": [name] })
}

/// The built server, driven by an rmcp client over stdio.
pub struct Harness {
    pub client: RunningService<RoleClient, ()>,
    pub pid: Option<u32>,
    _config: Option<TempConfig>,
}

impl Harness {
    /// Starts `exe` with `--config` for `servers` plus `extra_args`, with `env` added; the
    /// server's log goes to our stderr.
    pub async fn start(
        exe: &Path,
        servers: Value,
        extra_args: &[&str],
        env: &[(&str, &str)],
    ) -> Self {
        Self::start_inner(exe, servers, extra_args, env, false, None).await
    }

    /// Starts `exe` for `servers` with `settings` as its settings file
    /// (`CODE_EXECUTOR_CONFIG_PATH`), plus `env`. The settings file lives in the returned
    /// directory, which must outlive the server.
    pub async fn with_settings(
        exe: &Path,
        servers: Value,
        settings: &Value,
        env: &[(&str, &str)],
    ) -> (Self, TempConfig) {
        let dir = TempConfig::new(json!({}));
        let path = dir.dir.join("settings.json");
        std::fs::write(&path, settings.to_string()).expect("write settings");
        let mut all = vec![(
            "CODE_EXECUTOR_CONFIG_PATH",
            path.to_str().expect("utf-8 path"),
        )];
        all.extend_from_slice(env);
        let h = Self::start(exe, servers, &[], &all).await;
        (h, dir)
    }

    /// Like [`Harness::start`], with the server's log kept in a file ([`Harness::server_log`]).
    pub async fn start_capturing_log(
        exe: &Path,
        servers: Value,
        extra_args: &[&str],
        env: &[(&str, &str)],
    ) -> Self {
        Self::start_inner(exe, servers, extra_args, env, true, None).await
    }

    /// Like [`Harness::start`], in the working directory `cwd` (a project's files).
    pub async fn start_in(
        exe: &Path,
        servers: Value,
        extra_args: &[&str],
        env: &[(&str, &str)],
        cwd: &Path,
    ) -> Self {
        Self::start_inner(exe, servers, extra_args, env, false, Some(cwd)).await
    }

    async fn start_inner(
        exe: &Path,
        servers: Value,
        extra_args: &[&str],
        env: &[(&str, &str)],
        capture: bool,
        cwd: Option<&Path>,
    ) -> Self {
        let config = TempConfig::new(servers);
        let mut cmd = tokio::process::Command::new(exe);
        // Hermetic: only the given config, never the config files of clients on this machine.
        cmd.arg("--config")
            .arg(&config.path)
            .arg("--no-discover")
            .args(extra_args)
            .kill_on_drop(true);
        // Hermetic audit log: under the temp dir unless the test names one.
        cmd.env("XDG_STATE_HOME", config.dir.join("state"));
        // Hermetic tool cache too: no test sees tools another run cached.
        cmd.env("CODE_EXECUTOR_CACHE_DIR", config.dir.join("cache"));
        // And skills: saved under the temp dir unless the test names a directory.
        cmd.env("XDG_DATA_HOME", config.dir.join("data"));
        if let Some(cwd) = cwd {
            cmd.current_dir(cwd);
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
        let stderr = if capture {
            Stdio::from(std::fs::File::create(config.dir.join("server.log")).expect("log file"))
        } else {
            Stdio::inherit()
        };
        let (transport, _) = TokioChildProcess::builder(cmd)
            .stderr(stderr)
            .spawn()
            .expect("spawn server");
        let pid = transport.id();
        let client = ().serve(transport).await.expect("initialize");
        Harness {
            client,
            pid,
            _config: Some(config),
        }
    }

    /// The server's log so far (with [`Harness::start_capturing_log`]).
    pub fn server_log(&self) -> String {
        self._config
            .as_ref()
            .and_then(|c| std::fs::read_to_string(c.dir.join("server.log")).ok())
            .unwrap_or_default()
    }

    /// The default audit log of this server (under its temporary XDG_STATE_HOME).
    pub fn audit_path(&self) -> PathBuf {
        self._config
            .as_ref()
            .map(|c| c.dir.join("state/code-executor-mcp/audit.jsonl"))
            .unwrap_or_default()
    }

    pub async fn call(&self, tool: &str, args: Value) -> CallToolResult {
        let Value::Object(map) = args else {
            panic!("args must be an object")
        };
        self.client
            .peer()
            .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(map))
            .await
            .expect("tools/call")
    }

    /// Runs TypeScript and returns (structuredContent, isError).
    pub async fn exec(&self, code: &str) -> (Value, bool) {
        self.exec_with(json!({ "code": code })).await
    }

    pub async fn exec_with(&self, args: Value) -> (Value, bool) {
        self.run_tool("execute_typescript", args).await
    }

    /// Runs Python and returns (structuredContent, isError).
    pub async fn exec_python(&self, code: &str) -> (Value, bool) {
        self.exec_python_with(json!({ "code": code })).await
    }

    pub async fn exec_python_with(&self, args: Value) -> (Value, bool) {
        self.run_tool("execute_python", args).await
    }

    /// Calls an execution tool and returns (structuredContent, isError).
    ///
    /// With [`IN_SESSION`] set in the environment, every execution that names no session runs
    /// in a new one, which is ended (`reset`) as soon as it answers: the same attacks and
    /// cases then run in session workers, which must be as confined as pooled ones.
    pub async fn run_tool(&self, tool: &str, mut args: Value) -> (Value, bool) {
        let in_session = std::env::var_os(IN_SESSION).is_some()
            && tool.starts_with("execute_")
            && args.get("session").is_none();
        if in_session {
            args["session"] = json!("new");
        }
        let r = self.call(tool, args).await;
        let mut v = r.structured_content.unwrap_or(Value::Null);
        if in_session {
            if let Some(id) = v["session"]["id"].as_str().map(str::to_string) {
                self.call(tool, json!({"code": "", "session": id, "reset": true}))
                    .await;
            }
            if let Some(o) = v.as_object_mut() {
                o.remove("session");
            }
        }
        (v, r.is_error == Some(true))
    }

    /// One language's pool from `health` (`js` or `python`).
    pub async fn pool(&self, language: &str) -> Value {
        let (v, _) = self.run_tool("health", json!({})).await;
        v["pools"]
            .as_array()
            .and_then(|p| p.iter().find(|p| p["language"] == language).cloned())
            .unwrap_or_else(|| panic!("no {language} pool in health: {v}"))
    }

    /// The MCP config file the server was started with.
    pub fn config_path(&self) -> Option<&Path> {
        self._config.as_ref().map(|c| c.path.as_path())
    }
}

/// The two languages of the execute tools, for tests that run a case in both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    Ts,
    Py,
}

impl Lang {
    /// The tool that runs this language.
    pub fn tool(self) -> &'static str {
        match self {
            Lang::Ts => "execute_typescript",
            Lang::Py => "execute_python",
        }
    }

    /// `ts` for TypeScript, `py` for Python.
    pub fn pick<T>(self, ts: T, py: T) -> T {
        match self {
            Lang::Ts => ts,
            Lang::Py => py,
        }
    }
}

/// Environment variable under which [`Harness`] runs every execution in a session of its own
/// (`scripts/test.sh` runs the escape suites a second time with it).
pub const IN_SESSION: &str = "CODE_EXECUTOR_TEST_IN_SESSION";

/// Environment variable under which a sandbox or escape test that cannot run fails instead of
/// skipping (`scripts/test.sh` and CI set it).
pub const REQUIRE_SANDBOX: &str = "CODE_EXECUTOR_REQUIRE_SANDBOX";

/// Says loudly that a test was skipped, and why.
#[expect(
    clippy::print_stderr,
    reason = "a skipped test says so where the test output goes"
)]
pub fn skip_loudly(reason: &str) {
    eprintln!("\n==================== SKIP: {reason} ====================\n");
}

/// A sandbox capability is missing: a failure under [`REQUIRE_SANDBOX`]`=1`, else a loud SKIP.
pub fn skip_or_fail_sandbox(reason: &str) {
    if std::env::var_os(REQUIRE_SANDBOX).is_some_and(|v| v == "1") {
        panic!("{reason} ({REQUIRE_SANDBOX}=1 makes this a failure)");
    }
    skip_loudly(reason);
}

/// Sets a path's permission bits.
pub fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

/// A fresh temporary directory of mode 0755 (the sandbox's uid can traverse it), removed on
/// drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> Self {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("cem-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        set_mode(&dir, 0o755);
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

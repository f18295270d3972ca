//! Shared helpers for the attack tests: temp dirs, policies, payload builders, a runner with a
//! deadline, and the loud skip when the kernel cannot sandbox at all.
#![allow(
    dead_code,
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::unwrap_used,
    clippy::expect_used
)]

use std::ffi::OsString;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use sandbox::{ResourceLimits, SandboxMode, SandboxPolicy, WorkerCommand};

pub const PYTHON: &str = "/usr/bin/python3.11";
/// PYTHON's standard library (with `lib-dynload`, its extension modules).
pub const PYTHON_STDLIB: &str = "/usr/lib/python3.11";
pub const SH: &str = "/bin/sh";
pub const HELPER: &str = env!("CARGO_BIN_EXE_sandbox-probe");
/// Generous: the slowest payload here takes well under a second.
pub const DEADLINE: Duration = Duration::from_secs(30);

/// Python prelude: `attempt(f)` prints `OK <result>` or `BLOCKED <errno name>`.
pub const PRELUDE: &str = r#"
import errno, os, sys
def attempt(f):
    try:
        r = f()
        print("OK", r, flush=True)
    except OSError as e:
        print("BLOCKED", errno.errorcode.get(e.errno, e.errno), flush=True)
"#;

/// A directory under /tmp, readable by anyone (so `nobody` can traverse to it), removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> Self {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = PathBuf::from(format!(
            "/tmp/sandbox-test-{tag}-{}-{n}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        Self(path)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A scratch dir and, beside it, a pretend home directory holding a secret.
pub struct Fixture {
    pub scratch: TempDir,
    pub home: TempDir,
    pub secret: PathBuf,
}

pub const SECRET: &str = "canary-secret-4242";

impl Fixture {
    pub fn new(tag: &str) -> Self {
        let scratch = TempDir::new(&format!("{tag}-scratch"));
        let home = TempDir::new(&format!("{tag}-home"));
        let secret = home.path().join("credentials");
        std::fs::write(&secret, SECRET).unwrap();
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o644)).unwrap();
        Self {
            scratch,
            home,
            secret,
        }
    }

    /// The payloads here are `sh` (which needs nothing but its own libraries, added by
    /// `sandbox::command`) and [`PYTHON`], which also needs [`python_view`].
    pub fn policy(&self, mode: SandboxMode) -> SandboxPolicy {
        SandboxPolicy {
            mode,
            read_only_paths: python_view(),
            hidden_paths: Vec::new(),
            data_paths: Vec::new(),
            scratch_dir: Some(self.scratch.path().to_owned()),
            scratch_mount_at: None,
            limits: ResourceLimits::default(),
            helper_exe: Some(HELPER.into()),
        }
    }
}

/// What [`PYTHON`] reads besides itself: its standard library and the shared libraries of its
/// extension modules (the host's server computes the same from the interpreter's paths).
pub fn python_view() -> Vec<PathBuf> {
    static VIEW: OnceLock<Vec<PathBuf>> = OnceLock::new();
    VIEW.get_or_init(|| {
        let dynload = Path::new(PYTHON_STDLIB).join("lib-dynload");
        let modules: Vec<PathBuf> = std::fs::read_dir(&dynload)
            .map(|entries| entries.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        let mut view = vec![PathBuf::from(PYTHON_STDLIB)];
        view.extend(sandbox::shared_libraries(&modules));
        view
    })
    .clone()
}

pub fn python(code: &str) -> WorkerCommand {
    WorkerCommand {
        program: PYTHON.into(),
        args: vec![
            "-I".into(),
            "-c".into(),
            format!("{PRELUDE}\n{code}").into(),
        ],
        env: vec![
            ("PATH".into(), "/usr/bin:/bin".into()),
            ("LC_ALL".into(), "C.UTF-8".into()),
        ],
        cwd: None,
    }
}

pub fn sh(script: &str) -> WorkerCommand {
    WorkerCommand {
        program: SH.into(),
        args: vec!["-c".into(), script.into()],
        env: vec![("PATH".into(), "/usr/bin:/bin".into())],
        cwd: None,
    }
}

pub struct Outcome {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl Outcome {
    pub fn lines(&self) -> Vec<&str> {
        self.stdout.lines().collect()
    }
}

impl std::fmt::Debug for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "status: {}\nstdout:\n{}\nstderr:\n{}",
            self.status, self.stdout, self.stderr
        )
    }
}

pub fn spawn(cmd: &WorkerCommand, policy: &SandboxPolicy) -> Child {
    let mut command = sandbox::command(cmd, policy).expect("command");
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command.spawn().expect("spawn")
}

/// Runs to completion; kills the group and fails the test at the deadline.
pub fn run(cmd: &WorkerCommand, policy: &SandboxPolicy) -> Outcome {
    let mut child = spawn(cmd, policy);
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > DEADLINE {
            sandbox::kill_group(child.id());
            let _ = child.wait();
            panic!("payload did not finish within {DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Outcome {
        status,
        stdout: out_reader.join().unwrap(),
        stderr: err_reader.join().unwrap(),
    }
}

/// Set to `1` (scripts/test.sh and CI do) to make a missing sandbox capability a failure
/// instead of a skip.
pub const REQUIRE_SANDBOX: &str = "CODE_EXECUTOR_REQUIRE_SANDBOX";

/// Whether [`REQUIRE_SANDBOX`] is set to `1`.
pub fn sandbox_required() -> bool {
    std::env::var_os(REQUIRE_SANDBOX).is_some_and(|v| v == "1")
}

/// A test that cannot run because of a machine fact unrelated to sandbox capability (no IPv6
/// loopback, not root): a loud SKIP line on stdout and stderr, never a failure.
pub fn skip_loudly(reason: &str) {
    println!("\n==================== SKIP: {reason} ====================\n");
    eprintln!("\n==================== SKIP: {reason} ====================\n");
}

/// A sandbox capability this test needs is missing: a failure under [`REQUIRE_SANDBOX`], else a
/// loud SKIP.
pub fn skip_or_fail_sandbox(reason: &str) {
    if sandbox_required() {
        panic!("{reason} ({REQUIRE_SANDBOX}=1 makes this a failure)");
    }
    skip_loudly(reason);
}

/// True (after printing a loud SKIP line) when this kernel cannot give the minimum guarantee;
/// the caller returns. Panics instead under [`REQUIRE_SANDBOX`]. On a machine that can
/// sandbox, this never skips.
pub fn skip_unless_sandbox_available() -> bool {
    static REPORT: OnceLock<Option<String>> = OnceLock::new();
    let missing = REPORT.get_or_init(|| {
        let policy = SandboxPolicy::new(SandboxMode::Enforce, Some(HELPER.into()));
        let report = sandbox::probe(&policy);
        report
            .first_missing_required()
            .map(|l| format!("layer `{}` unavailable: {}", l.name, l.detail))
    });
    match missing {
        Some(reason) => {
            skip_or_fail_sandbox(&format!("the sandbox cannot be set up: {reason}"));
            true
        }
        None => false,
    }
}

/// Like `skip_unless_sandbox_available`, for one path the test needs.
pub fn skip_unless_exists(path: &str) -> bool {
    if Path::new(path).exists() {
        return false;
    }
    skip_loudly(&format!("{path} does not exist on this machine"));
    true
}

pub fn os(s: &str) -> OsString {
    s.into()
}

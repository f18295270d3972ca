//! Linux confinement for worker processes.
//!
//! The host describes what a worker is ([`WorkerCommand`]) and how it is confined
//! ([`SandboxPolicy`]); [`command`] turns both into a `std::process::Command`. The child it
//! starts leads its own session and process group, dies with the host, sees only the
//! environment it was given, and inherits no descriptor but stdin, stdout and stderr.
//!
//! In [`SandboxMode::Enforce`] the command re-enters the host binary as a helper
//! (`<helper_exe> __sandbox --host-pid=N`, see [`HELPER_ARG`] and [`helper_main`]) that applies
//! the numbered, fail-closed sequence documented in `docs/sandbox.md` before it executes the
//! payload: user, mount, PID, network, IPC and UTS namespaces; a minimal read-only filesystem
//! view with one writable scratch directory; Landlock; rlimits; no capabilities; seccomp.
//! Should a required layer be missing, the helper writes a message naming it to stderr and
//! exits with [`EXIT_SETUP_FAILED`]; [`probe`] reports every layer for a `doctor` command.
//!
//! This is the only crate allowed `unsafe`; every block says what could still go wrong. For
//! that reason it also holds [`heap`], how the process's allocator treats large blocks (used by
//! the server and the JavaScript worker, not by confinement).

mod cgroup;
mod config;
pub mod container;
mod error;
mod forker;
pub mod heap;
mod helper;
mod landlock;
mod libraries;
mod limits;
mod mounts;
mod namespaces;
mod policy;
mod probe;
mod report;
mod seccomp;
mod spawn;
mod sys;
mod view;

use std::path::PathBuf;
use std::process::Command;

pub use error::SandboxError;
pub use forker::on_forker_thread;
pub use policy::{
    EXIT_BAD_INVOCATION, EXIT_EXEC_FAILED, EXIT_SETUP_FAILED, HELPER_ARG, ResourceLimits,
    SandboxMode, SandboxPolicy, WorkerCommand,
};
pub use report::{LayerStatus, SandboxReport, layer};

/// Builds the command that starts `target` under `policy`. The caller sets stdio and spawns it
/// (e.g. through `tokio::process::Command::from`) on the thread [`on_forker_thread`] runs: the
/// child's parent-death signal follows the thread that forks it, so a child spawned on a
/// thread that later exits is killed then. The child leads its own session and process
/// group, so [`kill_group`] with its pid ends every process of the sandbox.
///
/// In [`SandboxMode::Enforce`] this only checks what is cheap to check (paths, the kernel's
/// user-namespace switches); a layer that fails later makes the child exit with
/// [`EXIT_SETUP_FAILED`] and a message on stderr. Call [`probe`] once at start to refuse early.
pub fn command(target: &WorkerCommand, policy: &SandboxPolicy) -> Result<Command, SandboxError> {
    spawn::command(target, policy)
}

/// The shared libraries the ELF `objects` (executables, libraries, extension modules) load,
/// transitively, as the host's dynamic loader would find them (`PT_INTERP`, `DT_NEEDED`
/// through `DT_RPATH`/`DT_RUNPATH` with `$ORIGIN`, `/etc/ld.so.cache`, the default
/// directories), plus `libgcc_s.so.1`, which glibc loads at run time for thread exit. The paths
/// are those the loader opens (symlinks not resolved), in a stable order. Only headers are
/// read; non-ELF files contribute nothing and names found nowhere are left out.
///
/// [`command`] adds the payload program's own libraries by itself; use this for what the
/// program loads later (an interpreter's extension modules) and put the result in
/// [`SandboxPolicy::read_only_paths`]. Computing it once, at start, is enough.
pub fn shared_libraries(objects: &[PathBuf]) -> Vec<PathBuf> {
    libraries::closure(objects, libraries::RUNTIME_DLOPENED)
}

/// Runs the sandbox helper. Call it first thing in `main` when `argv[1] == HELPER_ARG`, before
/// any thread or async runtime starts, and return its exit code from `main`.
pub fn helper_main() -> std::process::ExitCode {
    helper::main_with(None)
}

pub use helper::InlinePayload;

/// [`helper_main`] for a host whose own binary is also a payload (a worker mode chosen by its
/// arguments): when the payload program is this very binary, `inline` is offered the payload's
/// arguments in the payload process, after every layer is in place, where `execve` would run
/// it; a payload it takes is run there without loading the binary a second time. Only the
/// `execve` is saved: the process is confined exactly as the executed program would be, and
/// its environment is the one it would have been given.
pub fn helper_main_with(inline: InlinePayload) -> std::process::ExitCode {
    helper::main_with(Some(inline))
}

/// Reports, layer by layer, what [`command`] would enforce under `policy` on this machine, by
/// running the helper up to the point where it would execute a payload.
pub fn probe(policy: &SandboxPolicy) -> SandboxReport {
    probe::probe(policy)
}

/// Like [`probe`], but an error naming the first missing required layer when the minimum
/// guarantee (no network, no host files outside the view, no escape from the process tree)
/// cannot be met in [`SandboxMode::Enforce`].
pub fn ensure_available(policy: &SandboxPolicy) -> Result<SandboxReport, SandboxError> {
    let report = probe(policy);
    match report.first_missing_required() {
        Some(missing) if policy.mode == SandboxMode::Enforce => Err(SandboxError::Unavailable {
            layer: missing.name,
            reason: missing.detail.clone(),
            remedy: report::remedy(missing.name),
        }),
        _ => Ok(report),
    }
}

/// Kills every process in the worker's process group (the worker is its leader). Under
/// [`SandboxMode::Enforce`] the group holds the helper and the namespace's init; when that init
/// dies the kernel kills every process left in the PID namespace, including any that left the
/// group with `setsid`. A worker killed so early that it has not made its session yet (the
/// helper's first step) has no group: it is killed alone, before it could start anything.
/// Pids 0 and 1 are ignored: `killpg(0)` would hit the caller's own group. The group is set to
/// the lowest priority (nice 19) first, so that its processes free their memory on idle CPU.
pub fn kill_group(pid: u32) {
    if pid <= 1 {
        return;
    }
    if let Ok(pid) = i32::try_from(pid) {
        // A process killed tears its memory down itself, on its own time: a worker that held
        // a large value frees tens of megabytes of pages, milliseconds of CPU that would
        // compete with the answer being written. At the lowest priority it takes what is idle.
        // Any user may lower the priority of their own processes; a failure changes nothing.
        // SAFETY: setpriority takes plain integers and touches no memory of ours.
        unsafe {
            nix::libc::setpriority(nix::libc::PRIO_PGRP, pid as nix::libc::id_t, 19);
        }
        let pid = nix::unistd::Pid::from_raw(pid);
        let killed = nix::sys::signal::killpg(pid, nix::sys::signal::Signal::SIGKILL);
        if killed == Err(nix::errno::Errno::ESRCH) {
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::CommandExt;

    /// The nice value of `pid` from `/proc/PID/stat` (a zombie's too, until it is reaped).
    fn nice(pid: u32) -> i64 {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // Fields after the command's closing parenthesis: state is the 3rd field, nice the 19th.
        let after = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest)
            .unwrap_or_default();
        after
            .split_whitespace()
            .nth(16)
            .and_then(|n| n.parse().ok())
            .unwrap_or(i64::MIN)
    }

    #[test]
    fn a_killed_group_dies_at_the_lowest_priority() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .expect("sleep starts");
        let before = nice(child.id());
        if before >= 19 {
            eprintln!("SKIP: this test runs at the lowest priority already (nice {before})");
            let _ = child.kill();
            let _ = child.wait();
            return;
        }
        super::kill_group(child.id());
        // Not reaped yet: the process is a zombie whose stat still shows its priority.
        assert_eq!(
            nice(child.id()),
            19,
            "kill_group lowers the group's priority first"
        );
        let status = child.wait().expect("reaped");
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(9), "{status:?}");
    }
}

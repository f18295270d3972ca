//! Confinement for worker processes, behind one interface ([`Backend`]) that each operating
//! system implements in a module of its own: Linux (`linux/`, namespaces, Landlock,
//! seccomp, rlimits, cgroups) is the backend there is; any other system gets `unsupported`,
//! which starts nothing confined and says so. What every backend must guarantee, and how
//! the escape suites judge one, is in `docs/sandbox.md` ("Backends").
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

mod backend;
mod error;
pub mod heap;
#[cfg(target_os = "linux")]
mod linux;
mod policy;
pub mod process;
mod report;
// Compiled for its tests on Linux too, so the fallback is checked where CI runs.
#[cfg(any(not(target_os = "linux"), test))]
mod unsupported;

use std::path::PathBuf;
use std::process::{Command, ExitCode};

pub use backend::{Backend, InlinePayload};
pub use error::{SandboxError, TemplateUnsupported};
#[cfg(target_os = "linux")]
pub use linux::container;
#[cfg(target_os = "linux")]
pub use linux::layers::layer;
#[cfg(target_os = "linux")]
pub use linux::template_host::{
    Template, TemplateWorker, pidfd_ended, pidfd_exit_status, pidfd_kill_group,
    support as template_support,
};
pub use policy::{
    EXIT_BAD_INVOCATION, EXIT_EXEC_FAILED, EXIT_SETUP_FAILED, HELPER_ARG, ResourceLimits,
    SandboxMode, SandboxPolicy, WorkerCommand,
};
pub use report::{LayerStatus, SandboxReport};
#[cfg(not(target_os = "linux"))]
pub use unsupported::template::{
    Template, TemplateWorker, pidfd_ended, pidfd_exit_status, pidfd_kill_group,
    support as template_support,
};

/// The backend of this build.
#[cfg(target_os = "linux")]
pub type Active = linux::Linux;
/// The backend of this build.
#[cfg(not(target_os = "linux"))]
pub type Active = unsupported::Unsupported;

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
    Active::command(target, policy)
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
    Active::shared_libraries(objects)
}

/// Runs the sandbox helper. Call it first thing in `main` when `argv[1] == HELPER_ARG`, before
/// any thread or async runtime starts, and return its exit code from `main`.
pub fn helper_main() -> ExitCode {
    Active::helper_main(None)
}

/// [`helper_main`] for a host whose own binary is also a payload (a worker mode chosen by its
/// arguments): when the payload program is this very binary, `inline` is offered the payload's
/// arguments in the payload process, after every layer is in place, where `execve` would run
/// it; a payload it takes is run there without loading the binary a second time. Only the
/// `execve` is saved: the process is confined exactly as the executed program would be, and
/// its environment is the one it would have been given.
pub fn helper_main_with(inline: InlinePayload) -> ExitCode {
    Active::helper_main(Some(inline))
}

/// Reports, layer by layer, what [`command`] would enforce under `policy` on this machine, by
/// running the helper up to the point where it would execute a payload.
pub fn probe(policy: &SandboxPolicy) -> SandboxReport {
    Active::probe(policy)
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
            remedy: missing.remedy,
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
    Active::kill_group(pid);
}

/// Runs `job` on the one thread that starts every confined child and never exits, and
/// returns once it is queued: a child's parent-death signal follows the thread that forked
/// it, so only children forked there die exactly when the host does.
pub fn on_forker_thread(job: impl FnOnce() + Send + 'static) -> Result<(), SandboxError> {
    Active::on_forker_thread(Box::new(job))
}

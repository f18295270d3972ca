//! The Linux backend: a helper the host binary re-enters applies a numbered, fail-closed
//! sequence before it executes the payload (user, mount, PID, network, IPC and UTS
//! namespaces; a minimal read-only filesystem view with one writable scratch directory;
//! Landlock; rlimits; no capabilities; seccomp; a cgroup where one is delegated), documented
//! in `docs/sandbox.md`. Every module here is Linux-only, and only this one names the others
//! to the rest of the crate.

mod cgroup;
mod config;
pub mod container;
pub(crate) mod facts;
mod forker;
mod helper;
mod landlock;
pub(crate) mod layers;
mod libraries;
mod limits;
mod mounts;
mod namespaces;
mod probe;
mod seccomp;
mod spawn;
mod sys;
mod template;
pub(crate) mod template_host;
mod view;

use std::path::PathBuf;
use std::process::{Command, ExitCode};

use crate::backend::{Backend, InlinePayload};
use crate::error::SandboxError;
use crate::policy::{SandboxPolicy, WorkerCommand};
use crate::report::SandboxReport;

/// The Linux backend (see the module's documentation).
pub struct Linux;

impl Backend for Linux {
    const NAME: &'static str = "linux";

    fn command(target: &WorkerCommand, policy: &SandboxPolicy) -> Result<Command, SandboxError> {
        spawn::command(target, policy)
    }

    fn shared_libraries(objects: &[PathBuf]) -> Vec<PathBuf> {
        libraries::closure(objects, libraries::RUNTIME_DLOPENED)
    }

    fn helper_main(inline: Option<InlinePayload>) -> ExitCode {
        helper::main_with(inline, template::init)
    }

    fn probe(policy: &SandboxPolicy) -> SandboxReport {
        probe::probe(policy)
    }

    fn kill_group(pid: u32) {
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

    fn on_forker_thread(job: Box<dyn FnOnce() + Send>) -> Result<(), SandboxError> {
        forker::on_forker_thread(job)
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
        <super::Linux as crate::backend::Backend>::kill_group(child.id());
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

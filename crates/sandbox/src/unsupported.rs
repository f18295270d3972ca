//! The backend of a system without one: nothing is confined, so nothing confined is
//! started. In [`SandboxMode::Enforce`] every command is refused with an error that says so;
//! in [`SandboxMode::Disabled`] (chosen explicitly, for development) the payload is started
//! as a plain child with only the environment it was given, as the Linux backend does in that
//! mode. A backend for another system (macOS Seatbelt, Windows job objects and AppContainers)
//! replaces this module for its `target_os`, implementing [`Backend`] with the guarantees of
//! `docs/sandbox.md` ("Backends").

use std::path::PathBuf;
use std::process::{Command, ExitCode};

use crate::backend::{Backend, InlinePayload};
use crate::error::SandboxError;
use crate::policy::{EXIT_BAD_INVOCATION, SandboxMode, SandboxPolicy, WorkerCommand};
use crate::report::SandboxReport;

/// The one layer this backend reports: confinement itself, never in force.
const LAYER: &str = "confinement";
const REMEDY: &str = "this system has no sandbox backend: run on Linux, or choose the \
                      unsandboxed mode explicitly for development";

/// No confinement on this system.
pub struct Unsupported;

impl Backend for Unsupported {
    const NAME: &'static str = "none";

    fn command(target: &WorkerCommand, policy: &SandboxPolicy) -> Result<Command, SandboxError> {
        if policy.mode == SandboxMode::Enforce {
            return Err(SandboxError::Unavailable {
                layer: LAYER,
                reason: format!("{} has no sandbox backend", std::env::consts::OS),
                remedy: REMEDY,
            });
        }
        let mut cmd = Command::new(&target.program);
        cmd.args(&target.args)
            .env_clear()
            .envs(target.env.iter().map(|(k, v)| (k, v)));
        if let Some(dir) = &target.cwd {
            cmd.current_dir(dir);
        }
        Ok(cmd)
    }

    fn shared_libraries(_objects: &[PathBuf]) -> Vec<PathBuf> {
        Vec::new()
    }

    fn helper_main(_inline: Option<InlinePayload>) -> ExitCode {
        ExitCode::from(EXIT_BAD_INVOCATION)
    }

    fn probe(policy: &SandboxPolicy) -> SandboxReport {
        let detail = format!("{} has no sandbox backend", std::env::consts::OS);
        SandboxReport::all(policy.mode, &[(LAYER, true, REMEDY)], false, &detail)
    }

    fn kill_group(_pid: u32) {}

    fn on_forker_thread(job: Box<dyn FnOnce() + Send>) -> Result<(), SandboxError> {
        job();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn echo() -> WorkerCommand {
        WorkerCommand {
            program: PathBuf::from("/bin/sh"),
            args: vec!["-c".into(), "printf %s \"$GREETING\"".into()],
            env: vec![("GREETING".into(), "hello".into())],
            cwd: None,
        }
    }

    #[test]
    fn enforce_is_refused_and_says_why() {
        let policy = SandboxPolicy::new(SandboxMode::Enforce, None);
        let Err(e) = Unsupported::command(&echo(), &policy) else {
            panic!("an unconfined command in Enforce mode");
        };
        assert!(e.to_string().contains("no sandbox backend"), "{e}");
        let report = Unsupported::probe(&policy);
        assert!(!report.minimum_guarantee_met());
        assert!(report.to_string().contains("REFUSING"), "{report}");
    }

    #[test]
    fn disabled_starts_a_plain_child_with_only_its_environment() {
        let policy = SandboxPolicy::new(SandboxMode::Disabled, None);
        let out = Unsupported::command(&echo(), &policy)
            .map(|mut c| c.output())
            .map_err(|e| e.to_string());
        let out = out.map(|o| o.map(|o| String::from_utf8_lossy(&o.stdout).into_owned()));
        assert!(matches!(out, Ok(Ok(ref s)) if s == "hello"), "{out:?}");
    }
}

/// Templates (Linux only): never available here.
#[cfg(not(target_os = "linux"))]
pub(crate) mod template {
    use std::ffi::OsString;
    use std::os::fd::{BorrowedFd, OwnedFd};

    use crate::error::{SandboxError, TemplateUnsupported};
    use crate::policy::{SandboxPolicy, WorkerCommand};

    /// Never started on this system.
    #[derive(Debug)]
    pub struct Template;

    /// Never made on this system.
    #[derive(Debug)]
    pub struct TemplateWorker {
        pub pid: u32,
        pub pidfd: OwnedFd,
        pub stdin: OwnedFd,
        pub stdout: OwnedFd,
        pub stderr: OwnedFd,
    }

    pub fn support() -> Result<(), TemplateUnsupported> {
        Err(TemplateUnsupported::Platform)
    }

    impl Template {
        pub fn start(_: &WorkerCommand, _: &SandboxPolicy) -> Result<Self, SandboxError> {
            Err(SandboxError::Io(std::io::Error::other(
                TemplateUnsupported::Platform.to_string(),
            )))
        }
        pub fn pid(&self) -> u32 {
            0
        }
        pub fn spawn(&self, _: &[(OsString, OsString)]) -> Result<TemplateWorker, SandboxError> {
            Err(SandboxError::Io(std::io::Error::other(
                TemplateUnsupported::Platform.to_string(),
            )))
        }
        pub fn is_alive(&self) -> bool {
            false
        }
    }

    pub fn pidfd_exit_status(_: BorrowedFd<'_>) -> Option<i32> {
        None
    }
    pub fn pidfd_ended(_: BorrowedFd<'_>) -> bool {
        true
    }
    pub fn pidfd_kill_group(_: BorrowedFd<'_>) {}
}

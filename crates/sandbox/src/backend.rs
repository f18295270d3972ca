//! The interface every sandbox backend implements ([`Backend`]); the crate's functions call
//! the one this build uses.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{Command, ExitCode};

use crate::error::SandboxError;
use crate::policy::{SandboxPolicy, WorkerCommand};
use crate::report::SandboxReport;

/// A worker mode the host binary runs in the payload process itself (see
/// `helper_main_with`): offered the payload's arguments, it returns the exit code of a
/// payload it ran, or `None` to have the program executed.
pub type InlinePayload = fn(&[OsString]) -> Option<ExitCode>;

/// What a sandbox backend provides; the functions of this crate call the one this build
/// uses (`Active`). A backend confines a payload with the guarantees of `docs/sandbox.md`
/// ("Backends") or refuses to start it in [`crate::SandboxMode::Enforce`]; it never runs code with
/// less than it reports.
pub trait Backend {
    /// The backend's name, as `doctor` and `health` show it.
    const NAME: &'static str;

    /// The command that starts `target` under `policy` (see `command`).
    fn command(target: &WorkerCommand, policy: &SandboxPolicy) -> Result<Command, SandboxError>;

    /// The shared objects `objects` load, to grant read access to (see `shared_libraries`).
    fn shared_libraries(objects: &[PathBuf]) -> Vec<PathBuf>;

    /// The helper's entry point, when the binary re-enters as one (see `helper_main`).
    fn helper_main(inline: Option<InlinePayload>) -> ExitCode;

    /// Layer by layer, what [`Backend::command`] would enforce under `policy` here.
    fn probe(policy: &SandboxPolicy) -> SandboxReport;

    /// Ends every process a worker started (see `kill_group`).
    fn kill_group(pid: u32);

    /// Runs `job` on the thread every confined child is started from (see
    /// `on_forker_thread`).
    fn on_forker_thread(job: Box<dyn FnOnce() + Send>) -> Result<(), SandboxError>;
}

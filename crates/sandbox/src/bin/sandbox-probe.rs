//! Test and diagnosis binary: re-enters the sandbox helper the way the host binary does, and
//! otherwise prints the layer report for a default policy (`sandbox-probe [scratch-dir]`).

use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    // As in the host: first thing, before any thread starts.
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == sandbox::HELPER_ARG)
    {
        return sandbox::helper_main();
    }
    let mut policy =
        sandbox::SandboxPolicy::new(sandbox::SandboxMode::Enforce, std::env::current_exe().ok());
    policy.scratch_dir = std::env::args_os().nth(1).map(Into::into);
    let report = sandbox::probe(&policy);
    let _ = write!(std::io::stdout(), "{report}");
    if report.minimum_guarantee_met() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

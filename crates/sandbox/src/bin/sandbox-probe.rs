//! Test and diagnosis binary for the sandbox crate. It re-enters the helper exactly as the host
//! binary does, and otherwise:
//!
//! - `sandbox-probe [SCRATCH]`: prints the layer report (exit 1 if the minimum is not met);
//! - `sandbox-probe run [--disabled] [--scratch DIR] [--ro PATH]... [--hide DIR]... -- PROGRAM
//!   [ARGS]...`: runs one payload with inherited stdio and exits as it did;
//! - `sandbox-probe bench [N]`: median spawn-to-exit time of `/bin/true`, confined and not.

use std::error::Error;
use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::process::{ExitCode, Stdio};
use std::time::{Duration, Instant};

use sandbox::{SandboxMode, SandboxPolicy, WorkerCommand};

/// What a subcommand fails with: printed as `sandbox-probe: {e}`.
type Failure = Box<dyn Error>;

fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().collect();
    // As in the host: first thing, before any thread starts.
    if args.get(1).is_some_and(|a| a == sandbox::HELPER_ARG) {
        return sandbox::helper_main();
    }
    let result = match args.get(1).and_then(|a| a.to_str()) {
        Some("run") => run(&args[2..]),
        Some("bench") => bench(
            args.get(2)
                .and_then(|n| n.to_str()?.parse().ok())
                .unwrap_or(200),
        ),
        _ => probe(args.get(1).map(PathBuf::from)),
    };
    result.unwrap_or_else(|e| {
        let _ = writeln!(std::io::stderr(), "sandbox-probe: {e}");
        ExitCode::from(2)
    })
}

fn policy(mode: SandboxMode) -> SandboxPolicy {
    SandboxPolicy::new(mode, std::env::current_exe().ok())
}

fn probe(scratch: Option<PathBuf>) -> Result<ExitCode, Failure> {
    let mut policy = policy(SandboxMode::Enforce);
    policy.scratch_dir = scratch;
    let report = sandbox::probe(&policy);
    let _ = write!(std::io::stdout(), "{report}");
    Ok(if report.minimum_guarantee_met() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn run(args: &[OsString]) -> Result<ExitCode, Failure> {
    let mut policy = policy(SandboxMode::Enforce);
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match arg.to_str() {
            Some("--disabled") => policy.mode = SandboxMode::Disabled,
            Some("--scratch") => policy.scratch_dir = rest.next().map(PathBuf::from),
            Some("--ro") => policy
                .read_only_paths
                .extend(rest.next().map(PathBuf::from)),
            Some("--hide") => policy.hidden_paths.extend(rest.next().map(PathBuf::from)),
            Some("--") => break,
            _ => return Err(format!("unexpected argument {arg:?}").into()),
        }
    }
    let program = rest.next().ok_or("no program given")?;
    let target = WorkerCommand {
        program: program.into(),
        args: rest.cloned().collect(),
        env: vec![("PATH".into(), "/usr/bin:/bin".into())],
        cwd: None,
    };
    let mut cmd = sandbox::command(&target, &policy)?;
    let status = cmd.status()?;
    Ok(match status.code() {
        Some(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        None => ExitCode::from(
            128 + u8::try_from(std::os::unix::process::ExitStatusExt::signal(&status).unwrap_or(0))
                .unwrap_or(0),
        ),
    })
}

/// Median wall times over `n` runs per mode, the modes interleaved so that load from other
/// processes on the machine hits both alike: spawn until `/bin/true` has exited, and spawn until
/// the first byte `/bin/echo` writes (spawn-to-exec plus one write).
fn bench(n: usize) -> Result<ExitCode, Failure> {
    let n = n.max(1);
    let worker = |program: &str, args: &[&str]| WorkerCommand {
        program: program.into(),
        args: args.iter().map(Into::into).collect(),
        env: Vec::new(),
        cwd: None,
    };
    let truth = worker("/bin/true", &[]);
    let echo = worker("/bin/echo", &["x"]);
    let modes = [SandboxMode::Disabled, SandboxMode::Enforce];
    let mut to_exit: [Vec<Duration>; 2] = [Vec::new(), Vec::new()];
    let mut to_output: [Vec<Duration>; 2] = [Vec::new(), Vec::new()];
    for _ in 0..n {
        for (i, mode) in modes.iter().enumerate() {
            let policy = policy(*mode);
            let mut cmd = sandbox::command(&truth, &policy)?;
            cmd.stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::inherit());
            let start = Instant::now();
            let status = cmd.status()?;
            to_exit[i].push(start.elapsed());
            if !status.success() {
                return Err(format!("/bin/true failed under {mode:?}: {status}").into());
            }

            let mut cmd = sandbox::command(&echo, &policy)?;
            cmd.stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit());
            let start = Instant::now();
            let mut child = cmd.spawn()?;
            let mut byte = [0u8; 1];
            let mut stdout = child.stdout.take().ok_or("no stdout")?;
            std::io::Read::read_exact(&mut stdout, &mut byte)?;
            to_output[i].push(start.elapsed());
            let _ = child.wait();
        }
    }
    let median = |v: &mut Vec<Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    let mut out = std::io::stdout();
    for (name, times) in [
        ("spawn to exit of /bin/true", &mut to_exit),
        ("spawn to first output of /bin/echo", &mut to_output),
    ] {
        let unconfined = median(&mut times[0]);
        let confined = median(&mut times[1]);
        let _ = writeln!(
            out,
            "{name}: unconfined {unconfined:?}, confined {confined:?}, overhead {:?} (medians of {n})",
            confined.saturating_sub(unconfined)
        );
    }
    Ok(ExitCode::SUCCESS)
}

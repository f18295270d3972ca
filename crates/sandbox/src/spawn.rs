//! Host side: turn a worker and a policy into a `Command`.
//!
//! Both modes give the child its own session and process group, a parent-death SIGKILL,
//! exactly the environment of the [`WorkerCommand`] and no descriptor but 0, 1 and 2. In
//! `Enforce` mode the child is the helper (this binary, re-entered), which reads its
//! configuration from an inherited memfd and confines itself before executing the payload.

use std::io::Write;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

use nix::sys::memfd::{MFdFlags, memfd_create};
use nix::sys::prctl;
use nix::sys::signal::Signal;
use nix::unistd;

use crate::config::HelperConfig;
use crate::{
    HELPER_ARG, SandboxError, SandboxMode, SandboxPolicy, WorkerCommand, namespaces, report,
};

pub(crate) fn command(
    target: &WorkerCommand,
    policy: &SandboxPolicy,
) -> Result<Command, SandboxError> {
    validate(target, policy)?;
    match policy.mode {
        SandboxMode::Disabled => Ok(unconfined(target, policy)),
        SandboxMode::Enforce => confined(target, policy, false),
    }
}

/// The helper command for `probe`: every layer applied, then a report instead of a payload.
pub(crate) fn probe_command(policy: &SandboxPolicy) -> Result<Command, SandboxError> {
    let target = WorkerCommand {
        program: std::path::PathBuf::new(),
        args: Vec::new(),
        env: Vec::new(),
        cwd: None,
    };
    confined(&target, policy, true)
}

/// Unconfined, the scratch directory is wherever it is on the host.
fn unconfined(target: &WorkerCommand, policy: &SandboxPolicy) -> Command {
    let mut cmd = Command::new(&target.program);
    cmd.args(&target.args);
    cmd.env_clear();
    cmd.envs(target.env.iter().map(|(k, v)| (k, v)));
    if let Some(cwd) = target.cwd.as_ref().or(policy.scratch_dir.as_ref()) {
        cmd.current_dir(cwd);
    }
    install_pre_exec(&mut cmd, None);
    cmd
}

fn confined(
    target: &WorkerCommand,
    policy: &SandboxPolicy,
    probe: bool,
) -> Result<Command, SandboxError> {
    let helper = policy.helper_exe.as_ref().ok_or_else(|| {
        SandboxError::Invalid(
            "SandboxPolicy::helper_exe is required in Enforce mode (pass std::env::current_exe())"
                .into(),
        )
    })?;
    if !helper.is_absolute() || !helper.is_file() {
        return Err(SandboxError::Invalid(format!(
            "helper executable {} is not an absolute path to a file",
            helper.display()
        )));
    }
    namespaces::preflight().map_err(|reason| SandboxError::Unavailable {
        layer: report::layer::USER_NAMESPACE,
        reason,
        remedy: report::remedy(report::layer::USER_NAMESPACE),
    })?;
    let mut config = HelperConfig {
        probe,
        program: (!probe).then(|| target.program.clone()),
        args: target.args.clone(),
        env: target
            .env
            .iter()
            .map(|(k, v)| {
                let mut entry = k.clone();
                entry.push("=");
                entry.push(v);
                entry
            })
            .collect(),
        cwd: target.cwd.clone(),
        read_only: if probe {
            policy.read_only_paths.clone()
        } else {
            // The program's own shared libraries (cached per program file), the locale its
            // environment names, then the rest.
            let mut paths = crate::libraries::of_program(&target.program).to_vec();
            paths.extend(crate::libraries::locale_files(&target.env));
            paths.extend(policy.read_only_paths.iter().cloned());
            paths
        },
        hidden: policy.hidden_paths.clone(),
        data: policy.data_paths.clone(),
        scratch: policy.scratch_dir.clone(),
        scratch_at: policy.scratch_mount_at.clone(),
        limits: policy.limits,
        plan: None,
    };
    config.plan = crate::mounts::cached(&config);
    let memfd = memfd_create(c"code-executor-sandbox-config", MFdFlags::MFD_CLOEXEC)
        .map_err(std::io::Error::from)?;
    let memfd = crate::sys::above_stdio(memfd)?;
    std::fs::File::from(memfd.try_clone()?).write_all(&config.encode())?;

    let mut cmd = Command::new(helper);
    cmd.arg(HELPER_ARG);
    cmd.arg(format!("--config-fd={}", memfd.as_raw_fd()));
    cmd.env_clear();
    cmd.current_dir("/");
    install_pre_exec(&mut cmd, Some(memfd));
    Ok(cmd)
}

/// Installs the part every child gets, run between `fork` and `exec`. Only async-signal-safe
/// system calls happen there: the host may be multi-threaded.
fn install_pre_exec(cmd: &mut Command, keep: Option<OwnedFd>) {
    let host = unistd::getpid();
    // SAFETY: the closure runs in the forked child and calls only async-signal-safe system
    // calls (setsid, prctl, getppid, close_range/fcntl); it allocates nothing (errors are raw
    // OS errors). What can still go wrong: if the host dies between fork and prctl the child
    // notices through getppid and fails; descriptors the host opened without O_CLOEXEC are
    // marked close-on-exec here, so a descriptor inherited across exec is impossible unless
    // close_range and the fcntl fallback both fail, in which case spawning fails.
    unsafe {
        cmd.pre_exec(move || {
            // A new session makes the child leader of its own process group (pgid == pid).
            unistd::setsid().map_err(std::io::Error::from)?;
            prctl::set_pdeathsig(Signal::SIGKILL).map_err(std::io::Error::from)?;
            if unistd::getppid() != host {
                return Err(std::io::Error::from_raw_os_error(nix::libc::ESRCH));
            }
            crate::sys::cloexec_from(3)?;
            if let Some(fd) = &keep {
                let raw: RawFd = fd.as_raw_fd();
                crate::sys::clear_cloexec(raw)?;
            }
            Ok(())
        });
    }
}

fn validate(target: &WorkerCommand, policy: &SandboxPolicy) -> Result<(), SandboxError> {
    let invalid = |what: String| Err(SandboxError::Invalid(what));
    if !target.program.is_absolute() {
        return invalid(format!(
            "program {} is not an absolute path",
            target.program.display()
        ));
    }
    let has_nul = |s: &std::ffi::OsStr| s.as_bytes().contains(&0);
    if has_nul(target.program.as_os_str()) || target.args.iter().any(|a| has_nul(a)) {
        return invalid("program or argument contains NUL".into());
    }
    for (key, value) in &target.env {
        if key.is_empty() || key.as_bytes().contains(&b'=') || has_nul(key) || has_nul(value) {
            return invalid(format!("bad environment variable name {key:?}"));
        }
    }
    let absolute = |p: &Path| p.is_absolute() && !has_nul(p.as_os_str());
    if let Some(cwd) = &target.cwd
        && !absolute(cwd)
    {
        return invalid(format!("cwd {} is not an absolute path", cwd.display()));
    }
    if policy.mode == SandboxMode::Enforce {
        if !target.program.is_file() {
            return invalid(format!(
                "program {} is not a file",
                target.program.display()
            ));
        }
        for path in &policy.read_only_paths {
            if !absolute(path) || !path.exists() {
                return invalid(format!(
                    "read-only path {} is not an existing absolute path",
                    path.display()
                ));
            }
        }
        for path in &policy.data_paths {
            if !absolute(path) || !path.exists() {
                return invalid(format!(
                    "data path {} is not an existing absolute path",
                    path.display()
                ));
            }
        }
        if let Some(path) = policy.hidden_paths.iter().find(|p| !absolute(p)) {
            return invalid(format!(
                "hidden path {} is not an absolute path",
                path.display()
            ));
        }
        if let Some(scratch) = &policy.scratch_dir
            && (!absolute(scratch) || !scratch.is_dir())
        {
            return invalid(format!(
                "scratch dir {} is not an existing absolute directory",
                scratch.display()
            ));
        }
        if let Some(at) = &policy.scratch_mount_at {
            let plain = at
                .components()
                .skip(1)
                .all(|c| matches!(c, std::path::Component::Normal(_)));
            if policy.scratch_dir.is_none() || !absolute(at) || !plain || at == Path::new("/") {
                return invalid(format!(
                    "scratch mount point {} must be an absolute path below / without `.` or `..`, \
                     next to a scratch dir",
                    at.display()
                ));
            }
        }
    }
    Ok(())
}

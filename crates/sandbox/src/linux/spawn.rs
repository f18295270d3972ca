//! Host side: turn a worker and a policy into a `Command`.
//!
//! Both modes give the child its own session and process group, a parent-death SIGKILL,
//! exactly the environment of the [`WorkerCommand`] and no descriptor but 0, 1 and 2. The
//! child is the helper (this binary, re-entered), started without a `pre_exec` hook (so with
//! `posix_spawn`, not a fork of the whole host): it does all of that itself as its first steps
//! (see [`helper_command`]), then, in `Enforce` mode, confines itself before executing the
//! payload. Only an unconfined command without a helper executable (stdio upstreams) is
//! forked with a `pre_exec` hook.

use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

use nix::sys::prctl;
use nix::sys::signal::Signal;
use nix::unistd;

use crate::error::{DecodeError, SandboxError};
use crate::linux::config::HelperConfig;
use crate::linux::layers::{layer, remedy};
use crate::linux::namespaces;
use crate::policy::{HELPER_ARG, SandboxMode, SandboxPolicy, WorkerCommand};

pub(crate) fn command(
    target: &WorkerCommand,
    policy: &SandboxPolicy,
) -> Result<Command, SandboxError> {
    validate(target, policy)?;
    match policy.mode {
        SandboxMode::Disabled => unconfined(target, policy),
        SandboxMode::Enforce => confined(target, policy, false),
    }
}

/// The command that starts a template for workers of `target` under `policy` (see
/// `linux::template`): the helper, every shared layer, then a worker per request on its stdin,
/// which the caller makes one end of a `SOCK_SEQPACKET` socket pair.
pub(crate) fn template_command(
    target: &WorkerCommand,
    policy: &SandboxPolicy,
) -> Result<Command, SandboxError> {
    validate(target, policy)?;
    if policy.mode != SandboxMode::Enforce {
        return Err(SandboxError::Invalid(
            "a template serves confined workers only".into(),
        ));
    }
    let mut cmd = confined(target, policy, false)?;
    cmd.arg(TEMPLATE_ARG);
    Ok(cmd)
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

/// Unconfined, the scratch directory is wherever it is on the host. With a helper executable
/// the child is the helper in its unconfined mode (session, parent-death signal, descriptors,
/// then the program); without one (stdio upstreams, started once) the standard library forks
/// the host and a `pre_exec` hook does the same.
fn unconfined(target: &WorkerCommand, policy: &SandboxPolicy) -> Result<Command, SandboxError> {
    let cwd = target.cwd.as_ref().or(policy.scratch_dir.as_ref());
    if let Some(helper) = policy.helper_exe.as_ref() {
        let config = HelperConfig {
            probe: false,
            program: Some(target.program.clone()),
            args: target.args.clone(),
            env: env_entries(target),
            cwd: cwd.cloned(),
            read_only: Vec::new(),
            hidden: Vec::new(),
            data: Vec::new(),
            scratch: None,
            scratch_at: None,
            limits: policy.limits,
            plan: None,
        };
        return helper_command(helper, &config, true);
    }
    let mut cmd = Command::new(&target.program);
    cmd.args(&target.args);
    cmd.env_clear();
    cmd.envs(target.env.iter().map(|(k, v)| (k, v)));
    if let Some(cwd) = cwd {
        cmd.current_dir(cwd);
    }
    install_pre_exec(&mut cmd);
    Ok(cmd)
}

fn env_entries(target: &WorkerCommand) -> Vec<std::ffi::OsString> {
    target
        .env
        .iter()
        .map(|(k, v)| {
            let mut entry = k.clone();
            entry.push("=");
            entry.push(v);
            entry
        })
        .collect()
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
    namespaces::preflight().map_err(|reason| SandboxError::Unavailable {
        layer: layer::USER_NAMESPACE,
        reason: reason.into(),
        remedy: remedy(layer::USER_NAMESPACE),
    })?;
    let mut config = HelperConfig {
        probe,
        program: (!probe).then(|| target.program.clone()),
        args: target.args.clone(),
        env: env_entries(target),
        cwd: target.cwd.clone(),
        read_only: if probe {
            policy.read_only_paths.clone()
        } else {
            // The program's own shared libraries (cached per program file), the locale its
            // environment names, then the rest.
            let mut paths = crate::linux::libraries::of_program(&target.program).to_vec();
            paths.extend(crate::linux::libraries::locale_files(&target.env));
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
    config.plan = crate::linux::mounts::cached(&config);
    helper_command(helper, &config, false)
}

/// `<helper> __sandbox --host-pid=N [--unconfined]`, with the configuration in the
/// environment ([`config_env`]) and nothing else there.
///
/// No `pre_exec` hook: the standard library then starts the child with `posix_spawn` (a
/// `clone` with `CLONE_VM | CLONE_VFORK`, no copy of the host's page tables), and the helper
/// makes its own session and parent-death signal, checks that its parent is still the host
/// whose pid it is given (the signal is armed only then: a host that died before it is
/// noticed this way), and closes every descriptor above 2, as its first steps.
///
/// The configuration travels in the environment: it is part of this one `execve`, so no
/// other child the host starts at the same moment (a worker of another pool, a stdio upstream
/// spawned by another thread) can inherit it, there is no descriptor whose lifetime the host
/// has to manage, and nothing depends on the helper being allowed to open the host's
/// `/proc/<pid>/fd`. The helper removes it from its environment and wipes it from the
/// memory the kernel shows as `/proc/<pid>/environ` once read.
fn helper_command(
    helper: &Path,
    config: &HelperConfig,
    unconfined: bool,
) -> Result<Command, SandboxError> {
    if !helper.is_absolute() || !helper.is_file() {
        return Err(SandboxError::Invalid(format!(
            "helper executable {} is not an absolute path to a file",
            helper.display()
        )));
    }
    let mut cmd = Command::new(helper);
    cmd.arg(HELPER_ARG);
    cmd.arg(format!("{HOST_PID_ARG}{}", std::process::id()));
    if unconfined {
        cmd.arg(UNCONFINED_ARG);
    }
    cmd.env_clear();
    cmd.envs(config_env(&config.encode()));
    Ok(cmd)
}

/// `argv[2]` of the helper: the pid of the host that started it (its parent).
pub(crate) const HOST_PID_ARG: &str = "--host-pid=";
/// `argv[3]` of the helper in [`SandboxMode::Disabled`]: session, parent-death signal and
/// descriptors only, then the program.
pub(crate) const UNCONFINED_ARG: &str = "--unconfined";
/// `argv[3]` of a template's helper (see `linux::template`).
pub(crate) const TEMPLATE_ARG: &str = "--template";
/// Prefix of the environment variables that carry the helper's configuration:
/// `<prefix>0`, `<prefix>1`, ... in order.
pub(crate) const CONFIG_ENV: &str = "CODE_EXECUTOR_SANDBOX_CONFIG_";
/// Raw bytes per variable: escaped at most twice as long, well under the kernel's 128 KiB
/// bound on one environment string.
const CONFIG_CHUNK: usize = 32 * 1024;

/// The configuration as environment variables. Environment strings cannot hold NUL, which
/// separates the configuration's fields: `0x00` becomes `0x01 '0'` and `0x01` becomes
/// `0x01 '1'` (paths rarely hold either, so the size stays that of the configuration).
pub(crate) fn config_env(bytes: &[u8]) -> Vec<(String, std::ffi::OsString)> {
    use std::os::unix::ffi::OsStringExt;
    bytes
        .chunks(CONFIG_CHUNK)
        .enumerate()
        .map(|(i, chunk)| {
            let mut value = Vec::with_capacity(chunk.len() + chunk.len() / 8);
            for &b in chunk {
                match b {
                    0 => value.extend_from_slice(&[1, b'0']),
                    1 => value.extend_from_slice(&[1, b'1']),
                    b => value.push(b),
                }
            }
            (
                format!("{CONFIG_ENV}{i}"),
                std::ffi::OsString::from_vec(value),
            )
        })
        .collect()
}

/// The configuration back from the variables of [`config_env`], in the helper.
pub(crate) fn config_from_env() -> Result<Vec<u8>, DecodeError> {
    config_from(|name| std::env::var_os(name))
}

/// [`config_from_env`] with `var` as the environment.
fn config_from(var: impl Fn(&str) -> Option<std::ffi::OsString>) -> Result<Vec<u8>, DecodeError> {
    let mut bytes = Vec::new();
    for i in 0.. {
        let Some(value) = var(&format!("{CONFIG_ENV}{i}")) else {
            if i == 0 {
                return Err(DecodeError::Missing(CONFIG_ENV));
            }
            break;
        };
        let mut escaped = value.as_bytes().iter();
        while let Some(&b) = escaped.next() {
            bytes.push(match b {
                1 => match escaped.next() {
                    Some(b'0') => 0,
                    Some(b'1') => 1,
                    _ => return Err(DecodeError::Malformed),
                },
                b => b,
            });
        }
    }
    Ok(bytes)
}

/// Installs the part every child gets, run between `fork` and `exec`. Only async-signal-safe
/// system calls happen there: the host may be multi-threaded.
fn install_pre_exec(cmd: &mut Command) {
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
            crate::linux::sys::cloexec_from(3)?;
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn the_configuration_survives_the_environment_whatever_its_bytes_and_size() {
        // Every byte value, NUL and the escape byte included, over several variables.
        let bytes: Vec<u8> = (0..100_000u32).map(|i| (i * 7 % 256) as u8).collect();
        let env = config_env(&bytes);
        assert_eq!(env.len(), bytes.len().div_ceil(CONFIG_CHUNK));
        for (name, value) in &env {
            assert!(!value.as_bytes().contains(&0), "{name} holds a NUL");
            // The kernel refuses one environment string above 128 KiB.
            assert!(name.len() + 1 + value.len() < 128 * 1024, "{name}");
        }
        let lookup = |name: &str| env.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone());
        assert_eq!(config_from(lookup).unwrap(), bytes);
        // A cut escape is refused, not guessed at.
        let cut = |name: &str| (name == "CODE_EXECUTOR_SANDBOX_CONFIG_0").then(|| "a\u{1}".into());
        assert!(config_from(cut).is_err());
        assert!(config_from(|_| None).is_err());
    }
}

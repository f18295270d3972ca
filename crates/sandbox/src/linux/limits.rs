//! rlimits, no_new_privs and capabilities (steps 8 to 10), in the payload process.

use nix::sys::prctl;
use nix::sys::resource::{Resource, setrlimit};

use crate::error::SetupError;
use crate::linux::layers::layer;
use crate::policy::ResourceLimits;

/// Processes of the sandbox that count against RLIMIT_NPROC besides the payload's own: the
/// outer helper and the init share the payload's uid in the namespace.
pub(crate) const HELPER_PROCESSES: u64 = 2;

/// Step 8: the resource limits, soft and hard alike (the payload cannot raise them back).
/// CPU gets one more second of hard limit so SIGXCPU arrives before SIGKILL.
pub(crate) fn apply_rlimits(limits: &ResourceLimits) -> Result<String, SetupError> {
    let l = limits;
    let set = |resource: Resource, name: &str, soft: u64, hard: u64| {
        setrlimit(resource, soft, hard)
            .map_err(|e| SetupError::new(layer::RLIMITS, format!("{name}={soft}: {e}")))
    };
    set(
        Resource::RLIMIT_AS,
        "RLIMIT_AS",
        l.address_space_bytes,
        l.address_space_bytes,
    )?;
    set(
        Resource::RLIMIT_CPU,
        "RLIMIT_CPU",
        l.cpu_seconds,
        l.cpu_seconds.saturating_add(1),
    )?;
    let nproc = l.max_processes.saturating_add(HELPER_PROCESSES);
    set(Resource::RLIMIT_NPROC, "RLIMIT_NPROC", nproc, nproc)?;
    set(
        Resource::RLIMIT_NOFILE,
        "RLIMIT_NOFILE",
        l.max_open_files,
        l.max_open_files,
    )?;
    set(
        Resource::RLIMIT_FSIZE,
        "RLIMIT_FSIZE",
        l.max_file_size_bytes,
        l.max_file_size_bytes,
    )?;
    set(Resource::RLIMIT_CORE, "RLIMIT_CORE", 0, 0)?;
    let show = |v: u64| {
        if v == u64::MAX {
            "unlimited".to_owned()
        } else {
            v.to_string()
        }
    };
    Ok(format!(
        "address space {} B, CPU {} s, processes {} (+{HELPER_PROCESSES} helpers), open files {}, file size {} B, core 0",
        show(l.address_space_bytes),
        show(l.cpu_seconds),
        show(l.max_processes),
        show(l.max_open_files),
        show(l.max_file_size_bytes),
    ))
}

/// Step 9: no execve may grant privileges again (setuid bits, file capabilities).
pub(crate) fn no_new_privs() -> Result<(), SetupError> {
    prctl::set_no_new_privs()
        .map_err(|e| SetupError::new(layer::NO_NEW_PRIVS, format!("PR_SET_NO_NEW_PRIVS: {e}")))?;
    match prctl::get_no_new_privs() {
        Ok(true) => Ok(()),
        _ => Err(SetupError::new(
            layer::NO_NEW_PRIVS,
            "PR_SET_NO_NEW_PRIVS did not stick".into(),
        )),
    }
}

/// Step 10: the capabilities the new user namespace granted (over it only) are all dropped, the
/// bounding set emptied and the securebits locked, then checked.
pub(crate) fn drop_capabilities() -> Result<String, SetupError> {
    let err = |what: &str, e: std::io::Error| {
        SetupError::new(layer::CAPABILITIES, format!("{what}: {e}"))
    };
    crate::linux::sys::lock_securebits().map_err(|e| err("PR_SET_SECUREBITS", e))?;
    crate::linux::sys::drop_all_capabilities().map_err(|e| err("dropping capabilities", e))?;
    let sets = crate::linux::sys::capabilities().map_err(|e| err("capget", e))?;
    if sets != [0, 0, 0] {
        return Err(SetupError::new(
            layer::CAPABILITIES,
            format!("capabilities left after dropping: {sets:x?}"),
        ));
    }
    Ok("none: effective, permitted, inheritable, ambient and bounding sets empty; securebits locked".into())
}

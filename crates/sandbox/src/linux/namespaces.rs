//! Identity and namespaces: steps 3 and 4 of the sequence (see `docs/sandbox.md`).

use std::path::Path;

use nix::sched::{CloneFlags, unshare};
use nix::sys::prctl;
use nix::sys::signal::Signal;
use nix::unistd::{self, Gid, Pid, Uid};

use crate::error::SetupError;
use crate::linux::layers::layer;

/// The uid and gid the payload has inside the user namespace. Not 0: nothing inside should
/// look like root, even to programs that only compare uids.
pub(crate) const INNER_ID: u32 = 1000;

/// The host uid and gid the sandbox runs as when the host itself runs as root. RLIMIT_NPROC is
/// never enforced for the host's root user, and a namespace made by root maps its root to the
/// host's root, so the helper leaves root first. 65534 is `nobody` on every common distribution.
pub(crate) const HOST_ID_WHEN_ROOT: u32 = 65534;

/// The namespaces made by the one `unshare` call of step 4.
pub(crate) const NAMESPACES: CloneFlags = CloneFlags::CLONE_NEWUSER
    .union(CloneFlags::CLONE_NEWNS)
    .union(CloneFlags::CLONE_NEWPID)
    .union(CloneFlags::CLONE_NEWNET)
    .union(CloneFlags::CLONE_NEWIPC)
    .union(CloneFlags::CLONE_NEWUTS);

/// Host-side check, cheap enough for every `command()`: the kernel switches that forbid
/// unprivileged user namespaces outright. Anything subtler is found by the helper.
pub(crate) fn preflight() -> Result<(), &'static str> {
    let read = |path: &str| {
        std::fs::read_to_string(path)
            .ok()
            .map(|s| s.trim().to_owned())
    };
    if read("/proc/sys/user/max_user_namespaces").as_deref() == Some("0") {
        return Err("user.max_user_namespaces is 0");
    }
    if read("/proc/sys/kernel/unprivileged_userns_clone").as_deref() == Some("0") {
        return Err("kernel.unprivileged_userns_clone is 0");
    }
    if read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns").as_deref() == Some("1") {
        return Err(
            "AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns=1)",
        );
    }
    Ok(())
}

/// Sets the parent-death signal again (credential changes clear it) and checks the parent is
/// still the one we started with, closing the race where it died just before.
pub(crate) fn rearm_parent_death(parent: Pid, layer: &'static str) -> Result<(), SetupError> {
    prctl::set_pdeathsig(Signal::SIGKILL)
        .map_err(|e| SetupError::new(layer, format!("PR_SET_PDEATHSIG: {e}")))?;
    if unistd::getppid() != parent {
        return Err(SetupError::new(
            layer,
            "the host exited during sandbox setup".into(),
        ));
    }
    Ok(())
}

/// Step 3: leave host root. Returns the host uid and gid the sandbox runs as, and a detail.
pub(crate) fn leave_root(
    scratch: Option<&Path>,
    parent: Pid,
) -> Result<(Uid, Gid, String), SetupError> {
    let err =
        |what: &str, e: nix::Error| SetupError::new(layer::USER_NAMESPACE, format!("{what}: {e}"));
    if !unistd::geteuid().is_root() {
        let (uid, gid) = (unistd::geteuid(), unistd::getegid());
        return Ok((uid, gid, format!("host uid {uid} (unprivileged)")));
    }
    let uid = Uid::from_raw(HOST_ID_WHEN_ROOT);
    let gid = Gid::from_raw(HOST_ID_WHEN_ROOT);
    // The scratch directory is the one place the sandbox writes: hand it to the uid that will.
    if let Some(scratch) = scratch {
        unistd::chown(scratch, Some(uid), Some(gid)).map_err(|e| err("chown scratch dir", e))?;
    }
    unistd::setgroups(&[]).map_err(|e| err("setgroups", e))?;
    unistd::setresgid(gid, gid, gid).map_err(|e| err("setresgid", e))?;
    unistd::setresuid(uid, uid, uid).map_err(|e| err("setresuid", e))?;
    // A uid change makes the process undumpable, which makes /proc/self/* root-owned and the
    // uid_map unwritable; it also clears the parent-death signal.
    prctl::set_dumpable(true).map_err(|e| err("PR_SET_DUMPABLE", e))?;
    rearm_parent_death(parent, layer::USER_NAMESPACE)?;
    Ok((uid, gid, format!("host root left for uid {uid}")))
}

/// Step 4: new user, mount, PID, network, IPC and UTS namespaces, with the payload's ids mapped
/// to the host ids of step 3 and nothing else (setgroups denied).
pub(crate) fn unshare_all(uid: Uid, gid: Gid, parent: Pid) -> Result<(), SetupError> {
    unshare(NAMESPACES).map_err(|e| {
        SetupError::new(
            layer::USER_NAMESPACE,
            format!("unshare(CLONE_NEWUSER|NEWNS|NEWPID|NEWNET|NEWIPC|NEWUTS) failed: {e}"),
        )
    })?;
    let err = |what: &str, e: std::io::Error| {
        SetupError::new(layer::USER_NAMESPACE, format!("{what}: {e}"))
    };
    prctl::set_dumpable(true)
        .map_err(|e| SetupError::new(layer::USER_NAMESPACE, format!("PR_SET_DUMPABLE: {e}")))?;
    rearm_parent_death(parent, layer::USER_NAMESPACE)?;
    std::fs::write("/proc/self/setgroups", "deny")
        .map_err(|e| err("write /proc/self/setgroups", e))?;
    std::fs::write("/proc/self/uid_map", format!("{INNER_ID} {uid} 1\n"))
        .map_err(|e| err("write uid_map", e))?;
    std::fs::write("/proc/self/gid_map", format!("{INNER_ID} {gid} 1\n"))
        .map_err(|e| err("write gid_map", e))?;
    if unistd::getuid().as_raw() != INNER_ID || unistd::getgid().as_raw() != INNER_ID {
        return Err(SetupError::new(
            layer::USER_NAMESPACE,
            "uid/gid mapping did not take effect".into(),
        ));
    }
    Ok(())
}

/// Step 4, checked: the new network namespace has nothing but a loopback interface that is down.
pub(crate) fn check_network() -> Result<String, SetupError> {
    let addrs = nix::ifaddrs::getifaddrs()
        .map_err(|e| SetupError::new(layer::NETWORK_NAMESPACE, format!("getifaddrs: {e}")))?;
    let mut names = Vec::new();
    for ifa in addrs {
        if ifa.interface_name != "lo" {
            return Err(SetupError::new(
                layer::NETWORK_NAMESPACE,
                format!(
                    "unexpected interface {} in the new network namespace",
                    ifa.interface_name
                ),
            ));
        }
        if ifa.flags.contains(nix::net::if_::InterfaceFlags::IFF_UP) {
            return Err(SetupError::new(
                layer::NETWORK_NAMESPACE,
                "loopback is up".into(),
            ));
        }
        names.push(ifa.interface_name);
    }
    names.dedup();
    Ok(format!(
        "new network namespace; interfaces: {} (down)",
        names.join(", ")
    ))
}

/// Step 4: a hostname that says nothing about the host.
pub(crate) fn set_hostname() -> Result<(), SetupError> {
    unistd::sethostname("sandbox")
        .map_err(|e| SetupError::new(layer::UTS_NAMESPACE, format!("sethostname: {e}")))
}

//! The Linux backend's layers: their names, in the order the helper applies them, which of
//! them the minimum guarantee needs, what to do when one is missing, and the line the helper
//! prints per layer in probe mode.

/// Layer names, in the order the helper applies them.
pub mod layer {
    pub const SESSION: &str = "session";
    pub const USER_NAMESPACE: &str = "user-namespace";
    pub const NETWORK_NAMESPACE: &str = "network-namespace";
    pub const IPC_NAMESPACE: &str = "ipc-namespace";
    pub const UTS_NAMESPACE: &str = "uts-namespace";
    pub const PID_NAMESPACE: &str = "pid-namespace";
    pub const FILESYSTEM_VIEW: &str = "filesystem-view";
    pub const PROC: &str = "proc";
    pub const RLIMITS: &str = "rlimits";
    pub const NO_NEW_PRIVS: &str = "no-new-privs";
    pub const CAPABILITIES: &str = "capabilities";
    pub const LANDLOCK: &str = "landlock";
    pub const SECCOMP: &str = "seccomp";
    pub const CGROUP: &str = "cgroup";
}

/// Every layer with whether the minimum guarantee needs it. Landlock repeats the filesystem
/// view and the network namespace as a second layer; cgroups are optional extras.
pub(crate) const LAYERS: &[(&str, bool)] = &[
    (layer::SESSION, true),
    (layer::USER_NAMESPACE, true),
    (layer::NETWORK_NAMESPACE, true),
    (layer::IPC_NAMESPACE, true),
    (layer::UTS_NAMESPACE, true),
    (layer::PID_NAMESPACE, true),
    (layer::FILESYSTEM_VIEW, true),
    (layer::PROC, true),
    (layer::RLIMITS, true),
    (layer::NO_NEW_PRIVS, true),
    (layer::CAPABILITIES, true),
    (layer::LANDLOCK, false),
    (layer::SECCOMP, true),
    (layer::CGROUP, false),
];

/// What to do when `layer` is missing.
pub fn remedy(layer: &str) -> &'static str {
    match layer {
        layer::USER_NAMESPACE
        | layer::NETWORK_NAMESPACE
        | layer::IPC_NAMESPACE
        | layer::UTS_NAMESPACE
        | layer::PID_NAMESPACE => {
            "allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, \
             user.max_user_namespaces>0; on Ubuntu 24.04+ kernel.apparmor_restrict_unprivileged_userns=0 \
             or an AppArmor profile granting `userns`; in a container, the seccomp profile \
             deploy/container/seccomp.json, see docs/container.md and `doctor`), or choose the \
             unsandboxed mode explicitly for development"
        }
        layer::FILESYSTEM_VIEW | layer::PROC => {
            "the kernel must allow mounts in a user namespace (tmpfs, bind, proc) and mount_setattr \
             (Linux 5.12+); a /proc with hidden entries forbids a fresh proc mount (in a container: \
             Podman `--security-opt unmask=/proc/*`, Docker `--security-opt systempaths=unconfined`, \
             see docs/container.md and `doctor`)"
        }
        layer::LANDLOCK => "use Linux 5.13+ with Landlock enabled (lsm=...,landlock)",
        layer::SECCOMP => "use a kernel built with CONFIG_SECCOMP_FILTER",
        layer::CGROUP => {
            "delegate a writable cgroup v2 subtree with the memory and pids controllers"
        }
        _ => "see docs/sandbox.md",
    }
}

/// [`LAYERS`] with each layer's remedy, as [`crate::report::SandboxReport`] takes them.
pub(crate) fn table() -> Vec<(&'static str, bool, &'static str)> {
    LAYERS
        .iter()
        .map(|&(name, required)| (name, required, remedy(name)))
        .collect()
}

/// The line the helper prints per layer in probe mode: `LAYER\t<name>\t<0|1>\t<detail>`.
pub(crate) fn format_line(name: &str, enforced: bool, detail: &str) -> String {
    let detail = detail.replace(['\n', '\t'], " ");
    format!("LAYER\t{name}\t{}\t{detail}\n", u8::from(enforced))
}

//! Layer-by-layer status for `doctor`: what [`crate::probe`] returns.

use std::fmt;

use crate::policy::SandboxMode;

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

/// One layer of the sandbox and whether it is in force.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayerStatus {
    pub name: &'static str,
    pub enforced: bool,
    /// Part of the minimum guarantee: Enforce mode refuses to run without it.
    pub required: bool,
    pub detail: String,
}

/// Every layer, in the order the helper applies them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxReport {
    pub mode: SandboxMode,
    pub layers: Vec<LayerStatus>,
}

impl SandboxReport {
    /// The first required layer that is not enforced, if any.
    pub fn first_missing_required(&self) -> Option<&LayerStatus> {
        self.layers.iter().find(|l| l.required && !l.enforced)
    }

    /// Whether every required layer is in force.
    pub fn minimum_guarantee_met(&self) -> bool {
        self.first_missing_required().is_none()
    }

    pub fn layer(&self, name: &str) -> Option<&LayerStatus> {
        self.layers.iter().find(|l| l.name == name)
    }

    pub(crate) fn all(mode: SandboxMode, enforced: bool, detail: &str) -> Self {
        let layers = LAYERS
            .iter()
            .map(|&(name, required)| LayerStatus {
                name,
                enforced,
                required,
                detail: detail.to_owned(),
            })
            .collect();
        Self { mode, layers }
    }

    pub(crate) fn set(&mut self, name: &str, enforced: bool, detail: String) {
        if let Some(l) = self.layers.iter_mut().find(|l| l.name == name) {
            l.enforced = enforced;
            l.detail = detail;
        }
    }
}

impl fmt::Display for SandboxReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "sandbox mode: {:?}", self.mode)?;
        for l in &self.layers {
            let mark = match (l.enforced, l.required) {
                (true, _) => "ok     ",
                (false, true) => "MISSING",
                (false, false) => "off    ",
            };
            writeln!(f, "  {mark} {:<18} {}", l.name, l.detail)?;
        }
        if self.mode == SandboxMode::Enforce {
            match self.first_missing_required() {
                None => writeln!(f, "minimum guarantee met")?,
                Some(l) => writeln!(
                    f,
                    "REFUSING to run code: `{}` is missing; {}",
                    l.name,
                    remedy(l.name)
                )?,
            }
        }
        Ok(())
    }
}

/// The line the helper prints per layer in probe mode: `LAYER\t<name>\t<0|1>\t<detail>`.
pub(crate) fn format_line(name: &str, enforced: bool, detail: &str) -> String {
    let detail = detail.replace(['\n', '\t'], " ");
    format!("LAYER\t{name}\t{}\t{detail}\n", u8::from(enforced))
}

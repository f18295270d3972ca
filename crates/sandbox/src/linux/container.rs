//! Why the sandbox fails inside a container, and which flag fixes it (`doctor`).
//!
//! The sandbox creates a user namespace and mounts a fresh `/proc` inside it; container
//! runtimes forbid both by default, each in its own way:
//!
//! - **seccomp**: Docker's default profile refuses `unshare`, `mount`, `umount2` and
//!   `pivot_root` without `CAP_SYS_ADMIN`, Podman's refuses `sethostname`; the helper then fails
//!   with `<syscall>: EPERM` on a namespace layer. Fix: the profile of
//!   `deploy/container/seccomp.json`.
//! - **masked /proc**: runtimes cover `/proc/kcore`, `/proc/keys`, `/proc/sys`, ... with other
//!   mounts; the kernel then refuses a new proc in a user namespace (`mount proc: EPERM`,
//!   `mnt_already_visible`). Fix: Podman `--security-opt unmask=/proc/*`, Docker
//!   `--security-opt systempaths=unconfined`, Kubernetes `procMount: Unmasked`.
//! - **AppArmor**: Docker's `docker-default` profile denies `mount`. Fix:
//!   `--security-opt apparmor=unconfined` (or a profile allowing `mount` and `userns`).
//! - **no writable /tmp** under `--read-only`: scratch directories and the view's staging mount
//!   live there. Fix: `--tmpfs /tmp`.
//!
//! [`diagnose`] reads the evidence (`/proc/self/mountinfo`, `/proc/self/status`, the AppArmor
//! label, the probe's failure details) and names each cause with its flag; the parsing is in
//! pure functions so it is tested without a container.

use std::fmt;
use std::path::Path;

use crate::linux::layers::layer;
use crate::report::SandboxReport;

/// The container a process runs in, as far as the usual markers tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Container {
    /// `podman`, `docker`, `kubernetes` or `container` (unknown runtime).
    pub runtime: String,
    /// The marker that told (a file, a variable).
    pub evidence: String,
}

/// One cause of a failure with its fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// What is missing, short: `seccomp profile`, `unmasked /proc`, `AppArmor`, `writable /tmp`.
    pub missing: &'static str,
    /// What we saw.
    pub detail: String,
    /// What to add, per runtime.
    pub fix: String,
}

/// Everything [`diagnose`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnosis {
    pub container: Container,
    pub findings: Vec<Finding>,
}

/// The flags that make the sandbox work in a container (docs/container.md), for messages.
pub const SECCOMP_FIX: &str = "run the container with the seccomp profile shipped in \
    deploy/container/seccomp.json (the runtime's default plus unshare, mount, umount2, \
    pivot_root, mount_setattr, sethostname, landlock_*): Docker and Podman \
    `--security-opt seccomp=seccomp.json`, Kubernetes `securityContext.seccompProfile` \
    {type: Localhost, localhostProfile: profiles/code-executor-mcp.json} (docs/kubernetes.md)";
pub const PROC_FIX: &str = "unmask /proc: Podman `--security-opt unmask=/proc/*`, Docker \
    `--security-opt systempaths=unconfined`, Kubernetes `securityContext.procMount: Unmasked` \
    (with `hostUsers: false`)";
pub const APPARMOR_FIX: &str = "Docker and Podman `--security-opt apparmor=unconfined`, or an \
    AppArmor profile that allows `mount` and `userns`";
pub const TMP_FIX: &str = "mount a writable tmpfs on /tmp: `--tmpfs /tmp` (Docker; Podman \
    does it for --read-only), compose `tmpfs: [/tmp]`, Kubernetes an emptyDir at /tmp";

/// Which container this process runs in, if any.
pub fn detect() -> Option<Container> {
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let found = |runtime: &str, evidence: String| {
        Some(Container {
            runtime: runtime.to_owned(),
            evidence,
        })
    };
    if env("KUBERNETES_SERVICE_HOST").is_some() {
        return found("kubernetes", "KUBERNETES_SERVICE_HOST is set".into());
    }
    if Path::new("/run/.containerenv").exists() {
        return found("podman", "/run/.containerenv exists".into());
    }
    if Path::new("/.dockerenv").exists() {
        return found("docker", "/.dockerenv exists".into());
    }
    if let Some(v) = env("container") {
        return found(&v, format!("container={v}"));
    }
    if env("CODE_EXECUTOR_CONTAINER").is_some() {
        return found(
            "container",
            "CODE_EXECUTOR_CONTAINER is set (our image)".into(),
        );
    }
    let cgroup = std::fs::read_to_string("/proc/1/cgroup").unwrap_or_default();
    for (marker, runtime) in [
        ("kubepods", "kubernetes"),
        ("libpod", "podman"),
        ("docker", "docker"),
    ] {
        if cgroup.contains(marker) {
            return found(runtime, format!("/proc/1/cgroup names {marker}"));
        }
    }
    None
}

/// In a container, why `report` misses layers and what fixes each cause; `None` outside a
/// container. Findings about `/proc`, AppArmor and `/tmp` are listed even when the probe stopped
/// earlier (at a seccomp refusal), so one restart with every flag is enough.
pub fn diagnose(report: &SandboxReport) -> Option<Diagnosis> {
    let container = detect()?;
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let apparmor = {
        let label = read("/proc/self/attr/apparmor/current");
        if label.trim().is_empty() {
            read("/proc/self/attr/current")
        } else {
            label
        }
    };
    let tmp = std::env::temp_dir();
    let tmp_writable = nix::unistd::access(&tmp, nix::unistd::AccessFlags::W_OK).is_ok();
    let findings = findings(&Evidence {
        report,
        mountinfo: &read("/proc/self/mountinfo"),
        status: &read("/proc/self/status"),
        apparmor: apparmor.trim(),
        tmp: &tmp.to_string_lossy(),
        tmp_writable,
    });
    Some(Diagnosis {
        container,
        findings,
    })
}

/// What [`findings`] looks at, read by [`diagnose`].
pub(crate) struct Evidence<'a> {
    pub report: &'a SandboxReport,
    pub mountinfo: &'a str,
    pub status: &'a str,
    pub apparmor: &'a str,
    pub tmp: &'a str,
    pub tmp_writable: bool,
}

const NAMESPACE_LAYERS: &[&str] = &[
    layer::USER_NAMESPACE,
    layer::NETWORK_NAMESPACE,
    layer::IPC_NAMESPACE,
    layer::UTS_NAMESPACE,
    layer::PID_NAMESPACE,
];

pub(crate) fn findings(e: &Evidence<'_>) -> Vec<Finding> {
    let mut out = Vec::new();
    let missing = e.report.first_missing_required();
    let filter_on = seccomp_mode(e.status).is_some_and(|m| m == 2);
    // A namespace layer refused with EPERM under a seccomp filter: the profile. (Without a
    // filter, EPERM there is the kernel's or AppArmor's: the generic remedy says what to do.)
    if let Some(l) = missing.filter(|l| NAMESPACE_LAYERS.contains(&l.name))
        && (l.detail.contains("EPERM") || l.detail.contains("Operation not permitted"))
        && filter_on
    {
        let call = refused_call(&l.detail).unwrap_or("a namespace syscall");
        out.push(Finding {
            missing: "seccomp profile",
            detail: format!(
                "the container's seccomp filter refuses `{call}` (EPERM), which the sandbox \
                 needs inside its own user namespace"
            ),
            fix: SECCOMP_FIX.to_owned(),
        });
    }
    let covered = proc_overmounts(e.mountinfo);
    if !covered.is_empty() {
        let shown: Vec<&str> = covered.iter().take(6).map(String::as_str).collect();
        let more = if covered.len() > shown.len() {
            format!(", and {} more", covered.len() - shown.len())
        } else {
            String::new()
        };
        out.push(Finding {
            missing: "unmasked /proc",
            detail: format!(
                "{} path(s) under /proc are masked or read-only mounts ({}{more}); the kernel \
                 refuses the sandbox a fresh /proc while any is covered",
                covered.len(),
                shown.join(", ")
            ),
            fix: PROC_FIX.to_owned(),
        });
    }
    if apparmor_confines(e.apparmor)
        && missing.is_some_and(|l| {
            l.detail.contains("EACCES")
                || l.detail.contains("Permission denied")
                || l.detail.contains("EPERM")
        })
    {
        out.push(Finding {
            missing: "AppArmor",
            detail: format!(
                "the process is confined by the AppArmor profile `{}`, which may deny mount \
                 and user namespaces",
                e.apparmor
            ),
            fix: APPARMOR_FIX.to_owned(),
        });
    }
    if !e.tmp_writable {
        out.push(Finding {
            missing: "writable /tmp",
            detail: format!(
                "{} is not writable: worker scratch directories and the sandbox's staging \
                 mount need it",
                e.tmp
            ),
            fix: TMP_FIX.to_owned(),
        });
    }
    out
}

/// `Seccomp:` of `/proc/self/status`: 0 none, 1 strict, 2 filter.
fn seccomp_mode(status: &str) -> Option<u8> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("Seccomp:"))
        .and_then(|v| v.trim().parse().ok())
}

/// The call named before `: EPERM` in a helper message (`... applied: sethostname: EPERM`).
fn refused_call(detail: &str) -> Option<&str> {
    let at = detail.find(": EPERM")?;
    let name = detail[..at].rsplit(": ").next()?.trim();
    (!name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b' '))
    .then_some(name)
}

/// Mount points strictly below `/proc` (masks: `/dev/null` or tmpfs over entries, read-only
/// binds of `/proc/sys`...), from `/proc/self/mountinfo`. Octal escapes are left as they are.
fn proc_overmounts(mountinfo: &str) -> Vec<String> {
    let mut out: Vec<String> = mountinfo
        .lines()
        .filter_map(|l| l.split(' ').nth(4))
        .filter(|p| p.starts_with("/proc/"))
        .map(str::to_owned)
        .collect();
    out.sort();
    out.dedup();
    out
}

/// An AppArmor label that confines (`docker-default (enforce)`), not `unconfined`.
fn apparmor_confines(label: &str) -> bool {
    !label.is_empty() && label != "unconfined" && label.contains("(enforce)")
}

impl fmt::Display for Diagnosis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "container: {} ({})",
            self.container.runtime, self.container.evidence
        )?;
        if self.findings.is_empty() {
            writeln!(f, "  nothing in the container's settings stops the sandbox")?;
        }
        for finding in &self.findings {
            writeln!(f, "  MISSING {}: {}", finding.missing, finding.detail)?;
            writeln!(f, "    fix: {}", finding.fix)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SandboxMode;
    use crate::report::LayerStatus;

    fn report(failing: &str, detail: &str) -> SandboxReport {
        let layers = crate::linux::layers::LAYERS
            .iter()
            .map(|&(name, required)| LayerStatus {
                name,
                enforced: name != failing,
                required,
                remedy: crate::linux::layers::remedy(name),
                detail: if name == failing {
                    detail.to_owned()
                } else {
                    String::new()
                },
            })
            .collect();
        SandboxReport {
            mode: SandboxMode::Enforce,
            layers,
        }
    }

    const PODMAN_MOUNTINFO: &str = "\
600 540 0:60 / / ro,relatime - overlay overlay rw
601 600 0:62 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw
610 601 0:63 / /proc/acpi ro,relatime - tmpfs tmpfs ro
611 601 0:5 /null /proc/kcore rw,nosuid - devtmpfs devtmpfs rw
612 601 0:5 /null /proc/keys rw,nosuid - devtmpfs devtmpfs rw
613 601 0:62 /sys /proc/sys ro,relatime - proc proc rw
614 600 0:64 / /tmp rw,nosuid,nodev - tmpfs tmpfs rw
";
    const UNMASKED_MOUNTINFO: &str = "\
600 540 0:60 / / ro,relatime - overlay overlay rw
601 600 0:62 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw
614 600 0:64 / /tmp rw,nosuid,nodev - tmpfs tmpfs rw
";

    fn evidence<'a>(report: &'a SandboxReport, mountinfo: &'a str) -> Evidence<'a> {
        Evidence {
            report,
            mountinfo,
            status: "Name:\tx\nSeccomp:\t2\nSeccomp_filters:\t1\n",
            apparmor: "",
            tmp: "/tmp",
            tmp_writable: true,
        }
    }

    #[test]
    fn a_seccomp_refusal_names_the_call_and_the_profile() {
        let r = report(
            layer::UTS_NAMESPACE,
            "helper exited with exit status: 121: code-executor-mcp sandbox: refusing to run \
             code: layer `uts-namespace` could not be applied: sethostname: EPERM: Operation \
             not permitted; allow ...",
        );
        let found = findings(&evidence(&r, UNMASKED_MOUNTINFO));
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].missing, "seccomp profile");
        assert!(found[0].detail.contains("`sethostname`"), "{found:?}");
        assert!(found[0].fix.contains("seccomp.json"));
    }

    #[test]
    fn without_a_seccomp_filter_eperm_is_not_blamed_on_seccomp() {
        let r = report(
            layer::USER_NAMESPACE,
            "unshare: EPERM: Operation not permitted",
        );
        let mut e = evidence(&r, UNMASKED_MOUNTINFO);
        e.status = "Seccomp:\t0\n";
        assert!(findings(&e).is_empty());
    }

    #[test]
    fn masked_proc_entries_are_listed_with_both_runtimes_flags() {
        // Reported even though the probe stopped earlier, at seccomp: one restart fixes both.
        let r = report(
            layer::USER_NAMESPACE,
            "unshare: EPERM: Operation not permitted",
        );
        let found = findings(&evidence(&r, PODMAN_MOUNTINFO));
        let names: Vec<_> = found.iter().map(|f| f.missing).collect();
        assert_eq!(names, ["seccomp profile", "unmasked /proc"]);
        let proc = &found[1];
        assert!(proc.detail.starts_with("4 path(s)"), "{}", proc.detail);
        for p in ["/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/sys"] {
            assert!(proc.detail.contains(p), "{}", proc.detail);
        }
        assert!(proc.fix.contains("unmask=/proc/*") && proc.fix.contains("systempaths=unconfined"));
    }

    #[test]
    fn a_confining_apparmor_profile_and_an_unwritable_tmp_are_named() {
        let r = report(
            layer::FILESYSTEM_VIEW,
            "mount tmpfs: EACCES: Permission denied",
        );
        let mut e = evidence(&r, UNMASKED_MOUNTINFO);
        e.apparmor = "docker-default (enforce)";
        e.tmp_writable = false;
        let found = findings(&e);
        let names: Vec<_> = found.iter().map(|f| f.missing).collect();
        assert_eq!(names, ["AppArmor", "writable /tmp"]);
        assert!(found[0].fix.contains("apparmor=unconfined"));
        assert!(found[1].fix.contains("--tmpfs /tmp"));
        e.apparmor = "unconfined";
        assert_eq!(findings(&e).len(), 1);
    }

    #[test]
    fn refused_call_takes_the_word_before_eperm() {
        assert_eq!(
            refused_call("could not be applied: unshare: EPERM: x"),
            Some("unshare")
        );
        assert_eq!(refused_call("mount proc: EPERM"), Some("mount proc"));
        assert_eq!(refused_call("odd `thing`: EPERM"), None);
        assert_eq!(refused_call("no errno here"), None);
    }
}

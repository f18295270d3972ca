//! Landlock (step 11): the same filesystem view again, enforced by a second mechanism, plus no
//! TCP bind/connect and no signals or abstract sockets across the sandbox boundary.
//!
//! Best effort: the kernel's Landlock ABI decides how much is enforced (filesystem since 5.13,
//! TCP since 6.7, scopes since 6.12); the report says which. The mount namespace (step 6) and
//! the network namespace (step 4) already give the guarantee on their own, so a kernel without
//! Landlock still runs sandboxed code, and `doctor` says Landlock is off.

use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, LandlockStatus,
    PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreated, RulesetCreatedAttr, RulesetStatus,
    Scope,
};

use crate::error::SetupError;
use crate::linux::config::HelperConfig;
use crate::linux::layers::layer;
use crate::linux::mounts::DEVICES;
use crate::linux::view::{Access as ViewAccess, Step};

/// The newest ABI this code was written against; older kernels get what they support.
const TARGET_ABI: ABI = ABI::V10;

/// Creates the ruleset and adds the rules; nothing is restricted until [`restrict`]. Paths are
/// those of the view (run after step 6); `view` is the plan it was built from.
pub(crate) fn prepare(cfg: &HelperConfig, view: &[Step]) -> Result<RulesetCreated, SetupError> {
    let err = |e: &dyn std::fmt::Display| SetupError::new(layer::LANDLOCK, e.to_string());
    let read = AccessFs::from_read(TARGET_ABI);
    let device = AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate | AccessFs::IoctlDev;
    // Listing directories of the view is harmless (it holds nothing else) and less surprising
    // than EACCES on `ls /`; reading or executing files still needs one of the rules below.
    let mut rules: Vec<(PathBuf, BitFlags<AccessFs>)> =
        vec![("/".into(), AccessFs::ReadDir.into())];
    for path in read_only_rules(cfg, view) {
        rules.push((path, read));
    }
    for path in &cfg.data {
        rules.push((path.clone(), read & !AccessFs::Execute));
    }
    for path in DEVICES {
        rules.push((path.into(), device));
    }
    rules.push(("/proc".into(), AccessFs::ReadFile | AccessFs::ReadDir));
    if let Some(scratch) = cfg.scratch_inside() {
        rules.push((scratch.to_owned(), AccessFs::from_all(TARGET_ABI)));
    }

    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(TARGET_ABI))
        .map_err(|e| err(&e))?
        .handle_access(AccessNet::from_all(TARGET_ABI))
        .map_err(|e| err(&e))?
        .scope(Scope::from_all(TARGET_ABI))
        .map_err(|e| err(&e))?
        .create()
        .map_err(|e| err(&e))?;
    for (path, access) in rules {
        let fd = PathFd::new(&path).map_err(|e| err(&format!("{}: {e}", path.display())))?;
        // A rule on a file may only carry rights that apply to files.
        let is_dir = nix::sys::stat::fstat(fd.as_fd())
            .map_err(|e| err(&format!("{}: {e}", path.display())))?
            .st_mode
            & nix::libc::S_IFMT
            == nix::libc::S_IFDIR;
        let access = if is_dir {
            access
        } else {
            access & AccessFs::from_file(TARGET_ABI)
        };
        ruleset = ruleset
            .add_rule(PathBeneath::new(fd, access))
            .map_err(|e| err(&format!("{}: {e}", path.display())))?;
    }
    Ok(ruleset)
}

/// Where the read-and-execute rules go: the program and the read-only paths, as few rules as
/// give exactly the same rights. A file bound read-only into a directory of the view that
/// holds nothing but read-only binds (the view's `/usr/lib/x86_64-linux-gnu` holds the
/// libraries the plan binds there, and nothing else: the tmpfs root is read-only) is covered
/// by one rule on that directory, and a rule beneath another is left out. A directory with a
/// data path, a device, the scratch directory or `/proc` at, above or below it keeps its
/// rules per path (a rule there would grant execute or more files). Without a plan of the
/// view (never in practice), one rule per configured path, as the paths are named.
fn read_only_rules(cfg: &HelperConfig, view: &[Step]) -> Vec<PathBuf> {
    let mut others: Vec<&Path> = vec![Path::new("/proc"), Path::new("/dev")];
    let mut read_only: Vec<&Path> = Vec::new();
    for step in view {
        match step {
            Step::Bind {
                path,
                access: ViewAccess::ReadOnly,
                ..
            } => read_only.push(path),
            Step::Bind {
                access: ViewAccess::Hidden,
                ..
            }
            | Step::Dir(_)
            | Step::Symlink { .. } => {}
            Step::Bind { path, .. } | Step::BindAt { path, .. } => others.push(path),
        }
    }
    if let Some(scratch) = cfg.scratch_inside() {
        others.push(scratch);
    }
    if read_only.is_empty() {
        return cfg.program.iter().chain(&cfg.read_only).cloned().collect();
    }
    let mut paths: Vec<&Path> = read_only
        .into_iter()
        .map(|path| match path.parent() {
            Some(dir)
                if dir != Path::new("/")
                    && !others
                        .iter()
                        .any(|o| o.starts_with(dir) || dir.starts_with(o)) =>
            {
                dir
            }
            _ => path,
        })
        .collect();
    paths.sort_by_key(|p| (p.components().count(), *p));
    paths.dedup();
    let mut kept: Vec<PathBuf> = Vec::new();
    for path in paths {
        if !kept.iter().any(|k| path.starts_with(k)) {
            kept.push(path.to_owned());
        }
    }
    kept
}

/// Restricts this thread (and what it executes). Returns whether anything is enforced and a
/// description of what.
pub(crate) fn restrict(ruleset: RulesetCreated) -> (bool, String) {
    match ruleset.restrict_self() {
        Err(e) => (false, format!("landlock_restrict_self failed: {e}")),
        Ok(status) => {
            let abi = match status.landlock {
                LandlockStatus::Available {
                    effective_abi,
                    kernel_abi,
                } => match kernel_abi {
                    Some(k) => format!("kernel ABI {k}"),
                    None => format!("kernel ABI {}", effective_abi as i32),
                },
                LandlockStatus::NotEnabled => "Landlock is built in but not enabled at boot".into(),
                LandlockStatus::NotImplemented => "the kernel has no Landlock".into(),
            };
            match status.ruleset {
                RulesetStatus::FullyEnforced => (
                    true,
                    format!(
                        "{abi}: filesystem view, no TCP bind/connect, scoped signals and abstract sockets"
                    ),
                ),
                RulesetStatus::PartiallyEnforced => (
                    true,
                    format!(
                        "{abi}: enforced as far as this kernel supports (filesystem{}{})",
                        if status_has_net(&status.landlock) {
                            ", no TCP"
                        } else {
                            ""
                        },
                        if status_has_scope(&status.landlock) {
                            ", scoped signals and abstract sockets"
                        } else {
                            ""
                        },
                    ),
                ),
                RulesetStatus::NotEnforced => (false, format!("{abi}: not enforced")),
            }
        }
    }
}

fn effective(status: &LandlockStatus) -> ABI {
    match status {
        LandlockStatus::Available { effective_abi, .. } => *effective_abi,
        _ => ABI::Unsupported,
    }
}

fn status_has_net(status: &LandlockStatus) -> bool {
    effective(status) >= ABI::V4
}

fn status_has_scope(status: &LandlockStatus) -> bool {
    effective(status) >= ABI::V6
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bind(path: &str, access: ViewAccess, is_dir: bool) -> Step {
        Step::Bind {
            path: path.into(),
            access,
            is_dir,
        }
    }

    #[test]
    fn read_only_files_share_a_rule_on_a_directory_holding_nothing_else() {
        let mut cfg =
            crate::linux::config::HelperConfig::decode(b"program\0/usr/bin/python3\0").unwrap();
        cfg.scratch = Some("/tmp/scratch-1".into());
        cfg.scratch_at = Some("/workspace".into());
        let view = [
            Step::Symlink {
                path: "/usr/bin/python3".into(),
                target: "python3.11".into(),
            },
            bind("/usr/bin/python3.11", ViewAccess::ReadOnly, false),
            bind(
                "/usr/lib/x86_64-linux-gnu/libc.so.6",
                ViewAccess::ReadOnly,
                false,
            ),
            bind(
                "/usr/lib/x86_64-linux-gnu/libm.so.6",
                ViewAccess::ReadOnly,
                false,
            ),
            bind("/usr/lib/python3.11", ViewAccess::ReadOnly, true),
            bind(
                "/usr/lib/python3.11/lib-dynload",
                ViewAccess::ReadOnly,
                true,
            ),
            bind(
                "/usr/lib/python3.11/site-packages",
                ViewAccess::Hidden,
                true,
            ),
            // A read-only file beside a data directory, and one inside it: their own rules.
            bind("/home/me/tool", ViewAccess::ReadOnly, false),
            bind("/home/me/data", ViewAccess::Data, true),
            bind("/home/me/data/lib.so", ViewAccess::ReadOnly, false),
            // A read-only file in a directory with a device.
            bind("/dev/shm-lib.so", ViewAccess::ReadOnly, false),
            bind("/dev/null", ViewAccess::Device, false),
            Step::BindAt {
                source: "/tmp/scratch-1".into(),
                path: "/workspace".into(),
                access: ViewAccess::ReadWrite,
            },
            // Directly under the root: never the root itself.
            bind("/opt", ViewAccess::ReadOnly, true),
        ];
        assert_eq!(
            read_only_rules(&cfg, &view),
            [
                "/opt",
                "/dev/shm-lib.so",
                "/usr/bin",
                "/usr/lib",
                "/home/me/tool",
                "/home/me/data/lib.so",
            ]
            .map(PathBuf::from)
        );
    }
}

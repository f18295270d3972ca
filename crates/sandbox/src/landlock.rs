//! Landlock (step 11): the same filesystem view again, enforced by a second mechanism, plus no
//! TCP bind/connect and no signals or abstract sockets across the sandbox boundary.
//!
//! Best effort: the kernel's Landlock ABI decides how much is enforced (filesystem since 5.13,
//! TCP since 6.7, scopes since 6.12); the report says which. The mount namespace (step 6) and
//! the network namespace (step 4) already give the guarantee on their own, so a kernel without
//! Landlock still runs sandboxed code, and `doctor` says Landlock is off.

use std::path::PathBuf;

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, LandlockStatus,
    PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreated, RulesetCreatedAttr, RulesetStatus,
    Scope,
};

use crate::config::HelperConfig;
use crate::helper::SetupError;
use crate::mounts::DEVICES;
use crate::report::layer;

/// The newest ABI this code was written against; older kernels get what they support.
const TARGET_ABI: ABI = ABI::V10;

/// Creates the ruleset and adds the rules; nothing is restricted until [`restrict`]. Paths are
/// those of the view (run after step 6).
pub(crate) fn prepare(cfg: &HelperConfig) -> Result<RulesetCreated, SetupError> {
    let err = |e: &dyn std::fmt::Display| SetupError::new(layer::LANDLOCK, e.to_string());
    let read = AccessFs::from_read(TARGET_ABI);
    let device = AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate | AccessFs::IoctlDev;
    // Listing directories of the view is harmless (it holds nothing else) and less surprising
    // than EACCES on `ls /`; reading or executing files still needs one of the rules below.
    let mut rules: Vec<(PathBuf, BitFlags<AccessFs>)> =
        vec![("/".into(), AccessFs::ReadDir.into())];
    if let Some(program) = &cfg.program {
        rules.push((program.clone(), read));
    }
    for path in &cfg.read_only {
        rules.push((path.clone(), read));
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
        let access = if path.is_dir() {
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

//! The filesystem view (step 6): a read-only tmpfs root holding only what the payload needs.
//!
//! The plan is computed from the host view first ([`plan`]): every path the payload needs (the
//! program, the shared libraries it links, the host's read-only paths) is resolved component
//! by component, so the symlinks on the way (`/bin -> usr/bin`, `/lib64/ld-linux... -> ...`)
//! are recreated as symlinks and only real files and directories are bind-mounted. No library
//! directory is mounted as a whole. The part every worker of a spawner shares
//! ([`plan_shared`]) is made by the host and reused while the paths are the same ([`cached`]);
//! the helper checks it against the configured paths ([`check`]) and resolves only its own
//! scratch directory and hidden paths ([`plan_own`]). Then [`build`] mounts a tmpfs, pivots
//! into it, recreates the symlinks and directories, checks every host path of the plan again
//! (opened without following a symlink, so a path changed since the plan fails the view) and
//! bind-mounts what it opened, read-only (scratch read-write), covers hidden directories with
//! an empty read-only tmpfs, adds a small `/dev` and a fresh `/proc`, detaches the host root
//! and makes the tmpfs root read-only.

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::fs;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::error::SetupError;
use crate::linux::config::HelperConfig;
use crate::linux::layers::layer;
pub(crate) use crate::linux::view::{Access, Step};

mod build;
mod granted;
pub(crate) use build::build;
pub(crate) use granted::{GrantedTree, open_as_root};

/// The devices of the small `/dev`, bound from the host's.
pub(crate) const DEVICES: &[&str] = &["/dev/null", "/dev/zero", "/dev/urandom", "/dev/random"];

/// Symlinks followed while resolving one path, as the kernel's own limit.
const MAX_SYMLINKS: usize = 40;

/// Every step needed to make the configured paths resolve inside the view as on the host.
pub(crate) fn plan(cfg: &HelperConfig) -> Result<Vec<Step>, SetupError> {
    let mut steps = plan_shared(cfg)?;
    plan_own(cfg, &mut steps)?;
    Ok(steps)
}

/// The part of the plan every worker of a spawner shares: the program, the read-only paths,
/// the data paths and the devices, each resolved component by component, each step listed
/// once. The host computes it ([`cached`]) and the helper checks it ([`check`]).
pub(crate) fn plan_shared(cfg: &HelperConfig) -> Result<Vec<Step>, SetupError> {
    let mut steps = Vec::new();
    for (path, access) in shared_inputs(cfg) {
        resolve(path, access, &mut steps)?;
    }
    let mut seen = HashSet::new();
    steps.retain(|step| seen.insert(step.clone()));
    Ok(steps)
}

/// The paths [`plan_shared`] resolves, with the access each is resolved for.
fn shared_inputs(cfg: &HelperConfig) -> impl Iterator<Item = (&Path, Access)> {
    cfg.program
        .iter()
        .map(|p| (p.as_path(), Access::ReadOnly))
        .chain(
            cfg.read_only
                .iter()
                .map(|p| (p.as_path(), Access::ReadOnly)),
        )
        .chain(cfg.data.iter().map(|p| (p.as_path(), Access::Data)))
        .chain(DEVICES.iter().map(|p| (Path::new(p), Access::Device)))
}

/// The part of the plan each worker resolves itself: its scratch directory (which differs
/// between workers of a session) and the directories shown empty (no host file is bound for
/// them, so they expose nothing whatever they resolve to).
pub(crate) fn plan_own(cfg: &HelperConfig, steps: &mut Vec<Step>) -> Result<(), SetupError> {
    match (&cfg.scratch, &cfg.scratch_at) {
        (Some(scratch), Some(at)) => {
            let source = fs::canonicalize(scratch).map_err(|e| {
                SetupError::new(
                    layer::FILESYSTEM_VIEW,
                    format!("{}: {e}", scratch.display()),
                )
            })?;
            // Its mount point's parents exist only in the view: `build` makes them.
            steps.push(Step::BindAt {
                source,
                path: at.clone(),
                access: Access::ReadWrite,
            });
        }
        (Some(scratch), None) => resolve(scratch, Access::ReadWrite, steps)?,
        (None, _) => {}
    }
    // Hidden directories are named by their real path and add no directory or symlink of their
    // own: one outside every read-only path is not in the view, and must not appear as an
    // empty directory either.
    for path in &cfg.hidden {
        if let Ok(real) = fs::canonicalize(path)
            && real.is_dir()
        {
            steps.push(Step::Bind {
                path: real,
                access: Access::Hidden,
                is_dir: true,
            });
        }
    }
    Ok(())
}

/// How long the host reuses a shared plan before resolving it again: a path that changes on
/// the host (a library upgraded) fails the view of the workers started with the older plan
/// (see [`build`]) for at most this long.
const PLAN_REUSE: Duration = Duration::from_secs(2);
/// Plans kept at once (one per spawner and data grant); the oldest go first.
const PLANS_KEPT: usize = 16;

/// [`plan_shared`] for `cfg`, computed on the host and reused for [`PLAN_REUSE`] while the
/// program, read-only and data paths are the same. `None` when the plan cannot be made: the
/// helper then resolves it itself and reports why it fails, as it always did.
pub(crate) fn cached(cfg: &HelperConfig) -> Option<Arc<Vec<Step>>> {
    type Key = (Option<PathBuf>, Vec<PathBuf>, Vec<PathBuf>);
    type Kept = Vec<(Key, Instant, Arc<Vec<Step>>)>;
    static CACHE: OnceLock<Mutex<Kept>> = OnceLock::new();
    let key: Key = (cfg.program.clone(), cfg.read_only.clone(), cfg.data.clone());
    let cache = CACHE.get_or_init(Default::default);
    let now = Instant::now();
    if let Ok(mut kept) = cache.lock() {
        kept.retain(|(_, made, _)| now.duration_since(*made) < PLAN_REUSE);
        if let Some((_, _, plan)) = kept.iter().find(|(k, _, _)| *k == key) {
            return Some(plan.clone());
        }
    }
    let plan = Arc::new(plan_shared(cfg).ok()?);
    if let Ok(mut kept) = cache.lock() {
        if kept.len() >= PLANS_KEPT {
            kept.remove(0);
        }
        kept.push((key, now, plan.clone()));
    }
    Some(plan)
}

/// Checks a shared plan received in the configuration against the configuration's own paths:
/// it must be exactly what resolving them gives when the symlinks, directories and files it
/// records are what is on the host. Walking each configured path through the plan's
/// recorded symlinks (no file is touched here) must end at a bind of that path with its
/// access, and every step of the plan must be met on some walk. [`build`] then checks each
/// recorded fact against the host while it mounts. A plan that binds anything no configured
/// path leads to, or with another access, is refused.
pub(crate) fn check(cfg: &HelperConfig, plan: &[Step]) -> Result<(), SetupError> {
    let err = |reason: String| SetupError::new(layer::FILESYSTEM_VIEW, reason);
    let mut links: HashMap<&Path, &Path> = HashMap::new();
    let mut dirs: HashSet<&Path> = HashSet::new();
    let mut binds: HashSet<(&Path, Access, bool)> = HashSet::new();
    for step in plan {
        match step {
            Step::Dir(path) => {
                dirs.insert(path);
            }
            Step::Symlink { path, target } => {
                if links.insert(path, target).is_some_and(|t| t != target) {
                    return Err(err(format!(
                        "the view's plan names two targets for the symlink {}",
                        path.display()
                    )));
                }
            }
            Step::Bind {
                path,
                access,
                is_dir,
            } => {
                binds.insert((path, *access, *is_dir));
            }
            Step::BindAt { path, .. } => {
                return Err(err(format!(
                    "the view's plan binds {} at another path, which only the scratch directory may be",
                    path.display()
                )));
            }
        }
    }
    let in_plan: HashSet<&Step> = plan.iter().collect();
    let mut met: HashSet<Step> = HashSet::new();
    for (path, access) in shared_inputs(cfg) {
        let mut walked = Vec::new();
        resolve_with(path, access, &mut walked, |next| {
            if let Some(target) = links.get(next) {
                Ok(Found::Symlink(target.to_path_buf()))
            } else if dirs.contains(next) {
                Ok(Found::Dir)
            } else if binds.contains(&(next, access, true)) {
                Ok(Found::Other { is_dir: true })
            } else if binds.contains(&(next, access, false)) {
                Ok(Found::Other { is_dir: false })
            } else {
                Err(SetupError::new(
                    layer::FILESYSTEM_VIEW,
                    format!(
                        "the view's plan does not say what {} is (resolving {})",
                        next.display(),
                        path.display()
                    ),
                ))
            }
        })?;
        if let Some(missing) = walked.iter().find(|s| !in_plan.contains(s)) {
            return Err(err(format!(
                "the view's plan lacks {missing:?} (resolving {}); refusing it",
                path.display()
            )));
        }
        met.extend(walked);
    }
    if let Some(extra) = plan.iter().find(|s| !met.contains(*s)) {
        return Err(err(format!(
            "the view's plan holds {extra:?}, which no configured path resolves to; refusing it"
        )));
    }
    Ok(())
}

enum Part {
    Parent,
    Name(OsString),
}

fn parts(path: &Path) -> impl DoubleEndedIterator<Item = Part> + '_ {
    path.components().filter_map(|c| match c {
        Component::ParentDir => Some(Part::Parent),
        Component::Normal(n) => Some(Part::Name(n.to_owned())),
        Component::RootDir | Component::CurDir | Component::Prefix(_) => None,
    })
}

/// What one component of a path is, as [`resolve_with`] asks.
enum Found {
    Symlink(PathBuf),
    Dir,
    /// A file, or a directory at the end of the path.
    Other {
        is_dir: bool,
    },
}

/// Resolves `path` on the host like the kernel would, recording the directories walked, the
/// symlinks followed and, at the end, the real file or directory to bind.
fn resolve(path: &Path, access: Access, steps: &mut Vec<Step>) -> Result<(), SetupError> {
    resolve_with(path, access, steps, |next| {
        let at = |e: std::io::Error| {
            SetupError::new(layer::FILESYSTEM_VIEW, format!("{}: {e}", next.display()))
        };
        let meta = fs::symlink_metadata(next).map_err(at)?;
        Ok(if meta.file_type().is_symlink() {
            Found::Symlink(fs::read_link(next).map_err(at)?)
        } else if meta.is_dir() {
            Found::Dir
        } else {
            Found::Other { is_dir: false }
        })
    })
}

/// [`resolve`] with `look` telling what each component is (the host's filesystem, or a plan
/// being checked).
fn resolve_with(
    path: &Path,
    access: Access,
    steps: &mut Vec<Step>,
    mut look: impl FnMut(&Path) -> Result<Found, SetupError>,
) -> Result<(), SetupError> {
    let err = |reason: String| SetupError::new(layer::FILESYSTEM_VIEW, reason);
    if !path.is_absolute() {
        return Err(err(format!("{} is not absolute", path.display())));
    }
    // A stack: the next component to walk is on top.
    let mut pending: Vec<Part> = parts(path).rev().collect();
    let mut current = PathBuf::from("/");
    let mut links = 0;
    let mut bound = false;
    while let Some(part) = pending.pop() {
        let name = match part {
            Part::Parent => {
                current.pop();
                continue;
            }
            Part::Name(name) => name,
        };
        let next = current.join(&name);
        let found = look(&next)?;
        // A data path was resolved by the host (symlinks followed, checked against what may be
        // granted): a symlink on its way now means it changed since, and might lead elsewhere.
        if access == Access::Data && matches!(found, Found::Symlink(_)) {
            return Err(err(format!(
                "data path {}: {} is a symlink (it changed since it was granted)",
                path.display(),
                next.display()
            )));
        }
        match found {
            Found::Symlink(target) => {
                links += 1;
                if links > MAX_SYMLINKS {
                    return Err(err(format!(
                        "too many symlinks resolving {}",
                        path.display()
                    )));
                }
                if target.is_absolute() {
                    current = PathBuf::from("/");
                }
                pending.extend(parts(&target).rev());
                steps.push(Step::Symlink { path: next, target });
            }
            Found::Dir if pending.is_empty() => {
                bound = true;
                steps.push(Step::Bind {
                    path: next,
                    access,
                    is_dir: true,
                });
            }
            Found::Other { is_dir } if pending.is_empty() => {
                bound = true;
                steps.push(Step::Bind {
                    path: next,
                    access,
                    is_dir,
                });
            }
            Found::Dir => {
                steps.push(Step::Dir(next.clone()));
                current = next;
            }
            Found::Other { .. } => {
                return Err(err(format!("{} is not a directory", next.display())));
            }
        }
    }
    if current == Path::new("/") && !bound {
        return Err(err(format!("{} resolves to the host root", path.display())));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_symlinked_program_into_links_and_one_bind() {
        // /bin/sh on merged-usr Debian: /bin -> usr/bin, /usr/bin/sh -> dash.
        let mut steps = Vec::new();
        resolve(Path::new("/bin/sh"), Access::ReadOnly, &mut steps).unwrap();
        let binds: Vec<_> = steps
            .iter()
            .filter(|s| matches!(s, Step::Bind { .. }))
            .collect();
        assert_eq!(binds.len(), 1, "{steps:?}");
        let Step::Bind { path, is_dir, .. } = binds[0] else {
            unreachable!()
        };
        assert!(!is_dir);
        assert_eq!(fs::canonicalize("/bin/sh").unwrap(), *path);
    }

    fn config(program: &str, read_only: &[&str], data: &[&str]) -> HelperConfig {
        let mut cfg = HelperConfig::decode(format!("program\0{program}\0").as_bytes()).unwrap();
        cfg.read_only = read_only.iter().map(PathBuf::from).collect();
        cfg.data = data.iter().map(PathBuf::from).collect();
        cfg
    }

    fn refusal(cfg: &HelperConfig, plan: &[Step]) -> String {
        check(cfg, plan).unwrap_err().reason
    }

    #[test]
    fn the_hosts_own_plan_passes_the_check() {
        let cfg = config("/bin/sh", &["/usr/lib", "/etc/hostname"], &["/tmp"]);
        let plan = plan_shared(&cfg).unwrap();
        check(&cfg, &plan).unwrap();
        // Each step once, however many paths share it.
        let unique: HashSet<&Step> = plan.iter().collect();
        assert_eq!(unique.len(), plan.len());
    }

    #[test]
    fn a_plan_binding_more_than_the_policy_is_refused() {
        let cfg = config("/bin/sh", &[], &[]);
        let mut plan = plan_shared(&cfg).unwrap();
        // Something no configured path leads to.
        plan.push(Step::Bind {
            path: "/etc".into(),
            access: Access::ReadOnly,
            is_dir: true,
        });
        assert!(
            refusal(&cfg, &plan).contains("which no configured path resolves to"),
            "{plan:?}"
        );
    }

    #[test]
    fn a_plan_granting_more_access_than_the_policy_is_refused() {
        // A data directory (read, never exec) planned as read-only (exec allowed).
        let cfg = config("/bin/sh", &[], &["/tmp"]);
        let plan: Vec<Step> = plan_shared(&cfg)
            .unwrap()
            .into_iter()
            .map(|step| match step {
                Step::Bind {
                    path,
                    access: Access::Data,
                    is_dir,
                } => Step::Bind {
                    path,
                    access: Access::ReadOnly,
                    is_dir,
                },
                other => other,
            })
            .collect();
        assert!(refusal(&cfg, &plan).contains("does not say what /tmp is"));
    }

    #[test]
    fn a_plan_leading_a_path_elsewhere_is_refused() {
        // The program's symlink made to lead to another file, without the steps to get there.
        // (/bin/sh is a symlink, or reached through one, on every system this runs on.)
        let cfg = config("/bin/sh", &[], &[]);
        let mut plan = plan_shared(&cfg).unwrap();
        let Some(Step::Symlink { target, .. }) =
            plan.iter_mut().find(|s| matches!(s, Step::Symlink { .. }))
        else {
            panic!("no symlink resolving /bin/sh: {plan:?}");
        };
        *target = "/etc".into();
        let reason = refusal(&cfg, &plan);
        assert!(reason.contains("does not say what /etc is"), "{reason}");
        // A plan that leaves out a path of the policy is refused too.
        let plan = plan_shared(&config("/bin/sh", &[], &[])).unwrap();
        let reason = refusal(&config("/bin/sh", &["/usr/lib"], &[]), &plan);
        assert!(reason.contains("/usr/lib"), "{reason}");
        // A scratch bind smuggled into the shared plan.
        let mut plan = plan_shared(&cfg).unwrap();
        plan.push(Step::BindAt {
            source: "/".into(),
            path: "/workspace".into(),
            access: Access::ReadWrite,
        });
        assert!(refusal(&cfg, &plan).contains("only the scratch directory"));
    }

    #[test]
    fn a_data_path_through_a_planned_symlink_is_refused() {
        // /bin is a symlink: a plan resolving a data path through it is refused as the host's
        // own resolution would be.
        let cfg = config("/bin/sh", &[], &[]);
        let mut plan = plan_shared(&cfg).unwrap();
        let data = config("/bin/sh", &[], &["/bin/sh"]);
        plan.extend(plan_shared(&config("/bin/sh", &["/bin/sh"], &[])).unwrap());
        assert!(refusal(&data, &plan).contains("is a symlink"));
    }

    #[test]
    fn rejects_relative_and_missing_paths() {
        let mut steps = Vec::new();
        let errs: Vec<String> = ["usr/lib", "/does/not/exist"]
            .iter()
            .map(|p| {
                resolve(Path::new(p), Access::ReadOnly, &mut steps)
                    .unwrap_err()
                    .reason
            })
            .collect();
        assert_eq!(
            errs,
            [
                "usr/lib is not absolute",
                "/does: No such file or directory (os error 2)",
            ]
        );
    }
}

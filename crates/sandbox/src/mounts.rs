//! The filesystem view (step 6): a read-only tmpfs root holding only what the payload needs.
//!
//! The plan is computed from the host view first ([`plan`]): every path the payload needs (the
//! program, the shared libraries it links, the host's read-only paths) is resolved component
//! by component, so the symlinks on the way (`/bin -> usr/bin`, `/lib64/ld-linux... -> ...`)
//! are recreated as symlinks and only real files and directories are bind-mounted. No library
//! directory is mounted as a whole. Then [`build`] mounts a tmpfs, pivots into it, recreates
//! the symlinks and directories, bind-mounts the plan read-only (scratch read-write), covers
//! hidden directories with an empty read-only tmpfs, adds a small `/dev` and a fresh `/proc`,
//! detaches the host root and makes the tmpfs root read-only.

use std::ffi::OsString;
use std::fs;
use std::io::ErrorKind;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};

use nix::mount::{MntFlags, MsFlags, mount, umount2};
use nix::unistd;

use crate::config::HelperConfig;
use crate::helper::SetupError;
use crate::report::layer;
use crate::sys::{ATTR_NODEV, ATTR_NOEXEC, ATTR_NOSUID, ATTR_RDONLY, mount_setattr};

/// The devices of the small `/dev`, bound from the host's.
pub(crate) const DEVICES: &[&str] = &["/dev/null", "/dev/zero", "/dev/urandom", "/dev/random"];

/// Where the tmpfs that becomes the root is mounted before `pivot_root`. After the pivot the
/// host's own directory is visible again under `/oldroot`, so binds from it still work.
const STAGING: &str = "/tmp";
const OLD_ROOT: &str = "/oldroot";

/// Symlinks followed while resolving one path, as the kernel's own limit.
const MAX_SYMLINKS: usize = 40;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Access {
    /// A directory inside a read-only path, shown empty (an empty read-only tmpfs on it).
    /// Least permissive: the same path with any other access stays visible.
    Hidden,
    /// Read only: no exec, no suid, no devices (data granted to code).
    Data,
    /// Read and execute, nothing else (nosuid, nodev).
    ReadOnly,
    /// A device node: read and write the node, no exec, no suid.
    Device,
    /// The scratch directory: read and write, no exec, no suid, no devices.
    ReadWrite,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step {
    Dir(PathBuf),
    Symlink {
        path: PathBuf,
        target: PathBuf,
    },
    Bind {
        path: PathBuf,
        access: Access,
        is_dir: bool,
    },
    /// A host directory bound at another path of the view (the scratch directory's mount point).
    BindAt {
        source: PathBuf,
        path: PathBuf,
        access: Access,
    },
}

/// Every step needed to make the configured paths resolve inside the view as on the host.
pub(crate) fn plan(cfg: &HelperConfig) -> Result<Vec<Step>, SetupError> {
    let mut steps = Vec::new();
    if let Some(program) = &cfg.program {
        resolve(program, Access::ReadOnly, &mut steps)?;
    }
    for path in &cfg.read_only {
        resolve(path, Access::ReadOnly, &mut steps)?;
    }
    for path in &cfg.data {
        resolve(path, Access::Data, &mut steps)?;
    }
    for path in DEVICES {
        resolve(Path::new(path), Access::Device, &mut steps)?;
    }
    match (&cfg.scratch, &cfg.scratch_at) {
        (Some(scratch), Some(at)) => {
            let source = fs::canonicalize(scratch).map_err(|e| {
                SetupError::new(
                    layer::FILESYSTEM_VIEW,
                    format!("{}: {e}", scratch.display()),
                )
            })?;
            if let Some(parent) = at.parent() {
                steps.push(Step::Dir(parent.to_owned()));
            }
            steps.push(Step::BindAt {
                source,
                path: at.clone(),
                access: Access::ReadWrite,
            });
        }
        (Some(scratch), None) => resolve(scratch, Access::ReadWrite, &mut steps)?,
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
    Ok(steps)
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

/// Resolves `path` on the host like the kernel would, recording the directories walked, the
/// symlinks followed and, at the end, the real file or directory to bind.
fn resolve(path: &Path, access: Access, steps: &mut Vec<Step>) -> Result<(), SetupError> {
    let err = |reason: String| SetupError::new(layer::FILESYSTEM_VIEW, reason);
    if !path.is_absolute() {
        return Err(err(format!("{} is not absolute", path.display())));
    }
    // A stack: the next component to walk is on top.
    let mut pending: Vec<Part> = parts(path).rev().collect();
    let mut current = PathBuf::from("/");
    let mut links = 0;
    while let Some(part) = pending.pop() {
        let name = match part {
            Part::Parent => {
                current.pop();
                continue;
            }
            Part::Name(name) => name,
        };
        let next = current.join(&name);
        let meta =
            fs::symlink_metadata(&next).map_err(|e| err(format!("{}: {e}", next.display())))?;
        // A data path was resolved by the host (symlinks followed, checked against what may be
        // granted): a symlink on its way now means it changed since, and might lead elsewhere.
        if access == Access::Data && meta.file_type().is_symlink() {
            return Err(err(format!(
                "data path {}: {} is a symlink (it changed since it was granted)",
                path.display(),
                next.display()
            )));
        }
        if meta.file_type().is_symlink() {
            links += 1;
            if links > MAX_SYMLINKS {
                return Err(err(format!(
                    "too many symlinks resolving {}",
                    path.display()
                )));
            }
            let target =
                fs::read_link(&next).map_err(|e| err(format!("{}: {e}", next.display())))?;
            if target.is_absolute() {
                current = PathBuf::from("/");
            }
            pending.extend(parts(&target).rev());
            steps.push(Step::Symlink { path: next, target });
        } else if pending.is_empty() {
            steps.push(Step::Bind {
                path: next,
                access,
                is_dir: meta.is_dir(),
            });
        } else if meta.is_dir() {
            steps.push(Step::Dir(next.clone()));
            current = next;
        } else {
            return Err(err(format!("{} is not a directory", next.display())));
        }
    }
    if current == Path::new("/") && !steps.iter().any(|s| matches!(s, Step::Bind { .. })) {
        return Err(err(format!("{} resolves to the host root", path.display())));
    }
    Ok(())
}

/// Builds the view in the current (new, private) mount namespace and enters it. Must run in
/// the new PID namespace (for `/proc`). Returns a one-line description.
pub(crate) fn build(steps: &[Step]) -> Result<String, SetupError> {
    let err = |what: String, e: &dyn std::fmt::Display| {
        SetupError::new(layer::FILESYSTEM_VIEW, format!("{what}: {e}"))
    };
    let none: Option<&str> = None;

    // 6.1 Nothing we mount propagates back to the host, and nothing of the host's reaches us.
    mount(none, "/", none, MsFlags::MS_REC | MsFlags::MS_PRIVATE, none)
        .map_err(|e| err("make / private".into(), &e))?;
    // 6.2 A small tmpfs becomes the new root; the host root moves to /oldroot.
    mount(
        Some("tmpfs"),
        STAGING,
        Some("tmpfs"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
        Some("mode=0755,size=1m,nr_inodes=4096"),
    )
    .map_err(|e| err(format!("mount tmpfs on {STAGING}"), &e))?;
    unistd::chdir(STAGING).map_err(|e| err(format!("chdir {STAGING}"), &e))?;
    mkdir(Path::new("oldroot")).map_err(|e| err("mkdir oldroot".into(), &e))?;
    unistd::pivot_root(".", "oldroot").map_err(|e| err("pivot_root".into(), &e))?;
    unistd::chdir("/").map_err(|e| err("chdir /".into(), &e))?;

    // 6.3 Directories and symlinks, in the tmpfs.
    for step in steps {
        match step {
            Step::Dir(path) => {
                mkdir_all(path).map_err(|e| err(format!("mkdir {}", path.display()), &e))?
            }
            Step::Symlink { path, target } => {
                if let Some(parent) = path.parent() {
                    mkdir_all(parent)
                        .map_err(|e| err(format!("mkdir {}", parent.display()), &e))?;
                }
                if fs::symlink_metadata(path).is_err() {
                    std::os::unix::fs::symlink(target, path)
                        .map_err(|e| err(format!("symlink {}", path.display()), &e))?;
                }
            }
            Step::Bind { .. } | Step::BindAt { .. } => {}
        }
    }

    // 6.4 Bind mounts, parents before children; the most permissive access wins per path.
    let mut binds: Vec<(&Path, Access, bool, Option<&Path>)> = steps
        .iter()
        .filter_map(|s| match s {
            Step::Bind {
                path,
                access,
                is_dir,
            } => Some((path.as_path(), *access, *is_dir, None)),
            Step::BindAt {
                source,
                path,
                access,
            } => Some((path.as_path(), *access, true, Some(source.as_path()))),
            Step::Dir(_) | Step::Symlink { .. } => None,
        })
        .collect();
    binds.sort_by_key(|(path, access, _, _)| {
        (path.components().count(), *path, std::cmp::Reverse(*access))
    });
    binds.dedup_by(|later, kept| later.0 == kept.0);
    let mut applied: Vec<(&Path, Access)> = Vec::new();
    for (path, access, is_dir, from) in binds {
        let covering = applied.iter().rev().find(|(p, _)| path.starts_with(p));
        if access == Access::Hidden {
            // Only what a read-only bind shows needs covering; the mount point exists there.
            if covering.is_some_and(|(_, a)| matches!(a, Access::ReadOnly | Access::Data)) {
                mount(
                    Some("tmpfs"),
                    path,
                    Some("tmpfs"),
                    MsFlags::MS_RDONLY
                        | MsFlags::MS_NOSUID
                        | MsFlags::MS_NODEV
                        | MsFlags::MS_NOEXEC,
                    Some("mode=0555,size=4k,nr_inodes=1"),
                )
                .map_err(|e| err(format!("hide {}", path.display()), &e))?;
                applied.push((path, access));
            }
            continue;
        }
        if from.is_none() && covering.is_some_and(|(_, a)| *a == access) {
            continue;
        }
        if fs::symlink_metadata(path).is_err() {
            let made = if is_dir {
                mkdir(path)
            } else {
                fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(0o444)
                    .open(path)
                    .map(drop)
            };
            made.map_err(|e| err(format!("mount point {}", path.display()), &e))?;
        }
        let host = from.unwrap_or(path);
        let source = Path::new(OLD_ROOT).join(host.strip_prefix("/").unwrap_or(host));
        mount(
            Some(&source),
            path,
            none,
            MsFlags::MS_BIND | MsFlags::MS_REC,
            none,
        )
        .map_err(|e| err(format!("bind {}", path.display()), &e))?;
        let attrs = match access {
            Access::ReadOnly => ATTR_RDONLY | ATTR_NOSUID | ATTR_NODEV,
            Access::Data => ATTR_RDONLY | ATTR_NOSUID | ATTR_NODEV | ATTR_NOEXEC,
            Access::Device => ATTR_RDONLY | ATTR_NOSUID | ATTR_NOEXEC,
            Access::ReadWrite => ATTR_NOSUID | ATTR_NODEV | ATTR_NOEXEC,
            Access::Hidden => continue,
        };
        mount_setattr(path, true, attrs)
            .map_err(|e| err(format!("mount_setattr {}", path.display()), &e))?;
        applied.push((path, access));
    }

    // 6.5 The rest of /dev: the usual links into /proc.
    mkdir_all(Path::new("/dev")).map_err(|e| err("mkdir /dev".into(), &e))?;
    for (link, target) in [
        ("/dev/fd", "/proc/self/fd"),
        ("/dev/stdin", "/proc/self/fd/0"),
        ("/dev/stdout", "/proc/self/fd/1"),
        ("/dev/stderr", "/proc/self/fd/2"),
    ] {
        if fs::symlink_metadata(link).is_err() {
            std::os::unix::fs::symlink(target, link)
                .map_err(|e| err(format!("symlink {link}"), &e))?;
        }
    }

    // 6.6 A fresh /proc of the new PID namespace; must happen while the host's /proc is still
    // attached (the kernel only allows it when a full proc is already visible).
    mkdir_all(Path::new("/proc")).map_err(|e| err("mkdir /proc".into(), &e))?;
    let proc_flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC;
    let proc_detail = match mount(
        Some("proc"),
        "/proc",
        Some("proc"),
        proc_flags,
        Some("subset=pid"),
    ) {
        Ok(()) => "subset=pid",
        Err(_) => {
            mount(Some("proc"), "/proc", Some("proc"), proc_flags, none)
                .map_err(|e| SetupError::new(layer::PROC, format!("mount proc: {e}")))?;
            "full"
        }
    };

    // 6.7 Detach the host root and freeze the tmpfs.
    umount2(OLD_ROOT, MntFlags::MNT_DETACH).map_err(|e| err(format!("umount {OLD_ROOT}"), &e))?;
    fs::remove_dir(OLD_ROOT).map_err(|e| err(format!("rmdir {OLD_ROOT}"), &e))?;
    mount_setattr(
        Path::new("/"),
        false,
        ATTR_RDONLY | ATTR_NOSUID | ATTR_NODEV,
    )
    .map_err(|e| err("make / read-only".into(), &e))?;
    if fs::symlink_metadata(OLD_ROOT).is_ok() {
        return Err(SetupError::new(
            layer::FILESYSTEM_VIEW,
            "the host root is still reachable".into(),
        ));
    }

    let ro: Vec<String> = applied
        .iter()
        .filter(|(_, a)| *a == Access::ReadOnly)
        .map(|(p, _)| p.display().to_string())
        .collect();
    let list = |access: Access| -> String {
        let paths: Vec<String> = applied
            .iter()
            .filter(|(_, a)| *a == access)
            .map(|(p, _)| p.display().to_string())
            .collect();
        if paths.is_empty() {
            "none".to_owned()
        } else {
            paths.join(" ")
        }
    };
    Ok(format!(
        "read-only tmpfs root; read-only: {}; data (no exec): {}; hidden (empty): {}; read-write: {}; /dev: null zero urandom random; /proc: {proc_detail}",
        if ro.is_empty() {
            "none".to_owned()
        } else {
            ro.join(" ")
        },
        list(Access::Data),
        list(Access::Hidden),
        list(Access::ReadWrite),
    ))
}

fn mkdir(path: &Path) -> std::io::Result<()> {
    fs::DirBuilder::new().mode(0o755).create(path)
}

fn mkdir_all(path: &Path) -> std::io::Result<()> {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => Err(ErrorKind::AlreadyExists.into()),
        Err(_) => fs::DirBuilder::new()
            .mode(0o755)
            .recursive(true)
            .create(path),
    }
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

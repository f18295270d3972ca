//! Building the view the plan describes (`super`'s docs): inside the helper, in the new mount
//! and PID namespaces, a tmpfs root, the plan's symlinks and directories, every host path of
//! the plan opened again without following a symlink and bind-mounted from what was opened,
//! hidden directories covered, a small `/dev`, a fresh `/proc`, the host root detached, and the
//! tmpfs root made read-only.

use std::collections::HashSet;
use std::fs;
use std::io::ErrorKind;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use nix::fcntl::OFlag;
use nix::mount::{MntFlags, MsFlags, mount, umount2};
use nix::sys::stat::Mode;
use nix::unistd;

use super::granted::GrantedTree;
use crate::error::SetupError;
use crate::linux::layers::layer;
use crate::linux::sys::{
    ATTR_NODEV, ATTR_NOEXEC, ATTR_NOSUID, ATTR_RDONLY, mount_setattr, move_mount_to,
};
use crate::linux::view::{Access, Step};

/// Where the tmpfs that becomes the root is mounted before `pivot_root`. After the pivot the
/// host's own directory is visible again under `/oldroot`, so binds from it still work.
const STAGING: &str = "/tmp";
const OLD_ROOT: &str = "/oldroot";

/// Builds the view in the current (new, private) mount namespace and enters it. Must run in
/// the new PID namespace (for `/proc`). Returns a one-line description.
/// Data paths found in `granted` (opened by root, see [`super::granted`]) are attached from
/// their tree instead of being opened again from the host.
pub(crate) fn build(
    steps: &[Step],
    mut granted: Vec<GrantedTree>,
    shared: bool,
) -> Result<String, SetupError> {
    let err = |what: String, e: &dyn std::fmt::Display| {
        SetupError::new(layer::FILESYSTEM_VIEW, format!("{what}: {e}"))
    };
    let none: Option<&str> = None;

    // 6.1 Nothing we mount propagates back to the host, and nothing of the host's reaches us.
    mount(none, "/", none, MsFlags::MS_REC | MsFlags::MS_PRIVATE, none)
        .map_err(|e| err("make / private".into(), &e))?;
    // The host root, held open: every host path of the plan is opened beneath it without
    // following a symlink, and what is bound is exactly what was opened.
    let host = HostRoot::new().map_err(|e| err("open the host root".into(), &e))?;
    // Paths of the plan checked against the host, with their parents (checked on the way).
    let mut checked: HashSet<&Path> = HashSet::new();
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
                host.check_symlink(path, target)?;
                checked.extend(path.ancestors());
                if fs::symlink_metadata(path).is_err() {
                    std::os::unix::fs::symlink(target, path)
                        .map_err(|e| err(format!("symlink {}", path.display()), &e))?;
                }
            }
            // The scratch directory's mount point: its parents exist only in the view.
            Step::BindAt { path, .. } => {
                if let Some(parent) = path.parent() {
                    mkdir_all(parent)
                        .map_err(|e| err(format!("mkdir {}", parent.display()), &e))?;
                }
            }
            Step::Bind { .. } => {}
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
    // Data paths attached from a tree root opened, with how their owner reads.
    let mut mapped: Vec<String> = Vec::new();
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
        // A data path opened by root keeps its own tree even below another grant: its id map
        // is its own owner's (a file of another owner in a granted directory, granted too).
        let tree = match granted.iter().position(|g| g.path == path) {
            Some(i) if access == Access::Data && from.is_none() => Some(granted.swap_remove(i)),
            _ => None,
        };
        if from.is_none() && tree.is_none() && covering.is_some_and(|(_, a)| *a == access) {
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
        let real = from.unwrap_or(path);
        // A data path root opened (`super::granted`) is attached from its tree; where that is
        // refused (a container's filter may refuse `move_mount`), it is bound from the host as
        // any other path is, and the view's line says so.
        let attached = match tree {
            Some(tree) => {
                // Opened by root beneath the host root with no symlink followed: its parents
                // were checked on the way, and its kind must still be the planned one.
                if tree.is_dir != is_dir {
                    return Err(HostRoot::changed(
                        path,
                        if is_dir {
                            "it is not a directory now"
                        } else {
                            "it is a directory now"
                        },
                    ));
                }
                match move_mount_to(tree.tree.as_fd(), path) {
                    Ok(()) => {
                        checked.extend(real.ancestors());
                        mapped.push(match &tree.mapped {
                            Ok((uid, gid)) => format!(
                                "{} (owner {uid}:{gid} read as the sandbox's)",
                                path.display()
                            ),
                            Err(why) => format!("{} (not id-mapped: {why})", path.display()),
                        });
                        true
                    }
                    Err(e) => {
                        mapped.push(format!(
                            "{} (bound from the host: attaching root's copy failed: {e})",
                            path.display()
                        ));
                        false
                    }
                }
            }
            None => false,
        };
        if !attached {
            let source = host.open(real, is_dir)?;
            checked.extend(real.ancestors());
            mount(
                Some(&source.magic_link()),
                path,
                none,
                MsFlags::MS_BIND | MsFlags::MS_REC,
                none,
            )
            .map_err(|e| err(format!("bind {}", path.display()), &e))?;
            drop(source);
        }
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

    // The directories walked that no bind or symlink above passed through (a path with `..`).
    for step in steps {
        if let Step::Dir(path) = step
            && !checked.contains(path.as_path())
        {
            host.check_dir(path)?;
        }
    }
    drop(host);
    // Trees of data paths not in the plan (attached nowhere): closed here, so the payload
    // inherits none.
    drop(granted);

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
    // A template's view is shared by its workers, each in a PID namespace of its own below the
    // template's: its /proc shows a process only to whoever may ptrace it (`hidepid=invisible`),
    // which Landlock's domain of each worker limits to the worker's own processes. Required.
    if shared {
        mount(
            Some("proc"),
            "/proc",
            Some("proc"),
            proc_flags,
            Some("subset=pid,hidepid=invisible"),
        )
        .map_err(|e| SetupError::new(layer::PROC, format!("mount proc hidepid=invisible: {e}")))?;
    }
    let proc_detail = if shared {
        "subset=pid,hidepid=invisible (shared by a template's workers)"
    } else {
        match mount(
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
        "read-only tmpfs root; read-only: {}; data (no exec): {}{}; hidden (empty): {}; read-write: {}; /dev: null zero urandom random; /proc: {proc_detail}",
        if ro.is_empty() {
            "none".to_owned()
        } else {
            ro.join(" ")
        },
        list(Access::Data),
        if mapped.is_empty() {
            String::new()
        } else {
            format!(" (opened by root: {})", mapped.join(", "))
        },
        list(Access::Hidden),
        list(Access::ReadWrite),
    ))
}

/// The host root while the view is built: every host path of the plan is opened beneath it
/// with no symlink followed ([`crate::linux::sys::open_no_symlinks`]), so a path that changed since
/// the plan was made (a component replaced by a symlink, removed, a file where a directory
/// was) fails the view instead of binding something else.
struct HostRoot(OwnedFd);

/// A host file or directory opened by [`HostRoot::open`].
struct Opened(OwnedFd);

impl Opened {
    /// The path `mount` binds it by: its descriptor in the host's `/proc` (under the old root
    /// while the view is built), which names exactly the opened object.
    fn magic_link(&self) -> PathBuf {
        PathBuf::from(format!("{OLD_ROOT}/proc/self/fd/{}", self.0.as_raw_fd()))
    }
}

impl HostRoot {
    fn new() -> nix::Result<Self> {
        nix::fcntl::open(
            "/",
            OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map(Self)
    }

    fn changed(path: &Path, why: impl std::fmt::Display) -> SetupError {
        SetupError::new(
            layer::FILESYSTEM_VIEW,
            format!(
                "{} changed since the view was planned ({why}); refusing to bind it",
                path.display()
            ),
        )
    }

    fn lookup(&self, path: &Path, directory: bool) -> Result<OwnedFd, SetupError> {
        let rel = path.strip_prefix("/").unwrap_or(path);
        crate::linux::sys::open_no_symlinks(self.0.as_fd(), rel, directory).map_err(|e| {
            match e.raw_os_error() {
                Some(nix::libc::ELOOP) => Self::changed(path, "a symlink is on its way now"),
                Some(nix::libc::ENOTDIR) if directory => {
                    Self::changed(path, "it is not a directory now")
                }
                Some(nix::libc::ENOTDIR) => Self::changed(path, "a file is on its way now"),
                Some(nix::libc::ENOENT) => Self::changed(path, "it is gone"),
                _ => SetupError::new(layer::FILESYSTEM_VIEW, format!("{}: {e}", path.display())),
            }
        })
    }

    fn kind(path: &Path, fd: &OwnedFd) -> Result<nix::libc::mode_t, SetupError> {
        nix::sys::stat::fstat(fd)
            .map(|st| st.st_mode & nix::libc::S_IFMT)
            .map_err(|e| Self::changed(path, e))
    }

    /// The real file or directory `path` (no symlink in it), to bind.
    fn open(&self, path: &Path, is_dir: bool) -> Result<Opened, SetupError> {
        let fd = self.lookup(path, false)?;
        match Self::kind(path, &fd)? {
            nix::libc::S_IFLNK => Err(Self::changed(path, "it is a symlink now")),
            nix::libc::S_IFDIR if !is_dir => Err(Self::changed(path, "it is a directory now")),
            kind if is_dir && kind != nix::libc::S_IFDIR => {
                Err(Self::changed(path, "it is not a directory now"))
            }
            _ => Ok(Opened(fd)),
        }
    }

    /// `path` is still a symlink to `target`.
    fn check_symlink(&self, path: &Path, target: &Path) -> Result<(), SetupError> {
        let fd = self.lookup(path, false)?;
        // On a descriptor of anything but a symlink, `readlinkat(fd, "")` fails (ENOENT).
        let now = nix::fcntl::readlinkat(&fd, "")
            .map_err(|_| Self::changed(path, "it is no longer a symlink"))?;
        if Path::new(&now) != target {
            return Err(Self::changed(
                path,
                format!(
                    "it leads to {} now, not {}",
                    Path::new(&now).display(),
                    target.display()
                ),
            ));
        }
        Ok(())
    }

    /// `path` is still a real directory.
    fn check_dir(&self, path: &Path) -> Result<(), SetupError> {
        self.lookup(path, true).map(drop)
    }
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

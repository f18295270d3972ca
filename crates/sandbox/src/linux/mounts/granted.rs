//! Data paths (read grants) as the host's root opens them: step 3's first half when the helper
//! runs as root (`docs/sandbox.md`, "Read grants when the host runs as root").
//!
//! The sandbox leaves root for uid 65534 before it builds the view, so a grant of a root-owned
//! directory of mode 0700 (tempfile's default), of a 0600 file, or of a path below a 0700
//! directory could be bound but never read: the payload fails the owner check of the granted
//! object and the search check of its parents. Here, while still root, the helper opens each
//! data path (no symlink followed: a data path is a real path) and takes a detached copy of its
//! mount tree (`open_tree(OPEN_TREE_CLONE)`), read-only, nosuid, nodev, noexec and **id-mapped**:
//! on that copy only, the owner and group of the granted path read as the sandbox's host uid and
//! gid, so the payload reads the tree as its owner would. The init attaches the copy at the data
//! path in the view (`move_mount`, in `build`). Nothing else changes: the rest of the view, and
//! files in the tree owned by anyone else, keep their ids (the payload reads them under their
//! "other" bits, or their group bits when their group is the granted path's); the copy is
//! read-only whatever the mapping says, and Landlock still allows it only reading.

use std::collections::HashMap;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use nix::fcntl::OFlag;
use nix::sched::{CloneFlags, unshare};
use nix::sys::stat::Mode;
use nix::sys::wait::waitpid;
use nix::unistd::{self, ForkResult, Gid, Uid};

use crate::error::IdMapError;
use crate::linux::sys::{ATTR_IDMAP, ATTR_NODEV, ATTR_NOEXEC, ATTR_NOSUID, ATTR_RDONLY};

/// The attributes of a granted tree, as `build` gives a data path bound from the host.
const DATA_ATTRS: u64 = ATTR_RDONLY | ATTR_NOSUID | ATTR_NODEV | ATTR_NOEXEC;

/// One data path, opened by root as a detached mount tree, ready to be attached in the view.
pub(crate) struct GrantedTree {
    /// The data path (real, absolute): where the tree is attached in the view.
    pub path: PathBuf,
    /// The detached tree (close-on-exec).
    pub tree: OwnedFd,
    pub is_dir: bool,
    /// How the owner reads in the view: `Ok((uid, gid))` of the granted path when id-mapped,
    /// or why it could not be (the tree is then attached with its own ids).
    pub mapped: Result<(u32, u32), IdMapError>,
}

/// Opens every data path of `data` as root (see the module's docs), id-mapping its owner and
/// group to `to`. A path that cannot be opened this way (gone, a symlink now, a kernel without
/// the new mount API) is left out: `build` then binds it from the host as for an unprivileged
/// host and reports what is wrong with it.
pub(crate) fn open_as_root(data: &[PathBuf], to: (Uid, Gid)) -> Vec<GrantedTree> {
    // One id-mapping user namespace per (owner, group): most grants share one.
    let mut maps: HashMap<(u32, u32), Result<OwnedFd, IdMapError>> = HashMap::new();
    let Ok(root) = nix::fcntl::open(
        "/",
        OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    ) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for path in data {
        let rel = path.strip_prefix("/").unwrap_or(path);
        let Ok(at) = crate::linux::sys::open_no_symlinks(root.as_fd(), rel, false) else {
            continue;
        };
        let Ok(st) = nix::sys::stat::fstat(&at) else {
            continue;
        };
        let kind = st.st_mode & nix::libc::S_IFMT;
        if kind == nix::libc::S_IFLNK {
            continue;
        }
        let Ok(tree) = crate::linux::sys::open_tree_clone(at.as_fd()) else {
            continue;
        };
        let owner = (st.st_uid, st.st_gid);
        let userns = maps.entry(owner).or_insert_with(|| {
            idmap_namespace(owner, to).map_err(|e| IdMapError::Namespace(Arc::new(e)))
        });
        let mapped = match userns {
            Ok(ns) => crate::linux::sys::mount_setattr_tree(
                tree.as_fd(),
                DATA_ATTRS | ATTR_IDMAP,
                Some(ns.as_fd()),
            )
            .map(|()| owner)
            .map_err(|e| IdMapError::Attr {
                path: path.clone(),
                error: Arc::new(e),
            }),
            Err(e) => Err(e.clone()),
        };
        // Without the mapping the tree still gets the data attributes (a filesystem that cannot
        // be id-mapped, such as NFS): root's open still spares the payload the parents' checks.
        if mapped.is_err()
            && crate::linux::sys::mount_setattr_tree(tree.as_fd(), DATA_ATTRS, None).is_err()
        {
            continue;
        }
        out.push(GrantedTree {
            path: path.clone(),
            tree,
            is_dir: kind == nix::libc::S_IFDIR,
            mapped,
        });
    }
    out
}

/// A user namespace whose only uid and gid map `from` to `to`, held by a descriptor of its
/// `/proc/PID/ns/user` (the process that made it is gone when this returns). As the id map of
/// a mount, it makes files owned by `from` read as owned by `to`, and every other id unmapped.
fn idmap_namespace(from: (u32, u32), to: (Uid, Gid)) -> std::io::Result<OwnedFd> {
    let (ready_r, ready_w) = unistd::pipe2(OFlag::O_CLOEXEC)?;
    let (hold_r, hold_w) = unistd::pipe2(OFlag::O_CLOEXEC)?;
    // SAFETY: the helper is single-threaded (started before any thread by the host's main), so
    // the child may do anything after fork; it only unshares, writes one byte and waits, then
    // leaves with `_exit` (no destructor, no buffer flushed twice). What can go wrong: a fork
    // failure, returned as an error (the grant is then bound without the mapping).
    match unsafe { unistd::fork() }? {
        ForkResult::Child => {
            drop(ready_r);
            drop(hold_w);
            let ok =
                unshare(CloneFlags::CLONE_NEWUSER).is_ok() && unistd::write(&ready_w, b"1").is_ok();
            // Wait until the parent has the namespace (its end closes: EOF).
            let mut byte = [0u8; 1];
            let _ = unistd::read(&hold_r, &mut byte);
            // SAFETY: `_exit` ends this forked child at once, touching nothing shared.
            unsafe { nix::libc::_exit(if ok { 0 } else { 1 }) }
        }
        ForkResult::Parent { child } => {
            drop(ready_w);
            drop(hold_r);
            let mut byte = [0u8; 1];
            let made = unistd::read(&ready_r, &mut byte).map_err(std::io::Error::from);
            let ns = made.and_then(|n| {
                if n != 1 {
                    return Err(std::io::Error::other(
                        "the id-mapping user namespace could not be made",
                    ));
                }
                let proc = Path::new("/proc").join(child.as_raw().to_string());
                std::fs::write(proc.join("uid_map"), format!("{} {} 1\n", from.0, to.0))?;
                std::fs::write(proc.join("gid_map"), format!("{} {} 1\n", from.1, to.1))?;
                Ok(nix::fcntl::open(
                    &proc.join("ns/user"),
                    OFlag::O_RDONLY | OFlag::O_CLOEXEC,
                    Mode::empty(),
                )?)
            });
            drop(hold_w);
            let _ = waitpid(child, None);
            ns
        }
    }
}

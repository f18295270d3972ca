//! Directory trees that code wrote (a session's workspace), measured and deleted by the host.
//!
//! The code controls the tree's shape: it can nest directories far past `PATH_MAX` (with
//! relative `mkdir` and `chdir`) and plant symlinks anywhere. So the host walks it by file
//! descriptor (`openat`, `fstatat`, `unlinkat`), never by path, never follows a link, never
//! recurses on its own stack, and holds at most [`MAX_DEPTH`] descriptors at once:
//!
//! - [`measure`] counts bytes and entries and says when the tree nests deeper than
//!   [`MAX_DEPTH`] (the session's quota treats that as a violation, since what lies below
//!   could not be counted);
//! - [`remove`] deletes any tree, however deep: a directory met at [`MAX_DEPTH`] is first
//!   moved up to the top of the tree, and the walk starts again. A directory that is a mount
//!   point (a workspace's bounded tmpfs, `super::bounded`) is unmounted, not walked.

use std::ffi::{CStr, CString};
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use nix::dir::Dir;
use nix::fcntl::{AtFlags, OFlag, renameat};
use nix::sys::stat::{Mode, fstatat};
use nix::unistd::{UnlinkatFlags, unlinkat};

/// Deepest directory level walked at once.
pub const MAX_DEPTH: usize = 128;

/// What [`measure`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TreeUsage {
    /// The larger of each entry's length and its allocated blocks, summed.
    pub bytes: u64,
    pub entries: u64,
    /// Directories nest deeper than [`MAX_DEPTH`]: what is below was not counted.
    pub too_deep: bool,
}

/// One directory being walked: its handle and the names it held when it was opened.
struct Frame {
    dir: Dir,
    names: Vec<CString>,
    next: usize,
    /// Its own name in the directory above (for removal).
    name: Option<CString>,
}

fn open(at: impl AsFd, name: &CStr) -> nix::Result<Frame> {
    let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let mut dir = Dir::openat(at, name, flags, Mode::empty())?;
    let names = dir
        .iter()
        .flatten()
        .map(|e| e.file_name().to_owned())
        .filter(|n| n.as_bytes() != b"." && n.as_bytes() != b"..")
        .collect();
    Ok(Frame {
        dir,
        names,
        next: 0,
        name: Some(name.to_owned()),
    })
}

fn open_root(root: &Path) -> nix::Result<Frame> {
    let path = CString::new(root.as_os_str().as_encoded_bytes()).map_err(|_| nix::Error::EINVAL)?;
    let mut frame = open(nix::fcntl::AT_FDCWD, &path)?;
    frame.name = None;
    Ok(frame)
}

fn is_dir(at: impl AsFd, name: &CStr) -> nix::Result<(bool, u64)> {
    stat(at, name).map(|(dir, bytes, _)| (dir, bytes))
}

/// Whether `name` is a directory, its bytes (the larger of its length and its blocks) and
/// its device.
fn stat(at: impl AsFd, name: &CStr) -> nix::Result<(bool, u64, u64)> {
    let st = fstatat(at, name, AtFlags::AT_SYMLINK_NOFOLLOW)?;
    let is_dir = (st.st_mode & libc_mode_mask()) == libc_dir_mode();
    let bytes = (st.st_size.max(0) as u64).max(st.st_blocks.max(0) as u64 * 512);
    Ok((is_dir, bytes, st.st_dev))
}

/// Unmounts the mount on `name` in the directory `at` (detached: a worker still holding it
/// in its own view keeps it until it ends). Only the server mounts under its workspace
/// root (code mounts, if at all, in its worker's own namespace), so a mount met there is a
/// workspace's.
fn unmount(at: impl AsFd + AsRawFd, name: &CStr) -> std::io::Result<()> {
    let path = Path::new(&format!("/proc/self/fd/{}", at.as_raw_fd()))
        .join(std::ffi::OsStr::from_bytes(name.to_bytes()));
    nix::mount::umount2(&path, nix::mount::MntFlags::MNT_DETACH).map_err(std::io::Error::from)
}

/// Unmounts `root` when it is a mount point of its own.
fn unmount_root(root: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let (Ok(me), Ok(parent)) = (
        std::fs::symlink_metadata(root),
        std::fs::symlink_metadata(root.join("..")),
    ) else {
        return Ok(());
    };
    if me.is_dir() && me.dev() != parent.dev() {
        match nix::mount::umount2(root, nix::mount::MntFlags::MNT_DETACH) {
            Ok(()) => {}
            Err(e) if not_a_mount_point(&e.into()) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// `umount2`'s answer for a directory that is on another device without being a mount point
/// (a btrfs subvolume): walked and deleted like any directory.
fn not_a_mount_point(e: &std::io::Error) -> bool {
    e.raw_os_error() == Some(nix::errno::Errno::EINVAL as i32)
}

fn libc_mode_mask() -> u32 {
    nix::sys::stat::SFlag::S_IFMT.bits()
}

fn libc_dir_mode() -> u32 {
    nix::sys::stat::SFlag::S_IFDIR.bits()
}

/// Bytes and entries under `root`, stopping once more than `max_entries` or `max_bytes`
/// are seen (the walk is bounded by the quota it checks).
pub fn measure(root: &Path, max_entries: u64, max_bytes: u64) -> TreeUsage {
    let mut usage = TreeUsage::default();
    let Ok(first) = open_root(root) else {
        return usage;
    };
    let mut stack = vec![first];
    while let Some(top) = stack.last_mut() {
        let Some(name) = top.names.get(top.next).cloned() else {
            stack.pop();
            continue;
        };
        top.next += 1;
        usage.entries += 1;
        if usage.entries > max_entries {
            return usage;
        }
        // Gone meanwhile (the code is still running): not counted.
        let Ok((dir, bytes)) = is_dir(top.dir.as_fd(), &name) else {
            continue;
        };
        usage.bytes = usage.bytes.saturating_add(bytes);
        if usage.bytes > max_bytes {
            return usage;
        }
        if !dir {
            continue;
        }
        if stack.len() >= MAX_DEPTH {
            usage.too_deep = true;
            continue;
        }
        let Some(parent) = stack.last() else {
            break;
        };
        if let Ok(frame) = open(parent.dir.as_fd(), &name) {
            stack.push(frame);
        }
    }
    usage
}

/// The device of the open directory `dir`.
fn dev_of(dir: &Dir) -> Option<u64> {
    nix::sys::stat::fstat(dir.as_fd()).ok().map(|st| st.st_dev)
}

/// Deletes `root` and everything under it, following no link, however deep it nests.
pub fn remove(root: &Path) -> std::io::Result<()> {
    unmount_root(root)?;
    // Each pass removes what it reaches and moves the directories at the depth bound up under
    // the root; a tree N levels deep is gone after about N / MAX_DEPTH passes.
    let mut hoisted: u64 = 0;
    loop {
        let mut moved = false;
        let first = match open_root(root) {
            Ok(f) => f,
            Err(nix::Error::ENOENT) => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        let root_fd = first.dir.as_fd().try_clone_to_owned()?;
        let mut stack = vec![first];
        loop {
            let depth = stack.len();
            let Some(top) = stack.last_mut() else {
                break;
            };
            let Some(name) = top.names.get(top.next).cloned() else {
                let done = stack.pop();
                if let (Some(done), Some(parent)) = (done, stack.last()) {
                    let name = done.name.unwrap_or_default();
                    drop(done.dir);
                    // Not empty if something appeared meanwhile: the next pass takes it.
                    let _ = unlinkat(
                        parent.dir.as_fd(),
                        name.as_c_str(),
                        UnlinkatFlags::RemoveDir,
                    );
                }
                continue;
            };
            top.next += 1;
            let Ok((dir, _, dev)) = stat(top.dir.as_fd(), &name) else {
                continue;
            };
            if dir && Some(dev) != dev_of(&top.dir) {
                match unmount(top.dir.as_fd(), &name) {
                    Ok(()) => {
                        unlinkat(top.dir.as_fd(), name.as_c_str(), UnlinkatFlags::RemoveDir)?;
                        continue;
                    }
                    // Another device but no mount point (a btrfs subvolume, an overlay's
                    // directory): an ordinary directory, emptied below.
                    Err(e) if not_a_mount_point(&e) => {}
                    Err(e) => return Err(e),
                }
            }
            if !dir {
                unlinkat(top.dir.as_fd(), name.as_c_str(), UnlinkatFlags::NoRemoveDir)?;
                continue;
            }
            if depth >= MAX_DEPTH {
                hoisted += 1;
                let to = CString::new(format!(".hoisted-{hoisted}"))
                    .map_err(|_| std::io::Error::other("hoisted name"))?;
                renameat(top.dir.as_fd(), name.as_c_str(), &root_fd, to.as_c_str())?;
                moved = true;
                continue;
            }
            let child = open(top.dir.as_fd(), &name)?;
            stack.push(child);
        }
        if !moved {
            return std::fs::remove_dir(root);
        }
    }
}

/// Deletes what changed under `root` since `since` (a time on the filesystem's clock, as
/// `(seconds, nanoseconds)`): every file, link or other non-directory whose status changed
/// since then (made, written, linked), and every directory left empty that changed since
/// then. Directories met at [`MAX_DEPTH`] that changed since then go whole (moved up and
/// removed with [`remove`]). Returns how many entries went. This is how a failed run's
/// additions are taken back from a workspace the host measures (`super::workspace`).
pub fn remove_changed_since(root: &Path, since: (i64, i64)) -> std::io::Result<u64> {
    let changed = |st: &nix::sys::stat::FileStat| (st.st_ctime, st.st_ctime_nsec) >= since;
    let mut removed = 0;
    let mut hoisted = Vec::new();
    let first = match open_root(root) {
        Ok(f) => f,
        Err(nix::Error::ENOENT) => return Ok(0),
        Err(e) => return Err(e.into()),
    };
    let root_fd = first.dir.as_fd().try_clone_to_owned()?;
    let mut stack = vec![first];
    loop {
        let depth = stack.len();
        let Some(top) = stack.last_mut() else {
            break;
        };
        let Some(name) = top.names.get(top.next).cloned() else {
            let done = stack.pop();
            if let (Some(done), Some(parent)) = (done, stack.last()) {
                let name = done.name.unwrap_or_default();
                drop(done.dir);
                if let Ok(st) = fstatat(
                    parent.dir.as_fd(),
                    name.as_c_str(),
                    AtFlags::AT_SYMLINK_NOFOLLOW,
                ) && changed(&st)
                    && unlinkat(
                        parent.dir.as_fd(),
                        name.as_c_str(),
                        UnlinkatFlags::RemoveDir,
                    )
                    .is_ok()
                {
                    removed += 1;
                }
            }
            continue;
        };
        top.next += 1;
        let Ok(st) = fstatat(
            top.dir.as_fd(),
            name.as_c_str(),
            AtFlags::AT_SYMLINK_NOFOLLOW,
        ) else {
            continue;
        };
        let dir = (st.st_mode & libc_mode_mask()) == libc_dir_mode();
        if !dir {
            if changed(&st) {
                unlinkat(top.dir.as_fd(), name.as_c_str(), UnlinkatFlags::NoRemoveDir)?;
                removed += 1;
            }
            continue;
        }
        if depth >= MAX_DEPTH {
            if changed(&st) {
                let to = CString::new(format!(".rolled-back-{}", hoisted.len()))
                    .map_err(|_| std::io::Error::other("hoisted name"))?;
                renameat(top.dir.as_fd(), name.as_c_str(), &root_fd, to.as_c_str())?;
                hoisted.push(to);
            }
            continue;
        }
        if let Ok(child) = open(top.dir.as_fd(), &name) {
            stack.push(child);
        }
    }
    for name in hoisted {
        remove(&root.join(std::ffi::OsStr::from_bytes(name.as_bytes())))?;
        removed += 1;
    }
    Ok(removed)
}

/// The filesystem's clock now, as [`remove_changed_since`] compares it: the status-change
/// time of an inode made for the purpose in `dir`, which is exactly the clock and granularity
/// the files of `dir` are stamped with.
///
/// The workspace is written by sandboxed code, so nothing here goes by a name code could have
/// planted: the inode is an unnamed `O_TMPFILE` in the directory (opened without following a
/// link), or, on a filesystem without it, a new file of a name no one can guess made with
/// `O_EXCL | O_NOFOLLOW` (never an existing file or a link's target) and removed at once. A
/// user's own file of any name is never touched.
pub fn fs_now(dir: &Path) -> Option<(i64, i64)> {
    let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let dir_fd = nix::fcntl::open(dir, flags, Mode::empty()).ok()?;
    let unnamed = nix::fcntl::openat(
        &dir_fd,
        c".",
        OFlag::O_TMPFILE | OFlag::O_WRONLY | OFlag::O_CLOEXEC,
        Mode::from_bits_truncate(0o600),
    );
    if let Ok(fd) = unnamed {
        let st = nix::sys::stat::fstat(&fd).ok()?;
        return Some((st.st_ctime, st.st_ctime_nsec));
    }
    // No O_TMPFILE on this filesystem: a fresh name, made exclusively.
    let name = CString::new(format!(
        ".code-executor-clock-{}-{}",
        std::process::id(),
        crate::ids::random_hex::<8>()
    ))
    .ok()?;
    let fd = nix::fcntl::openat(
        &dir_fd,
        name.as_c_str(),
        OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_WRONLY | OFlag::O_CLOEXEC,
        Mode::from_bits_truncate(0o600),
    )
    .ok()?;
    let st = nix::sys::stat::fstat(&fd);
    let _ = unlinkat(&dir_fd, name.as_c_str(), UnlinkatFlags::NoRemoveDir);
    let st = st.ok()?;
    Some((st.st_ctime, st.st_ctime_nsec))
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix::sys::stat::mkdirat;

    /// A chain of `depth` directories under `root` (far past PATH_MAX for large depths), made
    /// by descriptor as code with `chdir` would, with a file at the bottom.
    fn deep_chain(root: &Path, depth: usize) {
        let name = CString::new("d".repeat(200)).unwrap();
        let mut fd =
            nix::fcntl::open(root, OFlag::O_RDONLY | OFlag::O_DIRECTORY, Mode::empty()).unwrap();
        for _ in 0..depth {
            mkdirat(&fd, name.as_c_str(), Mode::from_bits_truncate(0o700)).unwrap();
            fd = nix::fcntl::openat(
                &fd,
                name.as_c_str(),
                OFlag::O_RDONLY | OFlag::O_DIRECTORY,
                Mode::empty(),
            )
            .unwrap();
        }
        let file = CString::new("bottom").unwrap();
        let f = nix::fcntl::openat(
            &fd,
            file.as_c_str(),
            OFlag::O_CREAT | OFlag::O_WRONLY,
            Mode::from_bits_truncate(0o600),
        )
        .unwrap();
        nix::unistd::write(&f, &[0u8; 10_000]).unwrap();
    }

    #[test]
    fn a_tree_far_past_path_max_is_measured_as_too_deep_and_removed() {
        let dir = test_support::TempDir::new("tree");
        let root = dir.0.join("ws");
        std::fs::create_dir(&root).unwrap();
        deep_chain(&root, 3_000);
        std::os::unix::fs::symlink("/etc", root.join("link")).unwrap();
        let usage = measure(&root, 1_000_000, u64::MAX);
        assert!(usage.too_deep, "{usage:?}");
        assert_eq!(
            usage.entries,
            MAX_DEPTH as u64 + 1,
            "the chain down to the bound, and the link"
        );
        remove(&root).unwrap();
        assert!(!root.exists());
        assert!(
            Path::new("/etc/passwd").exists(),
            "the link was not followed"
        );
    }

    /// Code owns the workspace: a link it planted under any name the host's clock probe
    /// once used (`.clock`) must not make the host truncate the link's target, and a user's
    /// file of that name must survive.
    #[test]
    fn reading_the_clock_touches_no_file_a_link_or_the_user_named() {
        let dir = test_support::TempDir::new("tree-clock");
        let root = dir.0.join("ws");
        std::fs::create_dir(&root).unwrap();
        let precious = dir.0.join("precious.json");
        std::fs::write(&precious, b"{\"keep\": true}").unwrap();
        std::os::unix::fs::symlink(&precious, root.join(".clock")).unwrap();
        std::fs::write(root.join("notes"), b"mine").unwrap();
        for _ in 0..3 {
            assert!(fs_now(&root).is_some());
        }
        assert_eq!(std::fs::read(&precious).unwrap(), b"{\"keep\": true}");
        assert!(root.join(".clock").symlink_metadata().unwrap().is_symlink());
        let mut names: Vec<_> = std::fs::read_dir(&root)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        names.sort();
        assert_eq!(names, [".clock", "notes"], "no probe is left behind");
    }

    #[test]
    fn what_changed_since_a_moment_is_taken_back_and_the_rest_kept() {
        let dir = test_support::TempDir::new("tree-rollback");
        let root = dir.0.join("ws");
        std::fs::create_dir_all(root.join("old/keep")).unwrap();
        std::fs::write(root.join("old/kept.txt"), b"earlier").unwrap();
        std::fs::write(root.join("touched"), b"earlier").unwrap();
        // The filesystem's clock moves in ticks: wait for the next one (no timing assertion).
        let since = loop {
            let now = fs_now(&root).unwrap();
            let again = fs_now(&root).unwrap();
            if again > now {
                break again;
            }
        };
        std::fs::write(root.join("old/new.txt"), vec![1u8; 5000]).unwrap();
        std::fs::create_dir_all(root.join("fresh/a/b")).unwrap();
        std::fs::write(root.join("fresh/a/b/f"), b"x").unwrap();
        std::fs::write(root.join("touched"), b"earlier and later").unwrap();
        std::fs::hard_link(root.join("old/new.txt"), root.join("link")).unwrap();
        deep_chain(&root.join("old"), 300);
        let went = remove_changed_since(&root, since).unwrap();
        assert!(went >= 7, "{went}");
        for p in ["old", "old/keep", "old/kept.txt"] {
            assert!(root.join(p).exists(), "{p} was there before: kept");
        }
        for p in ["old/new.txt", "fresh", "touched", "link", "old/bottom"] {
            assert!(!root.join(p).exists(), "{p} changed since: taken back");
        }
        let names: Vec<_> = std::fs::read_dir(root.join("old"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 2, "the deep chain is gone too: {names:?}");
        assert_eq!(
            std::fs::read(root.join("old/kept.txt")).unwrap(),
            b"earlier"
        );
        let usage = measure(&root, 1_000, u64::MAX);
        assert!(!usage.too_deep && usage.entries == 3, "{usage:?}");
        remove(&root).unwrap();
    }

    #[test]
    fn a_shallow_tree_is_counted_whole() {
        let dir = test_support::TempDir::new("tree-shallow");
        let root = dir.0.join("ws");
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::write(root.join("a/b/f"), vec![1u8; 5000]).unwrap();
        std::fs::write(root.join("g"), b"x").unwrap();
        let usage = measure(&root, 100, u64::MAX);
        assert!(!usage.too_deep);
        assert_eq!(usage.entries, 4);
        assert!(usage.bytes >= 5001, "{usage:?}");
        assert_eq!(measure(&root, 2, u64::MAX).entries, 3, "stops past the cap");
        assert_eq!(
            measure(&root, 100, 0).entries,
            1,
            "stops at the first entry past the quota"
        );
        remove(&root).unwrap();
        assert!(!root.exists());
        remove(&root).unwrap();
    }
}

//! The few system calls nix does not wrap, each behind a small safe function.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use nix::libc;

/// Marks every descriptor from `first` upwards close-on-exec (`close_range(2)` with
/// `CLOSE_RANGE_CLOEXEC`, Linux 5.11), so none survives the next `execve`. Async-signal-safe:
/// one system call, no allocation, usable between `fork` and `exec`.
pub(crate) fn cloexec_from(first: RawFd) -> io::Result<()> {
    let first =
        libc::c_uint::try_from(first).map_err(|_| io::Error::from_raw_os_error(libc::EBADF))?;
    // SAFETY: close_range only changes descriptor flags; it touches no memory. Nothing can go
    // wrong for this process: a descriptor someone else still uses stays open until exec.
    let rc = unsafe {
        libc::close_range(
            first,
            libc::c_uint::MAX,
            libc::CLOSE_RANGE_CLOEXEC as libc::c_int,
        )
    };
    if rc == 0 {
        return Ok(());
    }
    // Kernels before 5.11: walk the descriptor table one by one, up to the soft RLIMIT_NOFILE
    // bound the kernel would accept anyway (at most 1 << 20).
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we own; nothing else is touched. On failure
    // the fallback bound below is used.
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) };
    let last = if rc == 0 {
        limit.rlim_cur.min(1 << 20)
    } else {
        1 << 16
    };
    for fd in first..last.try_into().unwrap_or(libc::c_uint::MAX) {
        let Ok(fd) = libc::c_int::try_from(fd) else {
            break;
        };
        // SAFETY: F_SETFD on a descriptor number that may not be open; EBADF is ignored. It
        // changes no memory; a descriptor opened concurrently by another thread (the helper
        // has none) could be missed.
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    }
    Ok(())
}

/// Closes every descriptor from `first` upwards right now (`close_range(2)`).
pub(crate) fn close_from(first: RawFd) -> io::Result<()> {
    let first =
        libc::c_uint::try_from(first).map_err(|_| io::Error::from_raw_os_error(libc::EBADF))?;
    // SAFETY: the helper is single-threaded and owns no descriptor above `first` that Rust code
    // still refers to when this runs (callers guarantee it); a stale `OwnedFd` would later close
    // a reused number, which is why callers run this before creating any.
    let rc = unsafe { libc::close_range(first, libc::c_uint::MAX, 0) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Mount attributes set by [`mount_setattr`].
pub(crate) const ATTR_RDONLY: u64 = libc::MOUNT_ATTR_RDONLY;
pub(crate) const ATTR_NOSUID: u64 = libc::MOUNT_ATTR_NOSUID;
pub(crate) const ATTR_NODEV: u64 = libc::MOUNT_ATTR_NODEV;
pub(crate) const ATTR_NOEXEC: u64 = libc::MOUNT_ATTR_NOEXEC;

/// Adds `attr_set` to the mount at `path` (and every mount below it when `recursive`) with
/// `mount_setattr(2)` (Linux 5.12). Unlike `MS_REMOUNT`, it leaves the flags it is not asked
/// to change alone, so locked atime flags of the source mount never make it fail.
pub(crate) fn mount_setattr(path: &Path, recursive: bool, attr_set: u64) -> io::Result<()> {
    let path = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    let attr = libc::mount_attr {
        attr_set,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    let flags = if recursive { libc::AT_RECURSIVE } else { 0 } | libc::AT_SYMLINK_NOFOLLOW;
    // SAFETY: `path` is a valid NUL-terminated string and `attr` a properly sized struct, both
    // alive for the call; the kernel only reads them. A wrong path changes a mount we did not
    // mean to change, in our own private mount namespace only.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            path.as_ptr(),
            flags,
            &attr as *const libc::mount_attr,
            std::mem::size_of::<libc::mount_attr>(),
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The id-mapping attribute of [`mount_setattr_tree`] (Linux 5.12).
pub(crate) const ATTR_IDMAP: u64 = libc::MOUNT_ATTR_IDMAP;

/// A detached copy of the mount tree whose root `at` names (`open_tree(2)` with
/// `OPEN_TREE_CLONE | AT_RECURSIVE | AT_EMPTY_PATH`, Linux 5.2), close-on-exec: it belongs to
/// no mount namespace until [`move_mount_to`] attaches it, and nothing the caller's rights let
/// it reach is rechecked there (the descriptor is the access).
pub(crate) fn open_tree_clone(at: std::os::fd::BorrowedFd<'_>) -> io::Result<OwnedFd> {
    use std::os::fd::{AsRawFd, FromRawFd};
    let flags = libc::OPEN_TREE_CLONE
        | libc::OPEN_TREE_CLOEXEC
        | libc::AT_RECURSIVE as libc::c_uint
        | libc::AT_EMPTY_PATH as libc::c_uint;
    // SAFETY: `at` is a live descriptor and the path an empty NUL-terminated string, both alive
    // for the call; the kernel only reads them. What can go wrong: nothing in this process's
    // memory; the new descriptor is owned below exactly once.
    let rc = unsafe { libc::syscall(libc::SYS_open_tree, at.as_raw_fd(), c"".as_ptr(), flags) };
    let fd = RawFd::try_from(rc).map_err(|_| io::Error::from_raw_os_error(libc::EBADF))?;
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by the kernel as a new descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Adds `attr_set` to the detached mount tree `tree` and every mount below it; with `userns`
/// (and [`ATTR_IDMAP`] in `attr_set`) the tree is id-mapped by that user namespace's maps.
pub(crate) fn mount_setattr_tree(
    tree: std::os::fd::BorrowedFd<'_>,
    attr_set: u64,
    userns: Option<std::os::fd::BorrowedFd<'_>>,
) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let attr = libc::mount_attr {
        attr_set,
        attr_clr: 0,
        propagation: 0,
        userns_fd: userns.map_or(0, |fd| u64::try_from(fd.as_raw_fd()).unwrap_or(0)),
    };
    // SAFETY: `tree` is a live descriptor, the path empty and NUL-terminated, `attr` a properly
    // sized struct, all alive for the call; the kernel only reads them. What can go wrong: a
    // wrong descriptor changes another detached tree of ours, attached nowhere yet.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            tree.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH | libc::AT_RECURSIVE,
            &attr as *const libc::mount_attr,
            std::mem::size_of::<libc::mount_attr>(),
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Attaches the detached mount tree `tree` at `path` of the current mount namespace
/// (`move_mount(2)` with `MOVE_MOUNT_F_EMPTY_PATH`, Linux 5.2).
pub(crate) fn move_mount_to(tree: std::os::fd::BorrowedFd<'_>, path: &Path) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let path = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: `tree` is a live descriptor and both paths valid NUL-terminated strings alive
    // for the call; the kernel only reads them. What can go wrong: a wrong `path` mounts the
    // tree elsewhere in our own private mount namespace.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_move_mount,
            tree.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_FDCWD,
            path.as_ptr(),
            libc::MOVE_MOUNT_F_EMPTY_PATH,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Empties the bounding set (every capability the kernel knows, stopping at the first it
/// rejects as invalid), the ambient set, and then the effective, permitted and inheritable sets.
pub(crate) fn drop_all_capabilities() -> io::Result<()> {
    for cap in 0..=63 {
        // SAFETY: prctl(PR_CAPBSET_DROP) takes integers only. EINVAL marks the end of the
        // capabilities this kernel knows. What can still go wrong: a future kernel with more
        // than 64 capabilities keeps the ones above 63 in the bounding set (the effective,
        // permitted and inheritable sets are still emptied and checked by the caller).
        let rc = unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) };
        if rc != 0 {
            let err = io::Error::last_os_error();
            if err.raw_os_error() == Some(libc::EINVAL) {
                break;
            }
            return Err(err);
        }
    }
    // SAFETY: integers only; clears the ambient set, which nothing in this process relies on.
    // Nothing else can go wrong.
    if unsafe {
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        )
    } != 0
    {
        return Err(io::Error::last_os_error());
    }
    let mut header = CapHeader {
        version: LINUX_CAPABILITY_VERSION_3,
        pid: 0,
    };
    let data = [CapData::default(); 2];
    // SAFETY: header and data have the layout of `__user_cap_header_struct` and two
    // `__user_cap_data_struct` (version 3 reads two); the kernel reads them during the call.
    // What can still go wrong: a kernel that rejects version 3 fails the call, reported as a
    // missing capabilities layer.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_capset,
            &mut header as *mut CapHeader,
            data.as_ptr(),
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The effective, permitted and inheritable sets of this thread, each as 64 bits.
pub(crate) fn capabilities() -> io::Result<[u64; 3]> {
    let mut header = CapHeader {
        version: LINUX_CAPABILITY_VERSION_3,
        pid: 0,
    };
    let mut data = [CapData::default(); 2];
    // SAFETY: as in `drop_all_capabilities`; the kernel writes two data structs we own.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_capget,
            &mut header as *mut CapHeader,
            data.as_mut_ptr(),
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    let join = |lo: u32, hi: u32| u64::from(lo) | (u64::from(hi) << 32);
    Ok([
        join(data[0].effective, data[1].effective),
        join(data[0].permitted, data[1].permitted),
        join(data[0].inheritable, data[1].inheritable),
    ])
}

const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// Locks the "root is special" rules off: no capabilities come back from uid 0, a setuid
/// binary or a uid change (`SECBIT_NOROOT`, `SECBIT_NO_SETUID_FIXUP`, `SECBIT_KEEP_CAPS` off,
/// `SECBIT_NO_CAP_AMBIENT_RAISE`, all locked). Needs CAP_SETPCAP, so call it before dropping.
pub(crate) fn lock_securebits() -> io::Result<()> {
    let bits = libc::SECBIT_NOROOT
        | libc::SECBIT_NOROOT_LOCKED
        | libc::SECBIT_NO_SETUID_FIXUP
        | libc::SECBIT_NO_SETUID_FIXUP_LOCKED
        | libc::SECBIT_KEEP_CAPS_LOCKED
        | libc::SECBIT_NO_CAP_AMBIENT_RAISE
        | libc::SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
    // SAFETY: integers only; the bits only restrict what later credential changes grant.
    let rc = unsafe { libc::prctl(libc::PR_SET_SECUREBITS, bits as libc::c_ulong, 0, 0, 0) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Opens `rel` (relative, no `..`) beneath the directory `root` as an `O_PATH` descriptor
/// without following any symlink on the way or at the end (`openat2(2)` with
/// `RESOLVE_NO_SYMLINKS`, Linux 5.6; on kernels or container filters without it, one
/// `openat(O_PATH | O_NOFOLLOW)` per component, each but the last checked to be a
/// directory). A symlink at the end is returned as such (the caller looks at its type); one on
/// the way fails with `ELOOP`. With `directory`, the end must be a directory (`ENOTDIR`).
pub(crate) fn open_no_symlinks(
    root: std::os::fd::BorrowedFd<'_>,
    rel: &Path,
    directory: bool,
) -> io::Result<OwnedFd> {
    use nix::fcntl::{OFlag, OpenHow, ResolveFlag, openat2};
    let mut flags = OFlag::O_PATH | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    if directory {
        flags |= OFlag::O_DIRECTORY;
    }
    let how = OpenHow::new()
        .flags(flags)
        .resolve(ResolveFlag::RESOLVE_NO_SYMLINKS | ResolveFlag::RESOLVE_NO_MAGICLINKS);
    match openat2(root, rel, how) {
        Ok(fd) => return Ok(fd),
        Err(nix::Error::ENOSYS | nix::Error::EPERM) => {}
        Err(e) => return Err(e.into()),
    }
    // No openat2: walk the components ourselves.
    let names: Vec<&std::ffi::OsStr> = rel
        .components()
        .map(|c| match c {
            std::path::Component::Normal(n) => Ok(n),
            _ => Err(io::Error::from_raw_os_error(libc::EINVAL)),
        })
        .collect::<io::Result<_>>()?;
    let Some((last, dirs)) = names.split_last() else {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    };
    let path_flags = OFlag::O_PATH | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let mut current: Option<OwnedFd> = None;
    for name in dirs {
        let at = current.as_ref().map_or(root, |fd| fd.as_fd());
        let fd = nix::fcntl::openat(at, *name, path_flags, nix::sys::stat::Mode::empty())?;
        let kind = nix::sys::stat::fstat(&fd)?.st_mode & libc::S_IFMT;
        if kind == libc::S_IFLNK {
            return Err(io::Error::from_raw_os_error(libc::ELOOP));
        }
        if kind != libc::S_IFDIR {
            return Err(io::Error::from_raw_os_error(libc::ENOTDIR));
        }
        current = Some(fd);
    }
    let at = current.as_ref().map_or(root, |fd| fd.as_fd());
    Ok(nix::fcntl::openat(
        at,
        *last,
        flags,
        nix::sys::stat::Mode::empty(),
    )?)
}

/// The Landlock ABI version the kernel offers (0 without Landlock).
pub(crate) fn landlock_abi() -> i64 {
    const LANDLOCK_CREATE_RULESET_VERSION: u32 = 1;
    // SAFETY: with this flag the call reads no memory (null attributes, size 0) and returns
    // the ABI version or -1.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    v.max(0)
}

//! A workspace the kernel bounds: a tmpfs of the quota's size with as many inodes as the
//! entry limit allows, mounted by the server on the workspace's directory when it may mount
//! (root, or `CAP_SYS_ADMIN` over its mount namespace).
//!
//! The kernel then refuses every write past the quota (`ENOSPC`) at the moment it is made,
//! whatever the depth of the tree, the number of entries (each name counts: tmpfs charges a
//! hard link as an inode), sparse files, `fallocate`, or how many writers race: the bound
//! holds at every moment, not only when the host measures. The mount is in the server's own
//! mount namespace, so the worker's view binds it like any directory, and it outlives the
//! worker (a session's next run, after a crash or a retirement, finds it as it was). The
//! host measures it with one `statvfs` instead of a walk ([`usage`]) and unmounts it when the
//! workspace is deleted (`tree::remove`).
//!
//! Without the privilege (an unprivileged server, a container without `CAP_SYS_ADMIN`) the
//! mount fails and the workspace stays a plain directory whose quota the host enforces by
//! measuring (`super::workspace`); the first such failure is logged once.

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use nix::mount::{MsFlags, mount};

use policy::session_limits::SessionLimits;

/// Inodes of a workspace's tmpfs beyond `sessions.workspaceMaxEntries`: its root directory.
const ROOT_INODES: u64 = 1;

/// Set once a mount was refused, so the fallback is logged once per server.
static REFUSED_LOGGED: AtomicBool = AtomicBool::new(false);

/// How a workspace's quota is enforced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// A size- and inode-limited tmpfs: the kernel refuses every write past the quota.
    Kernel,
    /// A plain directory: the host measures it while and after code runs.
    Host,
}

impl Bound {
    pub fn as_str(self) -> &'static str {
        match self {
            Bound::Kernel => "kernel",
            Bound::Host => "host",
        }
    }
}

/// The tmpfs options for `limits`: `size` is rounded up to a page by the kernel (a quota of
/// 0 MiB holds one page: tmpfs reads `size=0` as unlimited).
fn options(limits: &SessionLimits) -> String {
    format!(
        "size={},nr_inodes={},mode=0700",
        limits.workspace_quota_bytes().max(1),
        limits.workspace_max_entries.saturating_add(ROOT_INODES)
    )
}

/// Mounts the bounded tmpfs on the (new, empty) directory `dir`; [`Bound::Host`] when the
/// server may not mount.
pub fn mount_on(dir: &Path, limits: &SessionLimits) -> Bound {
    let flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC;
    match mount(
        Some("tmpfs"),
        dir,
        Some("tmpfs"),
        flags,
        Some(options(limits).as_str()),
    ) {
        Ok(()) => Bound::Kernel,
        Err(e) => {
            if !REFUSED_LOGGED.swap(true, Ordering::Relaxed) {
                tracing::info!(
                    "workspace quotas are enforced by the host's measurement, not the kernel: \
                     cannot mount a tmpfs on {} ({e}); run the server with CAP_SYS_ADMIN for \
                     a bound that holds at every write",
                    dir.display()
                );
            }
            Bound::Host
        }
    }
}

/// Whether `dir` is a mount of its own on a tmpfs (the bounded workspace [`mount_on`] made).
pub fn is_bounded(dir: &Path) -> bool {
    let (Ok(me), Ok(parent)) = (
        std::fs::symlink_metadata(dir),
        std::fs::symlink_metadata(dir.join("..")),
    ) else {
        return false;
    };
    me.is_dir()
        && me.dev() != parent.dev()
        && nix::sys::statfs::statfs(dir)
            .is_ok_and(|s| s.filesystem_type() == nix::sys::statfs::TMPFS_MAGIC)
}

/// What a bounded workspace holds, from its filesystem's counters: bytes of the pages its
/// files use, entries (inodes but the root, plus extra hard links), and whether the bound
/// is reached (no page or no inode left). `None` when `dir` cannot be asked.
pub fn usage(dir: &Path) -> Option<(u64, u64, bool)> {
    let s = nix::sys::statvfs::statvfs(dir).ok()?;
    let used_blocks = s.blocks().saturating_sub(s.blocks_free());
    let bytes = used_blocks.saturating_mul(s.fragment_size());
    let entries = s
        .files()
        .saturating_sub(s.files_free())
        .saturating_sub(ROOT_INODES);
    let full = s.blocks_free() == 0 || s.files_free() == 0;
    Some((bytes, entries, full))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mount_options_are_the_quota_and_the_entries_plus_the_root() {
        let limits = SessionLimits {
            workspace_quota_mb: 1,
            workspace_max_entries: 100,
            ..SessionLimits::default()
        };
        assert_eq!(options(&limits), "size=1048576,nr_inodes=101,mode=0700");
        let zero = SessionLimits {
            workspace_quota_mb: 0,
            ..limits
        };
        assert!(options(&zero).starts_with("size=1,"), "never unlimited");
    }
}

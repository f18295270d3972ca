//! A session's workspace quota, enforced while the session's code runs.
//!
//! Where the server may mount, the workspace is a tmpfs of the quota's size and the entry
//! limit's inodes (`super::bounded`): the kernel refuses each write past it, and the host only
//! reads the filesystem's counters to say why writes failed (a run that fills it fails with
//! a `LimitError`). Elsewhere the workspace is a host directory whose size is the host's to
//! measure: before a run, every [`POLL`] while it runs (a run that grows the workspace past
//! the quota is stopped), and when it ends (a run that leaves it past the quota fails). Each
//! file is also capped by the worker's file-size rlimit, set to the quota, so no single write
//! can go far past it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::bounded;
use super::tree::{self, MAX_DEPTH, TreeUsage};
use policy::session_limits::SessionLimits;

/// How often a running session's workspace is measured.
const POLL: Duration = Duration::from_millis(50);

/// Bytes and entries of a workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Usage {
    pub bytes: u64,
    pub entries: u64,
    /// Directories nest deeper than the host walks (`tree::MAX_DEPTH`).
    pub too_deep: bool,
    /// The kernel bounds the workspace (a tmpfs), and no page or inode is left.
    pub full: bool,
    /// The kernel bounds the workspace: the counts are its filesystem's.
    pub kernel: bool,
    /// The filesystem's clock when the run started (a measured session workspace): what
    /// changed since is what the run wrote ([`take_back`]).
    pub since: Option<(i64, i64)>,
}

impl From<TreeUsage> for Usage {
    fn from(t: TreeUsage) -> Usage {
        Usage {
            bytes: t.bytes,
            entries: t.entries,
            too_deep: t.too_deep,
            full: false,
            kernel: false,
            since: None,
        }
    }
}

/// Entries up to which a workspace is measured on the calling thread: a few `lstat`s cost less
/// than handing the walk to another thread and back.
const INLINE_ENTRIES: u64 = 64;

/// Measures `dir`: a bounded workspace from its filesystem's counters; else by walking it,
/// on this thread when it was small last time (`last`), else off the async threads.
pub async fn measure(dir: &Path, limits: &SessionLimits, last: Option<Usage>) -> Usage {
    if bounded::is_bounded(dir)
        && let Some((bytes, entries, full)) = bounded::usage(dir)
    {
        return Usage {
            bytes,
            entries,
            too_deep: false,
            full,
            kernel: true,
            since: None,
        };
    }
    let max = limits.workspace_max_entries;
    let quota = limits.workspace_quota_bytes();
    if last.is_some_and(|u| u.entries <= INLINE_ENTRIES) {
        let usage = tree::measure(dir, INLINE_ENTRIES.min(max), quota);
        if usage.entries <= INLINE_ENTRIES.min(max) {
            return usage.into();
        }
    }
    let dir: PathBuf = dir.to_path_buf();
    tokio::task::spawn_blocking(move || tree::measure(&dir, max, quota).into())
        .await
        .unwrap_or_default()
}

/// What is wrong with `now`, if the workspace exceeds a limit: for a bounded one, when the
/// run filled it (growth past `before` only); for a measured one, whenever it is over.
pub fn verdict(now: Usage, before: Usage, limits: &SessionLimits) -> Option<String> {
    verdict_after(now, before, limits, None)
}

/// [`verdict`] at the end of a run that ended with `error`: a bounded workspace that is full
/// also fails a run that did not grow it when the run's error is the refused write itself
/// (`ENOSPC`: it tried to write past the quota), so the answer says why.
pub fn verdict_after(
    now: Usage,
    before: Usage,
    limits: &SessionLimits,
    error: Option<&worker_protocol::ErrorInfo>,
) -> Option<String> {
    let quota = limits.workspace_quota_bytes();
    if now.kernel {
        let grew = now.bytes > before.bytes || now.entries > before.entries;
        let refused = error.is_some_and(|e| {
            let says = |t: &str| t.contains("ENOSPC") || t.contains("No space left on device");
            says(&e.message) || says(&e.name)
        });
        return (now.full && (grew || refused)).then(|| {
            format!(
                "the session's workspace is full: it holds {} bytes in {} files and \
                 directories, and its quota is {quota} bytes (sessions.workspaceQuotaMb) and {} \
                 entries (sessions.workspaceMaxEntries), so writes past it failed (No space \
                 left on device); delete files from it, or write less",
                now.bytes, now.entries, limits.workspace_max_entries
            )
        });
    }
    // The host's walk stops at the first limit it finds exceeded, so a workspace over one is
    // refused whatever it held before: a run can neither hide bytes below the depth the host
    // walks nor past the entries it counts, and a workspace left over a limit fails every run
    // until one brings it back under.
    if now.bytes > quota {
        return Some(format!(
            "the session's workspace holds more than {quota} bytes, its quota \
             (sessions.workspaceQuotaMb); delete files from it, or write less",
        ));
    }
    if now.too_deep {
        return Some(format!(
            "the session's workspace nests directories more than {MAX_DEPTH} levels deep, \
             below which the host cannot count them against the quota \
             (sessions.workspaceQuotaMb); delete files from it, and keep its tree shallower"
        ));
    }
    if now.entries > limits.workspace_max_entries {
        return Some(format!(
            "the session's workspace holds more than {} files and directories \
             (sessions.workspaceMaxEntries, with sessions.workspaceQuotaMb); delete files \
             from it, or write fewer",
            limits.workspace_max_entries
        ));
    }
    None
}

/// After a run failed a measured workspace's quota: stops `worker` (its threads may still
/// write) and deletes what changed in `dir` since the run started (`before.since`), so the
/// workspace is back where it was and failed runs cannot add up. Returns what to add to the
/// error; `None` for a bounded workspace (the kernel refused what went past it, and what
/// the run wrote within it stays).
pub async fn take_back(
    worker: &mut super::process::WorkerProcess,
    dir: &Path,
    before: Usage,
) -> Option<String> {
    let since = before.since.filter(|_| !before.kernel)?;
    worker.kill();
    // Bounded: the helper ends once the namespace's processes are killed.
    let _ = worker.exit_description().await;
    let owned = dir.to_path_buf();
    let went = tokio::task::spawn_blocking(move || tree::remove_changed_since(&owned, since))
        .await
        .map_err(|e| std::io::Error::other(e.to_string()))
        .and_then(|r| r);
    Some(match went {
        Ok(n) => format!(
            "; the {n} files and directories this execution made or changed were deleted \
             (including files of earlier runs it rewrote, renamed or linked: they are gone, \
             not restored), and the session's worker was stopped"
        ),
        Err(e) => format!(
            "; deleting what this execution wrote failed ({e}): delete files from the \
             workspace before writing more"
        ),
    })
}

/// Resolves (with the reason) when the workspace grows past a limit; never otherwise. A
/// bounded workspace is not watched: the kernel refuses the writes past its bound.
pub async fn watch(dir: &Path, limits: &SessionLimits, before: Usage) -> String {
    if before.kernel {
        return std::future::pending().await;
    }
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + POLL, POLL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // A workspace already over a limit is not stopped while it runs (it may be cleaning
    // up); the verdict at its end refuses it if it is still over.
    if verdict(before, before, limits).is_some() {
        return std::future::pending().await;
    }
    let mut last = before;
    loop {
        tick.tick().await;
        last = measure(dir, limits, Some(last)).await;
        if let Some(over) = verdict(last, before, limits) {
            return over;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_measured_workspace_over_any_limit_is_refused_whatever_it_held_before() {
        let limits = SessionLimits {
            workspace_quota_mb: 1,
            workspace_max_entries: 10,
            ..SessionLimits::default()
        };
        let u = |bytes, entries| Usage {
            bytes,
            entries,
            ..Usage::default()
        };
        assert_eq!(verdict(u(1 << 20, 10), u(0, 0), &limits), None);
        let over = verdict(u((1 << 20) + 1, 1), u(0, 0), &limits).unwrap();
        assert!(over.contains("quota (sessions.workspaceQuotaMb)"), "{over}");
        // Over before the run too (an earlier run failed): still refused, so failed runs
        // cannot add up.
        assert!(verdict(u(5 << 20, 1), u(6 << 20, 1), &limits).is_some());
        let many = verdict(u(0, 11), u(0, 11), &limits).unwrap();
        assert!(many.contains("workspaceMaxEntries"), "{many}");
        // Deeper than the host walks: refused, even when it was before.
        let deep = Usage {
            too_deep: true,
            ..u(0, 1)
        };
        assert!(
            verdict(deep, deep, &limits)
                .unwrap()
                .contains("levels deep")
        );
    }

    #[test]
    fn a_bounded_workspace_fails_the_run_that_filled_it() {
        let limits = SessionLimits {
            workspace_quota_mb: 1,
            ..SessionLimits::default()
        };
        let k = |bytes, entries, full| Usage {
            bytes,
            entries,
            full,
            kernel: true,
            ..Usage::default()
        };
        assert_eq!(verdict(k(4096, 1, false), k(0, 0, false), &limits), None);
        let full = verdict(k(1 << 20, 2, true), k(4096, 1, false), &limits).unwrap();
        assert!(
            full.contains("workspaceQuotaMb") && full.contains("full"),
            "{full}"
        );
        // Full before, and the run did not grow it (it read, or cleaned up and wrote back).
        assert_eq!(
            verdict(k(1 << 20, 2, true), k(1 << 20, 2, true), &limits),
            None
        );
    }
}

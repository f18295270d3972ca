//! A session's workspace quota, enforced by the host while the session's code runs.
//!
//! The workspace is a host directory, so its size is the host's to measure: before a run,
//! every [`POLL`] while it runs (a run that grows the workspace past the quota is stopped),
//! and when it ends (a run that leaves it past the quota fails). Each file is also capped by
//! the worker's file-size rlimit, set to the quota, so no single write can go far past it.
//! Only growth counts: a workspace left over the quota by an earlier run can be cleaned up.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::tree::{self, MAX_DEPTH, TreeUsage};
use crate::policy::session_limits::SessionLimits;

/// How often a running session's workspace is measured.
const POLL: Duration = Duration::from_millis(50);

/// Bytes and entries of a workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct Usage {
    pub bytes: u64,
    pub entries: u64,
    /// Directories nest deeper than the host walks (`tree::MAX_DEPTH`).
    pub too_deep: bool,
}

impl From<TreeUsage> for Usage {
    fn from(t: TreeUsage) -> Usage {
        Usage {
            bytes: t.bytes,
            entries: t.entries,
            too_deep: t.too_deep,
        }
    }
}

/// Entries up to which a workspace is measured on the calling thread: a few `lstat`s cost less
/// than handing the walk to another thread and back.
const INLINE_ENTRIES: u64 = 64;

/// Measures `dir`: on this thread when it was small last time (`last`), else off the async
/// threads.
pub(super) async fn measure(dir: &Path, limits: &SessionLimits, last: Option<Usage>) -> Usage {
    let max = limits.workspace_max_entries;
    if last.is_some_and(|u| u.entries <= INLINE_ENTRIES) {
        let usage = tree::measure(dir, INLINE_ENTRIES.min(max));
        if usage.entries <= INLINE_ENTRIES.min(max) {
            return usage.into();
        }
    }
    let dir: PathBuf = dir.to_path_buf();
    tokio::task::spawn_blocking(move || tree::measure(&dir, max).into())
        .await
        .unwrap_or_default()
}

/// What is wrong with `now`, if the run made the workspace exceed a limit (growth past
/// `before` only).
pub(super) fn verdict(now: Usage, before: Usage, limits: &SessionLimits) -> Option<String> {
    let quota = limits.workspace_quota_bytes();
    if now.bytes > quota && now.bytes > before.bytes {
        return Some(format!(
            "the session's workspace holds {} bytes, past its quota of {quota} \
             (sessions.workspaceQuotaMb); delete files from it, or write less",
            now.bytes
        ));
    }
    if now.too_deep && !before.too_deep {
        return Some(format!(
            "the session's workspace nests directories more than {MAX_DEPTH} levels deep; \
             keep its tree shallower"
        ));
    }
    if now.entries > limits.workspace_max_entries && now.entries > before.entries {
        return Some(format!(
            "the session's workspace holds more than {} files and directories \
             (sessions.workspaceMaxEntries); delete some, or write fewer",
            limits.workspace_max_entries
        ));
    }
    None
}

/// Resolves (with the reason) when the workspace grows past a limit; never otherwise.
pub(super) async fn watch(dir: &Path, limits: &SessionLimits, before: Usage) -> String {
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + POLL, POLL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
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
    fn only_growth_past_a_limit_is_refused() {
        let limits = SessionLimits {
            workspace_quota_mb: 1,
            workspace_max_entries: 10,
            ..SessionLimits::default()
        };
        let u = |bytes, entries| Usage {
            bytes,
            entries,
            too_deep: false,
        };
        assert_eq!(verdict(u(1 << 20, 10), u(0, 0), &limits), None);
        let over = verdict(u((1 << 20) + 1, 1), u(0, 0), &limits).unwrap();
        assert!(over.contains("quota of 1048576"), "{over}");
        // Already over before the run, and not grown: cleaning up is allowed.
        assert_eq!(verdict(u(5 << 20, 1), u(6 << 20, 1), &limits), None);
        let many = verdict(u(0, 11), u(0, 0), &limits).unwrap();
        assert!(many.contains("workspaceMaxEntries"), "{many}");
    }
}

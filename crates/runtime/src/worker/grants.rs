//! Warm pools for read grants: workers whose view already holds the data paths an execution
//! was granted (`permissions.read`), so that a granted read does not wait for a start.
//!
//! A worker's view is fixed when it starts: a grant of data paths needs a worker whose view
//! holds exactly those paths. Without these pools every granted execution started one on its
//! request path, which was most of a granted read's time (a 10 MB read as a whole execution:
//! 30-33 ms from TypeScript and 49-50 ms from Python, 12-13 ms with a warm worker; see
//! docs/access.md). Now each set of data paths (per language) gets a
//! [`Pool`] of its own, created by the first execution that asks for it. It starts empty
//! (`min` 0): that first execution finds it empty, starts its own worker as before and raises
//! the pool's target, so the next one finds a worker waiting. The pool grows under demand and
//! shrinks back to nothing after `shrink_after` without a request, like the language's own
//! pool; at most [`MAX_GRANT_POOLS`] sets are kept (the least recently used is closed), and
//! their workers count against the same memory budget.
//!
//! Each worker still serves one execution and is killed after it; a worker is only ever
//! handed to an execution whose granted paths are exactly those its view holds (the key is
//! the sorted list of paths, as the grant resolved them). A view binds the directories that
//! were there when its worker started: a granted directory replaced since (removed and made
//! again, renamed over) would show its old self, so each execution checks the paths' device
//! and inode against those its pool's workers were started with, and a pool whose paths
//! changed is closed and made afresh. Workspaces (write grants) are a directory per execution
//! and still get a worker of their own.

use std::path::PathBuf;
use std::sync::Mutex;

use super::pool::{Pool, PoolSizing, PoolStats};
use super::process::Language;

/// Sets of data paths kept at once; beyond it the least recently used pool is closed.
pub const MAX_GRANT_POOLS: usize = 8;

struct Entry {
    language: Language,
    data: Vec<PathBuf>,
    /// What each path was when the pool was made.
    identity: Vec<Option<(u64, u64)>>,
    pool: Pool,
}

/// Device and inode of each path (`None`: it cannot be looked at now).
fn identity(data: &[PathBuf]) -> Vec<Option<(u64, u64)>> {
    use std::os::unix::fs::MetadataExt;
    data.iter()
        .map(|p| std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino())))
        .collect()
}

/// The pools of every recently granted set of data paths.
#[derive(Default)]
pub struct GrantPools {
    /// Most recently used last.
    pools: Mutex<Vec<Entry>>,
}

impl GrantPools {
    /// The pool for `data` (sorted, as [`GrantPools::key`] makes it) beside `base`, the
    /// language's own pool: its workers are `base`'s, confined the same way, with `data` in
    /// their view. Made (empty) on first use.
    pub fn pool_for(&self, base: &Pool, data: &[PathBuf]) -> Pool {
        let language = base.spawner().language;
        let now = identity(data);
        let mut pools = self.pools.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = pools
            .iter()
            .position(|e| e.language == language && e.data == data)
        {
            let entry = pools.remove(i);
            if entry.identity == now {
                let pool = entry.pool.clone();
                pools.push(entry);
                return pool;
            }
            // A granted path is another file or directory now: its ready workers show the old.
            entry.pool.close();
        }
        if pools.len() >= MAX_GRANT_POOLS {
            let oldest = pools.remove(0);
            oldest.pool.close();
        }
        let mut spawner = base.spawner().clone();
        spawner.policy.data_paths = data.to_vec();
        let base_sizing = base.sizing();
        let sizing = PoolSizing {
            min: 0,
            max: base_sizing.max.max(1),
            shrink_after: base_sizing.shrink_after,
        };
        let pool = Pool::start(spawner, sizing, base.budget().clone());
        pools.push(Entry {
            language,
            data: data.to_vec(),
            identity: now,
            pool: pool.clone(),
        });
        pool
    }

    /// The data paths of a grant as a pool's key: sorted, without repeats.
    pub fn key(data: &[PathBuf]) -> Vec<PathBuf> {
        let mut key = data.to_vec();
        key.sort();
        key.dedup();
        key
    }

    /// Each pool's counters, with the data paths its view holds.
    pub async fn stats(&self) -> Vec<(Vec<PathBuf>, PoolStats)> {
        let pools: Vec<(Vec<PathBuf>, Pool)> = self
            .pools
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|e| (e.data.clone(), e.pool.clone()))
            .collect();
        let mut out = Vec::with_capacity(pools.len());
        for (paths, pool) in pools {
            out.push((paths, pool.stats().await));
        }
        out
    }
}

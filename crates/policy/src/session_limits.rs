//! `sessions` in the settings: how many sessions a client and the server may hold, how long an
//! idle one lives, and what one may keep (worker memory, stored values, workspace bytes).

use std::time::Duration;

use super::error::SettingError;

/// Sessions one client may hold at once; a new one past it evicts that client's oldest idle
/// session.
pub const DEFAULT_MAX_PER_CLIENT: usize = 4;
/// Session workers the whole server may hold; a new session past it evicts the oldest idle one.
pub const DEFAULT_MAX_WORKERS: usize = 16;
/// A session unused this long ends (its worker, values and workspace are dropped).
pub const DEFAULT_IDLE_TIMEOUT_S: u64 = 15 * 60;
/// Resident memory of a session's worker after a run past which the worker is retired
/// (its variables are lost; stored values and workspace files stay).
pub const DEFAULT_MAX_WORKER_MEMORY_MB: u64 = 512;
/// Bytes of stored values (keys and JSON values) per session.
pub const DEFAULT_MAX_STORE_BYTES: u64 = 16 << 20;
/// Bytes of files in a session's workspace.
pub const DEFAULT_WORKSPACE_QUOTA_MB: u64 = 64;
/// Files and directories in a session's workspace.
pub const DEFAULT_WORKSPACE_MAX_ENTRIES: u64 = 10_000;

/// Validated session limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct SessionLimits {
    pub max_per_client: usize,
    pub max_workers: usize,
    pub idle_timeout_s: u64,
    pub max_worker_memory_mb: u64,
    pub max_store_bytes: u64,
    pub workspace_quota_mb: u64,
    pub workspace_max_entries: u64,
}

impl Default for SessionLimits {
    fn default() -> Self {
        SessionLimits {
            max_per_client: DEFAULT_MAX_PER_CLIENT,
            max_workers: DEFAULT_MAX_WORKERS,
            idle_timeout_s: DEFAULT_IDLE_TIMEOUT_S,
            max_worker_memory_mb: DEFAULT_MAX_WORKER_MEMORY_MB,
            max_store_bytes: DEFAULT_MAX_STORE_BYTES,
            workspace_quota_mb: DEFAULT_WORKSPACE_QUOTA_MB,
            workspace_max_entries: DEFAULT_WORKSPACE_MAX_ENTRIES,
        }
    }
}

impl SessionLimits {
    /// Checks the bounds; the error names the setting. `maxWorkers: 0` turns sessions off.
    pub fn validate(self) -> Result<Self, SettingError> {
        let e = |what: &str| Err(SettingError::Sessions(what.to_string()));
        if self.max_workers > 1024 {
            return e("maxWorkers must be at most 1024 (0 turns sessions off)");
        }
        if self.max_per_client == 0 && self.max_workers > 0 {
            return e("maxPerClient must be at least 1 (set maxWorkers to 0 to turn sessions off)");
        }
        if self.idle_timeout_s == 0 || self.idle_timeout_s > 7 * 24 * 3600 {
            return e("idleTimeoutS must be between 1 and 604800 (a week)");
        }
        if !(16..=4096).contains(&self.max_worker_memory_mb) {
            return e("maxWorkerMemoryMb must be between 16 and 4096");
        }
        if self.max_store_bytes > 1 << 30 {
            return e("maxStoreBytes must be at most 1 GiB");
        }
        if self.workspace_quota_mb > 64 * 1024 {
            return e("workspaceQuotaMb must be at most 65536");
        }
        if self.workspace_max_entries == 0 || self.workspace_max_entries > 1_000_000 {
            return e("workspaceMaxEntries must be between 1 and 1000000");
        }
        Ok(self)
    }

    pub fn idle_timeout(&self) -> Duration {
        Duration::from_secs(self.idle_timeout_s)
    }

    pub fn workspace_quota_bytes(&self) -> u64 {
        self.workspace_quota_mb * 1024 * 1024
    }
}

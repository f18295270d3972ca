//! `longRuns` in the settings: executions that outlive their request (MCP tasks, and
//! `yieldAfterMs` with the `wait` tool), their progress reports, and what the server keeps of
//! them.
//!
//! A long run may ask for a deadline past `executionLimits.maxTimeoutMs`, up to
//! [`LongRunLimits::max_duration_ms`]; while it runs, and for `keepResultMs` after it finished,
//! it is parked: one client holds at most `maxParkedPerClient` parked executions, and all
//! finished ones together at most `maxKeptMb` of results. When a limit is reached the oldest
//! finished results are dropped first; a new long run is refused only when everything held
//! is still running.

use std::time::Duration;

use super::error::SettingError;

/// Longest deadline a long run may ask for (30 minutes): a paging job over a slow upstream,
/// not a daemon. The sandbox's CPU-time backstop grows with it.
pub const DEFAULT_MAX_DURATION_MS: u64 = 30 * 60 * 1000;
/// Largest configurable maximum duration (a day).
const MAX_DURATION_LIMIT_MS: u64 = 24 * 3600 * 1000;
/// Deadline of a long run that asked for none (10 minutes).
pub const DEFAULT_DURATION_MS: u64 = 10 * 60 * 1000;
/// How long a finished long run's result is kept for `tasks/get` or `wait` (10 minutes).
pub const DEFAULT_KEEP_RESULT_MS: u64 = 10 * 60 * 1000;
/// Parked executions (running or finished and kept) one client may hold.
pub const DEFAULT_MAX_PARKED_PER_CLIENT: usize = 8;
/// Parked executions the whole server may hold.
pub const DEFAULT_MAX_PARKED: usize = 64;
/// Memory of all kept results together (result, logs), in MiB.
pub const DEFAULT_MAX_KEPT_MB: u64 = 64;
/// Progress notifications one execution may send per second; faster reports are coalesced
/// (the latest wins), so a loop that reports every item cannot flood the client.
pub const DEFAULT_PROGRESS_PER_SECOND: u32 = 10;
/// A client that declared tasks gets a task when the run is still going after this long
/// (ms); a run that ends sooner answers directly. 0 makes every execution a task.
pub const DEFAULT_TASK_AFTER_MS: u64 = 1000;
/// Suggested polling interval of a task.
pub const DEFAULT_POLL_INTERVAL_MS: u64 = 500;
/// Longest a `wait` call waits before answering with what is new (ms); below client request
/// timeouts (about 60 s).
pub const MAX_WAIT_MS: u64 = 50_000;
/// What `wait` waits when it is given no timeout.
pub const DEFAULT_WAIT_MS: u64 = 20_000;

/// Validated `longRuns` settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct LongRunLimits {
    pub max_duration_ms: u64,
    pub default_duration_ms: u64,
    pub keep_result_ms: u64,
    pub max_parked_per_client: usize,
    pub max_parked: usize,
    pub max_kept_mb: u64,
    pub progress_per_second: u32,
    /// Each finished tool call of an execution is reported as progress too.
    pub tool_call_progress: bool,
    /// Progress an upstream tool reports is passed on under the execution's token.
    pub forward_upstream_progress: bool,
    pub task_after_ms: u64,
    pub poll_interval_ms: u64,
}

impl Default for LongRunLimits {
    fn default() -> Self {
        LongRunLimits {
            max_duration_ms: DEFAULT_MAX_DURATION_MS,
            default_duration_ms: DEFAULT_DURATION_MS,
            keep_result_ms: DEFAULT_KEEP_RESULT_MS,
            max_parked_per_client: DEFAULT_MAX_PARKED_PER_CLIENT,
            max_parked: DEFAULT_MAX_PARKED,
            max_kept_mb: DEFAULT_MAX_KEPT_MB,
            progress_per_second: DEFAULT_PROGRESS_PER_SECOND,
            tool_call_progress: false,
            forward_upstream_progress: true,
            task_after_ms: DEFAULT_TASK_AFTER_MS,
            poll_interval_ms: DEFAULT_POLL_INTERVAL_MS,
        }
    }
}

impl LongRunLimits {
    /// Checks the bounds; the error names the setting. A default duration above a lowered
    /// maximum is lowered to it. `maxParked: 0` turns long runs off.
    pub fn validate(mut self) -> Result<Self, SettingError> {
        let e = |what: &str| Err(SettingError::LongRuns(what.to_string()));
        if self.max_duration_ms == 0 || self.max_duration_ms > MAX_DURATION_LIMIT_MS {
            return e(&format!(
                "maxDurationMs must be between 1 and {MAX_DURATION_LIMIT_MS} (a day)"
            ));
        }
        self.default_duration_ms = self.default_duration_ms.min(self.max_duration_ms);
        if self.default_duration_ms == 0 {
            return e("defaultDurationMs must be at least 1");
        }
        if self.keep_result_ms == 0 || self.keep_result_ms > MAX_DURATION_LIMIT_MS {
            return e(&format!(
                "keepResultMs must be between 1 and {MAX_DURATION_LIMIT_MS} (a day)"
            ));
        }
        if self.max_parked > 10_000 {
            return e("maxParked must be at most 10000 (0 turns long runs off)");
        }
        if self.max_parked_per_client == 0 && self.max_parked > 0 {
            return e(
                "maxParkedPerClient must be at least 1 (set maxParked to 0 to turn long runs off)",
            );
        }
        if self.max_kept_mb == 0 || self.max_kept_mb > 16 * 1024 {
            return e("maxKeptMb must be between 1 and 16384");
        }
        if self.progress_per_second == 0 || self.progress_per_second > 1000 {
            return e("progressPerSecond must be between 1 and 1000");
        }
        if self.task_after_ms > MAX_WAIT_MS {
            return e(&format!("taskAfterMs must be at most {MAX_WAIT_MS}"));
        }
        if self.poll_interval_ms == 0 || self.poll_interval_ms > 60_000 {
            return e("pollIntervalMs must be between 1 and 60000");
        }
        Ok(self)
    }

    /// Long runs are on.
    pub fn enabled(&self) -> bool {
        self.max_parked > 0
    }

    pub fn keep_result(&self) -> Duration {
        Duration::from_millis(self.keep_result_ms)
    }

    pub fn max_kept_bytes(&self) -> usize {
        (self.max_kept_mb as usize) << 20
    }

    /// Shortest time between two progress notifications of one execution.
    pub fn progress_interval(&self) -> Duration {
        Duration::from_micros(1_000_000 / u64::from(self.progress_per_second.max(1)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_are_named() {
        let cases: [(LongRunLimits, &str); 7] = [
            (
                LongRunLimits {
                    max_duration_ms: 0,
                    ..Default::default()
                },
                "longRuns.maxDurationMs must be between 1 and 86400000 (a day)",
            ),
            (
                LongRunLimits {
                    keep_result_ms: 0,
                    ..Default::default()
                },
                "longRuns.keepResultMs must be between 1 and 86400000 (a day)",
            ),
            (
                LongRunLimits {
                    max_parked_per_client: 0,
                    ..Default::default()
                },
                "longRuns.maxParkedPerClient must be at least 1 (set maxParked to 0 to turn long runs off)",
            ),
            (
                LongRunLimits {
                    max_kept_mb: 0,
                    ..Default::default()
                },
                "longRuns.maxKeptMb must be between 1 and 16384",
            ),
            (
                LongRunLimits {
                    progress_per_second: 0,
                    ..Default::default()
                },
                "longRuns.progressPerSecond must be between 1 and 1000",
            ),
            (
                LongRunLimits {
                    task_after_ms: MAX_WAIT_MS + 1,
                    ..Default::default()
                },
                "longRuns.taskAfterMs must be at most 50000",
            ),
            (
                LongRunLimits {
                    poll_interval_ms: 0,
                    ..Default::default()
                },
                "longRuns.pollIntervalMs must be between 1 and 60000",
            ),
        ];
        for (limits, message) in cases {
            assert_eq!(
                limits.validate().map_err(|e| e.to_string()),
                Err(message.to_string())
            );
        }
    }

    #[test]
    fn a_default_duration_above_a_lowered_maximum_is_lowered() {
        let l = LongRunLimits {
            max_duration_ms: 60_000,
            ..Default::default()
        }
        .validate();
        assert_eq!(l.map(|l| l.default_duration_ms), Ok(60_000));
    }

    #[test]
    fn the_progress_interval_follows_the_rate() {
        assert_eq!(
            LongRunLimits::default().progress_interval(),
            Duration::from_millis(100)
        );
    }
}

//! Gives the memory the allocator keeps back to the kernel once the server is quiet.
//!
//! The server's allocator keeps large freed blocks for reuse (`sandbox::heap`, set first in
//! `main`): an execution moving megabytes through the host fills and frees several buffers of
//! that size per hop, and reusing them saves a page fault per 4 KiB of each. What it keeps
//! after the last large execution would stay in the server's resident memory, so once nothing
//! large has passed through the host for [`QUIET`] it is given back (`malloc_trim`). A frame or
//! reply of [`LARGE`] bytes or more counts as large; executions that move only small values
//! never start the watch.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::time::Instant;

/// A frame or reply of this many bytes or more is what the allocator keeps once freed.
pub const LARGE: usize = 1 << 20;

/// How long nothing large must pass through the host before kept memory is given back.
pub const QUIET: Duration = Duration::from_secs(2);

/// The watch of one process's allocator; [`SERVER`] is the real one.
pub struct QuietRelease {
    /// When the latest large move was noted.
    last: Mutex<Option<Instant>>,
    /// A watch task is running (at most one is).
    watching: AtomicBool,
    quiet: Duration,
    release: fn() -> bool,
}

/// The server's watch.
pub static SERVER: QuietRelease = QuietRelease::new(QUIET, sandbox::heap::release_freed_memory);

impl QuietRelease {
    const fn new(quiet: Duration, release: fn() -> bool) -> Self {
        Self {
            last: Mutex::new(None),
            watching: AtomicBool::new(false),
            quiet,
            release,
        }
    }

    /// Notes that `bytes` passed through the host; a large move starts the watch (inside a
    /// Tokio runtime; elsewhere nothing happens).
    pub fn moved(&'static self, bytes: usize) {
        if bytes < LARGE {
            return;
        }
        if let Ok(mut last) = self.last.lock() {
            *last = Some(Instant::now());
        }
        if self.watching.swap(true, Ordering::AcqRel) {
            return;
        }
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => {
                rt.spawn(self.release_when_quiet());
            }
            Err(_) => self.watching.store(false, Ordering::Release),
        }
    }

    fn last(&self) -> Option<Instant> {
        self.last.lock().ok().and_then(|last| *last)
    }

    /// Waits until [`QUIET`] has passed since the latest large move, then releases.
    async fn release_when_quiet(&'static self) {
        loop {
            let seen = self.last();
            if let Some(due) = seen.map(|at| at + self.quiet)
                && Instant::now() < due
            {
                tokio::time::sleep_until(due).await;
                continue;
            }
            self.watching.store(false, Ordering::Release);
            // A move noted between the look above and now found the watch still running and
            // started none: keep watching for it, unless a new watch took over.
            if self.last() != seen && !self.watching.swap(true, Ordering::AcqRel) {
                continue;
            }
            // It takes the allocator's locks and walks its heaps: not on a runtime thread.
            let release = self.release;
            let _ = tokio::task::spawn_blocking(release).await;
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;

    static RELEASES: AtomicU64 = AtomicU64::new(0);
    fn count_release() -> bool {
        RELEASES.fetch_add(1, Ordering::SeqCst);
        true
    }
    static WATCH: QuietRelease = QuietRelease::new(Duration::from_secs(2), count_release);

    async fn settle() {
        // Lets the watch task and its blocking release run at the paused clock's instant.
        for _ in 0..20 {
            tokio::task::yield_now().await;
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    #[tokio::test(start_paused = true)]
    async fn kept_memory_is_released_once_after_a_quiet_period() {
        // Small moves never start a watch.
        WATCH.moved(LARGE - 1);
        tokio::time::sleep(Duration::from_secs(5)).await;
        settle().await;
        assert_eq!(RELEASES.load(Ordering::SeqCst), 0);
        assert!(!WATCH.watching.load(Ordering::SeqCst));

        // Large moves one second apart keep postponing it: nothing is released while they go on.
        for _ in 0..5 {
            WATCH.moved(5 << 20);
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        assert_eq!(RELEASES.load(Ordering::SeqCst), 0);
        // Two quiet seconds after the last one, not sooner (one watch for all of them): one
        // release.
        tokio::time::sleep(Duration::from_millis(900)).await;
        settle().await;
        assert_eq!(
            RELEASES.load(Ordering::SeqCst),
            0,
            "before the quiet period is over"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
        settle().await;
        assert_eq!(RELEASES.load(Ordering::SeqCst), 1);
        assert!(!WATCH.watching.load(Ordering::SeqCst));

        // A later large move starts a new watch.
        WATCH.moved(LARGE);
        tokio::time::sleep(Duration::from_secs(3)).await;
        settle().await;
        assert_eq!(RELEASES.load(Ordering::SeqCst), 2);
    }
}

//! A warm pool of pre-started workers, refilled in the background.
//!
//! Starting and confining a worker costs milliseconds; the pool pays that before a request
//! arrives. Each worker serves one execution and is then killed. When the pool is empty a
//! request starts its own worker rather than wait for the refill.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use serde::Serialize;
use tokio::sync::{Mutex, Notify};

use super::worker::{WorkerProcess, WorkerSpawner};

/// Pause between a wake-up and starting replacements, so the response of the execution that
/// used a worker is written before the refill takes the CPU.
const REFILL_DELAY: Duration = Duration::from_millis(3);
/// Pause after a failed start before the refill tries again, so a broken setup does not spin.
const REFILL_BACKOFF: Duration = Duration::from_secs(2);
/// Starts a request makes before it reports that no worker could be started: a start that
/// fails once in a while (a transient error of the machine's) is retried without the
/// execution seeing it, while a broken setup still fails within a few attempts.
pub const START_ATTEMPTS: u32 = 3;

struct Inner {
    spawner: WorkerSpawner,
    target: usize,
    ready: Mutex<VecDeque<WorkerProcess>>,
    wake: Notify,
    started: AtomicU64,
    failures: AtomicU64,
    last_error: std::sync::Mutex<Option<String>>,
}

/// Counters for `health`.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct PoolStats {
    pub language: &'static str,
    pub ready: usize,
    pub target: usize,
    pub started: u64,
    pub start_failures: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

#[derive(Clone)]
pub struct Pool {
    inner: Arc<Inner>,
}

impl Pool {
    /// Creates the pool and starts filling it in the background (needs a tokio runtime).
    pub fn start(spawner: WorkerSpawner, target: usize) -> Pool {
        let inner = Arc::new(Inner {
            spawner,
            target,
            ready: Mutex::new(VecDeque::new()),
            wake: Notify::new(),
            started: AtomicU64::new(0),
            failures: AtomicU64::new(0),
            last_error: std::sync::Mutex::new(None),
        });
        if target > 0 {
            tokio::spawn(refill(Arc::downgrade(&inner)));
        }
        Pool { inner }
    }

    /// A ready worker: a pooled one if any is alive, else a new one.
    /// Starting a replacement costs a few milliseconds of CPU; while a spare is left, that
    /// start waits for [`Pool::replenish`] (after the execution), so it does not compete with
    /// the execution for the CPU. An empty pool refills at once.
    pub async fn take(&self) -> Result<WorkerProcess, String> {
        loop {
            let (pooled, left) = {
                let mut ready = self.inner.ready.lock().await;
                (ready.pop_front(), ready.len())
            };
            if left == 0 {
                self.inner.wake.notify_one();
            }
            match pooled {
                Some(mut w) => {
                    if w.is_alive() {
                        return Ok(w);
                    }
                }
                None => return self.start_now().await,
            }
        }
    }

    /// Starts a worker for a request, up to [`START_ATTEMPTS`] times; every failure is
    /// logged and counted, and the last one is returned.
    async fn start_now(&self) -> Result<WorkerProcess, String> {
        let mut attempt = 1;
        loop {
            match spawn_counted(&self.inner).await {
                Ok(w) => return Ok(w),
                Err(e) if attempt >= START_ATTEMPTS => {
                    return Err(format!(
                        "no worker could be started ({START_ATTEMPTS} attempts); the last \
                         said: {e}"
                    ));
                }
                Err(_) => attempt += 1,
            }
        }
    }

    /// Tops the pool up in the background (call when an execution has ended).
    /// How this pool starts its workers (sessions start theirs the same way, confined
    /// further).
    pub fn spawner(&self) -> &WorkerSpawner {
        &self.inner.spawner
    }

    pub fn replenish(&self) {
        self.inner.wake.notify_one();
    }

    pub async fn stats(&self) -> PoolStats {
        let last_error = self.inner.last_error.lock().ok().and_then(|e| e.clone());
        PoolStats {
            language: self.inner.spawner.language.name(),
            ready: self
                .inner
                .ready
                .lock()
                .await
                .iter_mut()
                .map(WorkerProcess::is_alive)
                .filter(|alive| *alive)
                .count(),
            target: self.inner.target,
            started: self.inner.started.load(Ordering::Relaxed),
            start_failures: self.inner.failures.load(Ordering::Relaxed),
            last_error,
        }
    }
}

async fn spawn_counted(inner: &Inner) -> Result<WorkerProcess, String> {
    match inner.spawner.spawn().await {
        Ok(w) => {
            inner.started.fetch_add(1, Ordering::Relaxed);
            Ok(w)
        }
        Err(e) => {
            inner.failures.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(
                "{} worker start failed (retried by the next request or refill): {e}",
                inner.spawner.language.name()
            );
            if let Ok(mut last) = inner.last_error.lock() {
                *last = Some(e.clone());
            }
            Err(e)
        }
    }
}

async fn refill(weak: Weak<Inner>) {
    loop {
        let Some(inner) = weak.upgrade() else { return };
        let missing = {
            let mut ready = inner.ready.lock().await;
            // A pooled worker that died (killed from outside, out of memory) is replaced.
            ready.retain_mut(WorkerProcess::is_alive);
            inner.target.saturating_sub(ready.len())
        };
        if missing > 0 {
            // Let the answer that woke us go out first.
            tokio::time::sleep(REFILL_DELAY).await;
        }
        let mut failed = false;
        for _ in 0..missing {
            match spawn_counted(&inner).await {
                Ok(w) => inner.ready.lock().await.push_back(w),
                Err(_) => {
                    failed = true;
                    break;
                }
            }
        }
        if failed {
            drop(inner);
            tokio::time::sleep(REFILL_BACKOFF).await;
            continue;
        }
        // Wake on a take, or check again now and then in case a pooled worker died. The
        // refill ends within that period once the pool is dropped.
        let _ = tokio::time::timeout(Duration::from_secs(30), inner.wake.notified()).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    /// A spawner whose first `failures` starts fail as a broken sandbox would (exit 121 with a
    /// message), after which a stand-in worker says `ready` and waits.
    fn flaky(dir: &std::path::Path, failures: u32) -> WorkerSpawner {
        let ready = serde_json::json!({
            "type": "ready",
            "protocol": worker_protocol::PROTOCOL_VERSION,
            "engine": "stand-in",
        })
        .to_string();
        let script = dir.join("worker.sh");
        std::fs::write(
            &script,
            format!(
                "n=$(cat \"$COUNTER\" 2>/dev/null || echo 0); echo $((n + 1)) > \"$COUNTER\"\n\
                 if [ \"$n\" -lt {failures} ]; then echo \"make / read-only: Device or resource busy\" >&2; exit 121; fi\n\
                 exec python3 -c 'import sys, struct; b = sys.argv[1].encode(); sys.stdout.buffer.write(struct.pack(\">I\", len(b)) + b); sys.stdout.flush(); sys.stdin.read()' '{ready}'\n"
            ),
        )
        .unwrap();
        WorkerSpawner {
            language: super::super::worker::Language::JavaScript,
            command: sandbox::WorkerCommand {
                program: "/bin/sh".into(),
                args: vec![script.into_os_string()],
                env: vec![
                    (OsString::from("PATH"), std::env::var_os("PATH").unwrap()),
                    (
                        OsString::from("COUNTER"),
                        dir.join("count").into_os_string(),
                    ),
                ],
                cwd: None,
            },
            policy: sandbox::SandboxPolicy::new(sandbox::SandboxMode::Disabled, None),
        }
    }

    fn temp_dir(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("cem-pool-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[tokio::test]
    async fn a_start_that_fails_now_and_then_is_retried_without_the_request_seeing_it() {
        let dir = temp_dir("flaky");
        let pool = Pool::start(flaky(&dir, 2), 0);
        let mut worker = pool.take().await.expect("the third start works");
        assert!(worker.is_alive());
        let stats = pool.stats().await;
        assert_eq!((stats.started, stats.start_failures), (1, 2), "{stats:?}");
        assert!(
            stats
                .last_error
                .as_deref()
                .is_some_and(|e| e.contains("Device or resource busy")),
            "the failure is kept for health: {stats:?}"
        );
    }

    #[tokio::test]
    async fn a_start_that_keeps_failing_is_reported_after_a_bounded_number_of_attempts() {
        let dir = temp_dir("broken");
        let pool = Pool::start(flaky(&dir, u32::MAX), 0);
        let err = pool.take().await.err().expect("every start fails");
        assert!(
            err.starts_with("no worker could be started (3 attempts); the last said:")
                && err.contains("Device or resource busy"),
            "{err}"
        );
        assert_eq!(pool.stats().await.start_failures, u64::from(START_ATTEMPTS));
    }
}

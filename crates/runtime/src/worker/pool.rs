//! A warm pool of pre-started workers whose size follows demand, refilled in the background.
//!
//! Starting and confining a worker costs milliseconds; the pool pays that before a request
//! arrives. Each worker serves one execution and is then killed. When the pool is empty a
//! request starts its own worker rather than wait for the refill.
//!
//! Sizing ([`PoolSizing`]): the pool keeps at least `min` workers warm. A request that finds
//! the pool empty (back-to-back or concurrent executions outrun the refill) raises the
//! target by one, up to `max`, and the refill then starts the missing workers two at a time.
//! Every `shrink_after` without a request the target drops by one toward `min`, and the
//! surplus worker is stopped. A target is never raised while the ready workers of every
//! pool sharing the [`MemoryBudget`] (their whole process trees' proportional set size, from
//! `/proc`, measured for at most one new worker a second; the others count as the largest
//! measured) plus one more would exceed the budget's ceiling.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::sync::{Mutex, Notify};

use super::process::{WorkerError, WorkerProcess, WorkerSpawner};

/// Pause between a wake-up and starting replacements, so the response of the execution that
/// used a worker is written before the refill takes the CPU.
const REFILL_DELAY: Duration = Duration::from_millis(3);
/// Pause after a failed start before the refill tries again, so a broken setup does not spin.
const REFILL_BACKOFF: Duration = Duration::from_secs(2);
/// Workers the refill starts at once when several are missing (a start is mostly one
/// process's CPU time: two use both cores of a small machine).
const REFILL_PARALLEL: usize = 2;
/// Least time between two measurements of a new worker's memory: reading a process tree's
/// `smaps_rollup` walks every mapping (about 2% of the CPU when every execution starts a
/// worker); workers started in between count as the largest measured.
const MEASURE_EVERY: Duration = Duration::from_secs(1);
/// How long after [`Pool::prefer_warm`] the refill starts workers with the spawner's
/// `warm_env`.
const WARM_FOR: Duration = Duration::from_secs(60);
/// How often an idle refill looks at the pool (a pooled worker may have died; the target may
/// shrink).
const IDLE_CHECK: Duration = Duration::from_secs(30);
/// Starts a request makes before it reports that no worker could be started: a start that
/// fails once in a while (a transient error of the machine's) is retried without the
/// execution seeing it, while a broken setup still fails within a few attempts.
pub const START_ATTEMPTS: u32 = 3;

/// How many workers a pool keeps ready.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolSizing {
    /// Kept warm however idle the server is.
    pub min: usize,
    /// Reached under sustained or concurrent demand (never below `min`).
    pub max: usize,
    /// Idle time after which one surplus worker is stopped.
    pub shrink_after: Duration,
}

/// The memory all pools' ready workers may hold together.
#[derive(Debug)]
pub struct MemoryBudget {
    ceiling: u64,
    /// Bytes of each pool's ready workers, as last measured (index: pool id).
    held: std::sync::Mutex<Vec<u64>>,
    /// Ids of pools that are gone, for the next pool to take.
    free: std::sync::Mutex<Vec<usize>>,
}

impl MemoryBudget {
    pub fn new(ceiling_bytes: u64) -> Arc<Self> {
        Arc::new(MemoryBudget {
            ceiling: ceiling_bytes,
            held: std::sync::Mutex::new(Vec::new()),
            free: std::sync::Mutex::new(Vec::new()),
        })
    }

    fn register(&self) -> usize {
        if let Some(id) = self.free.lock().unwrap_or_else(|e| e.into_inner()).pop() {
            return id;
        }
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        held.push(0);
        held.len() - 1
    }

    /// A pool is gone: it holds nothing, and its id is free again.
    fn release(&self, id: usize) {
        self.set(id, 0);
        self.free.lock().unwrap_or_else(|e| e.into_inner()).push(id);
    }

    fn set(&self, id: usize, bytes: u64) {
        if let Some(slot) = self
            .held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_mut(id)
        {
            *slot = bytes;
        }
    }

    /// Whether `more` bytes still fit under the ceiling.
    fn fits(&self, more: u64) -> bool {
        let held: u64 = self
            .held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .sum();
        held.saturating_add(more) <= self.ceiling
    }
}

struct Inner {
    spawner: WorkerSpawner,
    sizing: PoolSizing,
    /// The current target, between `sizing.min` and `sizing.max`.
    target: AtomicUsize,
    budget: Arc<MemoryBudget>,
    budget_id: usize,
    ready: Mutex<VecDeque<WorkerProcess>>,
    wake: Notify,
    /// When a request last took (or asked for) a worker.
    last_take: std::sync::Mutex<Instant>,
    started: AtomicU64,
    failures: AtomicU64,
    /// Requests that found no ready worker and started their own.
    misses: AtomicU64,
    grown: AtomicU64,
    shrunk: AtomicU64,
    /// Highest target reached.
    peak_target: AtomicUsize,
    /// Bytes of one ready worker's process tree (its largest, as last measured; 0: not yet).
    worker_bytes: AtomicU64,
    /// Until when the refill starts warm workers ([`Pool::prefer_warm`]).
    warm_until: std::sync::Mutex<Option<Instant>>,
    /// When a new worker's memory was last measured.
    last_measured: std::sync::Mutex<Option<Instant>>,
    last_error: std::sync::Mutex<Option<String>>,
    /// [`Pool::close`]d: the refill stops its ready workers and ends.
    closed: AtomicBool,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.budget.release(self.budget_id);
    }
}

/// Counters for `health`.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct PoolStats {
    pub language: &'static str,
    pub ready: usize,
    /// Workers the pool holds now (follows demand between `min` and `max`).
    pub target: usize,
    pub min: usize,
    pub max: usize,
    /// Highest target since start.
    pub peak_target: usize,
    pub started: u64,
    pub start_failures: u64,
    /// Executions that found the pool empty and waited for a start of their own.
    pub misses: u64,
    pub grown: u64,
    pub shrunk: u64,
    /// Memory of the ready workers' process trees (proportional set size: pages the
    /// processes share count once).
    pub memory_bytes: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

#[derive(Clone)]
pub struct Pool {
    inner: Arc<Inner>,
}

impl Pool {
    /// Creates the pool and starts filling it in the background (needs a tokio runtime).
    pub fn start(spawner: WorkerSpawner, sizing: PoolSizing, budget: Arc<MemoryBudget>) -> Pool {
        let sizing = PoolSizing {
            max: sizing.max.max(sizing.min),
            ..sizing
        };
        let budget_id = budget.register();
        let inner = Arc::new(Inner {
            spawner,
            sizing,
            target: AtomicUsize::new(sizing.min),
            budget,
            budget_id,
            ready: Mutex::new(VecDeque::new()),
            wake: Notify::new(),
            last_take: std::sync::Mutex::new(Instant::now()),
            started: AtomicU64::new(0),
            failures: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            grown: AtomicU64::new(0),
            shrunk: AtomicU64::new(0),
            peak_target: AtomicUsize::new(sizing.min),
            worker_bytes: AtomicU64::new(0),
            warm_until: std::sync::Mutex::new(None),
            last_measured: std::sync::Mutex::new(None),
            last_error: std::sync::Mutex::new(None),
            closed: AtomicBool::new(false),
        });
        if sizing.max > 0 {
            tokio::spawn(refill(Arc::downgrade(&inner)));
        }
        Pool { inner }
    }

    /// A ready worker: a pooled one if any is alive, else a new one.
    /// Starting a replacement costs a few milliseconds of CPU; while a spare is left, that
    /// start waits for [`Pool::replenish`] (after the execution), so it does not compete with
    /// the execution for the CPU. An empty pool refills at once, and grows (demand outran
    /// it).
    pub async fn take(&self) -> Result<WorkerProcess, WorkerError> {
        if let Ok(mut last) = self.inner.last_take.lock() {
            *last = Instant::now();
        }
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
                None => {
                    self.inner.misses.fetch_add(1, Ordering::Relaxed);
                    grow(&self.inner);
                    self.inner.wake.notify_one();
                    return self.start_now().await;
                }
            }
        }
    }

    /// Starts a worker for a request, up to [`START_ATTEMPTS`] times; every failure is
    /// logged and counted, and the last one is returned.
    async fn start_now(&self) -> Result<WorkerProcess, WorkerError> {
        let mut attempt = 1;
        loop {
            match spawn_counted(&self.inner, false).await {
                Ok(w) => return Ok(w),
                Err(e) if attempt >= START_ATTEMPTS => {
                    return Err(WorkerError::NoneStarted {
                        attempts: START_ATTEMPTS,
                        last: Box::new(e),
                    });
                }
                Err(_) => attempt += 1,
            }
        }
    }

    /// How this pool starts its workers (sessions start theirs the same way, confined
    /// further).
    pub fn spawner(&self) -> &WorkerSpawner {
        &self.inner.spawner
    }

    /// Recent code needed what the spawner's `warm_env` prepares (Python: asyncio): for the
    /// next [`WARM_FOR`], the workers the refill starts ahead are started with it, so code
    /// that comes while one waits in the pool finds it loaded. A request that finds the pool
    /// empty still starts a plain worker (it would load the same on its run).
    pub fn prefer_warm(&self) {
        if let Ok(mut until) = self.inner.warm_until.lock() {
            *until = Some(Instant::now() + WARM_FOR);
        }
    }

    /// How the pool is sized.
    pub fn sizing(&self) -> PoolSizing {
        self.inner.sizing
    }

    /// The memory budget the pool shares.
    pub fn budget(&self) -> &Arc<MemoryBudget> {
        &self.inner.budget
    }

    /// Stops keeping workers: the ready ones are stopped and nothing more is started ahead.
    /// A request that still holds the pool gets a worker started for it.
    pub fn close(&self) {
        self.inner.closed.store(true, Ordering::Relaxed);
        self.inner.target.store(0, Ordering::Relaxed);
        self.inner.wake.notify_one();
    }

    /// Tops the pool up in the background (call when an execution has ended).
    pub fn replenish(&self) {
        self.inner.wake.notify_one();
    }

    pub async fn stats(&self) -> PoolStats {
        let last_error = self.inner.last_error.lock().ok().and_then(|e| e.clone());
        let (ready, memory_bytes) = {
            let mut ready = self.inner.ready.lock().await;
            let alive = ready
                .iter_mut()
                .map(WorkerProcess::is_alive)
                .filter(|alive| *alive)
                .count();
            (alive, held_bytes(&self.inner, &ready))
        };
        let i = &self.inner;
        PoolStats {
            language: i.spawner.language.name(),
            ready,
            target: i.target.load(Ordering::Relaxed),
            min: i.sizing.min,
            max: i.sizing.max,
            peak_target: i.peak_target.load(Ordering::Relaxed),
            started: i.started.load(Ordering::Relaxed),
            start_failures: i.failures.load(Ordering::Relaxed),
            misses: i.misses.load(Ordering::Relaxed),
            grown: i.grown.load(Ordering::Relaxed),
            shrunk: i.shrunk.load(Ordering::Relaxed),
            memory_bytes,
            last_error,
        }
    }
}

/// Raises the target by one, unless it is at `max` or one more worker would not fit the
/// memory budget.
fn grow(inner: &Inner) {
    if inner.closed.load(Ordering::Relaxed) {
        return;
    }
    let per_worker = inner.worker_bytes.load(Ordering::Relaxed);
    if !inner.budget.fits(per_worker) {
        return;
    }
    let max = inner.sizing.max;
    let grown = inner
        .target
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |t| {
            (t < max).then_some(t + 1)
        });
    if let Ok(before) = grown {
        inner.grown.fetch_add(1, Ordering::Relaxed);
        inner.peak_target.fetch_max(before + 1, Ordering::Relaxed);
    }
}

/// Lowers the target by one toward `min` when no request came for `shrink_after`; returns
/// whether it did.
fn shrink_if_idle(inner: &Inner) -> bool {
    let idle = inner
        .last_take
        .lock()
        .map(|t| t.elapsed())
        .unwrap_or_default();
    if idle < inner.sizing.shrink_after {
        return false;
    }
    let min = inner.sizing.min;
    let shrunk = inner
        .target
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |t| {
            (t > min).then_some(t - 1)
        })
        .is_ok();
    if shrunk {
        inner.shrunk.fetch_add(1, Ordering::Relaxed);
        // The next step down waits for another idle period.
        if let Ok(mut last) = inner.last_take.lock() {
            *last = Instant::now();
        }
    }
    shrunk
}

/// Whether workers started ahead now are to be warm ([`Pool::prefer_warm`]).
fn warm_now(inner: &Inner) -> bool {
    inner
        .warm_until
        .lock()
        .is_ok_and(|until| until.is_some_and(|t| Instant::now() < t))
}

async fn spawn_counted(inner: &Inner, warm: bool) -> Result<WorkerProcess, WorkerError> {
    match inner.spawner.spawn_as(warm).await {
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
                *last = Some(e.to_string());
            }
            Err(e)
        }
    }
}

/// Measures the ready workers' memory for the budget; returns how many are ready.
async fn account(inner: &Inner) -> usize {
    let mut ready = inner.ready.lock().await;
    // A pooled worker that died (killed from outside, out of memory) is replaced.
    ready.retain_mut(WorkerProcess::is_alive);
    if let Some(max) = ready.iter().filter_map(WorkerProcess::idle_memory).max() {
        inner.worker_bytes.store(max, Ordering::Relaxed);
    }
    inner.budget.set(inner.budget_id, held_bytes(inner, &ready));
    ready.len()
}

/// Memory of the `ready` workers: as measured, or the largest measured for one that was not.
fn held_bytes(inner: &Inner, ready: &VecDeque<WorkerProcess>) -> u64 {
    let estimate = inner.worker_bytes.load(Ordering::Relaxed);
    ready
        .iter()
        .map(|w| w.idle_memory().unwrap_or(estimate))
        .sum()
}

/// Whether a new worker's memory is to be measured (at most once per [`MEASURE_EVERY`]).
fn measure_due(inner: &Inner) -> bool {
    let Ok(mut last) = inner.last_measured.lock() else {
        return true;
    };
    let due = last.is_none_or(|t| t.elapsed() >= MEASURE_EVERY);
    if due {
        *last = Some(Instant::now());
    }
    due
}

async fn refill(weak: Weak<Inner>) {
    loop {
        let Some(inner) = weak.upgrade() else { return };
        if inner.closed.load(Ordering::Relaxed) {
            let ready: Vec<WorkerProcess> = inner.ready.lock().await.drain(..).collect();
            inner.budget.set(inner.budget_id, 0);
            for w in ready {
                tokio::spawn(w.finish());
            }
            return;
        }
        if shrink_if_idle(&inner) {
            let target = inner.target.load(Ordering::Relaxed);
            let surplus: Vec<WorkerProcess> = {
                let mut ready = inner.ready.lock().await;
                let keep = target.min(ready.len());
                ready.drain(keep..).collect()
            };
            for w in surplus {
                tokio::spawn(w.finish());
            }
        }
        let have = account(&inner).await;
        let missing = inner.target.load(Ordering::Relaxed).saturating_sub(have);
        if missing > 0 {
            // Let the answer that woke us go out first.
            tokio::time::sleep(REFILL_DELAY).await;
        }
        let mut failed = false;
        let mut left = missing;
        while left > 0 {
            // One at a time while the pool is at its floor (the usual case, and a start then
            // competes with nothing); two at a time when demand raised the target.
            let batch = if inner.target.load(Ordering::Relaxed) > inner.sizing.min {
                left.min(REFILL_PARALLEL)
            } else {
                1
            };
            let warm = warm_now(&inner);
            let started =
                futures::future::join_all((0..batch).map(|_| spawn_counted(&inner, warm))).await;
            for result in started {
                match result {
                    Ok(mut w) => {
                        // Once, while it is idle: what it costs to keep (for the budget).
                        if measure_due(&inner) {
                            w.measure_idle_memory().await;
                        }
                        inner.ready.lock().await.push_back(w);
                    }
                    Err(_) => failed = true,
                }
            }
            if failed {
                break;
            }
            left -= batch;
            account(&inner).await;
        }
        if failed {
            drop(inner);
            tokio::time::sleep(REFILL_BACKOFF).await;
            continue;
        }
        // Wake on a take; else check again when the target may shrink, or now and then in
        // case a pooled worker died. The refill ends within that period once the pool is
        // dropped.
        let target = inner.target.load(Ordering::Relaxed);
        let period = if target > inner.sizing.min {
            inner.sizing.shrink_after.min(IDLE_CHECK)
        } else {
            IDLE_CHECK
        };
        let _ = tokio::time::timeout(period, inner.wake.notified()).await;
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
            language: super::super::process::Language::JavaScript,
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
            preamble: None,
            warm_env: Vec::new(),
            template: None,
        }
    }

    fn temp_dir(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("cem-pool-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn the_memory_budget_counts_every_pool_and_refuses_what_would_pass_its_ceiling() {
        let budget = MemoryBudget::new(100);
        let (js, py) = (budget.register(), budget.register());
        budget.set(js, 40);
        budget.set(py, 50);
        assert!(budget.fits(10));
        assert!(!budget.fits(11));
        budget.set(py, 0);
        assert!(budget.fits(60));
        // A pool that is gone holds nothing, and the next pool takes its slot.
        budget.release(js);
        assert!(budget.fits(100));
        assert_eq!(budget.register(), js);
    }

    #[tokio::test]
    async fn a_closed_pool_stops_its_ready_workers_and_starts_none_ahead() {
        let dir = temp_dir("closed");
        let budget = MemoryBudget::new(1000);
        let pool = Pool::start(
            flaky(&dir, 0),
            PoolSizing {
                min: 2,
                max: 2,
                shrink_after: Duration::from_secs(10),
            },
            budget.clone(),
        );
        let deadline = Instant::now() + Duration::from_secs(20);
        while pool.stats().await.ready < 2 {
            assert!(Instant::now() < deadline, "the pool never filled");
            // Polling a condition, not waiting for time to pass.
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        pool.close();
        while pool.stats().await.ready > 0 {
            assert!(Instant::now() < deadline, "a closed pool kept its workers");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let started = pool.stats().await.started;
        // A request that still holds it gets a worker of its own; none is started ahead.
        let mut worker = pool.take().await.expect("a worker for the request");
        assert!(worker.is_alive());
        assert_eq!(pool.stats().await.target, 0);
        assert_eq!(pool.stats().await.started, started + 1);
        assert!(budget.fits(1000), "a closed pool holds no budget");
    }

    #[tokio::test]
    async fn a_start_that_fails_now_and_then_is_retried_without_the_request_seeing_it() {
        let dir = temp_dir("flaky");
        let pool = Pool::start(
            flaky(&dir, 2),
            PoolSizing {
                min: 0,
                max: 0,
                shrink_after: Duration::from_secs(10),
            },
            MemoryBudget::new(u64::MAX),
        );
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
        let pool = Pool::start(
            flaky(&dir, u32::MAX),
            PoolSizing {
                min: 0,
                max: 0,
                shrink_after: Duration::from_secs(10),
            },
            MemoryBudget::new(u64::MAX),
        );
        let err = pool
            .take()
            .await
            .err()
            .expect("every start fails")
            .to_string();
        assert!(
            err.starts_with("no worker could be started (3 attempts); the last said:")
                && err.contains("Device or resource busy"),
            "{err}"
        );
        assert_eq!(pool.stats().await.start_failures, u64::from(START_ATTEMPTS));
    }
}

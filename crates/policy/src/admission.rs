//! Whether the server takes an execution now: a maximum of concurrent executions with a
//! bounded queue behind it, a maximum per client (principal) so that one caller cannot hold
//! every slot, and per-client rate limits for executions and tool calls.
//! Beyond the queue, or over a rate, the answer is an immediate, clear "busy" error.
//!
//! The per-client state is pruned: a client with nothing running and idle for a rate window
//! ([`IDLE_FORGET`]) is forgotten, which changes nothing it could observe (its limiters would
//! be full again), so many short-lived principals do not grow the table.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use serde::Deserialize;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Executions running at once: two cores run two engines flat out; I/O-bound runs wait on
/// upstreams, so allow a few more.
pub const DEFAULT_MAX_CONCURRENT: usize = 4;
/// Executions waiting for a slot before new ones are refused as busy.
pub const DEFAULT_QUEUE: usize = 16;
/// Executions per client per minute: far above an agent's pace, low enough to stop a loop.
pub const DEFAULT_EXECUTIONS_PER_MINUTE: u32 = 600;
/// Tool calls per client per minute, across its executions.
pub const DEFAULT_TOOL_CALLS_PER_MINUTE: u32 = 6_000;
/// A client idle this long, with nothing running, has full limiters again and is forgotten.
pub const IDLE_FORGET: std::time::Duration = std::time::Duration::from_secs(60);
/// The table is pruned when a new client would make it longer than this.
const PRUNE_AT: usize = 64;

/// `limits` in the settings file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AdmissionSettings {
    #[serde(default = "d_concurrent")]
    pub max_concurrent_executions: usize,
    #[serde(default = "d_queue")]
    pub queue: usize,
    #[serde(default = "d_exec_rate")]
    pub executions_per_minute: u32,
    #[serde(default = "d_call_rate")]
    pub tool_calls_per_minute: u32,
    /// Executions one client may run at once (0: as many as the server); its further ones
    /// wait in the queue.
    #[serde(default)]
    pub max_concurrent_per_client: usize,
}

fn d_concurrent() -> usize {
    DEFAULT_MAX_CONCURRENT
}
fn d_queue() -> usize {
    DEFAULT_QUEUE
}
fn d_exec_rate() -> u32 {
    DEFAULT_EXECUTIONS_PER_MINUTE
}
fn d_call_rate() -> u32 {
    DEFAULT_TOOL_CALLS_PER_MINUTE
}

impl Default for AdmissionSettings {
    fn default() -> Self {
        AdmissionSettings {
            max_concurrent_executions: DEFAULT_MAX_CONCURRENT,
            queue: DEFAULT_QUEUE,
            executions_per_minute: DEFAULT_EXECUTIONS_PER_MINUTE,
            tool_calls_per_minute: DEFAULT_TOOL_CALLS_PER_MINUTE,
            max_concurrent_per_client: 0,
        }
    }
}

/// Forgets the clients that are [`ClientLimits::forgettable`] at `now`.
fn prune(map: &mut HashMap<String, Arc<ClientLimits>>, now: tokio::time::Instant) {
    map.retain(|_, c| !c.forgettable(now));
}

/// One place in the queue, given back when dropped.
struct Waiting<'a>(&'a AtomicUsize);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

struct ClientLimits {
    executions: DefaultDirectRateLimiter,
    tool_calls: Arc<DefaultDirectRateLimiter>,
    /// Slots of this client (`max_concurrent_per_client`).
    running: Arc<Semaphore>,
    last_used: Mutex<tokio::time::Instant>,
}

impl ClientLimits {
    /// Nothing of this client is running or holds its limiter, and it has been idle a window.
    fn forgettable(&self, now: tokio::time::Instant) -> bool {
        Arc::strong_count(&self.running) == 1
            && Arc::strong_count(&self.tool_calls) == 1
            && self
                .last_used
                .lock()
                .is_ok_and(|t| now.duration_since(*t) >= IDLE_FORGET)
    }
}

/// The server-wide gate.
pub struct Admission {
    slots: Arc<Semaphore>,
    waiting: AtomicUsize,
    settings: AdmissionSettings,
    clients: Mutex<HashMap<String, Arc<ClientLimits>>>,
}

/// Held while an execution runs; carries the client's tool-call limiter.
pub struct Admitted {
    _slot: OwnedSemaphorePermit,
    _mine: OwnedSemaphorePermit,
    pub tool_calls: Arc<DefaultDirectRateLimiter>,
}

fn per_minute(n: u32) -> Quota {
    Quota::per_minute(NonZeroU32::new(n.max(1)).unwrap_or(NonZeroU32::MIN))
}

impl Admission {
    pub fn new(settings: AdmissionSettings) -> Self {
        Admission {
            slots: Arc::new(Semaphore::new(settings.max_concurrent_executions.max(1))),
            waiting: AtomicUsize::new(0),
            settings,
            clients: Mutex::new(HashMap::new()),
        }
    }

    fn client(&self, client: &str) -> Arc<ClientLimits> {
        let mut map = match self.clients.lock() {
            Ok(m) => m,
            Err(poisoned) => poisoned.into_inner(),
        };
        let now = tokio::time::Instant::now();
        if !map.contains_key(client) && map.len() >= PRUNE_AT {
            prune(&mut map, now);
        }
        let per_client = match self.settings.max_concurrent_per_client {
            0 => self.settings.max_concurrent_executions.max(1),
            n => n,
        };
        let limits = map
            .entry(client.to_string())
            .or_insert_with(|| {
                Arc::new(ClientLimits {
                    executions: RateLimiter::direct(per_minute(
                        self.settings.executions_per_minute,
                    )),
                    tool_calls: Arc::new(RateLimiter::direct(per_minute(
                        self.settings.tool_calls_per_minute,
                    ))),
                    running: Arc::new(Semaphore::new(per_client)),
                    last_used: Mutex::new(now),
                })
            })
            .clone();
        if let Ok(mut t) = limits.last_used.lock() {
            *t = now;
        }
        limits
    }

    /// Executions holding a slot or waiting in the queue: what a graceful shutdown waits for.
    pub fn in_flight(&self) -> usize {
        self.settings
            .max_concurrent_executions
            .max(1)
            .saturating_sub(self.slots.available_permits())
            + self.waiting.load(Ordering::Acquire)
    }

    /// Executions holding a slot, executions waiting in the queue, and the most that hold
    /// slots at once (`health`'s `connectionPool`).
    pub fn occupancy(&self) -> (usize, usize, usize) {
        let max = self.settings.max_concurrent_executions.max(1);
        (
            max.saturating_sub(self.slots.available_permits()),
            self.waiting.load(Ordering::Acquire),
            max,
        )
    }

    /// Clients currently tracked (for tests and metrics).
    pub fn clients_tracked(&self) -> usize {
        self.clients.lock().map_or(0, |m| m.len())
    }

    /// Admits one execution of `client`, waiting in the queue for a slot if needed.
    ///
    /// `on_wait` is called when the execution has to wait in the queue.
    pub async fn admit(&self, client: &str, on_wait: impl FnOnce()) -> Result<Admitted, Busy> {
        self.admit_as(client, true, on_wait).await
    }

    /// Admits one call of a pinned direct tool: a slot like an execution's, without counting
    /// against the client's rate of executions (its tool-call rate counts it, at the bridge).
    pub async fn admit_call(&self, client: &str, on_wait: impl FnOnce()) -> Result<Admitted, Busy> {
        self.admit_as(client, false, on_wait).await
    }

    async fn admit_as(
        &self,
        client: &str,
        execution: bool,
        on_wait: impl FnOnce(),
    ) -> Result<Admitted, Busy> {
        let limits = self.client(client);
        if execution && limits.executions.check().is_err() {
            return Err(Busy::Rate {
                client: client.to_string(),
                per_minute: self.settings.executions_per_minute,
            });
        }
        let mine = limits.running.clone().try_acquire_owned().ok();
        let mine = match mine {
            Some(mine) => match self.slots.clone().try_acquire_owned() {
                Ok(slot) => {
                    return Ok(Admitted {
                        _slot: slot,
                        _mine: mine,
                        tool_calls: limits.tool_calls.clone(),
                    });
                }
                Err(_) => Some(mine),
            },
            None => None,
        };
        if self.waiting.fetch_add(1, Ordering::AcqRel) >= self.settings.queue {
            self.waiting.fetch_sub(1, Ordering::AcqRel);
            return Err(
                if mine.is_none() && self.settings.max_concurrent_per_client != 0 {
                    Busy::ClientFull {
                        client: client.to_string(),
                        queued: self.settings.queue,
                    }
                } else {
                    Busy::Full {
                        running: self.settings.max_concurrent_executions,
                        queued: self.settings.queue,
                    }
                },
            );
        }
        // Counted out of the queue however the wait ends (a cancelled execution too).
        let _waiting = Waiting(&self.waiting);
        on_wait();
        let shutting = |_| Busy::ShuttingDown;
        // The client's own slot first, so a client at its maximum does not hold a server slot
        // while it waits.
        let mine = match mine {
            Some(mine) => mine,
            None => limits
                .running
                .clone()
                .acquire_owned()
                .await
                .map_err(shutting)?,
        };
        let slot = self.slots.clone().acquire_owned().await.map_err(shutting)?;
        Ok(Admitted {
            _slot: slot,
            _mine: mine,
            tool_calls: limits.tool_calls.clone(),
        })
    }
}

/// Why an execution (or a pinned direct call) is not admitted now.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Busy {
    #[error(
        "busy: client \"{client}\" is over its rate of {per_minute} executions per minute; retry \
         shortly"
    )]
    Rate { client: String, per_minute: u32 },
    #[error(
        "busy: client \"{client}\" is running its maximum of executions and {queued} are queued \
         (the limits); retry shortly"
    )]
    ClientFull { client: String, queued: usize },
    #[error(
        "busy: {running} executions are running and {queued} are queued (the limits); retry \
         shortly"
    )]
    Full { running: usize, queued: usize },
    #[error("the server is shutting down")]
    ShuttingDown,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn beyond_slots_and_queue_is_busy() {
        let a = Arc::new(Admission::new(AdmissionSettings {
            max_concurrent_executions: 1,
            queue: 1,
            ..AdmissionSettings::default()
        }));
        let first = a.admit("c", || {}).await.unwrap();
        let a2 = a.clone();
        let queued = tokio::spawn(async move { a2.admit("c", || {}).await.map(|_| ()) });
        tokio::task::yield_now().await;
        while a.waiting.load(Ordering::Acquire) == 0 {
            tokio::task::yield_now().await;
        }
        let err = a.admit("c", || {}).await.err().unwrap().to_string();
        assert!(
            err.starts_with("busy: 1 executions are running and 1 are queued"),
            "{err}"
        );
        drop(first);
        assert!(queued.await.unwrap().is_ok());
    }

    #[tokio::test]
    async fn execution_rate_is_per_client() {
        let a = Admission::new(AdmissionSettings {
            executions_per_minute: 2,
            ..AdmissionSettings::default()
        });
        assert!(a.admit("a", || {}).await.is_ok());
        assert!(a.admit("a", || {}).await.is_ok());
        let err = a.admit("a", || {}).await.err().unwrap().to_string();
        assert!(
            err.contains("over its rate of 2 executions per minute"),
            "{err}"
        );
        assert!(a.admit("b", || {}).await.is_ok());
    }

    /// One client at its own maximum waits; another client still gets a slot at once.
    #[tokio::test]
    async fn one_client_cannot_hold_every_slot() {
        let a = Arc::new(Admission::new(AdmissionSettings {
            max_concurrent_executions: 3,
            max_concurrent_per_client: 1,
            queue: 4,
            ..AdmissionSettings::default()
        }));
        let first = a.admit("greedy", || {}).await.unwrap();
        let a2 = a.clone();
        let waited = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let w2 = waited.clone();
        let second = tokio::spawn(async move {
            a2.admit("greedy", move || w2.store(true, Ordering::Release))
                .await
                .map(|_| ())
        });
        while a.waiting.load(Ordering::Acquire) == 0 {
            tokio::task::yield_now().await;
        }
        assert!(waited.load(Ordering::Acquire));
        let other = a.admit("modest", || panic!("must not wait")).await;
        assert!(other.is_ok());
        drop(first);
        assert!(second.await.unwrap().is_ok());
    }

    /// Idle clients with nothing running are forgotten once the table is long; a client with
    /// a run in flight is kept.
    #[tokio::test]
    async fn idle_clients_are_pruned() {
        let a = Admission::new(AdmissionSettings::default());
        let busy = a.admit("busy", || {}).await.unwrap();
        for i in 0..PRUNE_AT {
            drop(a.admit(&format!("c{i}"), || {}).await.unwrap());
        }
        assert_eq!(a.clients_tracked(), PRUNE_AT + 1);
        // Not yet idle long enough: nothing goes.
        prune(&mut a.clients.lock().unwrap(), tokio::time::Instant::now());
        assert_eq!(a.clients_tracked(), PRUNE_AT + 1);
        // A window later every idle one goes; "busy" (still running) stays.
        prune(
            &mut a.clients.lock().unwrap(),
            tokio::time::Instant::now() + IDLE_FORGET,
        );
        assert_eq!(a.clients_tracked(), 1);
        drop(busy);
    }
}

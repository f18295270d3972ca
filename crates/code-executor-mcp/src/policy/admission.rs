//! Whether the server takes an execution now: a maximum of concurrent executions with a
//! bounded queue behind it, and per-client rate limits for executions and tool calls.
//! Beyond the queue, or over a rate, the answer is an immediate, clear "busy" error.

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
        }
    }
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
        map.entry(client.to_string())
            .or_insert_with(|| {
                Arc::new(ClientLimits {
                    executions: RateLimiter::direct(per_minute(
                        self.settings.executions_per_minute,
                    )),
                    tool_calls: Arc::new(RateLimiter::direct(per_minute(
                        self.settings.tool_calls_per_minute,
                    ))),
                })
            })
            .clone()
    }

    /// Admits one execution of `client`, waiting in the queue for a slot if needed.
    ///
    /// `on_wait` is called when the execution has to wait in the queue.
    pub async fn admit(&self, client: &str, on_wait: impl FnOnce()) -> Result<Admitted, String> {
        let limits = self.client(client);
        if limits.executions.check().is_err() {
            return Err(format!(
                "busy: client \"{client}\" is over its rate of {} executions per minute; retry shortly",
                self.settings.executions_per_minute
            ));
        }
        if let Ok(slot) = self.slots.clone().try_acquire_owned() {
            return Ok(Admitted {
                _slot: slot,
                tool_calls: limits.tool_calls.clone(),
            });
        }
        if self.waiting.fetch_add(1, Ordering::AcqRel) >= self.settings.queue {
            self.waiting.fetch_sub(1, Ordering::AcqRel);
            return Err(format!(
                "busy: {} executions are running and {} are queued (the limits); retry shortly",
                self.settings.max_concurrent_executions, self.settings.queue
            ));
        }
        // Counted out of the queue however the wait ends (a cancelled execution too).
        let _waiting = Waiting(&self.waiting);
        on_wait();
        let slot = self.slots.clone().acquire_owned().await;
        let slot = slot.map_err(|_| "the server is shutting down".to_string())?;
        Ok(Admitted {
            _slot: slot,
            tool_calls: limits.tool_calls.clone(),
        })
    }
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
        let err = a.admit("c", || {}).await.err().unwrap();
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
        let err = a.admit("a", || {}).await.err().unwrap();
        assert!(
            err.contains("over its rate of 2 executions per minute"),
            "{err}"
        );
        assert!(a.admit("b", || {}).await.is_ok());
    }
}

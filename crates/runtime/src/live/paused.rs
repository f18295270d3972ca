//! Executions paused for their client on protocol 2026-07-28 (MRTR), and the questions an
//! execution puts to its client in either protocol generation.
//!
//! An execution asks its client something (an approval as `elicitation/create`, a model call
//! as `sampling/createMessage`, an upstream's `roots/list`) through its [`ClientLink`]:
//!
//! - before 2026-07-28 the request goes to the client inline, while the `tools/call` is open;
//! - on 2026-07-28 a server may not send requests: the question travels as an [`Ask`] to the
//!   code that serves the `tools/call`, which answers the call with `input_required` (the
//!   questions, and a `requestState` naming the paused execution) and keeps the execution's
//!   handle here. The client answers by retrying the `tools/call` with `inputResponses` and the
//!   `requestState`; [`PausedTable::resume`] gives the handle back, the answers go to the
//!   waiting execution, and the same worker goes on from where it stopped. Nothing before the
//!   pause runs again.
//!
//! A `requestState` is 128 random bits, meaningless outside this table: it names an entry
//! bound to the principal that started the execution and to the tool that was called, and it
//! expires. A lookup by another principal, for another tool, after expiry, or a second time,
//! gets the same "unknown" answer. An expired entry is dropped, which cancels its execution.
//!
//! [`ClientLink`]: crate::run::client::ClientLink

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::oneshot;

use crate::live::table::{Fate, Handles, Miss, mint};
use crate::run::execution::Execution;
use policy::principal::Principal;
use policy::replica::{Elsewhere, Replica};

/// Paused executions a principal may hold at once: each holds a worker and an admission slot
/// already, so this only bounds a client that never comes back for its answers.
const MAX_PAUSED_PER_PRINCIPAL: usize = 64;

/// Executions waiting for their client's `inputResponses`, by `requestState`.
pub struct PausedTable {
    /// Bound to the principal that started each execution; an expired or resumed state is
    /// forgotten (it gets the same "unknown" as one never issued).
    entries: Mutex<Handles<Entry, ()>>,
    /// Tags new states, refuses another replica's.
    replica: Replica,
}

struct Entry {
    tool: String,
    /// When it is dropped (which cancels the execution) if no retry came.
    expires: tokio::time::Instant,
    execution: Execution,
    /// The questions sent, by their key in `inputRequests`.
    waiting: Vec<(String, oneshot::Sender<Value>)>,
}

/// Why a `requestState` was not accepted.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PausedError {
    #[error(
        "requestState names no paused execution of this client (unknown, expired, already \
         resumed, or issued for another tool); start the execution again"
    )]
    Unknown,
    #[error("requestState names a paused execution that is not here: {0}")]
    WrongReplica(Elsewhere),
    #[error(
        "this client holds {MAX_PAUSED_PER_PRINCIPAL} paused executions already; answer or \
         abandon one first"
    )]
    Full,
}

/// An execution given back to the `tools/call` that resumes it.
pub struct Resumed {
    pub execution: Execution,
    /// The questions it waits on, by key.
    pub waiting: Vec<(String, oneshot::Sender<Value>)>,
}

impl PausedTable {
    /// States end in `@ID` of `replica` (see `policy::replica`).
    pub fn new(replica: Replica) -> Arc<PausedTable> {
        Arc::new(PausedTable {
            entries: Mutex::new(Handles::new(0)),
            replica,
        })
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, Handles<Entry, ()>> {
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Keeps `execution` for `principal` until it is resumed by `tool`'s retry or `ttl` passes
    /// (then it is dropped, which cancels it). Returns the `requestState`.
    pub fn park(
        self: &Arc<Self>,
        principal: &Principal,
        tool: &str,
        execution: Execution,
        waiting: Vec<(String, oneshot::Sender<Value>)>,
        ttl: Duration,
    ) -> Result<String, PausedError> {
        let state = mint(&self.replica, "");
        let expires = tokio::time::Instant::now() + ttl;
        {
            let mut entries = self.entries();
            if entries.held_by(principal).count() >= MAX_PAUSED_PER_PRINCIPAL {
                return Err(PausedError::Full);
            }
            entries.insert(
                state.clone(),
                principal.clone(),
                Entry {
                    tool: tool.to_string(),
                    expires,
                    execution,
                    waiting,
                },
            );
        }
        let table: Weak<PausedTable> = Arc::downgrade(self);
        tokio::spawn(async move {
            tokio::time::sleep_until(expires).await;
            if let Some(table) = table.upgrade() {
                let now = tokio::time::Instant::now();
                let expired = table.entries().expire(|e| {
                    if e.expires <= now {
                        Fate::Ends(None)
                    } else {
                        Fate::Stays
                    }
                });
                for _ in expired {
                    tracing::info!("a paused execution expired without its client's answer");
                }
            }
        });
        Ok(state)
    }

    /// Takes the execution `state` names, when it is `principal`'s and was paused by `tool`.
    pub fn resume(
        &self,
        principal: &Principal,
        tool: &str,
        state: &str,
    ) -> Result<Resumed, PausedError> {
        let mut entries = self.entries();
        match entries.find(&self.replica, principal, state, |e| e.tool == tool) {
            Ok(_) => {}
            Err(Miss::Elsewhere(elsewhere)) => return Err(PausedError::WrongReplica(elsewhere)),
            Err(Miss::Unknown | Miss::Gone(())) => return Err(PausedError::Unknown),
        }
        let e = entries.end(state, |_| None).ok_or(PausedError::Unknown)?;
        Ok(Resumed {
            execution: e.execution,
            waiting: e.waiting,
        })
    }

    /// Paused executions now.
    pub fn len(&self) -> usize {
        self.entries().len()
    }

    /// No execution is paused now.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

//! One parked execution as the table keeps it ([`Entry`]): how it was started, its state,
//! its events and cancellation, and the questions it put to its client through its handle
//! (kept under keys unique over the run's life, shown by `tasks/get` and `wait`, answered by
//! `tasks/update` or a retried `wait`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::runtime::outcome::ExecOutcome;
use crate::runtime::run::events::Events;

/// How a parked execution was started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// An MCP task (`tasks/get`, `tasks/cancel`).
    Task,
    /// A run that returned early with a handle for `wait`.
    Yielded,
}

pub(crate) enum State {
    Running,
    Finished {
        outcome: Arc<ExecOutcome>,
        at: Instant,
        at_text: String,
        bytes: usize,
    },
}

pub(crate) struct Entry {
    pub(crate) execution: String,
    pub(crate) kind: Kind,
    /// Started by a name of the product line's documents (see `runtime::door::Mode`).
    pub(crate) documents: bool,
    pub(crate) created: Instant,
    pub(crate) created_at: String,
    /// Deadline of the run, from its start: bounds how long it can be `working`.
    pub(crate) duration: Duration,
    pub(crate) events: Arc<Events>,
    pub(crate) cancel: CancellationToken,
    /// Tool-call attempts of the run so far.
    pub(crate) tool_calls: Arc<std::sync::atomic::AtomicU32>,
    /// Handed out to the client (until then a finished run is answered directly).
    pub(crate) visible: bool,
    /// Log lines `wait` has handed out.
    pub(crate) delivered: usize,
    /// The client asked to cancel it (and how).
    pub(crate) cancelled_by: Option<&'static str>,
    pub(crate) state: State,
    pub(crate) finished: Arc<watch::Sender<bool>>,
    /// Questions put to the client through the task, not yet answered.
    pub(crate) questions: Vec<Question>,
    /// Questions asked so far (their keys are `q1`, `q2`, ...).
    pub(crate) asked: u64,
    /// Woken when a question arrives (a request still deciding hands the task out).
    pub(crate) asking: Arc<tokio::sync::Notify>,
}

/// A question a task put to its client, until `tasks/update` answers it.
pub(crate) struct Question {
    pub(crate) key: String,
    pub(crate) request: Value,
    pub(crate) reply: tokio::sync::oneshot::Sender<Value>,
}

impl Question {
    /// Its asker still waits (it did not time out or go away).
    pub(crate) fn open(&self) -> bool {
        !self.reply.is_closed()
    }
}

impl Entry {
    /// The questions still waiting for an answer.
    pub(crate) fn open_questions(&self) -> impl Iterator<Item = &Question> {
        self.questions.iter().filter(|q| q.open())
    }
}

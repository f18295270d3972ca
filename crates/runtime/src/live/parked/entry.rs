//! One parked execution as the table keeps it ([`Entry`]): how it was started, its state,
//! its events and cancellation, and the questions it put to its client through its handle
//! (kept under keys unique over the run's life, shown by `tasks/get` and `wait`, answered by
//! `tasks/update` or a retried `wait`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::outcome::ExecOutcome;
use crate::run::events::Events;

/// How a parked execution was started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// An MCP task (`tasks/get`, `tasks/cancel`).
    Task,
    /// A run that returned early with a handle for `wait`.
    Yielded,
}

pub enum State {
    Running,
    Finished {
        outcome: Arc<ExecOutcome>,
        at: Instant,
        at_text: String,
        bytes: usize,
    },
}

pub struct Entry {
    pub execution: String,
    pub kind: Kind,
    /// Started by a name of the product line's documents (see `runtime::door::Mode`).
    pub documents: bool,
    pub created: Instant,
    /// Unix milliseconds (what the durable store keeps).
    pub created_ms: i64,
    /// Held while its record is written, so that the last write carries the latest state.
    pub persisting: Arc<tokio::sync::Mutex<()>>,
    pub created_at: String,
    /// Deadline of the run, from its start: bounds how long it can be `working`.
    pub duration: Duration,
    pub events: Arc<Events>,
    pub cancel: CancellationToken,
    /// Tool-call attempts of the run so far.
    pub tool_calls: Arc<std::sync::atomic::AtomicU32>,
    /// Handed out to the client (until then a finished run is answered directly).
    pub visible: bool,
    /// Log lines `wait` has handed out.
    pub delivered: usize,
    /// The client asked to cancel it (and how).
    pub cancelled_by: Option<&'static str>,
    pub state: State,
    pub finished: Arc<watch::Sender<bool>>,
    /// Questions put to the client through the task, not yet answered.
    pub questions: Vec<Question>,
    /// Questions asked so far (their keys are `q1`, `q2`, ...).
    pub asked: u64,
    /// Woken when a question arrives (a request still deciding hands the task out).
    pub asking: Arc<tokio::sync::Notify>,
    /// The run's call log: armed (kept in the store) once the handle is handed out.
    pub calls: Arc<crate::run::calllog::CallLog>,
    /// What starts the run again after a restart (kept with its record while it runs).
    pub resume: Option<crate::live::durable::Resume>,
}

/// A question a task put to its client, until `tasks/update` answers it.
pub struct Question {
    pub key: String,
    pub request: Value,
    pub reply: tokio::sync::oneshot::Sender<Value>,
}

impl Question {
    /// Its asker still waits (it did not time out or go away).
    pub fn open(&self) -> bool {
        !self.reply.is_closed()
    }
}

impl Entry {
    /// The questions still waiting for an answer.
    pub fn open_questions(&self) -> impl Iterator<Item = &Question> {
        self.questions.iter().filter(|q| q.open())
    }
}

//! What a parked execution shows to `wait` and `tasks/get`: a snapshot of its entry.

use std::sync::Arc;

use serde_json::{Value, json};

use super::entry::{Entry, State};
use crate::outcome::{ExecOutcome, LogEntry};
use crate::run::events::Progress;
use policy::long_runs::LongRunLimits;

/// The state of one parked execution, as `wait` and `tasks/get` show it.
pub struct Snapshot {
    pub handle: String,
    /// Started by a name of the product line's documents: its answer carries their fields.
    pub documents: bool,
    pub created_at: String,
    /// When it finished (or now, while it runs).
    pub updated_at: String,
    /// Milliseconds from creation until the entry may be dropped: the run's deadline plus
    /// the keep time while it runs, exact once it finished.
    pub ttl_ms: u64,
    pub progress: Option<Progress>,
    /// Log lines: the new ones for `wait`, the last few for a task.
    pub logs: Vec<LogEntry>,
    /// Lines printed in all so far.
    pub log_count: usize,
    pub elapsed_ms: u64,
    /// Tool calls so far.
    pub tool_calls: u32,
    pub cancelled_by: Option<&'static str>,
    /// Questions to the client not answered yet: (key, `{"method", "params"}`).
    pub questions: Vec<(String, Value)>,
    /// The outcome, once finished (for `wait`, its logs are only the lines not handed out).
    pub outcome: Option<Arc<ExecOutcome>>,
}

impl Snapshot {
    /// The task's status message: progress and the last line printed.
    pub fn status_message(&self) -> String {
        let mut parts = Vec::new();
        if let Some(p) = &self.progress {
            parts.push(format!("progress {}", p.line()));
        }
        if let Some(l) = self.logs.last() {
            let mut text: String = l.text.chars().take(200).collect();
            if text.len() < l.text.len() {
                text.push('…');
            }
            parts.push(format!("last output [{}] {}", l.level, text));
        }
        if parts.is_empty() {
            parts.push(format!("running for {} ms", self.elapsed_ms));
        }
        parts.join("; ")
    }

    /// What a running execution shows: logs, progress, and how to go on.
    pub fn running_value(&self) -> Value {
        json!({
            "result": null,
            "logs": self.logs,
            "toolCalls": self.tool_calls,
            "durationMs": self.elapsed_ms,
            "running": {
                "handle": self.handle,
                "progress": self.progress,
                "linesSoFar": self.log_count,
            }
        })
    }
}

/// What `wait` and `tasks/get` show of entry `e`.
pub fn snapshot(
    handle: &str,
    e: &Entry,
    logs: Vec<LogEntry>,
    progress: Option<Progress>,
    limits: &LongRunLimits,
) -> Snapshot {
    let keep = limits.keep_result_ms;
    let (updated_at, ttl_ms, outcome) = match &e.state {
        State::Running => (
            rmcp::task_manager::current_timestamp(),
            e.duration.as_millis() as u64 + keep,
            None,
        ),
        State::Finished {
            outcome,
            at,
            at_text,
            ..
        } => (
            at_text.clone(),
            at.duration_since(e.created).as_millis() as u64 + keep,
            Some(outcome.clone()),
        ),
    };
    Snapshot {
        handle: handle.to_string(),
        documents: e.documents,
        created_at: e.created_at.clone(),
        updated_at,
        ttl_ms,
        progress,
        log_count: e.events.tail(0).1,
        logs,
        elapsed_ms: e.created.elapsed().as_millis() as u64,
        tool_calls: e.tool_calls.load(std::sync::atomic::Ordering::Relaxed),
        cancelled_by: e.cancelled_by,
        questions: e
            .open_questions()
            .map(|q| (q.key.clone(), q.request.clone()))
            .collect(),
        outcome,
    }
}

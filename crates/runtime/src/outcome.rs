//! What an execution answers: its result, captured lines, error, counters, and what became of
//! its session. Shared by every room (the worker side gives lines back, the live table keeps
//! outcomes, the server renders them).

use serde::Serialize;
use serde_json::Value;
use worker_protocol::ErrorInfo;

/// One captured line of output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LogEntry {
    pub level: &'static str,
    pub text: String,
}

/// The result of an execution, as the agent receives it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecOutcome {
    pub result: Value,
    pub logs: Vec<LogEntry>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorInfo>,
    pub tool_calls: u32,
    pub duration_ms: f64,
    /// Set when code ran without confinement (`--sandbox=none`), so every result says so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
    /// The full output, when it was cut and kept in the execution's scratch directory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_file: Option<String>,
    /// The session the execution ran in, and what became of it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<SessionInfo>,
    /// Peak resident memory of the worker, for the audit log (not part of the answer).
    #[serde(skip)]
    pub memory_peak_bytes: Option<u64>,
    /// The result's size as the worker sent it, for the audit log (not part of the answer).
    #[serde(skip)]
    pub result_bytes: usize,
    /// Model calls the code made, and their tokens (present when it made any).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub llm: Option<policy::llm::LlmUsage>,
}

/// How a started execution ended: code that ran, or one call of a pinned direct tool. Each
/// face answers by the variant (`execution_result`, the upstream's own result), never by the
/// tool's name.
#[derive(Debug)]
#[expect(
    clippy::large_enum_variant,
    reason = "code's outcome is the common case; it moves once through a channel, boxed in `Event`"
)]
pub enum Outcome {
    /// Code ran (or was refused, or cancelled): its result, logs and error.
    Ran(ExecOutcome),
    /// A pinned direct tool's call (`runtime::door::Work::Direct`).
    Called(Called),
}

/// A pinned direct tool's call: the upstream's own result (its `isError` included), which is
/// the whole answer; or why the call was refused or failed, as code would have caught it.
#[derive(Debug)]
pub struct Called {
    pub result: Result<Box<rmcp::model::CallToolResult>, ErrorInfo>,
    pub tool_calls: u32,
    pub duration_ms: f64,
}

impl Called {
    /// A call that was not made, for `error`.
    pub fn refused(error: ErrorInfo) -> Called {
        Called {
            result: Err(error),
            tool_calls: 0,
            duration_ms: 0.0,
        }
    }
}

impl Outcome {
    /// An execution whose handle was dropped or cancelled before it finished.
    pub fn cancelled() -> Outcome {
        Outcome::Ran(ExecOutcome::cancelled())
    }

    /// The outcome of code, for a face that starts only code (a direct call, which such a
    /// face never starts, is an internal error there rather than a lost answer).
    pub fn into_ran(self) -> ExecOutcome {
        match self {
            Outcome::Ran(out) => out,
            Outcome::Called(_) => ExecOutcome::refused(ErrorInfo {
                name: "InternalError".into(),
                message: "a pinned direct tool's call was answered where code's outcome was \
                          expected"
                    .into(),
                stack: None,
            }),
        }
    }
}

/// What an answer says about its session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionInfo {
    /// The handle to pass back as `session`.
    pub id: String,
    /// The session was created by this call.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub created: bool,
    /// The session's worker was gone (and why): this run started in a fresh one, without the
    /// variables of earlier runs; stored values and workspace files were kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state_lost: Option<String>,
    /// The session ended with this call (`reset`); the handle no longer works.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended: Option<&'static str>,
    /// The server restarted since the session's last execution, and its variables were
    /// rebuilt by replaying this many earlier executions (`crate::service::replay`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replayed: Option<usize>,
}

impl ExecOutcome {
    /// An execution that was not started, or did not finish, for `error`.
    pub fn refused(error: ErrorInfo) -> ExecOutcome {
        ExecOutcome {
            result: Value::Null,
            logs: Vec::new(),
            error: Some(error),
            tool_calls: 0,
            duration_ms: 0.0,
            warning: None,
            output_file: None,
            session: None,
            memory_peak_bytes: None,
            result_bytes: 0,
            llm: None,
        }
    }
}

/// The warning every result carries when the sandbox is off.
pub const UNSANDBOXED_WARNING: &str =
    "UNSANDBOXED: this server runs with --sandbox=none; code ran without OS confinement";

/// The name of the error a cancelled execution ends with.
pub const CANCELLED: &str = "CancelledError";
/// Its message.
pub const CANCELLED_MESSAGE: &str = "the execution was cancelled before it finished";

impl ExecOutcome {
    /// An execution whose handle was dropped or cancelled before it finished.
    pub fn cancelled() -> ExecOutcome {
        ExecOutcome::refused(ErrorInfo {
            name: CANCELLED.into(),
            message: CANCELLED_MESSAGE.into(),
            stack: None,
        })
    }

    /// It ended because it was cancelled.
    pub fn was_cancelled(&self) -> bool {
        self.error.as_ref().is_some_and(|e| e.name == CANCELLED)
    }
}

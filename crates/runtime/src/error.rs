//! The one run error: every kind of error an execution can end with, as its code and its
//! client see it (`ErrorInfo { name, message }` in the answer's `error`).
//!
//! It sits beside the worker protocol's [`worker_protocol::CallError`] (what one request of
//! code fails with, raised in the code as an exception); a [`RunError`] ends the whole run.
//! Each variant is one `name` (`RangeError`, `SessionError`, `TimeoutError`, ...); the typed
//! errors below it (a session's, a parked run's, the file and network grant's) come in by
//! `From` and keep their own messages; [`RunError::info`] is the one mapping to the wire.
//! A user's own exception is not a `RunError`: it arrives from the worker as the worker
//! reported it. Nor is a cancelled execution's `CancelledError`: the execution's handle
//! (`run::execution`, a room this enum's sources sit above) answers it when its task is gone
//! ([`super::outcome::ExecOutcome::cancelled`]).

use worker_protocol::{CallError, ErrorInfo};

use super::live::parked::ParkError;
use super::live::sessions::SessionError;
use super::worker::process::WorkerError;
use super::worker::python::PythonError;
use policy::access::AccessError;
use policy::error::LimitsError;

/// Why an execution ended without its code's result (or was never started).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// A limit or deadline asked for is outside what the server allows, or the code is too
    /// large.
    #[error("{0}")]
    Range(String),
    /// A limit or deadline the request asked for is outside the configured ones.
    #[error(transparent)]
    Limits(#[from] LimitsError),
    /// The file and network access asked for is outside the configured ceiling.
    #[error(transparent)]
    Policy(#[from] AccessError),
    /// A `PreExecute` hook refused the run, or failed and so refused it (`policy::hooks`).
    #[error("{0}")]
    Hook(String),
    /// The server runs its maximum of executions, or the client's rate is used up.
    #[error("{0}")]
    Busy(String),
    /// The session asked for cannot be used (unknown, ended, full, another language...).
    #[error(transparent)]
    Session(#[from] SessionError),
    /// The handle of a parked run or task: unknown, gone, elsewhere (`HandleError`); or no
    /// room for another (`LimitError`).
    #[error(transparent)]
    Parked(#[from] ParkError),
    /// A handle that does not fit the request (a `requestState` of another handle).
    #[error("{0}")]
    Handle(String),
    /// TypeScript that does not parse.
    #[error("{0}")]
    Syntax(String),
    /// Code that does not type-check, or could not be checked (`check: true`): nothing ran.
    #[error(transparent)]
    Check(#[from] crate::check::CheckError),
    /// No CPython to run Python with.
    #[error(transparent)]
    PythonUnavailable(#[from] PythonError),
    /// A worker could not be started or confined, or did not take the code; or the
    /// execution's own workspace could not be made.
    #[error("{0}")]
    Sandbox(String),
    /// The workspace of an execution outside a session could not be made.
    #[error(transparent)]
    RunWorkspace(SessionError),
    /// No pooled worker could be started, or none took the code.
    #[error(transparent)]
    Start(#[from] WorkerError),
    /// The worker broke the protocol.
    #[error("{0}")]
    Worker(String),
    /// The worker exited before it finished (how it exited).
    #[error("{0}")]
    WorkerCrashed(String),
    /// A limit of the run was reached (a workspace quota, long runs held).
    #[error("{0}")]
    Limit(String),
    /// The deadline passed; the worker was stopped.
    #[error(
        "the execution exceeded its {timeout_ms} ms deadline and was stopped; pass a larger \
         timeoutMs (at most {max_ms}) or do less per execution"
    )]
    Timeout { timeout_ms: u128, max_ms: u64 },
    /// A pinned direct tool's call passed its deadline (the upstream call timeout).
    #[error(
        "the call did not finish within its {timeout_ms} ms deadline (upstreamCallTimeoutMs, or \
         the server's own timeout) and was cancelled"
    )]
    CallTimeout { timeout_ms: u128 },
    /// A saved skill that cannot be run as asked (a client's `skill`): unknown, ambiguous,
    /// instructions only, or arguments that do not fit its input schema.
    #[error(transparent)]
    Skill(Box<SkillCallError>),
    /// Something of the server's own failed.
    #[error("{0}")]
    Internal(String),
}

/// Why a saved skill cannot be run as asked, whether a client asked (`skill`, a run of its
/// own) or code did (`skills.name(args)`, where it is raised as [`SkillCallError::kind`]).
#[derive(Debug, thiserror::Error)]
pub enum SkillCallError {
    /// The store's refusal: no such skill, more than one, instructions only, unreadable.
    #[error(transparent)]
    Store(#[from] tools::skills::error::SkillError),
    #[error("skills.{0}: arguments must be an object")]
    NotAnObject(String),
    #[error("invalid arguments for skill {name}:\n  {}\nexpected: {schema}", .errors.join("\n  "))]
    Arguments {
        name: String,
        errors: Vec<String>,
        schema: serde_json::Value,
    },
    #[error(
        "executions nest at most {depth} deep (skills, and the executor's own execute tools \
         called from code); skill {name:?} would be deeper (a skill that calls itself?)"
    )]
    TooDeep { name: String, depth: u32 },
}

impl SkillCallError {
    /// What code that called the skill catches.
    pub fn kind(&self) -> CallError {
        use tools::skills::error::SkillError;
        match self {
            SkillCallError::Store(
                SkillError::NotFound { .. }
                | SkillError::Ambiguous { .. }
                | SkillError::NotRunnable(_)
                | SkillError::Invalid(_),
            )
            | SkillCallError::NotAnObject(_)
            | SkillCallError::Arguments { .. } => CallError::Argument,
            SkillCallError::Store(SkillError::SaveOff) => CallError::Policy,
            SkillCallError::Store(_) => CallError::Tool,
            SkillCallError::TooDeep { .. } => CallError::Limit,
        }
    }
}

impl RunError {
    /// The name code and clients see (the exception's class in the code, `error.name`).
    pub fn name(&self) -> &'static str {
        match self {
            RunError::Range(_) | RunError::Limits(_) => "RangeError",
            RunError::Policy(_) | RunError::Hook(_) => "PolicyError",
            RunError::Busy(_) => "BusyError",
            RunError::Session(_) => "SessionError",
            RunError::Parked(
                ParkError::Unknown(_)
                | ParkError::Gone { .. }
                | ParkError::WrongReplica { .. }
                | ParkError::Store { .. },
            )
            | RunError::Handle(_) => "HandleError",
            RunError::Parked(ParkError::Full { .. } | ParkError::Off) | RunError::Limit(_) => {
                "LimitError"
            }
            RunError::Syntax(_) => "SyntaxError",
            RunError::Check(_) => "TypeCheckError",
            RunError::PythonUnavailable(_) => "PythonUnavailable",
            RunError::Sandbox(_) | RunError::RunWorkspace(_) | RunError::Start(_) => "SandboxError",
            RunError::Worker(_) => "WorkerError",
            RunError::WorkerCrashed(_) => "WorkerCrashed",
            RunError::Timeout { .. } | RunError::CallTimeout { .. } => "TimeoutError",
            RunError::Skill(e) => e.kind().name(),
            RunError::Internal(_) => "InternalError",
        }
    }

    /// What code catches when a run it started (a skill, our own execute tool) ended with
    /// this error: the class of the same failure met by the code itself.
    pub fn call_error(&self) -> CallError {
        match self {
            RunError::Policy(_) | RunError::Hook(_) => CallError::Policy,
            RunError::Busy(_)
            | RunError::Limit(_)
            | RunError::Parked(ParkError::Full { .. } | ParkError::Off)
            | RunError::Timeout { .. }
            | RunError::CallTimeout { .. } => CallError::Limit,
            RunError::Syntax(_) => CallError::Argument,
            RunError::Skill(e) => e.kind(),
            _ => CallError::Tool,
        }
    }

    /// The error as the answer carries it: the one mapping to the wire.
    pub fn info(&self) -> ErrorInfo {
        ErrorInfo {
            name: self.name().into(),
            message: self.to_string(),
            stack: None,
        }
    }

    /// A run stopped at its deadline of `timeout_ms`.
    pub fn timeout(timeout: std::time::Duration) -> RunError {
        RunError::Timeout {
            timeout_ms: timeout.as_millis(),
            max_ms: policy::MAX_TIMEOUT_MS,
        }
    }
}

impl From<SkillCallError> for RunError {
    fn from(e: SkillCallError) -> RunError {
        RunError::Skill(Box::new(e))
    }
}

impl From<RunError> for ErrorInfo {
    fn from(e: RunError) -> ErrorInfo {
        e.info()
    }
}

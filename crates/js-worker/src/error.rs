//! Why the worker stops serving ([`WorkerError`]): its line on stderr (`js worker: ...`), the
//! host's log of this worker, says it.

use std::fmt;

#[derive(Debug)]
pub(crate) enum WorkerError {
    Stdin(std::io::Error),
    Stdout(std::io::Error),
    StdoutFlags(nix::errno::Errno),
    /// The engine could not start (with why).
    Start(Box<WorkerError>),
    Engine(rquickjs::Error),
    Json(serde_json::Error),
    /// The pipe to or from the host broke: the reason as it was first seen.
    Broken(String),
    /// A reply whose id matches no pending call.
    UnknownReply(u64),
    /// A reply kept (`Kept`) for a call that was not a tail call.
    KeptNotTail(u64),
    SecondRun,
}

impl fmt::Display for WorkerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WorkerError::Stdin(e) => write!(f, "cannot open stdin: {e}"),
            WorkerError::Stdout(e) => write!(f, "cannot open stdout: {e}"),
            WorkerError::StdoutFlags(e) => write!(f, "stdout flags: {e}"),
            WorkerError::Start(e) => write!(f, "engine start failed: {e}"),
            WorkerError::Engine(e) => write!(f, "{e}"),
            WorkerError::Json(e) => write!(f, "{e}"),
            WorkerError::Broken(why) => f.write_str(why),
            WorkerError::UnknownReply(id) => write!(f, "reply {id} matches no pending call"),
            WorkerError::KeptNotTail(id) => {
                write!(f, "reply {id} kept for a call that was not a tail call")
            }
            WorkerError::SecondRun => f.write_str("a second run arrived while one was in progress"),
        }
    }
}

impl std::error::Error for WorkerError {}

impl From<rquickjs::Error> for WorkerError {
    fn from(e: rquickjs::Error) -> Self {
        WorkerError::Engine(e)
    }
}

impl From<serde_json::Error> for WorkerError {
    fn from(e: serde_json::Error) -> Self {
        WorkerError::Json(e)
    }
}

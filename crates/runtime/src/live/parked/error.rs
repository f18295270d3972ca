//! Why a parked run's handle is not answered, or a long run not started ([`ParkError`]).

use policy::replica::Elsewhere;

/// What became of a handle that is not answered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParkError {
    #[error("unknown handle \"{0}\": it was never issued to this client")]
    Unknown(String),
    #[error("handle \"{handle}\" is not here: {elsewhere}")]
    WrongReplica {
        handle: String,
        elsewhere: Elsewhere,
    },
    #[error("the result of \"{handle}\" is gone: {reason}")]
    Gone { handle: String, reason: String },
    #[error(
        "this client already holds {held} running executions (longRuns.{setting} is {limit}); \
         wait for one to finish, or cancel one with wait {{handle, cancel: true}}"
    )]
    Full {
        held: usize,
        limit: usize,
        setting: &'static str,
    },
    #[error(
        "long runs are turned off on this server (longRuns.maxParked is 0): run without \
         yieldAfterMs"
    )]
    Off,
    #[error("handle \"{handle}\" cannot be looked up in the store: {error}")]
    Store {
        handle: String,
        error: store::StoreError,
    },
}

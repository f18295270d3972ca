//! The runtime as one value: it owns the warm pools, the host side and the table of live
//! handles, and runs an execution from its request to its outcome.
//!
//! [`Runtime::begin`] is the one door ([`begin`]); an execution gets a task of its own
//! (admission, session, audit lines), and [`Runtime::execute`] is one run inside it
//! ([`execute`], as named phases): prepare the code (TypeScript is stripped here; Python is
//! compiled in the worker), take a worker (pooled, or the session's: [`crate::lease`]),
//! drive it against the host side, and turn what it reports into an
//! [`crate::outcome::ExecOutcome`]. [`state`] holds the runtime's parts, [`nested`] lends
//! it to the host side for executions inside executions, [`sweep`] the background work, and
//! [`resume`] starts again a run lost to a restart while it waited for a person.

mod begin;
mod execute;
mod nested;
mod replay;
mod resume;
mod state;
mod sweep;
mod until;

pub use state::Runtime;
pub use sweep::{
    cancels_from_store_periodically, end_idle_sessions, sweep_periodically,
    sweep_store_periodically,
};

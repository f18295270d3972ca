//! Executions that outlive their request: MCP tasks, and runs that returned early
//! (`yieldAfterMs`) and are read with the `wait` tool.
//!
//! The table maps an opaque, unguessable handle to an entry: the principal that started it
//! (the only one that can see it: another principal gets the same `unknown` as a handle never
//! issued), the execution's [`Events`] (logs and progress so far), its cancellation token,
//! and, once it finished, its outcome, kept for `longRuns.keepResultMs`.
//!
//! An entry is reserved when the execution starts, so that the limits hold before any work
//! is done: at most `maxParkedPerClient` entries per principal and `maxParked` in all; a
//! reservation past a limit first drops the oldest finished results (of that principal, then
//! of anyone), and is refused only when everything held is still running. All kept results
//! together stay within `maxKeptMb`, again dropping the oldest finished first. A handle
//! whose result was dropped or expired is remembered (a bounded list) so that asking for it
//! says so instead of "unknown".
//!
//! An execution that finishes before it is handed out (its request waited `yieldAfterMs` or
//! `taskAfterMs` and it was done) is taken back out of the table by that request
//! ([`Parked::publish_as`]) and answered directly.
//!
//! A long run of a 2026-07-28 client asks its questions (approvals, `llm.ask`) through its
//! handle: [`Parked::ask`] keeps them on the entry under keys unique over the run's life;
//! `tasks/get` shows them as `input_required` with `inputRequests` and `tasks/update`
//! ([`Parked::answer`]) delivers the client's `inputResponses`; for a `wait` handle, `wait`
//! answers `input_required` and its retry carries the answers. A question asked before the
//! handle was handed out hands it out at once (the client cannot answer what it cannot see).

pub mod entry;
pub mod error;
pub mod recall;
pub mod resumer;
pub mod snapshot;
pub mod store;

pub use entry::Kind;
pub use error::ParkError;
pub use snapshot::Snapshot;
pub use store::{Parked, Published, SWEEP_EVERY};

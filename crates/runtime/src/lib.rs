//! Runs code: prepare it, hand it to a warm worker, serve the worker's requests, enforce the
//! deadline from outside, and collect the result.
//!
//! The runtime has one room per concern; arrows point down only (no room uses one that uses
//! it, and no child uses what a `mod.rs` defines):
//!
//! - [`door`]: the one value every server face starts an execution with ([`door::Start`]:
//!   request, caller, mode);
//! - [`service`]: the [`Runtime`] itself (its `impl`s by concern: the door, one run as named
//!   phases, nested runs, background sweeps): `Runtime::begin` takes a
//!   [`door::Start`] and runs the execution from request to outcome, over the rooms below;
//! - [`lease`]: which worker a run uses (a pooled one, or its session's) and where it goes
//!   after;
//! - [`host`]: the host side, what answers the requests of code: the bridge (policy, then
//!   upstream), approvals, model calls, `fetch`, all through one [`host::scope::RunScope`];
//! - [`live`]: the table of live handles: sessions, parked runs and tasks, paused executions;
//! - [`run`]: one execution: its request and context, its handle and events, the drive loop,
//!   preparing the code, output and the deadline's clock;
//! - [`worker`]: the worker side: worker processes, their pools, CPython, memory, the trees
//!   and workspaces code writes;
//! - [`error`]: the one run error ([`error::RunError`]) and its mapping to the wire;
//! - [`outcome`], [`ids`]: what every room shares (the answer, unguessable ids).

pub mod check;
pub mod confinement;
pub mod door;
pub mod error;
pub mod host;
pub mod ids;
mod lease;
pub mod live;
pub mod outcome;
pub mod run;
mod service;
pub mod worker;

pub use live::parked;
pub use outcome::ExecOutcome;
pub use run::{execution, output};
pub use service::{
    Runtime, cancels_from_store_periodically, end_idle_sessions, sweep_periodically,
    sweep_store_periodically,
};
pub use worker::{memory, pool, python, roots};

//! How the table of parked runs reaches the runtime to start a run again ([`Resumer`]).

use super::entry::Kind;
use super::error::ParkError;
use crate::live::durable::Resume;
use crate::run::calllog::Entry;
use policy::principal::Principal;

/// Starts again a run lost to a restart while it waited for a person: from its request,
/// replaying its call log (`crate::run::calllog`). The runtime is one; the table calls it
/// from `Parked::recall`.
pub trait Resumer: Send + Sync {
    /// A run started again can ask a person its question (it has no client: the approvals
    /// inbox must be on, `approvals.fallback: "inbox"`).
    fn asks_a_person(&self) -> bool;

    /// Starts run `handle` of `owner` again, its entry made with
    /// `Parked::reserve_resumed`. `Ok(false)`: another request started it first.
    fn resume(
        &self,
        owner: &Principal,
        handle: &str,
        kind: Kind,
        resume: Resume,
        log: Vec<Entry>,
    ) -> Result<bool, ParkError>;
}

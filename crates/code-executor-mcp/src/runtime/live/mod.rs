//! The table of live handles: everything that outlives one request and is named by an
//! opaque, unguessable, principal-bound, expiring handle: sessions ([`sessions`]), parked runs
//! and tasks ([`parked`]), executions paused for their client's answers ([`paused`]).

pub(crate) mod parked;
pub(crate) mod paused;
pub(crate) mod sessions;

//! Who is calling: the principal that owns executions and sessions and keys admission, rate
//! limits and audit lines.
//!
//! Over stdio there is one client per server process, named by its `initialize` (what it
//! says it is, which is all stdio has). A transport that authenticates its callers names them
//! itself; whatever the source, two requests with different principals never see each other's
//! sessions.

use std::fmt;
use std::sync::Arc;

/// A caller's identity.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Principal(Arc<str>);

impl Principal {
    pub(crate) fn new(name: &str) -> Principal {
        Principal(Arc::from(name))
    }
}

impl fmt::Display for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

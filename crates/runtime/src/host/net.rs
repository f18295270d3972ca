//! The network side of one execution, shared by the run's scope and `fetch`: its grant
//! ([`FetchState`]), and the HTTP clients kept for reuse ([`Clients`]), each
//! connecting only through a resolver that holds its hop's [`Reach`] ([`GuardedResolver`],
//! from `tools::net`).

use std::sync::Arc;
use std::time::Duration;

use policy::access::{Grant, Reach};
/// The guarded resolver lives in `tools` (OpenAPI sources make their requests under the
/// same rules); `fetch` and its tests name it from here.
pub use tools::net::{GuardedResolver, Lookup, Refused, system_lookup};

/// Time to establish a connection (TCP and TLS), within the request's own timeout.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Clients kept for reuse: making one (TLS roots, connection pool) costs milliseconds, and
/// executions usually ask for the same destinations. Keyed by the hop's [`Reach`], which is
/// all a client's resolver looks at, so a client (and its kept connections) only ever serves
/// hops whose port, method and grant admit the same special addresses.
pub struct Clients {
    kept: std::sync::Mutex<Vec<(Reach, reqwest::Client)>>,
    lookup: Lookup,
}

impl Default for Clients {
    fn default() -> Clients {
        Clients::with_lookup(system_lookup())
    }
}

/// Distinct reaches whose clients are kept (the oldest goes first).
const KEPT_CLIENTS: usize = 16;

impl Clients {
    /// Clients whose resolvers look names up with `lookup`.
    pub fn with_lookup(lookup: Lookup) -> Clients {
        Clients {
            kept: std::sync::Mutex::new(Vec::new()),
            lookup,
        }
    }

    pub fn get(&self, reach: &Reach) -> Result<reqwest::Client, NoClient> {
        if let Ok(kept) = self.kept.lock()
            && let Some((_, c)) = kept.iter().find(|(r, _)| r == reach)
        {
            return Ok(c.clone());
        }
        let client = make_client(reach.clone(), self.lookup.clone())?;
        if let Ok(mut kept) = self.kept.lock() {
            if kept.len() >= KEPT_CLIENTS {
                kept.remove(0);
            }
            kept.push((reach.clone(), client.clone()));
        }
        Ok(client)
    }
}

/// The network side of one execution: its grant and the kept clients. Its counters are the
/// request's (`crate::run::ledger::Ledger`), shared with the skills it calls.
pub struct FetchState {
    pub grant: Arc<Grant>,
    pub clients: Arc<Clients>,
}

impl FetchState {
    pub fn new(grant: Arc<Grant>, clients: Arc<Clients>) -> FetchState {
        FetchState { grant, clients }
    }
}

/// An HTTP client could not be made (TLS roots, the resolver).
#[derive(Debug, thiserror::Error)]
#[error("cannot make an HTTP client: {0}")]
pub struct NoClient(reqwest::Error);

/// A client whose every connection goes through a resolver holding `reach`.
fn make_client(reach: Reach, lookup: Lookup) -> Result<reqwest::Client, NoClient> {
    tools::net::guarded_client(reach, lookup, CONNECT_TIMEOUT).map_err(NoClient)
}

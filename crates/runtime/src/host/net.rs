//! The network side of one execution, shared by the run's scope and `fetch`: its grant
//! ([`FetchState`]), and the HTTP clients kept for reuse ([`Clients`]), each
//! connecting only through a resolver that holds its hop's [`Reach`] ([`GuardedResolver`]).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use policy::access::{Grant, Reach, Unreachable};

/// Time to establish a connection (TCP and TLS), within the request's own timeout.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How a name becomes addresses: the system's resolver, or a table in tests.
pub type Lookup =
    Arc<dyn Fn(String) -> BoxFuture<'static, std::io::Result<Vec<IpAddr>>> + Send + Sync>;

/// The system's resolver (`getaddrinfo`: `/etc/hosts`, then DNS).
pub fn system_lookup() -> Lookup {
    Arc::new(|host: String| {
        Box::pin(async move {
            Ok(tokio::net::lookup_host((host.as_str(), 0))
                .await?
                .map(|a| a.ip())
                .collect())
        })
    })
}

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
    tools::tls::install_tls_provider();
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .referer(false)
        .connect_timeout(CONNECT_TIMEOUT)
        .user_agent(concat!("code-executor-mcp/", env!("CARGO_PKG_VERSION")))
        .dns_resolver(Arc::new(GuardedResolver { reach, lookup }))
        .build()
        .map_err(NoClient)
}

/// The resolver of a client: one lookup, every address checked against the reach of the
/// hops the client serves. (A literal address never comes here: [`Grant::admit`] checked it.)
pub struct GuardedResolver {
    pub reach: Reach,
    pub lookup: Lookup,
}

/// A resolution the reach refuses; found again in the error chain to name it.
#[derive(Debug)]
pub struct Refused(pub Unreachable);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} is not reachable under this grant", self.0.addr)
    }
}

impl std::error::Error for Refused {}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let reach = self.reach.clone();
        let lookup = self.lookup.clone();
        let host = name.as_str().to_string();
        Box::pin(async move {
            let found = lookup(host.clone()).await?;
            if found.is_empty() {
                return Err(format!("{host}: the name has no address").into());
            }
            // A special address outside the reach is dropped, and the client connects only
            // to what is left (none left: refused, saying why).
            let allowed = reach
                .filter(&found)
                .map_err(|u| Box::new(Refused(u)) as Box<dyn std::error::Error + Send + Sync>)?;
            Ok(Box::new(allowed.into_iter().map(|ip| SocketAddr::new(ip, 0))) as Addrs)
        })
    }
}

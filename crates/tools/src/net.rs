//! Connections under the fetch guard's rules, for every request the host makes on code's
//! behalf (`fetch` from code, in the runtime) or for a configured source (OpenAPI
//! operations): a resolver ([`GuardedResolver`]) that resolves a name once and drops every
//! special address (loopback, private, link-local, metadata...) its [`Reach`] does not
//! name, so a second lookup cannot rebind the name; [`Refused`] is found again in the error
//! chain to say why. The address rules themselves are `policy::access`'s ([`Reach`],
//! `policy::access::net::special`).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use policy::access::{Reach, Unreachable};

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

/// The reach's refusal of a resolution, if that is why a request failed.
pub fn refused(e: &(dyn std::error::Error + 'static)) -> Option<Unreachable> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = source {
        if let Some(r) = s.downcast_ref::<Refused>() {
            return Some(r.0);
        }
        source = s.source();
    }
    None
}

/// An HTTP client whose every connection goes through a resolver holding `reach`: no
/// redirects followed (the caller checks each hop), no proxy from the environment, no
/// `Referer`, our `User-Agent`, TLS verified by the platform verifier.
pub fn guarded_client(
    reach: Reach,
    lookup: Lookup,
    connect_timeout: Duration,
) -> Result<reqwest::Client, reqwest::Error> {
    crate::tls::install_tls_provider();
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .referer(false)
        .connect_timeout(connect_timeout)
        .user_agent(concat!("code-executor-mcp/", env!("CARGO_PKG_VERSION")))
        .dns_resolver(Arc::new(GuardedResolver { reach, lookup }))
        .build()
}

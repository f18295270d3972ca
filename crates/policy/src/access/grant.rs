//! What one execution was granted ([`Grant`]) and the one decision for each hop of its
//! `fetch` ([`Grant::admit`]), with the limits on its requests ([`FetchLimits`]).

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use super::net::{Hop, HostPattern, NetRule, Reach, special};

/// Requests one execution may make (redirect hops count).
pub const DEFAULT_MAX_REQUESTS: u32 = 100;
/// Largest response body one request may return to code: larger ones fail with a
/// `LimitError` rather than fill the worker's memory (the body travels in one frame).
pub const DEFAULT_MAX_RESPONSE_BYTES: u64 = 8 << 20;
/// Response bytes one execution may receive in all.
pub const DEFAULT_MAX_TOTAL_BYTES: u64 = 32 << 20;
/// Time one request may take, headers and body, within the execution's deadline.
pub const DEFAULT_FETCH_TIMEOUT_MS: u64 = 30_000;
/// Redirects followed per request, each checked like the first hop.
pub const DEFAULT_MAX_REDIRECTS: u32 = 5;

/// Per-execution limits on `fetch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FetchLimits {
    pub max_requests: u32,
    pub max_response_bytes: u64,
    pub max_total_bytes: u64,
    pub timeout: Duration,
    pub max_redirects: u32,
}

impl Default for FetchLimits {
    fn default() -> Self {
        FetchLimits {
            max_requests: DEFAULT_MAX_REQUESTS,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            max_total_bytes: DEFAULT_MAX_TOTAL_BYTES,
            timeout: Duration::from_millis(DEFAULT_FETCH_TIMEOUT_MS),
            max_redirects: DEFAULT_MAX_REDIRECTS,
        }
    }
}

/// Where a refused hop went: `GET example.com:443`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct At {
    pub method: String,
    pub host: String,
    pub port: u16,
}

impl std::fmt::Display for At {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "fetch {} {}:{}", self.method, self.host, self.port)
    }
}

/// Why a hop of `fetch` is refused ([`Grant::admit`]), with what would allow it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HopRefused {
    #[error("fetch: only http and https URLs can be fetched, not {0}:")]
    Scheme(String),
    #[error("fetch: credentials in the URL are not sent; use a header")]
    Credentials,
    #[error("fetch: {0} has no host")]
    NoHost(String),
    #[error(
        "{0}: this execution has no network grant; ask for it with permissions.net (within the \
         server's configured ceiling)"
    )]
    NoGrant(At),
    #[error("{0}: {host} is not a granted destination (permissions.net: {1})", host = .0.host)]
    Host(At, String),
    #[error("{0}: port {port} is not granted for {host} (permissions.net: {1})", port = .0.port, host = .0.host)]
    Port(At, String),
    #[error("{0}: method {method} is not granted for {host} (permissions.net: {1})", method = .0.method, host = .0.host)]
    Method(At, String),
    /// A special address no granted rule names ([`Grant::unreachable`] says why).
    #[error("{0}")]
    Special(String),
}

/// What one execution was granted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Grant {
    /// Real (symlink-free) paths the worker may read, each inside a ceiling path.
    pub read: Vec<PathBuf>,
    /// A writable workspace.
    pub write: bool,
    pub net: Vec<NetRule>,
    pub fetch: FetchLimits,
}

impl Grant {
    /// The one decision for a hop: the rules that allow it (scheme http/https, host as
    /// written, port, method) and the [`Reach`] of a connection for it, or why it is refused.
    /// A literal address is checked here too (no resolution will happen); a name's addresses
    /// go through the reach once resolved ([`Reach::filter`]).
    pub fn admit(&self, hop: &Hop<'_>) -> Result<(Vec<&NetRule>, Reach), HopRefused> {
        let url = hop.url;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(HopRefused::Scheme(url.scheme().to_string()));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(HopRefused::Credentials);
        }
        let Some(host) = url.host() else {
            return Err(HopRefused::NoHost(url.to_string()));
        };
        let port = url.port_or_known_default().unwrap_or(0);
        let at = || At {
            method: hop.method.to_string(),
            host: host.to_string(),
            port,
        };
        if self.net.is_empty() {
            return Err(HopRefused::NoGrant(at()));
        }
        let by_host: Vec<&NetRule> = self
            .net
            .iter()
            .filter(|r| r.host.matches_host(&host))
            .collect();
        if by_host.is_empty() {
            return Err(HopRefused::Host(at(), self.granted()));
        }
        let by_port: Vec<&NetRule> = by_host
            .into_iter()
            .filter(|r| r.ports.contains(&port))
            .collect();
        if by_port.is_empty() {
            return Err(HopRefused::Port(at(), self.granted()));
        }
        let by_method: Vec<&NetRule> = by_port
            .into_iter()
            .filter(|r| r.admits(port, hop.method))
            .collect();
        if by_method.is_empty() {
            return Err(HopRefused::Method(at(), self.granted()));
        }
        let reach = self.reach(port, hop.method);
        let literal = match host {
            url::Host::Ipv4(a) => Some(IpAddr::V4(a)),
            url::Host::Ipv6(a) => Some(IpAddr::V6(a)),
            url::Host::Domain(_) => None,
        };
        if let Some(addr) = literal
            && !reach.admits(addr)
        {
            return Err(HopRefused::Special(self.unreachable(
                addr,
                &host.to_string(),
                port,
                hop.method,
            )));
        }
        Ok((by_method, reach))
    }

    /// The special addresses a connection on `port` with `method` may go to: those named by
    /// a granted rule admitting both.
    pub fn reach(&self, port: u16, method: &str) -> Reach {
        let mut patterns: Vec<HostPattern> = Vec::new();
        for r in &self.net {
            if matches!(r.host, HostPattern::Ip(_) | HostPattern::Cidr(..))
                && r.admits(port, method)
                && !patterns.contains(&r.host)
            {
                patterns.push(r.host.clone());
            }
        }
        Reach(patterns)
    }

    /// Where a connection for `hop` may go when its host resolved to `resolved` (ignored for
    /// a literal address, which is its own resolution): [`Grant::admit`], then
    /// [`Reach::filter`], the two steps `fetch` takes (the second in its client's resolver),
    /// put together to be tested by value (the property test in `net_prop`).
    #[cfg(test)]
    pub fn check_connect(
        &self,
        hop: &Hop<'_>,
        resolved: &[IpAddr],
    ) -> Result<Vec<IpAddr>, ConnectRefused> {
        let (_, reach) = self.admit(hop)?;
        let port = hop.url.port_or_known_default().unwrap_or(0);
        let host = hop.url.host_str().unwrap_or("");
        let literal = match hop.url.host() {
            Some(url::Host::Ipv4(a)) => Some(IpAddr::V4(a)),
            Some(url::Host::Ipv6(a)) => Some(IpAddr::V6(a)),
            _ => None,
        };
        let addrs = literal.map_or_else(|| resolved.to_vec(), |a| vec![a]);
        if addrs.is_empty() {
            return Err(ConnectRefused::NoAddress(host.to_string()));
        }
        reach.filter(&addrs).map_err(|u| {
            ConnectRefused::Unreachable(self.unreachable(u.addr, host, port, hop.method))
        })
    }

    /// Why a connection to the special address `addr` (the literal `host`, or what it
    /// resolved to) is refused for a hop on `port` with `method`, and what would allow it.
    pub fn unreachable(&self, addr: IpAddr, host: &str, port: u16, method: &str) -> String {
        let kind = special(addr).unwrap_or("a special address");
        let via = if host.trim_start_matches('[').trim_end_matches(']') == addr.to_string() {
            String::new()
        } else {
            format!(" ({host} resolves to it)")
        };
        let shown = match addr {
            IpAddr::V6(a) => format!("[{a}]"),
            IpAddr::V4(a) => a.to_string(),
        };
        let naming: Vec<String> = self
            .net
            .iter()
            .filter(|r| r.host.names_addr(addr))
            .map(ToString::to_string)
            .collect();
        let granted = if naming.is_empty() {
            String::new()
        } else {
            format!(
                "; the rules naming it ({}) do not admit {method} to port {port}",
                naming.join(", ")
            )
        };
        format!(
            "fetch {method} {host}:{port}: {addr} is {kind}{via}; such addresses are refused \
             unless a granted rule names the address itself and admits this port and method{granted} \
             (e.g. \"{method} {shown}:{port}\" in permissions.net)"
        )
    }

    fn granted(&self) -> String {
        self.net
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Why [`Grant::check_connect`] refuses a connection, in the words `fetch` would use.
#[cfg(test)]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConnectRefused {
    /// The hop itself is not granted (scheme, host, port or method).
    #[error(transparent)]
    Hop(#[from] HopRefused),
    #[error("fetch: {0}: the name has no address")]
    NoAddress(String),
    /// A special address no rule names for this port and method (the words say which).
    #[error("{0}")]
    Unreachable(String),
}

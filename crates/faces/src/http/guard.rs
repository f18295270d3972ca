//! Checks before a request reaches MCP: the `Host` and `Origin` allowlists (against DNS
//! rebinding), and which principal owns which transport session (`Mcp-Session-Id`).
//!
//! DNS rebinding: a web page the user visits resolves its own name to 127.0.0.1 and talks to
//! a local server as a same-origin page. The `Host` header then carries the attacker's name
//! and a cross-site request carries its `Origin`, so both are checked against allowlists
//! (loopback names by default) and a mismatch is 403.

use std::collections::HashMap;
use std::sync::Mutex;

use policy::principal::Principal;

/// Names a loopback server answers to by default.
pub const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

/// The Host/Origin policy.
#[derive(Debug, Clone)]
pub(crate) struct HostPolicy {
    /// Allowed `Host` values: `name` (any port) or `name:port`; `*` allows any.
    hosts: Vec<String>,
    /// Allowed `Origin` values (`scheme://host[:port]`); empty: an origin whose host is an
    /// allowed host.
    origins: Vec<String>,
}

/// `host` and optional port of an authority, lowercased; IPv6 keeps its brackets.
fn split_authority(authority: &str) -> Option<(String, Option<u16>)> {
    let a = authority.trim().to_ascii_lowercase();
    if a.is_empty() || a.contains(['/', '@', ' ']) {
        return None;
    }
    if let Some(rest) = a.strip_prefix('[') {
        let (h, tail) = rest.split_once(']')?;
        let port = match tail {
            "" => None,
            t => Some(t.strip_prefix(':')?.parse().ok()?),
        };
        return Some((format!("[{h}]"), port));
    }
    match a.rsplit_once(':') {
        Some((h, p)) => Some((h.to_string(), Some(p.parse().ok()?))),
        None => Some((a, None)),
    }
}

impl HostPolicy {
    pub(crate) fn new(hosts: Vec<String>, origins: Vec<String>) -> HostPolicy {
        HostPolicy {
            hosts: hosts.into_iter().map(|h| h.to_ascii_lowercase()).collect(),
            origins: origins
                .into_iter()
                .map(|o| o.trim_end_matches('/').to_ascii_lowercase())
                .collect(),
        }
    }

    fn host_allowed(&self, host: &str, port: Option<u16>) -> bool {
        self.hosts.iter().any(|entry| {
            if entry == "*" {
                return true;
            }
            match split_authority(entry) {
                Some((h, None)) => h == host,
                Some((h, Some(p))) => h == host && Some(p) == port,
                None => false,
            }
        })
    }

    /// Checks the `Host` value; `Err` says why (403).
    pub(crate) fn check_host(&self, host: Option<&str>) -> Result<(), Refused> {
        let Some(host) = host else {
            return Err(Refused::NoHost);
        };
        let Some((h, port)) = split_authority(host) else {
            return Err(Refused::MalformedHost(host.to_string()));
        };
        if self.host_allowed(&h, port) {
            Ok(())
        } else {
            Err(Refused::Host(host.to_string()))
        }
    }

    /// Checks the `Origin` value, when there is one; `Err` says why (403).
    pub(crate) fn check_origin(&self, origin: Option<&str>) -> Result<(), Refused> {
        let Some(origin) = origin else { return Ok(()) };
        let o = origin.trim().trim_end_matches('/').to_ascii_lowercase();
        if !self.origins.is_empty() {
            return if self.origins.iter().any(|a| *a == o || a == "*") {
                Ok(())
            } else {
                Err(Refused::UnlistedOrigin(origin.to_string()))
            };
        }
        let ok = o
            .split_once("://")
            .filter(|(scheme, _)| *scheme == "http" || *scheme == "https")
            .and_then(|(_, authority)| split_authority(authority))
            .is_some_and(|(h, port)| {
                self.hosts.iter().any(|e| e != "*") && self.host_allowed(&h, port)
            });
        if ok {
            Ok(())
        } else {
            Err(Refused::Origin(origin.to_string()))
        }
    }
}

/// Why a request's `Host` or `Origin` is refused (403).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Refused {
    #[error("the request has no Host header")]
    NoHost,
    #[error("Host \"{0}\" is malformed")]
    MalformedHost(String),
    #[error("Host \"{0}\" is not allowed (DNS rebinding protection; add it with --allowed-host)")]
    Host(String),
    /// Not among the `--allowed-origin` list.
    #[error("Origin \"{0}\" is not allowed (add it with --allowed-origin)")]
    UnlistedOrigin(String),
    #[error(
        "Origin \"{0}\" is not allowed (DNS rebinding protection; add it with --allowed-origin)"
    )]
    Origin(String),
}

/// Transport sessions (`Mcp-Session-Id`, protocol 2025-11-25) and the principal that opened
/// each. A session id presented by another principal is answered like an unknown one.
#[derive(Default)]
pub(crate) struct TransportSessions {
    owners: Mutex<HashMap<String, Option<Principal>>>,
    /// The 2025-11-25 task shim of each session (see `server::legacy_tasks`).
    shims: Mutex<HashMap<String, SharedShim>>,
}

/// One session's task shim, shared by its concurrent requests.
pub(crate) type SharedShim = std::sync::Arc<Mutex<crate::server::legacy_tasks::Shim>>;

/// Whether a request may use a transport session.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum SessionUse {
    /// Ours to pass on (or unknown to us: the MCP layer answers).
    Allowed,
    /// Opened by another principal.
    Foreign,
}

impl TransportSessions {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Option<Principal>>> {
        self.owners.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn check(&self, id: &str, principal: Option<&Principal>) -> SessionUse {
        match self.lock().get(id) {
            Some(owner) if owner.as_ref() != principal => SessionUse::Foreign,
            _ => SessionUse::Allowed,
        }
    }

    pub(crate) fn opened(&self, id: String, principal: Option<Principal>, shim: SharedShim) {
        self.shims
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id.clone(), shim);
        self.lock().insert(id, principal);
    }

    pub(crate) fn closed(&self, id: &str) {
        self.lock().remove(id);
        self.shims
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(id);
    }

    /// The task shim of session `id`, if we opened it.
    pub(crate) fn shim(&self, id: &str) -> Option<SharedShim> {
        self.shims
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(id)
            .cloned()
    }

    pub(crate) fn count(&self) -> usize {
        self.lock().len()
    }

    pub(crate) fn count_of(&self, principal: Option<&Principal>) -> usize {
        self.lock()
            .values()
            .filter(|o| o.as_ref() == principal)
            .count()
    }

    pub(crate) fn ids(&self) -> Vec<String> {
        self.lock().keys().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loopback() -> HostPolicy {
        HostPolicy::new(LOOPBACK_HOSTS.map(String::from).to_vec(), vec![])
    }

    #[test]
    fn hosts_table() {
        let p = loopback();
        for ok in [
            "localhost",
            "localhost:3333",
            "127.0.0.1:80",
            "[::1]:3333",
            "LOCALHOST",
        ] {
            assert_eq!(p.check_host(Some(ok)), Ok(()), "{ok}");
        }
        for bad in [
            "evil.example",
            "evil.example:3333",
            "localhost.evil.example",
            "127.0.0.1.nip.io",
            "user@localhost",
            "localhost:notaport",
            "",
        ] {
            assert!(p.check_host(Some(bad)).is_err(), "{bad}");
        }
        assert!(p.check_host(None).is_err());
        let pinned = HostPolicy::new(vec!["mcp.example:8443".into()], vec![]);
        assert!(pinned.check_host(Some("mcp.example:8443")).is_ok());
        assert!(pinned.check_host(Some("mcp.example")).is_err());
        assert!(pinned.check_host(Some("mcp.example:80")).is_err());
    }

    #[test]
    fn origins_table() {
        let p = loopback();
        assert_eq!(p.check_origin(None), Ok(()));
        for ok in [
            "http://localhost:5173",
            "http://127.0.0.1",
            "https://[::1]:1",
        ] {
            assert_eq!(p.check_origin(Some(ok)), Ok(()), "{ok}");
        }
        for bad in [
            "https://evil.example",
            "null",
            "file://",
            "http://localhost.evil.example",
        ] {
            assert!(p.check_origin(Some(bad)).is_err(), "{bad}");
        }
        let listed = HostPolicy::new(vec!["*".into()], vec!["https://app.example".into()]);
        assert!(listed.check_origin(Some("https://app.example")).is_ok());
        assert!(listed.check_origin(Some("http://localhost")).is_err());
        // `*` for hosts alone does not open origins.
        let any_host = HostPolicy::new(vec!["*".into()], vec![]);
        assert!(any_host.check_origin(Some("https://evil.example")).is_err());
    }

    #[test]
    fn a_transport_session_belongs_to_its_opener() {
        let s = TransportSessions::default();
        let alice = Principal::authenticated("alice", policy::principal::AuthMethod::Token);
        let bob = Principal::authenticated("bob", policy::principal::AuthMethod::Token);
        s.opened("s1".into(), Some(alice.clone()), SharedShim::default());
        assert_eq!(s.check("s1", Some(&alice)), SessionUse::Allowed);
        assert_eq!(s.check("s1", Some(&bob)), SessionUse::Foreign);
        assert_eq!(s.check("s1", None), SessionUse::Foreign);
        assert_eq!(s.check("nope", Some(&bob)), SessionUse::Allowed);
        assert_eq!(s.count_of(Some(&alice)), 1);
        s.closed("s1");
        assert_eq!(s.count(), 0);
    }
}

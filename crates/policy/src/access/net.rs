//! Network destinations: host patterns, the rules of a ceiling or a request, and the one
//! decision for a connection: [`Grant::admit`] checks a hop (scheme, host as written, port,
//! method) and gives its [`Reach`], the special addresses a connection for that hop may go to;
//! [`Reach::filter`] keeps, of what the host resolved to, the addresses it may. A special
//! address (loopback, private, metadata, ...) is reachable only through a granted rule that
//! names it (the address or a range holding it) *and* admits the hop's port and method,
//! however the name was spelled or reached. [`Grant::check_connect`] is the two together, a
//! pure function of the grant, the hop and a resolution.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use serde_json::Value;

use crate::error::NetRuleError;

/// Which hosts a rule names.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum HostPattern {
    /// Any host name (never a special address: those must be named).
    Any,
    /// Exactly this name (lowercase, no trailing dot).
    Name(String),
    /// Any name below this suffix (`*.example.com`: `a.example.com`, not `example.com`).
    Suffix(String),
    /// Exactly this address.
    Ip(IpAddr),
    /// Addresses in this range.
    Cidr(IpAddr, u8),
}

impl HostPattern {
    fn parse(s: &str) -> Result<HostPattern, NetRuleError> {
        let s = s.trim().trim_end_matches('.').to_ascii_lowercase();
        if s == "*" {
            return Ok(HostPattern::Any);
        }
        if let Some((addr, bits)) = s.split_once('/') {
            let addr: IpAddr = addr
                .trim_start_matches('[')
                .trim_end_matches(']')
                .parse()
                .map_err(|_| NetRuleError::NotRange(s.clone()))?;
            let max = if addr.is_ipv4() { 32 } else { 128 };
            let bits: u8 = bits.parse().ok().filter(|b| *b <= max).ok_or_else(|| {
                NetRuleError::PrefixLength {
                    pattern: s.clone(),
                    max,
                }
            })?;
            return Ok(HostPattern::Cidr(addr, bits));
        }
        if let Ok(ip) = s
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
        {
            return Ok(HostPattern::Ip(ip));
        }
        let (suffix, name) = match s.strip_prefix("*.") {
            Some(rest) => (true, rest.to_string()),
            None => (false, s.clone()),
        };
        // The URL parser's own normalisation: what it would make of this host.
        let parsed = url::Url::parse(&format!("http://{name}/"))
            .map_err(|_| NetRuleError::NotHostName(s.clone()))?;
        match parsed.host() {
            Some(url::Host::Domain(d)) if !d.is_empty() && !d.contains('*') => {
                let d = d.to_string();
                Ok(if suffix {
                    HostPattern::Suffix(d)
                } else {
                    HostPattern::Name(d)
                })
            }
            // `2130706433`, `0x7f.1`: the parser reads them as addresses, and so do we.
            Some(url::Host::Ipv4(a)) if !suffix => Ok(HostPattern::Ip(IpAddr::V4(a))),
            Some(url::Host::Ipv6(a)) if !suffix => Ok(HostPattern::Ip(IpAddr::V6(a))),
            _ => Err(NetRuleError::NotHostName(s)),
        }
    }

    fn within(&self, other: &HostPattern) -> bool {
        use HostPattern::*;
        match (self, other) {
            (Any, Any) => true,
            (Name(_) | Suffix(_), Any) => true,
            (Name(a), Name(b)) => a == b,
            (Name(a), Suffix(b)) => below(a, b),
            (Suffix(a), Suffix(b)) => a == b || below(a, b),
            (Ip(a), Ip(b)) => a == b,
            (Ip(a), Cidr(net, bits)) => in_cidr(*a, *net, *bits),
            (Cidr(a, abits), Cidr(b, bbits)) => bbits <= abits && in_cidr(*a, *b, *bbits),
            // An address is not a name: `*` reaches public addresses only (checked by
            // `Reach`), so it does not cover rules that name addresses.
            _ => false,
        }
    }

    pub(super) fn matches_host(&self, host: &url::Host<&str>) -> bool {
        match (self, host) {
            (HostPattern::Any, url::Host::Domain(_)) => true,
            // `example.com.` (fully qualified) is the name `example.com`.
            (HostPattern::Name(n), url::Host::Domain(d)) => n == strip_root(d),
            (HostPattern::Suffix(s), url::Host::Domain(d)) => below(strip_root(d), s),
            (HostPattern::Ip(a), url::Host::Ipv4(b)) => *a == IpAddr::V4(*b),
            (HostPattern::Ip(a), url::Host::Ipv6(b)) => *a == IpAddr::V6(*b),
            (HostPattern::Cidr(n, bits), url::Host::Ipv4(b)) => in_cidr(IpAddr::V4(*b), *n, *bits),
            (HostPattern::Cidr(n, bits), url::Host::Ipv6(b)) => in_cidr(IpAddr::V6(*b), *n, *bits),
            // `*` also reaches public literal addresses (their check follows).
            (HostPattern::Any, _) => true,
            _ => false,
        }
    }

    /// Whether this pattern names `addr` itself (an address or a range holding it).
    pub(super) fn names_addr(&self, addr: IpAddr) -> bool {
        match self {
            HostPattern::Ip(a) => *a == addr,
            HostPattern::Cidr(n, bits) => in_cidr(addr, *n, *bits),
            _ => false,
        }
    }
}

impl fmt::Display for HostPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostPattern::Any => write!(f, "*"),
            HostPattern::Name(n) => write!(f, "{n}"),
            HostPattern::Suffix(s) => write!(f, "*.{s}"),
            HostPattern::Ip(IpAddr::V6(a)) => write!(f, "[{a}]"),
            HostPattern::Ip(a) => write!(f, "{a}"),
            HostPattern::Cidr(a, b) => write!(f, "{a}/{b}"),
        }
    }
}

/// A name without the root's trailing dot (`example.com.` is `example.com`).
fn strip_root(name: &str) -> &str {
    name.strip_suffix('.').unwrap_or(name)
}

fn below(name: &str, suffix: &str) -> bool {
    name.len() > suffix.len() + 1
        && name.ends_with(suffix)
        && name.as_bytes()[name.len() - suffix.len() - 1] == b'.'
}

fn in_cidr(addr: IpAddr, net: IpAddr, bits: u8) -> bool {
    match (addr, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) => {
            let mask = if bits == 0 {
                0
            } else {
                u32::MAX << (32 - u32::from(bits))
            };
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) => {
            let mask = if bits == 0 {
                0
            } else {
                u128::MAX << (128 - u32::from(bits))
            };
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

/// Which parts of a rule were written out: a request's rule inherits the others from the
/// ceiling's rules that cover it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Given {
    pub ports: bool,
    pub methods: bool,
}

/// One allowed destination: hosts, ports, methods.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct NetRule {
    pub host: HostPattern,
    /// Allowed ports; by default 80 and 443.
    pub ports: Vec<u16>,
    /// Allowed methods (uppercase); `None`: any.
    pub methods: Option<Vec<String>>,
}

const DEFAULT_PORTS: [u16; 2] = [80, 443];
const METHODS: [&str; 7] = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

impl NetRule {
    /// A rule from a string (`[METHOD[,METHOD] ][scheme://]host[:port]`) or an object
    /// (`{host, ports?, methods?}`).
    pub fn parse(v: &Value) -> Result<NetRule, NetRuleError> {
        NetRule::parse_parts(v).map(|(rule, _)| rule)
    }

    /// A rule, and which of its ports and methods were written out (not the defaults).
    pub(super) fn parse_parts(v: &Value) -> Result<(NetRule, Given), NetRuleError> {
        match v {
            Value::String(s) => NetRule::parse_str(s),
            Value::Object(m) => {
                for k in m.keys() {
                    if !matches!(k.as_str(), "host" | "ports" | "methods") {
                        return Err(NetRuleError::UnknownKey(k.clone()));
                    }
                }
                let host = m
                    .get("host")
                    .and_then(Value::as_str)
                    .ok_or(NetRuleError::NoHost)?;
                let host = HostPattern::parse(host)?;
                let ports = match m.get("ports") {
                    None => DEFAULT_PORTS.to_vec(),
                    Some(Value::Array(ps)) if !ps.is_empty() => ps
                        .iter()
                        .map(|p| {
                            p.as_u64()
                                .and_then(|p| u16::try_from(p).ok())
                                .filter(|p| *p != 0)
                                .ok_or_else(|| NetRuleError::PortValue(p.clone()))
                        })
                        .collect::<Result<_, _>>()?,
                    Some(other) => return Err(NetRuleError::PortsNotList(other.clone())),
                };
                let methods = match m.get("methods") {
                    None => None,
                    Some(Value::Array(ms)) if !ms.is_empty() => Some(
                        ms.iter()
                            .map(|x| {
                                x.as_str()
                                    .ok_or_else(|| NetRuleError::MethodValue(x.clone()))
                                    .and_then(method)
                            })
                            .collect::<Result<_, _>>()?,
                    ),
                    Some(other) => {
                        return Err(NetRuleError::MethodsNotList(other.clone()));
                    }
                };
                let given = Given {
                    ports: m.contains_key("ports"),
                    methods: m.contains_key("methods"),
                };
                Ok((
                    NetRule {
                        host,
                        ports,
                        methods,
                    },
                    given,
                ))
            }
            other => Err(NetRuleError::NotDestination(other.clone())),
        }
    }

    fn parse_str(s: &str) -> Result<(NetRule, Given), NetRuleError> {
        let s = s.trim();
        let (methods, rest) = match s.split_once(' ') {
            Some((m, rest)) => (
                Some(m.split(',').map(method).collect::<Result<Vec<_>, _>>()?),
                rest.trim(),
            ),
            None => (None, s),
        };
        let (scheme_port, rest) = if let Some(r) = rest.strip_prefix("https://") {
            (Some(443), r)
        } else if let Some(r) = rest.strip_prefix("http://") {
            (Some(80), r)
        } else {
            (None, rest)
        };
        let rest = rest.trim_end_matches('/');
        if rest.contains('/') && !rest.contains(']') && rest.matches('/').count() == 1 {
            // A CIDR range has no port.
            let host = HostPattern::parse(rest)?;
            let given = Given {
                ports: scheme_port.is_some(),
                methods: methods.is_some(),
            };
            return Ok((
                NetRule {
                    host,
                    ports: scheme_port.map_or(DEFAULT_PORTS.to_vec(), |p| vec![p]),
                    methods,
                },
                given,
            ));
        }
        // host:port, [v6]:port, or a bare v6 address.
        let (host, port) = if let Some(stripped) = rest.strip_prefix('[') {
            match stripped.split_once(']') {
                Some((h, p)) => (h, p.strip_prefix(':')),
                None => return Err(NetRuleError::UnclosedBracket(s.to_string())),
            }
        } else if rest.matches(':').count() == 1 {
            let (h, p) = rest.split_once(':').unwrap_or((rest, ""));
            (h, Some(p))
        } else {
            (rest, None)
        };
        let given = Given {
            ports: port.is_some() || scheme_port.is_some(),
            methods: methods.is_some(),
        };
        let ports = match port {
            Some("*") => return Err(NetRuleError::AnyPort(s.to_string())),
            Some(p) => vec![p.parse::<u16>().ok().filter(|p| *p != 0).ok_or_else(|| {
                NetRuleError::NotPort {
                    rule: s.to_string(),
                    port: p.to_string(),
                }
            })?],
            None => scheme_port.map_or(DEFAULT_PORTS.to_vec(), |p| vec![p]),
        };
        Ok((
            NetRule {
                host: HostPattern::parse(host)?,
                ports,
                methods,
            },
            given,
        ))
    }

    /// Whether this rule admits `port` and `method` (whatever its hosts).
    pub(super) fn admits(&self, port: u16, method: &str) -> bool {
        self.ports.contains(&port)
            && self
                .methods
                .as_ref()
                .is_none_or(|m| m.iter().any(|m| m == method))
    }

    /// Whether everything this rule allows, `other` allows too.
    pub fn within(&self, other: &NetRule) -> bool {
        self.host.within(&other.host)
            && self.ports.iter().all(|p| other.ports.contains(p))
            && match (&self.methods, &other.methods) {
                (_, None) => true,
                (None, Some(_)) => false,
                (Some(a), Some(b)) => a.iter().all(|m| b.contains(m)),
            }
    }
}

fn method(m: &str) -> Result<String, NetRuleError> {
    let up = m.trim().to_ascii_uppercase();
    if METHODS.contains(&up.as_str()) {
        Ok(up)
    } else {
        Err(NetRuleError::NotMethod {
            name: m.to_string(),
            known: METHODS.join(", "),
        })
    }
}

impl fmt::Display for NetRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(m) = &self.methods {
            write!(f, "{} ", m.join(","))?;
        }
        write!(f, "{}", self.host)?;
        if self.ports != DEFAULT_PORTS {
            let ports: Vec<String> = self.ports.iter().map(u16::to_string).collect();
            write!(f, ":{}", ports.join(","))?;
        }
        Ok(())
    }
}

/// One request (or redirect hop), as the host is asked to make it.
#[derive(Debug, Clone)]
pub struct Hop<'a> {
    pub method: &'a str,
    pub url: &'a url::Url,
}

/// The special addresses a connection for one hop may go to: the address patterns (an
/// address, a range) of the granted rules that admit the hop's port and method. Every other
/// special address is refused, whatever name led to it; ordinary addresses are not limited
/// here (the hop's host was checked by [`Grant::admit`]).
///
/// Two hops with equal reaches get the same answer for every address, so a client whose
/// resolver holds a reach may serve (and keep connections for) every hop with that reach.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Reach(pub(super) Vec<HostPattern>);

/// A resolution the hop's reach refuses: every address was special and none was named by a
/// rule admitting the hop's port and method; `addr` is the first of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unreachable {
    pub addr: IpAddr,
}

impl Reach {
    /// A reach naming the special addresses `patterns` lists (each an address or a range,
    /// `127.0.0.1`, `::1`, `10.0.0.0/8`), outside any grant: what one configured source (an
    /// OpenAPI entry's `allowAddresses`) may connect to besides ordinary addresses.
    pub fn of_addresses<S: AsRef<str>>(patterns: &[S]) -> Result<Reach, NetRuleError> {
        let mut out = Vec::with_capacity(patterns.len());
        for p in patterns {
            match HostPattern::parse(p.as_ref())? {
                pattern @ (HostPattern::Ip(_) | HostPattern::Cidr(..)) => out.push(pattern),
                _ => return Err(NetRuleError::NotRange(p.as_ref().to_string())),
            }
        }
        Ok(Reach(out))
    }

    /// Whether a connection may go to `addr`: an ordinary address, or a special one that a
    /// pattern of the reach names.
    pub fn admits(&self, addr: IpAddr) -> bool {
        special(addr).is_none() || self.0.iter().any(|p| p.names_addr(addr))
    }

    /// The addresses of `resolved` a connection may go to, in their order (the others are
    /// dropped), or the first refused one when none is left. An empty resolution is refused
    /// by the caller (it has no address to name).
    pub fn filter(&self, resolved: &[IpAddr]) -> Result<Vec<IpAddr>, Unreachable> {
        let kept: Vec<IpAddr> = resolved
            .iter()
            .copied()
            .filter(|a| self.admits(*a))
            .collect();
        match (kept.is_empty(), resolved.first()) {
            (true, Some(first)) => Err(Unreachable {
                addr: resolved
                    .iter()
                    .copied()
                    .find(|a| !self.admits(*a))
                    .unwrap_or(*first),
            }),
            _ => Ok(kept),
        }
    }
}

/// What kind of special address `addr` is, or `None` for an ordinary public one.
pub fn special(addr: IpAddr) -> Option<&'static str> {
    match addr {
        IpAddr::V4(a) => special_v4(a),
        IpAddr::V6(a) => special_v6(a),
    }
}

fn special_v4(a: Ipv4Addr) -> Option<&'static str> {
    let o = a.octets();
    let is = |net: [u8; 4], bits: u8| in_cidr(IpAddr::V4(a), IpAddr::V4(Ipv4Addr::from(net)), bits);
    Some(match () {
        _ if a == Ipv4Addr::new(169, 254, 169, 254) => "a cloud metadata address",
        _ if a == Ipv4Addr::new(100, 100, 100, 200) => "a cloud metadata address",
        _ if o[0] == 0 => "an unspecified (\"this network\") address",
        _ if o[0] == 127 => "a loopback address",
        _ if o[0] == 10 || is([172, 16, 0, 0], 12) || is([192, 168, 0, 0], 16) => {
            "a private address"
        }
        _ if is([100, 64, 0, 0], 10) => "a carrier-grade NAT (CGNAT) address",
        _ if is([169, 254, 0, 0], 16) => "a link-local address",
        _ if is([224, 0, 0, 0], 4) => "a multicast address",
        _ if is([240, 0, 0, 0], 4) => "a reserved or broadcast address",
        _ if is([192, 0, 0, 0], 24) || is([198, 18, 0, 0], 15) => "a special-purpose address",
        _ if is([192, 0, 2, 0], 24) || is([198, 51, 100, 0], 24) || is([203, 0, 113, 0], 24) => {
            "a documentation address"
        }
        _ => return None,
    })
}

fn special_v6(a: Ipv6Addr) -> Option<&'static str> {
    let is = |net: Ipv6Addr, bits: u8| in_cidr(IpAddr::V6(a), IpAddr::V6(net), bits);
    let seg = a.segments();
    Some(match () {
        _ if a.is_unspecified() => "an unspecified address",
        _ if a.is_loopback() => "a loopback address",
        _ if is(Ipv6Addr::new(0, 0, 0, 0, 0, 0xffff, 0, 0), 96) => "an IPv4-mapped IPv6 address",
        _ if is(Ipv6Addr::new(0, 0, 0, 0, 0, 0, 0, 0), 96) => "an IPv4-compatible IPv6 address",
        _ if is(Ipv6Addr::new(0x64, 0xff9b, 0, 0, 0, 0, 0, 0), 96)
            || is(Ipv6Addr::new(0x64, 0xff9b, 1, 0, 0, 0, 0, 0), 48) =>
        {
            "a NAT64 address"
        }
        _ if seg[0] == 0x2002 => "a 6to4 address",
        _ if is(Ipv6Addr::new(0x2001, 0, 0, 0, 0, 0, 0, 0), 32) => "a Teredo address",
        _ if is(Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254), 128) => {
            "a cloud metadata address"
        }
        _ if is(Ipv6Addr::new(0xfc00, 0, 0, 0, 0, 0, 0, 0), 7) => {
            "a unique-local (private) address"
        }
        _ if is(Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 0), 10) => "a link-local address",
        _ if is(Ipv6Addr::new(0xfec0, 0, 0, 0, 0, 0, 0, 0), 10) => "a site-local address",
        _ if seg[0] >> 8 == 0xff => "a multicast address",
        _ if is(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0), 32) => "a documentation address",
        _ if is(Ipv6Addr::new(0x100, 0, 0, 0, 0, 0, 0, 0), 64) => "a discard-only address",
        _ => return None,
    })
}

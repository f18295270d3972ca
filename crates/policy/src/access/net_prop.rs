//! A property test of the fetch guard: random rule sets (names, suffixes, `*`, addresses,
//! ranges; ports; methods), hops (a name or a literal address in one of its spellings; a
//! port; a method) and resolutions (sets of addresses, special and not), each decided by
//! [`Grant::check_connect`] (the decision `fetch` makes) and by a reference model written
//! here independently and simply, which must agree on every case.
//!
//! The model knows which addresses are special from how it drew them (a loopback, private,
//! link-local, metadata, mapped... address, or one from a public block), not from
//! [`super::net::special`]; it matches ranges bit by bit and names by plain string
//! comparison. Seeded: `NET_PROP_SEED` and `NET_PROP_CASES` change the run; a failure prints
//! the seed and the case.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use serde_json::{Value, json};

use super::{Grant, Hop, NetRule};

/// Cases one run checks (each a grant, a hop and a resolution): the guard is pure, so tens of
/// thousands take about a second in a debug build.
const CASES: u64 = 60_000;
/// The seed of a run unless `NET_PROP_SEED` says otherwise (fixed, so CI is reproducible).
const SEED: u64 = 0x39_5352_4646;

const METHODS: [&str; 7] = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];
/// Ports hops and rules use (81 is in no rule's list: a port nobody grants).
const PORTS: [u16; 5] = [80, 443, 8080, 9000, 81];

/// Host names as the model knows them (lowercase, ASCII, no trailing dot) with other
/// spellings of each (case, the root's dot, IDNA forms the URL parser maps to the name).
const NAMES: [(&str, &[&str]); 7] = [
    (
        "localhost",
        &[
            "LOCALHOST",
            "LocalHost.",
            "ｌｏｃａｌｈｏｓｔ",
            "localhost.",
        ],
    ),
    ("example.com", &["EXAMPLE.com.", "Example.Com"]),
    ("api.example.com", &["API.example.COM", "api.example.com."]),
    ("a.b.example.com", &["A.B.Example.com"]),
    ("evil.test", &["EVIL.TEST."]),
    ("internal.corp", &["Internal.Corp"]),
    (
        "xn--bcher-kva.example",
        &["bücher.example", "BÜCHER.example."],
    ),
];
/// Suffixes of `*.suffix` rules.
const SUFFIXES: [&str; 4] = ["example.com", "b.example.com", "test", "corp"];

/// Splitmix64: small, seeded, good enough to spread cases.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len())]
    }
    fn byte(&mut self) -> u8 {
        self.next() as u8
    }
}

/// An address and whether it is special, as the model drew it.
#[derive(Debug, Clone, Copy)]
struct Addr {
    ip: IpAddr,
    special: bool,
}

fn v4(a: u8, b: u8, c: u8, d: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(a, b, c, d))
}

/// An address from a block of known kind: special blocks (loopback, private, link-local and
/// metadata, "this network", CGNAT, IPv6 loopback/unspecified/mapped/link-local/unique-local)
/// or public ones. Few values per block, so rules naming addresses often hit them.
fn addr(r: &mut Rng) -> Addr {
    let low = r.byte() % 3;
    let (ip, special) = match r.below(16) {
        0 => (v4(127, 0, 0, 1), true),
        1 => (v4(127, low, 0, 1 + low), true),
        2 => (v4(10, low, 2, 3), true),
        3 => (v4(192, 168, low, 1), true),
        4 => (v4(172, 16 + low, 0, 1), true),
        5 => (v4(169, 254, 169, 254), true),
        6 => (v4(169, 254, low, 9), true),
        7 => (v4(0, 0, 0, low), true),
        8 => (v4(100, 64 + low, 0, 1), true),
        9 => (IpAddr::V6(Ipv6Addr::LOCALHOST), true),
        10 => (IpAddr::V6(Ipv6Addr::UNSPECIFIED), true),
        11 => {
            // IPv4-mapped: special whatever it maps (a public address included).
            let inner = if r.chance(50) {
                Ipv4Addr::new(127, 0, 0, 1)
            } else {
                Ipv4Addr::new(8, 8, 8, 8 + low)
            };
            (IpAddr::V6(inner.to_ipv6_mapped()), true)
        }
        12 => (
            IpAddr::V6(Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 1 + u16::from(low))),
            true,
        ),
        13 => (
            IpAddr::V6(Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 1 + u16::from(low))),
            true,
        ),
        14 => (v4(8, 8, 8, 8 + low), false),
        _ => {
            if r.chance(50) {
                (v4(93, 184, 216, 34 + low), false)
            } else {
                (
                    IpAddr::V6(Ipv6Addr::new(
                        0x2606,
                        0x4700,
                        0,
                        0,
                        0,
                        0,
                        0,
                        0x1111 + u16::from(low),
                    )),
                    false,
                )
            }
        }
    };
    Addr { ip, special }
}

/// One of the spellings of `ip` in a URL's host that the URL parser reads as `ip`.
fn spell_ip(r: &mut Rng, ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(a) => {
            let o = a.octets();
            let n = u32::from(a);
            let s = match r.below(7) {
                0 => a.to_string(),
                1 => n.to_string(),
                2 => format!("0x{n:08x}"),
                3 => format!("0x{:x}.0x{:x}.0x{:x}.0x{:X}", o[0], o[1], o[2], o[3]),
                4 => format!("0{:o}.0{:o}.0{:o}.0{:o}", o[0], o[1], o[2], o[3]),
                5 => format!("{}.{}", o[0], n & 0x00ff_ffff),
                _ => format!("{}.{}.{}", o[0], o[1], n & 0xffff),
            };
            if r.chance(10) { format!("{s}.") } else { s }
        }
        IpAddr::V6(a) => {
            let s = match (r.below(3), a.to_ipv4_mapped()) {
                (0, Some(inner)) => format!("::ffff:{inner}"),
                (1, _) => a
                    .segments()
                    .iter()
                    .map(|s| format!("{s:04X}"))
                    .collect::<Vec<_>>()
                    .join(":"),
                _ => a.to_string(),
            };
            format!("[{s}]")
        }
    }
}

/// What a rule's hosts are, to the model.
#[derive(Debug, Clone, Copy)]
enum MHost {
    Any,
    Name(&'static str),
    Suffix(&'static str),
    /// An address (full prefix length) or a range.
    Net(IpAddr, u8),
}

#[derive(Debug, Clone)]
struct MRule {
    host: MHost,
    ports: Vec<u16>,
    methods: Option<Vec<&'static str>>,
    /// The rule as written in `permissions.net`.
    written: Value,
}

/// Ranges rules draw from (as well as single addresses from [`addr`]).
fn range(r: &mut Rng) -> (IpAddr, u8) {
    let ranges: [(&str, u8); 14] = [
        ("127.0.0.0", 8),
        ("127.0.0.1", 32),
        ("10.0.0.0", 8),
        ("192.168.0.0", 16),
        ("169.254.169.254", 32),
        ("169.254.0.0", 16),
        ("0.0.0.0", 0),
        ("0.0.0.0", 8),
        ("::", 0),
        ("::ffff:0:0", 96),
        ("fe80::", 10),
        ("fc00::", 7),
        ("8.8.8.0", 24),
        ("2606:4700::", 32),
    ];
    let (a, bits) = r.pick(&ranges);
    (a.parse().unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED)), bits)
}

fn rule(r: &mut Rng) -> MRule {
    let host = match r.below(10) {
        0 | 1 => MHost::Any,
        2 | 3 => MHost::Name(r.pick(&NAMES).0),
        4 => MHost::Suffix(r.pick(&SUFFIXES)),
        5..=7 => {
            let a = addr(r).ip;
            MHost::Net(a, if a.is_ipv4() { 32 } else { 128 })
        }
        _ => {
            let (a, bits) = range(r);
            MHost::Net(a, bits)
        }
    };
    let host_text = match host {
        MHost::Any => "*".to_string(),
        MHost::Name(n) => {
            let spellings = NAMES.iter().find(|(c, _)| *c == n).map_or(&[][..], |x| x.1);
            if r.chance(40) && !spellings.is_empty() {
                r.pick(spellings).to_string()
            } else {
                n.to_string()
            }
        }
        MHost::Suffix(s) => format!("*.{s}"),
        MHost::Net(IpAddr::V4(a), 32) => a.to_string(),
        MHost::Net(IpAddr::V6(a), 128) => format!("[{a}]"),
        MHost::Net(a, bits) => format!("{a}/{bits}"),
    };
    let ports: Option<Vec<u16>> = r.chance(60).then(|| {
        let mut ps: Vec<u16> = PORTS[..4]
            .iter()
            .copied()
            .filter(|_| r.chance(40))
            .collect();
        if ps.is_empty() {
            ps.push(r.pick(&PORTS[..4]));
        }
        ps
    });
    let methods: Option<Vec<&'static str>> = r.chance(40).then(|| {
        let mut ms: Vec<&str> = METHODS.iter().copied().filter(|_| r.chance(35)).collect();
        if ms.is_empty() {
            ms.push(r.pick(&METHODS));
        }
        ms
    });
    let mut written = json!({"host": host_text});
    if let Some(p) = &ports {
        written["ports"] = json!(p);
    }
    if let Some(m) = &methods {
        written["methods"] = json!(m.iter().map(|m| m.to_ascii_lowercase()).collect::<Vec<_>>());
    }
    MRule {
        host,
        ports: ports.unwrap_or_else(|| vec![80, 443]),
        methods,
        written,
    }
}

/// The hop's host as the model knows it.
#[derive(Debug, Clone, Copy)]
enum Target {
    Name(&'static str),
    Literal(Addr),
}

/// A host some rule of `rules` names (a name, one below a suffix, an address in a range),
/// if one is found: without these, most random hops would match no rule.
fn near(r: &mut Rng, rules: &[MRule]) -> Option<Target> {
    match rules[r.below(rules.len())].host {
        MHost::Any => None,
        MHost::Name(n) => Some(Target::Name(n)),
        MHost::Suffix(s) => NAMES
            .iter()
            .map(|(n, _)| *n)
            .find(|n| n.ends_with(&format!(".{s}")))
            .map(Target::Name),
        MHost::Net(net, bits) => (0..40)
            .map(|_| addr(r))
            .find(|a| in_range(a.ip, net, bits))
            .map(Target::Literal),
    }
}

/// Bit `i` (from the left) of an address.
fn bit(ip: IpAddr, i: u8) -> bool {
    let bytes: Vec<u8> = match ip {
        IpAddr::V4(a) => a.octets().to_vec(),
        IpAddr::V6(a) => a.octets().to_vec(),
    };
    bytes[usize::from(i / 8)] & (0x80 >> (i % 8)) != 0
}

/// Whether `ip` is in the range `net/bits` (same family, first `bits` bits equal).
fn in_range(ip: IpAddr, net: IpAddr, bits: u8) -> bool {
    ip.is_ipv4() == net.is_ipv4() && (0..bits).all(|i| bit(ip, i) == bit(net, i))
}

/// The model: the addresses a connection may go to, or `None` (refused).
fn model(
    rules: &[MRule],
    target: Target,
    port: u16,
    method: &str,
    resolved: &[Addr],
) -> Option<Vec<IpAddr>> {
    let admits = |r: &MRule| {
        r.ports.contains(&port) && r.methods.as_ref().is_none_or(|m| m.contains(&method))
    };
    let matches_host = |r: &MRule| match (r.host, target) {
        (MHost::Any, _) => true,
        (MHost::Name(n), Target::Name(h)) => n == h,
        (MHost::Suffix(s), Target::Name(h)) => h.ends_with(&format!(".{s}")),
        (MHost::Net(net, bits), Target::Literal(a)) => in_range(a.ip, net, bits),
        _ => false,
    };
    if !rules.iter().any(|r| matches_host(r) && admits(r)) {
        return None;
    }
    let addrs: Vec<Addr> = match target {
        Target::Literal(a) => vec![a],
        Target::Name(_) => resolved.to_vec(),
    };
    let kept: Vec<IpAddr> = addrs
        .iter()
        .filter(|a| {
            !a.special
                || rules.iter().any(|r| {
                    admits(r)
                        && matches!(r.host, MHost::Net(net, bits) if in_range(a.ip, net, bits))
                })
        })
        .map(|a| a.ip)
        .collect();
    (!kept.is_empty()).then_some(kept)
}

#[test]
fn the_fetch_guard_agrees_with_a_reference_model_on_random_grants_hops_and_resolutions() {
    let seed = std::env::var("NET_PROP_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(SEED);
    let cases = std::env::var("NET_PROP_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(CASES);
    let mut r = Rng(seed);
    // How many cases ended each way, to show the run reached every kind.
    let (mut refused, mut public_only, mut special_reached) = (0u64, 0u64, 0u64);
    for case in 0..cases {
        let rules: Vec<MRule> = (0..1 + r.below(4)).map(|_| rule(&mut r)).collect();
        let target = match near(&mut r, &rules) {
            Some(t) if r.chance(50) => t,
            _ if r.chance(45) => Target::Literal(addr(&mut r)),
            _ => Target::Name(r.pick(&NAMES).0),
        };
        let host = match target {
            Target::Literal(a) => spell_ip(&mut r, a.ip),
            Target::Name(n) => {
                let spellings = NAMES.iter().find(|(c, _)| *c == n).map_or(&[][..], |x| x.1);
                if r.chance(50) {
                    r.pick(spellings).to_string()
                } else {
                    n.to_string()
                }
            }
        };
        let resolved: Vec<Addr> = (0..r.below(4)).map(|_| addr(&mut r)).collect();
        // Mostly a port and a method some rule admits, so that most cases get past the hop
        // check and the addresses decide.
        let some = &rules[r.below(rules.len())];
        let port = if r.chance(75) {
            r.pick(&some.ports)
        } else {
            r.pick(&PORTS)
        };
        let method = match &some.methods {
            Some(ms) if r.chance(75) => r.pick(ms),
            _ => r.pick(&METHODS),
        };
        let scheme = if r.chance(50) { "http" } else { "https" };
        let text = format!("{scheme}://{host}:{port}/p");

        let context = || {
            format!(
                "seed {seed} case {case}: {method} {text} resolved {:?} rules {:?}",
                resolved.iter().map(|a| a.ip).collect::<Vec<_>>(),
                rules.iter().map(|x| &x.written).collect::<Vec<_>>()
            )
        };
        let grant = Grant {
            net: rules
                .iter()
                .map(|x| NetRule::parse(&x.written))
                .collect::<Result<_, _>>()
                .unwrap_or_else(|e| panic!("{}: a rule does not parse: {e}", context())),
            ..Grant::default()
        };
        let url = url::Url::parse(&text)
            .unwrap_or_else(|e| panic!("{}: the URL does not parse: {e}", context()));
        let ips: Vec<IpAddr> = resolved.iter().map(|a| a.ip).collect();
        let got = grant.check_connect(&Hop { method, url: &url }, &ips).ok();
        let want = model(&rules, target, port, method, &resolved);
        assert_eq!(got, want, "{}", context());
        match &want {
            None => refused += 1,
            Some(kept) => {
                let reached_special = kept.iter().any(|ip| {
                    resolved.iter().any(|a| a.ip == *ip && a.special)
                        || matches!(target, Target::Literal(a) if a.ip == *ip && a.special)
                });
                if reached_special {
                    special_reached += 1;
                } else {
                    public_only += 1;
                }
            }
        }
    }
    eprintln!(
        "fetch guard property test: {cases} cases (seed {seed}): {refused} refused, \
         {public_only} allowed to ordinary addresses only, {special_reached} allowed to a \
         special address through a rule naming it"
    );
    // Every kind of outcome occurs often enough for the agreement to mean something.
    for (what, n) in [
        ("refused", refused),
        ("ordinary", public_only),
        ("special", special_reached),
    ] {
        assert!(n * 50 > cases, "{what}: only {n} of {cases} cases");
    }
}

//! File and network access for code: the configured ceiling, the per-call request, and the
//! grant an execution gets (never more than the ceiling).
//!
//! The settings' `permissions` say what may ever be granted: read-only paths, whether a
//! writable workspace may be had, and network destinations (host pattern, ports, methods).
//! An execution asks for a part of it (`permissions: {read, write, net}`); asking for more
//! is an [`AccessError`] naming the ceiling. Nothing is granted by default.
//!
//! Network checks are pure functions of the grant and a destination: [`Grant::admit`]
//! (scheme, host, port, method of one request or redirect hop, and the literal address of the
//! URL) and the hop's [`Reach`] (the addresses a name resolved to). Loopback, private,
//! link-local, CGNAT, multicast, IPv4-mapped IPv6 and other special addresses are refused
//! unless a granted rule names the address itself (an IP or a CIDR range) and admits the hop's
//! port and method: a rule naming a host name never reaches them, whatever the name resolves
//! to, and neither does a rule naming the address for another port or method.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use crate::error::SettingError;

/// Largest request body code may send (it travels in one worker frame, base64-encoded).
pub const MAX_REQUEST_BODY_BYTES: usize = 8 << 20;
/// Rules in a ceiling or a request: more is a mistake, and each hop is matched against all.
const MAX_RULES: usize = 256;
/// Read paths in a ceiling or a request (each becomes a bind mount).
const MAX_READ_PATHS: usize = 64;

/// Why a request for access was refused (a malformed or too broad `permissions`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct AccessError(pub String);

fn refuse(msg: impl Into<String>) -> AccessError {
    AccessError(msg.into())
}

// ------------------------------------------------------------------------------ settings

/// `permissions` in the settings, raw.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RawCeiling {
    #[serde(default)]
    read: Vec<PathBuf>,
    #[serde(default)]
    write: bool,
    #[serde(default)]
    net: Vec<Value>,
    #[serde(default)]
    fetch: FetchLimitsRaw,
}

#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct FetchLimitsRaw {
    max_requests: Option<u32>,
    max_response_bytes: Option<u64>,
    max_total_bytes: Option<u64>,
    timeout_ms: Option<u64>,
    max_redirects: Option<u32>,
}

/// What may ever be granted (validated `permissions` of the settings). The default grants
/// nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ceiling {
    /// Absolute paths code may be allowed to read (as configured; resolved when granted).
    pub read: Vec<PathBuf>,
    /// Whether an execution may have a writable workspace.
    pub write: bool,
    pub net: Vec<NetRule>,
    pub fetch: FetchLimits,
}

impl RawCeiling {
    pub fn validate(self) -> Result<Ceiling, SettingError> {
        let at = SettingError::Permissions;
        if self.read.len() > MAX_READ_PATHS {
            return Err(at(format!("read lists more than {MAX_READ_PATHS} paths")));
        }
        for p in &self.read {
            if !p.is_absolute() {
                return Err(at(format!(
                    "read: \"{}\" is not an absolute path",
                    p.display()
                )));
            }
            if p.components().count() <= 1 {
                return Err(at(format!(
                    "read: \"{}\" would grant the whole file system; name project directories",
                    p.display()
                )));
            }
        }
        if self.net.len() > MAX_RULES {
            return Err(at(format!("net lists more than {MAX_RULES} rules")));
        }
        let net = self
            .net
            .iter()
            .map(NetRule::parse)
            .collect::<Result<Vec<_>, _>>()
            .map_err(SettingError::PermissionsNet)?;
        let d = FetchLimits::default();
        let f = self.fetch;
        let fetch = FetchLimits {
            max_requests: f.max_requests.unwrap_or(d.max_requests),
            max_response_bytes: f.max_response_bytes.unwrap_or(d.max_response_bytes),
            max_total_bytes: f.max_total_bytes.unwrap_or(d.max_total_bytes),
            timeout: f.timeout_ms.map_or(d.timeout, Duration::from_millis),
            max_redirects: f.max_redirects.unwrap_or(d.max_redirects),
        };
        if fetch.max_response_bytes > 32 << 20 {
            return Err(at(
                "fetch.maxResponseBytes is above 33554432 (a body travels in one frame)".into(),
            ));
        }
        Ok(Ceiling {
            read: self.read,
            write: self.write,
            net,
            fetch,
        })
    }
}

impl Ceiling {
    /// One line per part, for `doctor` and `config show`.
    pub fn describe(&self) -> Vec<String> {
        let list = |v: Vec<String>| {
            if v.is_empty() {
                "none".to_string()
            } else {
                v.join(", ")
            }
        };
        vec![
            format!(
                "read: {}",
                list(self.read.iter().map(|p| p.display().to_string()).collect())
            ),
            format!(
                "write: {}",
                if self.write {
                    "a workspace may be granted"
                } else {
                    "no"
                }
            ),
            format!(
                "net: {}",
                list(self.net.iter().map(ToString::to_string).collect())
            ),
            format!(
                "fetch limits: {} requests, {} bytes per response, {} bytes per execution, {} ms per request, {} redirects",
                self.fetch.max_requests,
                self.fetch.max_response_bytes,
                self.fetch.max_total_bytes,
                self.fetch.timeout.as_millis(),
                self.fetch.max_redirects
            ),
        ]
    }

    /// As JSON, for `config show` and `health`.
    pub fn to_json(&self) -> Value {
        serde_json::json!({
            "read": self.read.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
            "write": self.write,
            "net": self.net.iter().map(ToString::to_string).collect::<Vec<_>>(),
            "fetch": {
                "maxRequests": self.fetch.max_requests,
                "maxResponseBytes": self.fetch.max_response_bytes,
                "maxTotalBytes": self.fetch.max_total_bytes,
                "timeoutMs": self.fetch.timeout.as_millis() as u64,
                "maxRedirects": self.fetch.max_redirects,
            }
        })
    }
}

// ------------------------------------------------------------------------------ request

/// `permissions` of one call, raw: `read` paths (or `true`: all of the ceiling's), `write`,
/// `net` rules (or `true`: all of the ceiling's).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct PermissionsRequest {
    #[serde(default)]
    pub read: Option<Value>,
    #[serde(default)]
    pub write: bool,
    #[serde(default)]
    pub net: Option<Value>,
}

impl Grant {
    /// Whether the worker needs a view of its own (read paths or a workspace).
    pub fn needs_files(&self) -> bool {
        !self.read.is_empty() || self.write
    }
}

/// The grant for `request` under `ceiling`: every part must be inside the ceiling; a read
/// path is resolved on the host (symlinks followed) and must stay inside a ceiling path once
/// resolved, so a symlink cannot lead a grant out.
pub fn grant(ceiling: &Ceiling, request: &PermissionsRequest) -> Result<Grant, AccessError> {
    let mut out = Grant {
        fetch: ceiling.fetch,
        ..Grant::default()
    };
    let ceiling_read = || {
        if ceiling.read.is_empty() {
            "none is configured; the server's settings must list it under permissions.read"
                .to_string()
        } else {
            format!(
                "the configured permissions.read ceiling is [{}]",
                ceiling
                    .read
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    };
    let asked_read: Vec<PathBuf> = match &request.read {
        None | Some(Value::Bool(false)) | Some(Value::Null) => Vec::new(),
        Some(Value::Bool(true)) => {
            if ceiling.read.is_empty() {
                return Err(refuse(format!(
                    "permissions.read: no read access may be granted: {}",
                    ceiling_read()
                )));
            }
            ceiling.read.clone()
        }
        Some(Value::Array(items)) => {
            if items.len() > MAX_READ_PATHS {
                return Err(refuse(format!(
                    "permissions.read lists more than {MAX_READ_PATHS} paths"
                )));
            }
            items
                .iter()
                .map(|v| match v {
                    Value::String(s) if Path::new(s).is_absolute() => Ok(PathBuf::from(s)),
                    Value::String(s) => Err(refuse(format!(
                        "permissions.read: \"{s}\" is not an absolute path"
                    ))),
                    other => Err(refuse(format!(
                        "permissions.read: each entry is a path string, not {other}"
                    ))),
                })
                .collect::<Result<_, _>>()?
        }
        Some(other) => {
            return Err(refuse(format!(
                "permissions.read is a list of absolute paths or true, not {other}"
            )));
        }
    };
    // The ceiling's paths, resolved now (a ceiling directory that does not exist grants
    // nothing).
    let roots: Vec<PathBuf> = ceiling
        .read
        .iter()
        .filter_map(|p| std::fs::canonicalize(p).ok())
        .collect();
    for path in asked_read {
        let real = std::fs::canonicalize(&path)
            .map_err(|e| refuse(format!("permissions.read: {}: {e}", path.display())))?;
        // Lexically inside the ceiling as asked, and inside it once resolved.
        let lexical = normalize(&path);
        let inside = |p: &Path| {
            ceiling
                .read
                .iter()
                .map(|c| normalize(c))
                .chain(roots.iter().cloned())
                .any(|c| p.starts_with(&c))
        };
        if !inside(&lexical) {
            return Err(refuse(format!(
                "permissions.read: {} is outside what may be granted: {}",
                path.display(),
                ceiling_read()
            )));
        }
        if !roots.iter().any(|c| real.starts_with(c)) {
            return Err(refuse(format!(
                "permissions.read: {} resolves to {}, outside what may be granted (a symlink \
                 leads out): {}",
                path.display(),
                real.display(),
                ceiling_read()
            )));
        }
        if !out.read.contains(&real) {
            out.read.push(real);
        }
    }
    if request.write {
        if !ceiling.write {
            return Err(refuse(
                "permissions.write: no writable workspace may be granted: the configured \
                 ceiling has permissions.write false (the server's settings must set it true)",
            ));
        }
        out.write = true;
    }
    let ceiling_net = || {
        if ceiling.net.is_empty() {
            "no destination is configured; the server's settings must list it under permissions.net"
                .to_string()
        } else {
            format!(
                "the configured permissions.net ceiling is [{}]",
                ceiling
                    .net
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    };
    match &request.net {
        None | Some(Value::Null) | Some(Value::Bool(false)) => {}
        Some(Value::Bool(true)) => {
            if ceiling.net.is_empty() {
                return Err(refuse(format!(
                    "permissions.net: no network access may be granted: {}",
                    ceiling_net()
                )));
            }
            out.net = ceiling.net.clone();
        }
        Some(Value::Array(items)) => {
            if items.len() > MAX_RULES {
                return Err(refuse(format!(
                    "permissions.net lists more than {MAX_RULES} rules"
                )));
            }
            for item in items {
                let (rule, given) = NetRule::parse_parts(item)
                    .map_err(|e| refuse(format!("permissions.net: {e}")))?;
                // Ports or methods left out are the covering ceiling rules' own: asking for a
                // host narrows to that host on whatever the ceiling allows for it.
                let mut covered = false;
                for c in &ceiling.net {
                    let narrowed = NetRule {
                        host: rule.host.clone(),
                        ports: if given.ports {
                            rule.ports.clone()
                        } else {
                            c.ports.clone()
                        },
                        methods: if given.methods {
                            rule.methods.clone()
                        } else {
                            c.methods.clone()
                        },
                    };
                    if narrowed.within(c) {
                        covered = true;
                        if !out.net.contains(&narrowed) {
                            out.net.push(narrowed);
                        }
                    }
                }
                if !covered {
                    return Err(refuse(format!(
                        "permissions.net: {rule} is outside what may be granted: {}",
                        ceiling_net()
                    )));
                }
            }
        }
        Some(other) => {
            return Err(refuse(format!(
                "permissions.net is a list of destinations or true, not {other}"
            )));
        }
    }
    Ok(out)
}

/// `path` with `.` and `..` removed lexically (no file system access).
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for c in path.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::Normal(n) => out.push(n),
            _ => {}
        }
    }
    out
}

mod grant;
mod net;
#[cfg(test)]
mod net_prop;

pub use grant::{FetchLimits, Grant};
pub use net::{Hop, NetRule, Reach, Unreachable, special};

#[cfg(test)]
mod tests {
    use super::net::special;
    use super::*;
    use serde_json::json;

    fn ceiling(v: Value) -> Ceiling {
        serde_json::from_value::<RawCeiling>(v)
            .unwrap()
            .validate()
            .unwrap()
    }

    fn ask(v: Value) -> PermissionsRequest {
        serde_json::from_value(v).unwrap()
    }

    fn hop<'a>(method: &'a str, url: &'a url::Url) -> Hop<'a> {
        Hop { method, url }
    }

    #[test]
    fn rules_parse_from_strings_and_objects() {
        let cases = [
            (json!("api.github.com"), "api.github.com"),
            (json!("API.GitHub.com."), "api.github.com"),
            (json!("https://api.github.com"), "api.github.com:443"),
            (json!("GET,head 127.0.0.1:8080"), "GET,HEAD 127.0.0.1:8080"),
            (json!("[::1]:9000"), "[::1]:9000"),
            (json!("*.example.com"), "*.example.com"),
            (json!("10.0.0.0/8"), "10.0.0.0/8"),
            (json!("2130706433:81"), "127.0.0.1:81"),
            (
                json!({"host": "x.org", "ports": [1, 2], "methods": ["post"]}),
                "POST x.org:1,2",
            ),
        ];
        for (input, want) in cases {
            assert_eq!(NetRule::parse(&input).unwrap().to_string(), want, "{input}");
        }
        for bad in [
            json!("FETCH x.org"),
            json!("x.org:0"),
            json!("x.org:99999"),
            json!("10.0.0.0/33"),
            json!({"host": "x.org", "extra": 1}),
            json!(3),
            json!("*.*"),
        ] {
            assert!(NetRule::parse(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_request_may_only_narrow_the_ceiling() {
        let c = ceiling(json!({"net": ["*.example.com", "GET 127.0.0.1:8080", "10.0.0.0/8"]}));
        let ok = [
            json!({"net": ["a.example.com"]}),
            json!({"net": ["GET 127.0.0.1:8080"]}),
            json!({"net": ["10.1.2.3:443"]}),
            json!({"net": ["10.2.0.0/16"]}),
            json!({"net": true}),
            json!({}),
        ];
        for r in ok {
            assert!(grant(&c, &ask(r.clone())).is_ok(), "{r}");
        }
        let too_much = [
            (json!({"net": ["example.com"]}), "example.com is outside"),
            (json!({"net": ["POST 127.0.0.1:8080"]}), "outside"),
            (json!({"net": ["a.example.com:8443"]}), "outside"),
            (json!({"net": ["10.0.0.0/7"]}), "outside"),
            (json!({"net": ["*"]}), "outside"),
            (json!({"write": true}), "permissions.write false"),
            (json!({"read": ["/etc"]}), "none is configured"),
        ];
        for (r, want) in too_much {
            let e = grant(&c, &ask(r.clone())).unwrap_err().0;
            assert!(e.contains(want), "{r}: {e}");
        }
        // A host without ports or methods takes the ceiling's for it.
        let g = grant(&c, &ask(json!({"net": ["127.0.0.1"]}))).unwrap();
        assert_eq!(
            g.net.iter().map(ToString::to_string).collect::<Vec<_>>(),
            ["GET 127.0.0.1:8080"]
        );
        let g = grant(&c, &ask(json!({"net": ["x.example.com"]}))).unwrap();
        assert_eq!(
            g.net.iter().map(ToString::to_string).collect::<Vec<_>>(),
            ["x.example.com"]
        );
        let none = Ceiling::default();
        let e = grant(&none, &ask(json!({"net": ["x.org"]}))).unwrap_err().0;
        assert!(e.contains("no destination is configured"), "{e}");
    }

    #[test]
    fn read_grants_stay_inside_the_ceiling_once_resolved() {
        let dir = std::env::temp_dir().join(format!("access-unit-{}", std::process::id()));
        let project = dir.join("project");
        std::fs::create_dir_all(project.join("sub")).unwrap();
        std::fs::create_dir_all(dir.join("secret")).unwrap();
        let _ = std::os::unix::fs::symlink(dir.join("secret"), project.join("out"));
        let c = ceiling(json!({"read": [project]}));
        let g = grant(&c, &ask(json!({"read": [project.join("sub")]}))).unwrap();
        assert_eq!(
            g.read,
            [std::fs::canonicalize(project.join("sub")).unwrap()]
        );
        let e = grant(&c, &ask(json!({"read": [project.join("out")]})))
            .unwrap_err()
            .0;
        assert!(e.contains("a symlink leads out"), "{e}");
        let e = grant(&c, &ask(json!({"read": [project.join("../secret")]})))
            .unwrap_err()
            .0;
        assert!(e.contains("outside what may be granted"), "{e}");
        let e = grant(&c, &ask(json!({"read": ["relative"]})))
            .unwrap_err()
            .0;
        assert!(e.contains("not an absolute path"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn hops_are_checked_by_host_port_method_and_address() {
        let c = ceiling(json!({"net": ["api.example.com", "GET 127.0.0.1:8080", "*.corp.test"]}));
        let g = grant(&c, &ask(json!({"net": true}))).unwrap();
        let cases: [(&str, &str, Result<(), &str>); 12] = [
            ("GET", "https://api.example.com/x", Ok(())),
            ("GET", "http://127.0.0.1:8080/", Ok(())),
            (
                "POST",
                "http://127.0.0.1:8080/",
                Err("method POST is not granted"),
            ),
            (
                "GET",
                "http://127.0.0.1:8081/",
                Err("port 8081 is not granted"),
            ),
            (
                "GET",
                "http://localhost:8080/",
                Err("not a granted destination"),
            ),
            ("GET", "http://2130706433:8080/", Ok(())),
            ("GET", "http://0x7f.0.0.1:8080/", Ok(())),
            ("GET", "https://evil.com/", Err("not a granted destination")),
            ("GET", "file:///etc/passwd", Err("only http and https")),
            ("GET", "https://u:p@api.example.com/", Err("credentials")),
            ("GET", "https://a.corp.test/", Ok(())),
            (
                "GET",
                "https://corp.test/",
                Err("not a granted destination"),
            ),
        ];
        for (m, u, want) in cases {
            let url = url::Url::parse(u).unwrap();
            let got = g.admit(&hop(m, &url)).map(|_| ());
            match want {
                Ok(()) => assert!(got.is_ok(), "{u}: {got:?}"),
                Err(w) => assert!(
                    got.as_ref().unwrap_err().to_string().contains(w),
                    "{u}: {got:?}"
                ),
            }
        }
        // A name that resolves to a special address is refused unless a rule names it for
        // this port and method (`GET 127.0.0.1:8080` does not admit port 443).
        let url = url::Url::parse("https://api.example.com/").unwrap();
        let loopback: std::net::IpAddr = "127.0.0.1".parse().unwrap();
        let public: std::net::IpAddr = "93.184.216.34".parse().unwrap();
        let e = g
            .check_connect(&hop("GET", &url), &[loopback])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("loopback")
                && e.contains("api.example.com resolves to it")
                && e.contains("GET 127.0.0.1:8080) do not admit GET to port 443"),
            "{e}"
        );
        assert_eq!(
            g.check_connect(&hop("GET", &url), &[loopback, public]),
            Ok(vec![public])
        );
    }

    #[test]
    fn special_addresses_table() {
        let cases = [
            ("127.0.0.1", Some("loopback")),
            ("10.1.2.3", Some("private")),
            ("172.31.0.1", Some("private")),
            ("192.168.1.1", Some("private")),
            ("100.64.0.1", Some("CGNAT")),
            ("169.254.169.254", Some("metadata")),
            ("169.254.1.1", Some("link-local")),
            ("224.0.0.1", Some("multicast")),
            ("0.0.0.0", Some("unspecified")),
            ("255.255.255.255", Some("broadcast")),
            ("::1", Some("loopback")),
            ("::ffff:127.0.0.1", Some("IPv4-mapped")),
            ("::ffff:8.8.8.8", Some("IPv4-mapped")),
            ("fe80::1", Some("link-local")),
            ("fd00::1", Some("unique-local")),
            ("fd00:ec2::254", Some("metadata")),
            ("ff02::1", Some("multicast")),
            ("64:ff9b::7f00:1", Some("NAT64")),
            ("8.8.8.8", None),
            ("2606:4700::1111", None),
        ];
        for (a, want) in cases {
            let got = special(a.parse().unwrap());
            match want {
                None => assert_eq!(got, None, "{a}"),
                Some(w) => assert!(got.is_some_and(|g| g.contains(w)), "{a}: {got:?}"),
            }
        }
    }
}

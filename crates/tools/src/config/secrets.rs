//! Every credential the configuration holds, for `policy::redact::Redactor`: the values that
//! must never leave the server, whatever an upstream echoes them in.
//!
//! Collected after `${VAR}` expansion (so a token written as `${GITHUB_TOKEN}` is its value):
//! a stdio server's `env` values (not the harmless ones `mask` shows) and the values of its
//! arguments that follow a flag naming a credential (`--token X`, `--api-key=X`); an HTTP or
//! SSE server's header values (with `env_http_headers` and `bearer_token_env_var` already
//! among them), the token after an `Authorization` scheme, a `Basic` token's decoded
//! `user:password` and password; its URL's userinfo (`user:password`, the password, the
//! user alone when it is a token, and the `Basic` base64 of the pair) and the values of
//! query parameters named like credentials; an `oauth.clientSecret`; and the value of every
//! environment variable the entry references (`${VAR}` anywhere, `bearer_token_env_var`,
//! ...), but the harmless ones (`PATH`, `HOME`, ...).
//! An OpenAPI entry's `auth` values (a bearer token, an API key, a basic password and its
//! pair, a client secret) and its URLs' credentials.
//! `policy::redact::is_secret_like` leaves out what is too short or common to be one.

use base64::Engine;

use super::spec::{Config, Transport, mask};
use policy::redact::{basic_credentials, is_secret_like};

/// Parts of a flag or query parameter name that say its value is a credential.
const CREDENTIAL_NAMES: &[&str] = &[
    "token",
    "key",
    "secret",
    "password",
    "passwd",
    "pass",
    "auth",
    "credential",
    "sig",
];

/// Whether a flag or parameter name (`--api-key`, `access_token`) names a credential.
fn names_credential(name: &str) -> bool {
    let name = name.trim_start_matches('-').to_ascii_lowercase();
    !name.is_empty() && CREDENTIAL_NAMES.iter().any(|c| name.contains(c))
}

/// Whether an `env` value is plain words (letters joined by spaces, `-`, `_`, `.` or `,`: a
/// mode, a region, a database name such as `customers`), which, under a variable whose name
/// does not say credential, is configuration, not a secret: redacting it would mangle every
/// result that mentions the word. A value with a digit or any other sign stays a secret, and
/// so does every value of a variable named like a credential (`DB_PASSWORD=correcthorse`).
fn is_plain_words(value: &str) -> bool {
    let v = value.trim();
    let separator = |c: char| matches!(c, ' ' | '-' | '_' | '.' | ',');
    v.chars().any(|c| c.is_alphabetic())
        && v.chars().all(|c| c.is_alphabetic() || separator(c))
        && v.split(separator)
            .all(|w| w.chars().count() <= MAX_PLAIN_WORD_CHARS)
}

/// The longest run of letters still taken for a word: a longer one (a token of letters
/// only) is a secret whatever its variable's name.
const MAX_PLAIN_WORD_CHARS: usize = 16;

/// Whether the value of the environment variable `key` (an entry's `env`, or one it
/// references) is kept out of what leaves: not a harmless variable (`mask` shows those), and
/// named like a credential or more than plain words.
pub fn env_value_is_secret(key: &str, value: &str) -> bool {
    mask(key, value) != value && (names_credential(key) || !is_plain_words(value))
}

/// The secret values of every configured server (see the module docs), each once.
pub fn secret_values(config: &Config) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut push = |v: &str| {
        let v = v.trim();
        if is_secret_like(v) && !out.iter().any(|o| o == v) {
            out.push(v.to_string());
        }
    };
    for spec in config.servers.values() {
        match &spec.transport {
            Transport::Stdio { env, args, .. } => {
                for (k, v) in env {
                    if env_value_is_secret(k, v) {
                        push(v);
                    }
                }
                let mut after_flag = false;
                for a in args {
                    match a.split_once('=') {
                        Some((flag, value)) if flag.starts_with('-') && names_credential(flag) => {
                            push(value)
                        }
                        _ if after_flag && !a.starts_with('-') => push(a),
                        _ => {}
                    }
                    after_flag = a.starts_with('-') && !a.contains('=') && names_credential(a);
                }
            }
            Transport::Http { url, headers } | Transport::Sse { url, headers } => {
                for v in headers.values() {
                    push(v);
                    if let Some((scheme, token)) = v.trim().split_once(' ') {
                        let token = token.trim();
                        push(token);
                        if scheme.eq_ignore_ascii_case("basic") {
                            for decoded in basic_pair(token) {
                                push(&decoded);
                            }
                        }
                    }
                }
                for v in url_secrets(url) {
                    push(&v);
                }
            }
            Transport::OpenApi(o) => {
                for v in o.auth.iter().flat_map(super::spec::OpenApiAuth::secrets) {
                    push(&v);
                }
                for url in o.base_url.iter().chain(match &o.document {
                    super::spec::DocumentLocation::Url(u) => Some(u),
                    super::spec::DocumentLocation::File(_) => None,
                }) {
                    for v in url_secrets(url) {
                        push(&v);
                    }
                }
            }
        }
        if let Some(secret) = spec.oauth.as_ref().and_then(|o| o.client_secret.as_deref()) {
            push(secret);
        }
        for v in &spec.referenced {
            push(v);
        }
    }
    out
}

/// A `Basic` token's `user:password` and password, when it decodes to such a pair.
fn basic_pair(token: &str) -> Vec<String> {
    let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(token) else {
        return Vec::new();
    };
    let Ok(pair) = String::from_utf8(bytes) else {
        return Vec::new();
    };
    match pair.split_once(':') {
        Some((_, password)) => vec![pair.clone(), password.to_string()],
        None => Vec::new(),
    }
}

/// The credentials a URL carries: its userinfo (as written and percent-decoded, the pair,
/// the password, a user that is a token, the `Basic` base64 of the pair) and the values of
/// query parameters named like credentials.
pub fn url_secrets(url: &str) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(parsed) = url::Url::parse(url) else {
        return out;
    };
    let decode = |s: &str| {
        url::form_urlencoded::parse(format!("x={}", s.replace('+', "%2B")).as_bytes())
            .next()
            .map(|(_, v)| v.into_owned())
            .unwrap_or_else(|| s.to_string())
    };
    let user = parsed.username();
    if let Some(password) = parsed.password() {
        for (u, p) in [
            (user.to_string(), password.to_string()),
            (decode(user), decode(password)),
        ] {
            out.push(format!("{u}:{p}"));
            out.push(basic_credentials(&u, &p));
            out.push(p);
        }
    }
    if !user.is_empty() {
        out.push(user.to_string());
        out.push(decode(user));
    }
    for (k, v) in parsed.query_pairs() {
        if names_credential(&k) {
            out.push(v.into_owned());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_urls_userinfo_and_credential_parameters_are_secrets() {
        let got = url_secrets(
            "https://alice:s3cr%40t-pass@api.example.com/mcp?api_key=key-0123456789&page=longvalue1",
        );
        for want in [
            "alice:s3cr%40t-pass",
            "alice:s3cr@t-pass",
            "s3cr@t-pass",
            &basic_credentials("alice", "s3cr@t-pass"),
            "key-0123456789",
        ] {
            assert!(got.iter().any(|g| g == want), "{want} not in {got:?}");
        }
        assert!(!got.iter().any(|g| g == "longvalue1"), "{got:?}");
    }

    /// A value written as `${VAR}` is a secret wherever it is (an argument after no flag, a
    /// URL path); `${HOME}`, short values and plain words under an ordinary name are not.
    #[test]
    fn referenced_variables_are_secrets() {
        let lookup = |k: &str| match k {
            "GH_TOKEN" => Some("ghp_referenced-0123456789".to_string()),
            "HOME" => Some("/home/someone".to_string()),
            "LANG" => Some("en_US.UTF-8".to_string()),
            "REGION" => Some("eu".to_string()),
            "DATABASE" => Some("customers".to_string()),
            _ => None,
        };
        let entry = serde_json::json!({"command": "srv",
            "args": ["${GH_TOKEN}", "${HOME}/data", "--region=${REGION}", "--lang", "${LANG}",
                     "--db", "${DATABASE}"]});
        let source = super::super::sources::Source {
            client: "explicit",
            path: "/x/mcp.json".into(),
            format: super::super::sources::Format::McpServers,
            scope: super::super::sources::Scope::Explicit,
        };
        let spec =
            super::super::entry::validate("s", entry, &source, None, &lookup, &mut Vec::new())
                .unwrap()
                .unwrap();
        let mut config = Config::default();
        config.servers.insert("s".into(), spec);
        assert_eq!(secret_values(&config), ["ghp_referenced-0123456789"]);
    }

    /// An `env` value is a secret unless it is plain words under a name that does not say
    /// credential: `DATABASE=customers` must not turn every "customers" in results into a
    /// marker, while any value of `DB_PASSWORD` and any value with digits or signs is kept out.
    #[test]
    fn env_values_are_secrets_but_plain_words_under_ordinary_names() {
        let entry = serde_json::json!({"command": "srv", "env": {
            "DATABASE": "customers",
            "REGION_NAME": "eu-west central",
            "UPSTREAM_PAT": "ghpabcdefghijklmnopqrstuvwxyz",
            "DB_PASSWORD": "correcthorsebattery",
            "UPSTREAM_VALUE": "s3cr3t-value-123",
            "CONNECTION": "postgres://u:p4ss@db/x",
        }});
        let source = super::super::sources::Source {
            client: "explicit",
            path: "/x/mcp.json".into(),
            format: super::super::sources::Format::McpServers,
            scope: super::super::sources::Scope::Explicit,
        };
        let spec = super::super::entry::validate(
            "s",
            entry,
            &source,
            None,
            &|_: &str| None,
            &mut Vec::new(),
        )
        .unwrap()
        .unwrap();
        let mut config = Config::default();
        config.servers.insert("s".into(), spec);
        let mut got = secret_values(&config);
        got.sort();
        assert_eq!(
            got,
            [
                "correcthorsebattery",
                "ghpabcdefghijklmnopqrstuvwxyz",
                "postgres://u:p4ss@db/x",
                "s3cr3t-value-123"
            ]
        );
    }

    #[test]
    fn flags_naming_credentials_mark_their_values() {
        assert!(names_credential("--api-key"));
        assert!(names_credential("--access_token"));
        assert!(!names_credential("--port"));
        assert_eq!(
            basic_pair(&basic_credentials("bob", "hunter2-long")),
            ["bob:hunter2-long", "hunter2-long"]
        );
    }
}

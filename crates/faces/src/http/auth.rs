//! Who is calling over HTTP: static bearer tokens and OAuth 2.1 access tokens.
//!
//! - **Static tokens** come from a file (`--tokens-file`) or an environment variable
//!   (`CODE_EXECUTOR_HTTP_TOKENS`), one `NAME=TOKEN` per line (or comma-separated in the
//!   variable). Only SHA-256 digests are kept; a presented token is hashed and compared with
//!   every digest in constant time ([`subtle`]), so neither a token's bytes nor which entry
//!   matched show in the timing.
//! - **OAuth 2.1** (the MCP authorization spec, server side): we are a resource server. The
//!   access token is a JWT signed by the authorization server; its keys come from the
//!   server's JWKS (found through its RFC 8414 metadata unless `--oauth-jwks-url` names it),
//!   fetched at start and again when a token names a key we do not have (at most every
//!   [`JWKS_REFETCH_MIN`]). A token is valid when its signature verifies with an asymmetric
//!   algorithm, `iss` is the configured issuer, `aud` contains our resource URL, `exp` is in
//!   the future (and `nbf` not), it has a subject, and it carries every required scope.
//!   Symmetric (`HS*`) tokens and `alg: none` are refused: a JWKS never holds our secret.
//!
//! The bearer token is removed from the request once it is checked: nothing past
//! authentication (the handler, executions, upstream calls) ever sees it.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{AlgorithmParameters, Jwk, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use subtle::{ConditionallySelectable, ConstantTimeEq};

use policy::principal::{AuthMethod, Principal};

/// The environment variable that can hold static tokens (`NAME=TOKEN`, comma or newline
/// separated).
pub const TOKENS_ENV: &str = "CODE_EXECUTOR_HTTP_TOKENS";
/// A token shorter than this is refused at start: a guessable token is no authentication.
pub const MIN_TOKEN_LEN: usize = 16;
/// A token naming an unknown key triggers a JWKS refetch at most this often, so forged
/// tokens cannot make us hammer the authorization server.
pub const JWKS_REFETCH_MIN: Duration = Duration::from_secs(30);
/// Clock skew allowed on `exp` and `nbf`.
const LEEWAY_S: u64 = 30;
/// Time allowed for one request to the authorization server (metadata, JWKS).
const AS_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a request is not authenticated; becomes a 401 or 403 with `WWW-Authenticate`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum AuthError {
    #[error("authentication required: send Authorization: Bearer <token>")]
    Missing,
    #[error("invalid token: {0}")]
    InvalidToken(String),
    /// The token is valid but lacks scopes (403).
    #[error("insufficient scope: the token needs {0}")]
    InsufficientScope(String),
}

/// Why the authorization server's keys (JWKS) could not be loaded.
#[derive(Debug, thiserror::Error)]
pub(crate) enum JwksError {
    #[error("{url}: {error}")]
    Fetch { url: String, error: reqwest::Error },
    #[error("{url}: HTTP {status}")]
    Status {
        url: String,
        status: reqwest::StatusCode,
    },
    /// The metadata at `url` names another issuer (`got`, as JSON).
    #[error("{url}: its issuer {got} is not {want}")]
    Issuer {
        url: String,
        got: serde_json::Value,
        want: String,
    },
    #[error("{0}: no jwks_uri")]
    NoJwksUri(String),
    /// No metadata URL led to the keys; the last one's reason, when one was tried.
    #[error(
        "cannot find the issuer's JWKS: {}",
        .0.as_ref().map(ToString::to_string).unwrap_or_default()
    )]
    NotFound(Option<Box<JwksError>>),
    #[error("{url}: not a JWK set: {error}")]
    NotJwkSet {
        url: String,
        error: serde_json::Error,
    },
    #[error(transparent)]
    Config(#[from] AuthConfigError),
}

/// A problem in the configured tokens or OAuth settings (start refused).
#[derive(Debug, thiserror::Error)]
pub(crate) enum AuthConfigError {
    #[error("{origin}: line {line}: expected NAME=TOKEN")]
    Syntax { origin: String, line: usize },
    #[error(
        "{origin}: line {line}: the token of \"{name}\" is shorter than {MIN_TOKEN_LEN} characters"
    )]
    Weak {
        origin: String,
        line: usize,
        name: String,
    },
    #[error(
        "{origin}: line {line}: \"{name}\" is not a usable principal name (letters, digits, . _ - @ only, at most 128)"
    )]
    BadName {
        origin: String,
        line: usize,
        name: String,
    },
    #[error(
        "{origin}: line {line}: the same token is given twice (names must map to distinct tokens)"
    )]
    Duplicate { origin: String, line: usize },
    #[error("cannot read the tokens file {path}: {error}")]
    Read { path: String, error: String },
    #[error("OAuth: {0}")]
    OAuth(String),
}

struct TokenEntry {
    digest: [u8; 32],
    principal: Principal,
}

/// Static bearer tokens, by digest.
#[derive(Default)]
pub(crate) struct StaticTokens {
    entries: Vec<TokenEntry>,
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '@'))
}

impl StaticTokens {
    /// Adds the `NAME=TOKEN` entries of `text` (lines, or commas when `commas`); `#` starts a
    /// comment line. `source` names the text in errors.
    pub(crate) fn add(
        &mut self,
        text: &str,
        source: &str,
        commas: bool,
    ) -> Result<(), AuthConfigError> {
        let items: Vec<&str> = if commas {
            text.split([',', '\n']).collect()
        } else {
            text.lines().collect()
        };
        for (i, raw) in items.into_iter().enumerate() {
            let line = i + 1;
            let item = raw.trim();
            if item.is_empty() || item.starts_with('#') {
                continue;
            }
            let Some((name, token)) = item.split_once('=') else {
                return Err(AuthConfigError::Syntax {
                    origin: source.into(),
                    line,
                });
            };
            let (name, token) = (name.trim(), token.trim());
            if !valid_name(name) {
                return Err(AuthConfigError::BadName {
                    origin: source.into(),
                    line,
                    name: name.into(),
                });
            }
            if token.chars().count() < MIN_TOKEN_LEN {
                return Err(AuthConfigError::Weak {
                    origin: source.into(),
                    line,
                    name: name.into(),
                });
            }
            let d = digest(token);
            if self.entries.iter().any(|e| e.digest == d) {
                return Err(AuthConfigError::Duplicate {
                    origin: source.into(),
                    line,
                });
            }
            self.entries.push(TokenEntry {
                digest: d,
                principal: Principal::authenticated(name, AuthMethod::Token),
            });
        }
        Ok(())
    }

    /// Reads a tokens file; warns when others can read it.
    pub(crate) fn add_file(&mut self, path: &std::path::Path) -> Result<(), AuthConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| AuthConfigError::Read {
            path: path.display().to_string(),
            error: e.to_string(),
        })?;
        {
            use std::os::unix::fs::PermissionsExt;
            if let Ok(meta) = std::fs::metadata(path)
                && meta.permissions().mode() & 0o077 != 0
            {
                tracing::warn!(
                    "the tokens file {} can be read by other users (mode {:o}); chmod 600 it",
                    path.display(),
                    meta.permissions().mode() & 0o777
                );
            }
        }
        self.add(&text, &path.display().to_string(), false)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The principal of `token`, comparing with every entry in constant time.
    pub(crate) fn find(&self, token: &str) -> Option<Principal> {
        let d = digest(token);
        // 1-based index of the match, 0 for none; every entry is compared.
        let mut hit = 0u32;
        for (i, e) in self.entries.iter().enumerate() {
            let eq = d.ct_eq(&e.digest);
            hit.conditional_assign(&(i as u32 + 1), eq);
        }
        hit.checked_sub(1)
            .and_then(|i| self.entries.get(i as usize))
            .map(|e| e.principal.clone())
    }
}

/// What the OAuth resource server checks.
#[derive(Debug, Clone)]
pub(crate) struct OAuthSettings {
    /// The authorization server's issuer identifier (exact `iss`).
    pub issuer: String,
    /// Where its keys are; `None`: from its metadata's `jwks_uri`.
    pub jwks_url: Option<String>,
    /// Our resource URL: the `aud` a token must carry, and `resource` in our metadata.
    pub audience: String,
    /// Scopes every token must carry.
    pub scopes: Vec<String>,
}

struct Keys {
    set: JwkSet,
    fetched: Option<Instant>,
    jwks_url: Option<String>,
}

/// Validates OAuth access tokens (JWTs) against the authorization server's keys.
pub(crate) struct OAuthValidator {
    pub settings: OAuthSettings,
    http: reqwest::Client,
    keys: Mutex<Keys>,
    /// Serializes refetches; holds when the last one was tried.
    refetch: tokio::sync::Mutex<Option<Instant>>,
}

#[derive(Deserialize)]
struct Claims {
    sub: String,
    #[serde(default)]
    scope: Option<String>,
    #[serde(default)]
    scp: Option<ScopeList>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum ScopeList {
    Text(String),
    List(Vec<String>),
}

impl Claims {
    fn scopes(&self) -> HashSet<&str> {
        let mut s: HashSet<&str> = HashSet::new();
        if let Some(t) = &self.scope {
            s.extend(t.split_whitespace());
        }
        match &self.scp {
            Some(ScopeList::Text(t)) => s.extend(t.split_whitespace()),
            Some(ScopeList::List(l)) => s.extend(l.iter().map(String::as_str)),
            None => {}
        }
        s
    }
}

const ASYMMETRIC: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// The RFC 8414 (then OpenID) metadata URLs of `issuer`: the well-known segment goes
/// between the host and the issuer's path.
fn metadata_urls(issuer: &str) -> Result<Vec<String>, AuthConfigError> {
    let url = url_parts(issuer)
        .ok_or_else(|| AuthConfigError::OAuth(format!("issuer \"{issuer}\" is not a URL")))?;
    let (origin, path) = url;
    let path = path.trim_end_matches('/');
    Ok(vec![
        format!("{origin}/.well-known/oauth-authorization-server{path}"),
        format!("{origin}/.well-known/openid-configuration{path}"),
        format!("{issuer}/.well-known/openid-configuration"),
    ])
}

/// `scheme://authority` and the path of an http(s) URL.
fn url_parts(url: &str) -> Option<(String, String)> {
    let (scheme, rest) = url.split_once("://")?;
    if scheme != "http" && scheme != "https" {
        return None;
    }
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    if authority.is_empty() {
        return None;
    }
    Some((format!("{scheme}://{authority}"), path.to_string()))
}

impl OAuthValidator {
    /// A validator for `settings`; keys are fetched by [`OAuthValidator::refresh`].
    pub(crate) fn new(settings: OAuthSettings) -> Result<Self, AuthConfigError> {
        tools::tls::install_tls_provider();
        url_parts(&settings.issuer).ok_or_else(|| {
            AuthConfigError::OAuth(format!("issuer \"{}\" is not a URL", settings.issuer))
        })?;
        if let Some(j) = &settings.jwks_url {
            url_parts(j).ok_or_else(|| {
                AuthConfigError::OAuth(format!("JWKS URL \"{j}\" is not an http(s) URL"))
            })?;
        }
        let http = reqwest::Client::builder()
            .timeout(AS_TIMEOUT)
            .redirect(reqwest::redirect::Policy::limited(3))
            .build()
            .map_err(|e| AuthConfigError::OAuth(format!("HTTP client: {e}")))?;
        Ok(OAuthValidator {
            keys: Mutex::new(Keys {
                set: JwkSet { keys: vec![] },
                fetched: None,
                jwks_url: settings.jwks_url.clone(),
            }),
            settings,
            http,
            refetch: tokio::sync::Mutex::new(None),
        })
    }

    /// Whether keys have been loaded (readiness).
    pub(crate) fn has_keys(&self) -> bool {
        self.keys.lock().is_ok_and(|k| k.fetched.is_some())
    }

    async fn get_json(&self, url: &str) -> Result<serde_json::Value, JwksError> {
        let fetch = |error| JwksError::Fetch {
            url: url.to_string(),
            error,
        };
        let resp = self
            .http
            .get(url)
            .header("accept", "application/json")
            .send()
            .await
            .map_err(fetch)?;
        if !resp.status().is_success() {
            return Err(JwksError::Status {
                url: url.to_string(),
                status: resp.status(),
            });
        }
        resp.json().await.map_err(fetch)
    }

    /// Fetches the JWKS now (discovering its URL first if needed).
    pub(crate) async fn refresh(&self) -> Result<usize, JwksError> {
        let known = self.keys.lock().ok().and_then(|k| k.jwks_url.clone());
        let jwks_url = match known {
            Some(u) => u,
            None => {
                let mut last = None;
                let mut found = None;
                for url in metadata_urls(&self.settings.issuer)? {
                    match self.get_json(&url).await {
                        Ok(meta) => {
                            if meta["issuer"].as_str() != Some(self.settings.issuer.as_str()) {
                                last = Some(JwksError::Issuer {
                                    url,
                                    got: meta["issuer"].clone(),
                                    want: self.settings.issuer.clone(),
                                });
                                continue;
                            }
                            match meta["jwks_uri"].as_str() {
                                Some(j) => {
                                    found = Some(j.to_string());
                                    break;
                                }
                                None => last = Some(JwksError::NoJwksUri(url)),
                            }
                        }
                        Err(e) => last = Some(e),
                    }
                }
                found.ok_or_else(|| JwksError::NotFound(last.map(Box::new)))?
            }
        };
        let v = self.get_json(&jwks_url).await?;
        let set: JwkSet = serde_json::from_value(v).map_err(|error| JwksError::NotJwkSet {
            url: jwks_url.clone(),
            error,
        })?;
        let n = set.keys.len();
        if let Ok(mut k) = self.keys.lock() {
            k.set = set;
            k.fetched = Some(Instant::now());
            k.jwks_url = Some(jwks_url);
        }
        Ok(n)
    }

    /// The key for a token's header, if we have it.
    fn key_for(&self, kid: Option<&str>, alg: Algorithm) -> Option<Jwk> {
        let keys = self.keys.lock().ok()?;
        let usable = |j: &&Jwk| {
            !matches!(j.algorithm, AlgorithmParameters::OctetKey(_))
                && j.common
                    .key_algorithm
                    .is_none_or(|a| format!("{a:?}") == format!("{alg:?}"))
        };
        match kid {
            Some(kid) => keys.set.find(kid).filter(|j| usable(j)).cloned(),
            None => {
                let mut it = keys.set.keys.iter().filter(usable);
                let first = it.next()?;
                // Without a kid only an unambiguous set will do.
                it.next().is_none().then(|| first.clone())
            }
        }
    }

    /// The principal of a valid access token.
    pub(crate) async fn validate(&self, token: &str) -> Result<Principal, AuthError> {
        let invalid = |m: &str| AuthError::InvalidToken(m.to_string());
        let header = jsonwebtoken::decode_header(token).map_err(|_| invalid("not a JWT"))?;
        if !ASYMMETRIC.contains(&header.alg) {
            return Err(invalid(&format!(
                "algorithm {:?} is not accepted (asymmetric signatures only)",
                header.alg
            )));
        }
        let kid = header.kid.as_deref();
        let jwk = match self.key_for(kid, header.alg) {
            Some(j) => j,
            None => {
                // Keys rotate: fetch them again, unless that was tried moments ago.
                let mut last = self.refetch.lock().await;
                let stale = last.is_none_or(|t| t.elapsed() >= JWKS_REFETCH_MIN);
                if stale {
                    *last = Some(Instant::now());
                    if let Err(e) = self.refresh().await {
                        tracing::warn!("OAuth: refreshing the authorization server's keys: {e}");
                    }
                }
                drop(last);
                self.key_for(kid, header.alg).ok_or_else(|| {
                    invalid("signed with a key the authorization server does not publish")
                })?
            }
        };
        let key = DecodingKey::from_jwk(&jwk).map_err(|_| invalid("unusable key"))?;
        let mut v = Validation::new(header.alg);
        v.set_issuer(&[&self.settings.issuer]);
        v.set_audience(&[&self.settings.audience]);
        v.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        v.leeway = LEEWAY_S;
        v.validate_nbf = true;
        let data = jsonwebtoken::decode::<Claims>(token, &key, &v).map_err(|e| {
            use jsonwebtoken::errors::ErrorKind as K;
            invalid(match e.kind() {
                K::ExpiredSignature => "expired",
                K::ImmatureSignature => "not valid yet (nbf)",
                K::InvalidIssuer => "wrong issuer",
                K::InvalidAudience => "not issued for this resource (aud)",
                K::InvalidSignature => "bad signature",
                K::MissingRequiredClaim(_) => "a required claim (exp, iss, aud, sub) is missing",
                K::InvalidAlgorithm => "algorithm does not match the key",
                _ => "malformed",
            })
        })?;
        let claims = data.claims;
        if !valid_subject(&claims.sub) {
            return Err(invalid("unusable subject"));
        }
        let have = claims.scopes();
        let missing: Vec<&str> = self
            .settings
            .scopes
            .iter()
            .map(String::as_str)
            .filter(|s| !have.contains(s))
            .collect();
        if !missing.is_empty() {
            return Err(AuthError::InsufficientScope(self.settings.scopes.join(" ")));
        }
        Ok(Principal::authenticated(&claims.sub, AuthMethod::OAuth))
    }
}

fn valid_subject(sub: &str) -> bool {
    !sub.is_empty() && sub.len() <= 256 && !sub.chars().any(char::is_control)
}

/// Everything that authenticates requests.
#[derive(Default)]
pub(crate) struct Authenticator {
    pub tokens: StaticTokens,
    pub oauth: Option<Arc<OAuthValidator>>,
}

impl Authenticator {
    /// Whether any method is configured.
    pub(crate) fn configured(&self) -> bool {
        !self.tokens.is_empty() || self.oauth.is_some()
    }

    /// The principal behind an `Authorization` header value.
    pub(crate) async fn authenticate(
        &self,
        authorization: Option<&str>,
    ) -> Result<Principal, AuthError> {
        let Some(value) = authorization else {
            return Err(AuthError::Missing);
        };
        let token = match value.split_once(' ') {
            Some((scheme, t)) if scheme.eq_ignore_ascii_case("bearer") => t.trim(),
            _ => return Err(AuthError::Missing),
        };
        if token.is_empty() {
            return Err(AuthError::Missing);
        }
        if let Some(p) = self.tokens.find(token) {
            return Ok(p);
        }
        match &self.oauth {
            Some(o) if token.split('.').count() == 3 => o.validate(token).await,
            _ => Err(AuthError::InvalidToken("unknown token".into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_map_to_their_names_and_nothing_else_matches() {
        let mut t = StaticTokens::default();
        t.add(
            "# team\nalice = aaaaaaaaaaaaaaaaaaaa\n\nbob=bbbbbbbbbbbbbbbbbbbb\n",
            "f",
            false,
        )
        .unwrap();
        t.add(
            "carol=cccccccccccccccccccc,dave=dddddddddddddddddddd",
            "env",
            true,
        )
        .unwrap();
        let name = |tok: &str| t.find(tok).map(|p| p.to_string());
        assert_eq!(name("aaaaaaaaaaaaaaaaaaaa").as_deref(), Some("token:alice"));
        assert_eq!(name("bbbbbbbbbbbbbbbbbbbb").as_deref(), Some("token:bob"));
        assert_eq!(name("dddddddddddddddddddd").as_deref(), Some("token:dave"));
        assert_eq!(name("aaaaaaaaaaaaaaaaaaa"), None);
        assert_eq!(name("aaaaaaaaaaaaaaaaaaaaa"), None);
        assert_eq!(name(""), None);
    }

    #[test]
    fn bad_token_files_are_refused_with_the_line() {
        let err = |text: &str| {
            StaticTokens::default()
                .add(text, "tokens", false)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(err("alice"), "tokens: line 1: expected NAME=TOKEN");
        assert_eq!(
            err("\nalice=short"),
            "tokens: line 2: the token of \"alice\" is shorter than 16 characters"
        );
        assert!(err("al ice=aaaaaaaaaaaaaaaaaaaa").contains("not a usable principal name"));
        assert!(
            err("a=aaaaaaaaaaaaaaaaaaaa\nb=aaaaaaaaaaaaaaaaaaaa")
                .contains("line 2: the same token")
        );
    }

    #[test]
    fn metadata_urls_insert_the_well_known_segment_before_the_path() {
        assert_eq!(
            metadata_urls("https://as.example/tenant/1").unwrap()[..2],
            [
                "https://as.example/.well-known/oauth-authorization-server/tenant/1",
                "https://as.example/.well-known/openid-configuration/tenant/1"
            ]
        );
        assert!(metadata_urls("ftp://x").is_err());
    }

    #[tokio::test]
    async fn bearer_scheme_is_required() {
        let mut a = Authenticator::default();
        a.tokens
            .add("alice=aaaaaaaaaaaaaaaaaaaa", "t", false)
            .unwrap();
        assert_eq!(
            a.authenticate(Some("Basic aaaaaaaaaaaaaaaaaaaa")).await,
            Err(AuthError::Missing)
        );
        assert_eq!(a.authenticate(None).await, Err(AuthError::Missing));
        assert_eq!(
            a.authenticate(Some("bearer aaaaaaaaaaaaaaaaaaaa"))
                .await
                .map(|p| p.to_string()),
            Ok("token:alice".to_string())
        );
        assert_eq!(
            a.authenticate(Some("Bearer x.y.z")).await,
            Err(AuthError::InvalidToken("unknown token".into()))
        );
    }
}

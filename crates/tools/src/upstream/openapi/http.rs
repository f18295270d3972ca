//! Requests of an OpenAPI source, made by the host under the fetch guard's rules: every hop
//! (the request and each redirect) must be http(s) without userinfo; a literal special
//! address (loopback, private, link-local, metadata...) is refused unless the entry's
//! `allowAddresses` names it, and a name is resolved once by the client's guarded resolver
//! (`crate::net`), which drops the special addresses the entry does not allow. Redirects are
//! followed by hand, at most [`MAX_REDIRECTS`]; the credential goes only to the origin it
//! was configured for (a redirect elsewhere loses it). Bodies are read in chunks and
//! stopped at the cap.

use std::time::{Duration, Instant};

use base64::Engine as _;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use url::Url;

use super::error::{CallError, shown};
use crate::config::{ApiKeyIn, OpenApiAuth};
use policy::access::{Reach, special};

/// Redirects followed for one call.
pub(super) const MAX_REDIRECTS: u32 = 5;
/// Time to establish a connection (TCP and TLS).
pub(super) const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Seconds a client-credentials token is taken to live when its endpoint does not say.
const DEFAULT_TOKEN_SECONDS: u64 = 300;

/// A response as read: status, content type and body (within the cap).
pub(super) struct Answer {
    pub status: u16,
    pub content_type: Option<String>,
    pub body: Vec<u8>,
}

/// One request to send (the first hop).
pub(super) struct Outgoing {
    pub method: reqwest::Method,
    pub url: Url,
    pub headers: HeaderMap,
    pub body: Option<Vec<u8>>,
}

/// The HTTP side of one source: its guarded client, what it may reach, its credential.
pub(super) struct Http {
    pub client: reqwest::Client,
    pub reach: Reach,
    pub auth: Option<ResolvedAuth>,
    /// The client-credentials token and when it stops being used.
    pub token: tokio::sync::Mutex<Option<(String, Instant)>>,
}

/// The credential with where it goes (the document's scheme filled in what the entry left
/// out).
#[derive(Clone)]
pub(super) enum ResolvedAuth {
    Header(HeaderName, String),
    Query(String, String),
    Cookie(String, String),
    ClientCredentials {
        token_url: String,
        client_id: String,
        client_secret: String,
        scopes: Vec<String>,
    },
}

impl ResolvedAuth {
    /// `auth` placed by the entry or, for what it leaves out, by the document's schemes.
    pub(super) fn resolve(
        auth: &OpenApiAuth,
        schemes: &std::collections::BTreeMap<String, openapi::SecurityScheme>,
    ) -> Result<ResolvedAuth, super::error::StartError> {
        use super::error::StartError;
        Ok(match auth {
            OpenApiAuth::Bearer(t) => {
                ResolvedAuth::Header(reqwest::header::AUTHORIZATION, format!("Bearer {t}"))
            }
            OpenApiAuth::Basic { username, password } => {
                let pair = base64::engine::general_purpose::STANDARD
                    .encode(format!("{username}:{password}"));
                ResolvedAuth::Header(reqwest::header::AUTHORIZATION, format!("Basic {pair}"))
            }
            OpenApiAuth::ApiKey {
                name,
                location,
                value,
            } => {
                let from_doc = schemes.values().find_map(|s| match s {
                    openapi::SecurityScheme::ApiKey { name, location } => Some((
                        name.clone(),
                        match location {
                            openapi::ApiKeyLocation::Header => ApiKeyIn::Header,
                            openapi::ApiKeyLocation::Query => ApiKeyIn::Query,
                            openapi::ApiKeyLocation::Cookie => ApiKeyIn::Cookie,
                        },
                    )),
                    _ => None,
                });
                let (name, location) = match (name, location, from_doc) {
                    (Some(n), Some(l), _) => (n.clone(), *l),
                    (Some(n), None, _) => (n.clone(), ApiKeyIn::Header),
                    (None, l, Some((n, dl))) => (n, l.unwrap_or(dl)),
                    (None, _, None) => return Err(StartError::NoScheme("apiKey")),
                };
                match location {
                    ApiKeyIn::Header => ResolvedAuth::Header(
                        HeaderName::from_bytes(name.as_bytes())
                            .map_err(|_| StartError::NoScheme("valid apiKey header"))?,
                        value.clone(),
                    ),
                    ApiKeyIn::Query => ResolvedAuth::Query(name, value.clone()),
                    ApiKeyIn::Cookie => ResolvedAuth::Cookie(name, value.clone()),
                }
            }
            OpenApiAuth::ClientCredentials {
                token_url,
                client_id,
                client_secret,
                scopes,
            } => {
                let from_doc = schemes.values().find_map(|s| match s {
                    openapi::SecurityScheme::OAuth2 {
                        client_credentials_token_url: Some(u),
                    } => Some(u.clone()),
                    _ => None,
                });
                ResolvedAuth::ClientCredentials {
                    token_url: token_url
                        .clone()
                        .or(from_doc)
                        .ok_or(StartError::NoScheme("oauth2 client-credentials"))?,
                    client_id: client_id.clone(),
                    client_secret: client_secret.clone(),
                    scopes: scopes.clone(),
                }
            }
        })
    }
}

/// Whether a hop to `url` may be made: http(s), no userinfo, and a literal address only if
/// it is ordinary or the reach names it (names are checked when they resolve).
pub(super) fn check_hop(reach: &Reach, url: &Url, redirected: bool) -> Result<(), CallError> {
    if !matches!(url.scheme(), "http" | "https")
        || !url.username().is_empty()
        || url.password().is_some()
        || url.host().is_none()
    {
        return Err(CallError::Scheme {
            url: shown(url),
            redirected,
        });
    }
    let literal = match url.host() {
        Some(url::Host::Ipv4(a)) => Some(std::net::IpAddr::V4(a)),
        Some(url::Host::Ipv6(a)) => Some(std::net::IpAddr::V6(a)),
        _ => None,
    };
    if let Some(addr) = literal
        && !reach.admits(addr)
    {
        return Err(CallError::Special {
            url: shown(url),
            addr,
            why: special(addr).unwrap_or("a special address"),
            redirected,
        });
    }
    Ok(())
}

impl Http {
    /// Sends `out`, following redirects hop by hop, and reads the answer within `max_body`
    /// bytes.
    pub(super) async fn send(
        &self,
        mut out: Outgoing,
        max_body: usize,
    ) -> Result<Answer, CallError> {
        let origin = out.url.origin();
        let credential = self.credential().await?;
        let mut redirects = 0u32;
        loop {
            check_hop(&self.reach, &out.url, redirects > 0)?;
            let mut url = out.url.clone();
            let mut headers = out.headers.clone();
            if url.origin() == origin
                && let Some(c) = &credential
            {
                apply(c, &mut url, &mut headers)?;
            }
            let mut request = self
                .client
                .request(out.method.clone(), url)
                .headers(headers);
            if let Some(b) = &out.body {
                request = request.body(b.clone());
            }
            let response = request
                .send()
                .await
                .map_err(|e| self.failure(&e, &out.url, redirects > 0))?;
            let status = response.status();
            let location = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|l| l.to_str().ok())
                .map(str::to_string);
            if status.is_redirection()
                && let Some(location) = location
            {
                redirects += 1;
                if redirects > MAX_REDIRECTS {
                    return Err(CallError::Redirects {
                        url: shown(&out.url),
                        max: MAX_REDIRECTS,
                    });
                }
                let next = out
                    .url
                    .join(&location)
                    .map_err(|error| CallError::Location {
                        url: shown(&out.url),
                        error,
                    })?;
                let code = status.as_u16();
                if code == 303 && out.method != reqwest::Method::HEAD
                    || (code == 301 || code == 302) && out.method == reqwest::Method::POST
                {
                    out.method = reqwest::Method::GET;
                    out.body = None;
                    out.headers.remove(reqwest::header::CONTENT_TYPE);
                }
                out.url = next;
                continue;
            }
            let content_type = response
                .headers()
                .get(reqwest::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            let body = read_capped(response, max_body, &out.url).await?;
            return Ok(Answer {
                status: status.as_u16(),
                content_type,
                body,
            });
        }
    }

    /// The credential to attach: the configured one, or a client-credentials token (fetched
    /// when there is none or it expired).
    async fn credential(&self) -> Result<Option<ResolvedAuth>, CallError> {
        let Some(auth) = &self.auth else {
            return Ok(None);
        };
        let ResolvedAuth::ClientCredentials {
            token_url,
            client_id,
            client_secret,
            scopes,
        } = auth
        else {
            return Ok(Some(auth.clone()));
        };
        let mut token = self.token.lock().await;
        if let Some((t, until)) = &*token
            && Instant::now() < *until
        {
            return Ok(Some(bearer(t)));
        }
        let url = Url::parse(token_url).map_err(|error| CallError::Location {
            url: crate::config::spec::mask_url(token_url),
            error,
        })?;
        let mut form = vec![
            ("grant_type", "client_credentials".to_string()),
            ("client_id", client_id.clone()),
            ("client_secret", client_secret.clone()),
        ];
        if !scopes.is_empty() {
            form.push(("scope", scopes.join(" ")));
        }
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(form)
            .finish();
        let mut headers = HeaderMap::new();
        headers.insert(
            reqwest::header::CONTENT_TYPE,
            HeaderValue::from_static("application/x-www-form-urlencoded"),
        );
        headers.insert(
            reqwest::header::ACCEPT,
            HeaderValue::from_static("application/json"),
        );
        check_hop(&self.reach, &url, false)?;
        let response = self
            .client
            .post(url.clone())
            .headers(headers)
            .body(body)
            .send()
            .await
            .map_err(|e| self.failure(&e, &url, false))?;
        let status = response.status().as_u16();
        let bytes = read_capped(response, 1 << 20, &url).await?;
        if !(200..300).contains(&status) {
            return Err(CallError::Token {
                url: shown(&url),
                status,
                excerpt: String::from_utf8_lossy(&bytes[..bytes.len().min(300)]).into_owned(),
            });
        }
        let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
        let Some(access) = v.get("access_token").and_then(|t| t.as_str()) else {
            return Err(CallError::NoToken(shown(&url)));
        };
        let seconds = v
            .get("expires_in")
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(DEFAULT_TOKEN_SECONDS);
        // Renewed a little early, so a token does not expire on its way.
        let until = Instant::now() + Duration::from_secs(seconds.saturating_sub(seconds / 10));
        *token = Some((access.to_string(), until));
        Ok(Some(bearer(access)))
    }

    /// A failed send in words: a refused resolution says which address, anything else its
    /// innermost cause.
    fn failure(&self, e: &reqwest::Error, url: &Url, redirected: bool) -> CallError {
        if let Some(u) = crate::net::refused(e) {
            return CallError::Special {
                url: shown(url),
                addr: u.addr,
                why: special(u.addr).unwrap_or("a special address"),
                redirected,
            };
        }
        let mut cause = e.to_string();
        let mut source = std::error::Error::source(e);
        while let Some(s) = source {
            cause = s.to_string();
            source = s.source();
        }
        if e.is_timeout() {
            cause = format!("no answer in time ({cause})");
        }
        CallError::Network {
            url: shown(url),
            reason: cause,
        }
    }
}

fn bearer(token: &str) -> ResolvedAuth {
    ResolvedAuth::Header(reqwest::header::AUTHORIZATION, format!("Bearer {token}"))
}

/// Puts the credential on a hop.
pub(super) fn apply(
    c: &ResolvedAuth,
    url: &mut Url,
    headers: &mut HeaderMap,
) -> Result<(), CallError> {
    let invalid = |name: &str| CallError::Header {
        url: shown(url),
        name: name.to_string(),
    };
    match c {
        ResolvedAuth::Header(name, value) => {
            let v = HeaderValue::from_str(value).map_err(|_| invalid(name.as_str()))?;
            let mut v = v;
            v.set_sensitive(true);
            headers.insert(name.clone(), v);
        }
        ResolvedAuth::Query(name, value) => {
            url.query_pairs_mut().append_pair(name, value);
        }
        ResolvedAuth::Cookie(name, value) => {
            let pair = format!("{name}={value}");
            let joined = match headers
                .get(reqwest::header::COOKIE)
                .and_then(|c| c.to_str().ok())
            {
                Some(existing) if !existing.is_empty() => format!("{existing}; {pair}"),
                _ => pair,
            };
            let mut v = HeaderValue::from_str(&joined).map_err(|_| invalid("cookie"))?;
            v.set_sensitive(true);
            headers.insert(reqwest::header::COOKIE, v);
        }
        ResolvedAuth::ClientCredentials { .. } => {}
    }
    Ok(())
}

/// The body, read in chunks and stopped past `max` bytes.
async fn read_capped(
    mut response: reqwest::Response,
    max: usize,
    url: &Url,
) -> Result<Vec<u8>, CallError> {
    let too_large = || CallError::TooLarge {
        url: shown(url),
        max,
    };
    if response.content_length().is_some_and(|n| n > max as u64) {
        return Err(too_large());
    }
    let mut body = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                if body.len() + chunk.len() > max {
                    return Err(too_large());
                }
                body.extend_from_slice(&chunk);
            }
            Ok(None) => return Ok(body),
            Err(e) => {
                return Err(CallError::Network {
                    url: shown(url),
                    reason: format!("reading the body failed: {e}"),
                });
            }
        }
    }
}

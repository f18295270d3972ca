//! `code-executor-mcp login SERVER`: the authorization code flow with PKCE, through the
//! user's browser and a one-shot loopback listener.
//!
//! 1. A listener on `127.0.0.1` (an ephemeral port, or the entry's `oauth.callbackPort`)
//!    gives the redirect URI `http://127.0.0.1:PORT/callback` (RFC 8252 §7.3).
//! 2. One unauthenticated request to the server collects its `WWW-Authenticate`
//!    challenge; discovery starts from its `resource_metadata`, else from the well-known
//!    protected-resource document, then the authorization server's metadata.
//! 3. The client is the entry's `oauth.clientId`, or one registered now (RFC 7591).
//! 4. The authorization URL (PKCE S256 challenge, random `state`, `resource`) is printed;
//!    the user opens it. The redirect must come back with the same `state`; anything else
//!    ends the login with nothing stored.
//! 5. The code is exchanged (with the PKCE verifier) and the tokens are written to the
//!    token store; the browser tab is told how it went.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail};
use rmcp::transport::auth::{AuthorizationManager, AuthorizationMetadataSource, OAuthClientConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::store::{LoginInfo, TokenStore};
use crate::config::{ServerSpec, Transport};

/// How long `login` waits for the browser by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);
/// Largest request head the loopback listener reads (a redirect carries a code and a state;
/// this is generous).
const MAX_REQUEST_HEAD: usize = 16 * 1024;
/// How long one connection to the loopback listener may take to send its request.
const REQUEST_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Timeout of the probe request that collects the server's challenge.
const PROBE_TIMEOUT: Duration = Duration::from_secs(30);
/// The name we register under.
const CLIENT_NAME: &str = "code-executor-mcp";

/// What a finished login left behind.
#[derive(Debug)]
pub struct LoginOutcome {
    pub token_file: PathBuf,
    /// Seconds the access token is valid for, when the server said.
    pub expires_in: Option<u64>,
    pub refreshable: bool,
    pub scopes: Vec<String>,
}

/// Runs the whole login for `spec`; `tell` shows a line to the person at the terminal.
pub async fn login(
    spec: &ServerSpec,
    token_dir: &Path,
    timeout: Duration,
    tell: &dyn Fn(&str),
) -> anyhow::Result<LoginOutcome> {
    let (url, headers, sse) = match &spec.transport {
        Transport::Http { url, headers } => (url, headers, false),
        Transport::Sse { url, headers } => (url, headers, true),
        Transport::Stdio { .. } => bail!(
            "\"{}\" is a stdio server; OAuth login is for servers reached over HTTP (streamable HTTP or SSE)",
            spec.name
        ),
        Transport::OpenApi(_) => bail!(
            "\"{}\" is an OpenAPI source; its credential is its entry's \"auth\" (a token from the environment, or oauth2ClientCredentials), not a login",
            spec.name
        ),
    };
    if headers
        .keys()
        .any(|k| k.eq_ignore_ascii_case("authorization"))
    {
        tell(&format!(
            "note: the entry for \"{}\" sets an Authorization header; that header is sent instead of the OAuth token until you remove it",
            spec.name
        ));
    }
    crate::tls::install_tls_provider();
    let oauth = spec.oauth.clone().unwrap_or_default();

    let listener = TcpListener::bind(("127.0.0.1", oauth.callback_port.unwrap_or(0)))
        .await
        .with_context(|| match oauth.callback_port {
            Some(p) => format!("cannot listen on 127.0.0.1:{p} (oauth.callbackPort)"),
            None => "cannot listen on 127.0.0.1".to_string(),
        })?;
    let port = listener.local_addr()?.port();
    let redirect_uri = format!("http://127.0.0.1:{port}/callback");

    let challenge = probe(url, headers, sse).await?;
    let mut manager = AuthorizationManager::new(url.as_str())
        .await
        .context("OAuth setup")?;
    let resolution = manager
        .resolve_metadata_from_challenge(challenge.as_deref())
        .await
        .context("OAuth metadata discovery failed")?;
    if resolution.source == AuthorizationMetadataSource::LegacyEndpointFallback {
        if challenge.is_none() {
            bail!(
                "\"{}\" did not ask for authorization and publishes no OAuth metadata; it does not seem to use OAuth",
                spec.name
            );
        }
        tell(
            "note: the server publishes no OAuth metadata; trying /authorize, /token and /register on its origin",
        );
    }
    let metadata = resolution.metadata;
    manager.set_metadata(metadata.clone());
    let store = TokenStore::new(token_dir, &spec.name, url);
    manager.set_credential_store(store.clone());

    let scopes = if oauth.scopes.is_empty() {
        manager.select_initial_scopes(&[]).await
    } else {
        oauth.scopes.clone()
    };
    let scope_refs: Vec<&str> = scopes.iter().map(String::as_str).collect();
    let registered_secret = match &oauth.client_id {
        Some(id) => {
            let mut client = OAuthClientConfig::new(id.clone(), redirect_uri.clone())
                .with_scopes(scopes.clone());
            if let Some(secret) = &oauth.client_secret {
                client = client.with_client_secret(secret.clone());
            }
            manager
                .configure_client(client)
                .context("OAuth client configuration")?;
            None
        }
        None => {
            let registered = manager
                .register_client(CLIENT_NAME, &redirect_uri, &scope_refs)
                .await
                .context(
                    "dynamic client registration failed (set oauth.clientId in the server's entry to use a pre-registered client)",
                )?;
            registered.client_secret
        }
    };
    store.set_login(LoginInfo {
        client_secret: registered_secret,
        redirect_uri: Some(redirect_uri.clone()),
        challenge,
        metadata: Some(metadata),
    });
    let auth_url = manager
        .get_authorization_url(&scope_refs)
        .await
        .context("cannot build the authorization URL")?;
    let state = reqwest::Url::parse(&auth_url)
        .ok()
        .and_then(|u| {
            u.query_pairs()
                .find(|(k, _)| k == "state")
                .map(|(_, v)| v.into_owned())
        })
        .context("the authorization URL carries no state")?;

    tell(&format!(
        "Open this URL in a browser to authorize code-executor-mcp for \"{}\":\n\n  {auth_url}\n",
        spec.name
    ));
    tell(&format!(
        "Waiting up to {} s for the redirect to {redirect_uri} (Ctrl-C to cancel)...",
        timeout.as_secs()
    ));

    let (mut browser, callback) = tokio::time::timeout(timeout, wait_for_callback(&listener))
        .await
        .map_err(|_| {
            anyhow::anyhow!(
                "no redirect arrived within {} s; nothing was stored. Run `code-executor-mcp login {}` again (--timeout SECS to wait longer)",
                timeout.as_secs(),
                spec.name
            )
        })??;
    let checked = check_callback(&callback, &state);
    let (code, iss) = match checked {
        Ok(v) => v,
        Err(why) => {
            respond(&mut browser, 400, "Login failed", &why.to_string()).await;
            bail!("{why}; nothing was stored");
        }
    };
    match manager
        .exchange_code_for_token_with_issuer(&code, &state, iss.as_deref())
        .await
    {
        Ok(token) => {
            use oauth2::TokenResponse;
            respond(
                &mut browser,
                200,
                "Logged in",
                "code-executor-mcp is authorized. You can close this tab.",
            )
            .await;
            Ok(LoginOutcome {
                token_file: store.path().to_path_buf(),
                expires_in: token.expires_in().map(|d| d.as_secs()),
                refreshable: token.refresh_token().is_some(),
                scopes: manager.get_current_scopes().await,
            })
        }
        Err(e) => {
            respond(
                &mut browser,
                400,
                "Login failed",
                "The authorization server did not accept the authorization code. See the terminal.",
            )
            .await;
            bail!("exchanging the authorization code failed: {e}; nothing was stored")
        }
    }
}

/// One unauthenticated request, as a client would make it, to collect the server's
/// `WWW-Authenticate` challenge. `None` when the server did not answer 401.
async fn probe(
    url: &str,
    headers: &std::collections::BTreeMap<String, String>,
    sse: bool,
) -> anyhow::Result<Option<String>> {
    let client = reqwest::Client::builder()
        .timeout(PROBE_TIMEOUT)
        .build()
        .context("HTTP client")?;
    let mut request = if sse {
        client
            .get(url)
            .header(reqwest::header::ACCEPT, "text/event-stream")
    } else {
        client
            .post(url)
            .header(
                reqwest::header::ACCEPT,
                "application/json, text/event-stream",
            )
            .json(&serde_json::json!({
                "jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": CLIENT_NAME, "version": env!("CARGO_PKG_VERSION")}
                }
            }))
    };
    for (k, v) in headers {
        if !k.eq_ignore_ascii_case("authorization") {
            request = request.header(k.as_str(), v.as_str());
        }
    }
    let response = request
        .send()
        .await
        .with_context(|| format!("cannot reach {url}"))?;
    if response.status() != reqwest::StatusCode::UNAUTHORIZED {
        return Ok(None);
    }
    Ok(response
        .headers()
        .get_all(reqwest::header::WWW_AUTHENTICATE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.trim_start().to_ascii_lowercase().starts_with("bearer"))
        .map(str::to_string))
}

/// The query of the first request for `/callback`; other requests (a browser's
/// `/favicon.ico`) get a 404 and the wait goes on.
async fn wait_for_callback(listener: &TcpListener) -> anyhow::Result<(TcpStream, reqwest::Url)> {
    loop {
        let (mut stream, _) = listener
            .accept()
            .await
            .context("the loopback listener failed")?;
        let target =
            match tokio::time::timeout(REQUEST_READ_TIMEOUT, read_target(&mut stream)).await {
                Ok(Ok(t)) => t,
                Ok(Err(why)) => {
                    respond(&mut stream, 400, "Bad request", why).await;
                    continue;
                }
                Err(_) => continue,
            };
        let Ok(url) = reqwest::Url::parse("http://127.0.0.1").and_then(|b| b.join(&target)) else {
            respond(&mut stream, 400, "Bad request", "That is not a URL.").await;
            continue;
        };
        if url.path() != "/callback" {
            respond(&mut stream, 404, "Not found", "Nothing here.").await;
            continue;
        }
        return Ok((stream, url));
    }
}

/// Reads a request head and returns the target of its `GET` line.
async fn read_target(stream: &mut TcpStream) -> Result<String, &'static str> {
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 2048];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        if head.len() > MAX_REQUEST_HEAD {
            return Err("The request is too large.");
        }
        let n = stream
            .read(&mut buf)
            .await
            .map_err(|_| "The request could not be read.")?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&buf[..n]);
    }
    let line = head
        .split(|&b| b == b'\r' || b == b'\n')
        .next()
        .unwrap_or(&[]);
    let line = std::str::from_utf8(line).map_err(|_| "The request is not text.")?;
    let mut parts = line.split(' ');
    match (parts.next(), parts.next()) {
        (Some("GET"), Some(target)) if target.starts_with('/') => Ok(target.to_string()),
        _ => Err("Only a GET of /callback is expected here."),
    }
}

/// Why a redirect to the callback is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum CallbackError {
    /// The authorization server's words (`error`, and `: description` when given), shown to
    /// the terminal only (never echoed into the page).
    #[error("the authorization server refused the authorization ({error}{detail})")]
    Refused { error: String, detail: String },
    #[error(
        "the redirect's state does not match this login (a stale browser tab, or a forged request)"
    )]
    StateMismatch,
    #[error("the redirect carries no state")]
    NoState,
    #[error("the redirect carries no authorization code")]
    NoCode,
}

/// The code and issuer of a redirect whose `state` is ours, or why it is refused.
fn check_callback(
    url: &reqwest::Url,
    state: &str,
) -> Result<(String, Option<String>), CallbackError> {
    let get = |key: &str| {
        url.query_pairs()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.into_owned())
    };
    if let Some(error) = get("error") {
        // The authorization server's words, shown to the terminal only (never echoed into
        // the page).
        let detail = get("error_description")
            .map(|d| format!(": {d}"))
            .unwrap_or_default();
        return Err(CallbackError::Refused { error, detail });
    }
    match get("state") {
        Some(s) if constant_time_eq(s.as_bytes(), state.as_bytes()) => {}
        Some(_) => {
            return Err(CallbackError::StateMismatch);
        }
        None => return Err(CallbackError::NoState),
    }
    let code = get("code").ok_or(CallbackError::NoCode)?;
    Ok((code, get("iss")))
}

/// Compares two byte strings without stopping at the first difference.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A small page for the browser tab. Its text is ours, never the request's.
async fn respond(stream: &mut TcpStream, status: u16, title: &str, text: &str) {
    let reason = match status {
        200 => "OK",
        404 => "Not Found",
        _ => "Bad Request",
    };
    let body = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{title}</title></head>\
         <body style=\"font-family:sans-serif;margin:3em\"><h1>{title}</h1><p>{text}</p></body></html>\n"
    );
    let response = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nCache-Control: no-store\r\nReferrer-Policy: no-referrer\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(q: &str) -> reqwest::Url {
        reqwest::Url::parse(&format!("http://127.0.0.1:1/callback?{q}")).unwrap()
    }

    #[test]
    fn a_redirect_is_accepted_only_with_our_state() {
        assert_eq!(
            check_callback(&url("code=c1&state=s1&iss=https%3A%2F%2Fas"), "s1"),
            Ok(("c1".into(), Some("https://as".into())))
        );
        assert!(
            check_callback(&url("code=c1&state=s2"), "s1")
                .unwrap_err()
                .to_string()
                .contains("state does not match")
        );
        assert!(
            check_callback(&url("code=c1"), "s1")
                .unwrap_err()
                .to_string()
                .contains("no state")
        );
        assert!(
            check_callback(&url("state=s1"), "s1")
                .unwrap_err()
                .to_string()
                .contains("no authorization code")
        );
        let denied = check_callback(
            &url("error=access_denied&error_description=no+thanks&state=s1"),
            "s1",
        )
        .unwrap_err()
        .to_string();
        assert!(denied.contains("access_denied: no thanks"), "{denied}");
    }

    #[test]
    fn constant_time_eq_compares_whole_strings() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
    }
}

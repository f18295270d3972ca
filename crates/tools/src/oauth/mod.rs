//! OAuth 2.1 for remote (streamable HTTP and legacy SSE) upstream servers.
//!
//! - [`login`]: `code-executor-mcp login SERVER`. Finds the server's authorization server
//!   (the `resource_metadata` of its 401 `WWW-Authenticate` challenge or its
//!   `/.well-known/oauth-protected-resource` document, RFC 9728; then RFC 8414 / OpenID
//!   metadata), registers a client (RFC 7591) unless the entry's `oauth` object names one,
//!   prints the authorization URL, waits on a loopback redirect (`127.0.0.1`, an ephemeral
//!   port) and exchanges the code (PKCE S256, `state` checked, RFC 9207 `iss` checked when
//!   the server sends it).
//! - [`store`]: tokens on disk, one 0600 file per server and URL, written atomically.
//! - [`prepare`] and [`HttpClient`]/[`SseAuth`]: a connection to a server with a stored
//!   login sends `Authorization: Bearer`, refreshes the token before a request when it has
//!   expired and once after a 401, and persists what the refresh returns. A 401 nothing can
//!   fix is recorded in an [`AuthWatch`], and the upstream error then says which `login` to
//!   run.
//!
//! The protocol work (discovery, registration, PKCE, token requests, refresh) is rmcp's
//! `auth` module, on the `oauth2` crate; nothing here does cryptography itself.
//!
//! Tokens never leave this process but as the `Authorization` header to the server they
//! were issued for: no `Debug` or log line prints them (messages name the token file, never
//! its content), the sandbox cannot read the token directory, `config show` shows only
//! whether a login is stored, and the audit log records calls, not headers.

pub mod login;
pub mod store;
mod transport;
mod watch;

use std::path::Path;

use rmcp::transport::auth::{AuthorizationManager, AuthorizationMetadataSource, OAuthClientConfig};

pub use transport::{HttpClient, SendError, SseAuth};
pub use watch::AuthWatch;

use crate::config::ServerSpec;
use store::TokenStore;

/// What to tell the user when a server needs (another) login.
pub fn login_hint(server: &str) -> String {
    format!("run `code-executor-mcp login {server}`")
}

/// Why a stored login cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    /// Only a new login helps.
    #[error("{0}")]
    NeedsLogin(String),
    /// Something else (network, files); trying again later may help.
    #[error("{0}")]
    Other(String),
}

/// The server's URL, when it is reached over HTTP (streamable or SSE).
pub fn server_url(spec: &ServerSpec) -> Option<&str> {
    match &spec.transport {
        crate::config::Transport::Http { url, .. } | crate::config::Transport::Sse { url, .. } => {
            Some(url)
        }
        crate::config::Transport::Stdio { .. } | crate::config::Transport::OpenApi(_) => None,
    }
}

/// Whether a login is stored for this server (and its current URL), without reading tokens
/// out of the store.
pub fn has_login(spec: &ServerSpec, token_dir: Option<&Path>) -> bool {
    let (Some(dir), Some(url)) = (token_dir, server_url(spec)) else {
        return false;
    };
    TokenStore::new(dir, &spec.name, url)
        .read()
        .inspect_err(|e| tracing::warn!(server = spec.name, "stored login ignored: {e}"))
        .ok()
        .flatten()
        .is_some_and(|s| s.credentials.token_response.is_some())
}

/// The access and refresh tokens of every configured server's stored login (and the
/// client secret it registered), as they are at the start: values to redact.
pub fn stored_tokens(config: &crate::config::Config) -> Vec<String> {
    use oauth2::TokenResponse;
    let mut out = Vec::new();
    let Some(dir) = config.token_dir.as_deref() else {
        return out;
    };
    for spec in config.servers.values() {
        let Some(url) = server_url(spec) else {
            continue;
        };
        let Ok(Some(stored)) = TokenStore::new(dir, &spec.name, url).read() else {
            continue;
        };
        if let Some(t) = &stored.credentials.token_response {
            out.push(t.access_token().secret().clone());
            if let Some(r) = t.refresh_token() {
                out.push(r.secret().clone());
            }
        }
    }
    out
}

/// The authorization manager for a server with a stored login, ready to hand out (and
/// refresh) its access token; `None` when no login is stored for this name and URL.
pub async fn prepare(
    spec: &ServerSpec,
    url: &str,
    token_dir: Option<&Path>,
) -> Result<Option<AuthorizationManager>, PrepareError> {
    let Some(dir) = token_dir else {
        return Ok(None);
    };
    let store = TokenStore::new(dir, &spec.name, url);
    let stored = match store
        .read()
        .map_err(|e| PrepareError::Other(e.to_string()))?
    {
        Some(s) if s.credentials.token_response.is_some() => s,
        // No login, or one whose refresh token was rejected: connect without a token; the
        // server's 401 then asks for a login.
        _ => return Ok(None),
    };
    let configured = spec.oauth.as_ref();
    if let Some(id) = configured.and_then(|o| o.client_id.as_deref())
        && id != stored.credentials.client_id
    {
        return Err(PrepareError::NeedsLogin(format!(
            "the stored login was made with client id {:?}, the config now names {id:?}",
            stored.credentials.client_id
        )));
    }
    let mut manager = AuthorizationManager::new(url)
        .await
        .map_err(|e| PrepareError::Other(format!("OAuth: {e}")))?;
    // Rediscover from the challenge seen at login (the server may have moved its
    // authorization server); fall back to the metadata stored at login.
    let metadata = match manager
        .resolve_metadata_from_challenge(stored.login.challenge.as_deref())
        .await
    {
        Ok(r) if r.source != AuthorizationMetadataSource::LegacyEndpointFallback => r.metadata,
        Ok(r) => stored.login.metadata.clone().unwrap_or(r.metadata),
        Err(e) => match stored.login.metadata.clone() {
            Some(m) => {
                tracing::warn!(
                    server = %spec.name,
                    "OAuth metadata discovery failed ({e}); using the metadata stored at login"
                );
                m
            }
            None => {
                return Err(PrepareError::Other(format!(
                    "OAuth metadata discovery failed: {e}"
                )));
            }
        },
    };
    if let (Some(was), Some(now)) = (&stored.credentials.issuer, &metadata.issuer)
        && was != now
    {
        return Err(PrepareError::NeedsLogin(format!(
            "the server's authorization server changed from {was} to {now}"
        )));
    }
    manager.set_metadata(metadata);
    manager.set_credential_store(store);
    let (client_id, secret) = match configured.and_then(|o| o.client_id.clone()) {
        Some(id) => (id, configured.and_then(|o| o.client_secret.clone())),
        None => (
            stored.credentials.client_id.clone(),
            stored.login.client_secret.clone(),
        ),
    };
    let redirect = stored
        .login
        .redirect_uri
        .clone()
        .unwrap_or_else(|| "http://127.0.0.1/callback".into());
    let mut client = OAuthClientConfig::new(client_id, redirect);
    if let Some(s) = secret {
        client = client.with_client_secret(s);
    }
    manager
        .configure_client(client)
        .map_err(|e| PrepareError::Other(format!("OAuth client: {e}")))?;
    Ok(Some(manager))
}

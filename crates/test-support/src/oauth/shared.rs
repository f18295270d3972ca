//! What the mock's authorization server and its protected resource share: the options, the
//! grants and tokens it issued ([`Ctx`]), and how both answer.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::{Response, StatusCode};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::StreamableHttpService;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use serde_json::Value;

use crate::fixture::Fixture;

pub(crate) type Body = BoxBody<Bytes, Infallible>;

/// How the mock behaves.
#[derive(Debug, Clone)]
pub struct MockOptions {
    /// Lifetime of an access token.
    pub access_ttl: Duration,
    /// Issue refresh tokens.
    pub refresh_tokens: bool,
    /// Accept dynamic client registration.
    pub registration: bool,
    /// A pre-registered client: id and, for a confidential client, its secret.
    pub preregistered: Option<(String, Option<String>)>,
    /// Scopes the protected resource asks for.
    pub scopes: Vec<String>,
}

impl Default for MockOptions {
    fn default() -> Self {
        MockOptions {
            access_ttl: Duration::from_secs(3600),
            refresh_tokens: true,
            registration: true,
            preregistered: None,
            scopes: vec!["mcp:tools".into()],
        }
    }
}

pub(crate) struct ClientReg {
    pub(crate) secret: Option<String>,
    pub(crate) redirect_uris: Vec<String>,
}

pub(crate) struct CodeGrant {
    pub(crate) client_id: String,
    pub(crate) redirect_uri: String,
    pub(crate) challenge: String,
    pub(crate) scope: String,
}

pub(crate) struct AccessGrant {
    pub(crate) expires: Instant,
}

#[derive(Default)]
pub(crate) struct AuthState {
    pub(crate) clients: HashMap<String, ClientReg>,
    pub(crate) codes: HashMap<String, CodeGrant>,
    pub(crate) access: HashMap<String, AccessGrant>,
    /// Refresh token -> (client id, scope).
    pub(crate) refresh: HashMap<String, (String, String)>,
    pub(crate) events: Vec<String>,
    pub(crate) accepted: Vec<String>,
    pub(crate) next: u64,
}

impl AuthState {
    pub(crate) fn token(&mut self, kind: &str) -> String {
        self.next += 1;
        let mut r = [0u8; 12];
        for (i, b) in r.iter_mut().enumerate() {
            *b = (std::process::id() as u64)
                .wrapping_mul(31)
                .wrapping_add(self.next * 7919 + i as u64 * 104_729) as u8;
        }
        format!(
            "{kind}-{}-{}",
            self.next,
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(r)
        )
    }
}

pub(crate) struct Ctx {
    pub(crate) opts: MockOptions,
    pub(crate) issuer: String,
    /// `http://127.0.0.1:PORT` of the protected resource.
    pub(crate) rs_base: String,
    pub(crate) resource: String,
    pub(crate) state: Mutex<AuthState>,
    pub(crate) mcp: StreamableHttpService<Fixture, LocalSessionManager>,
    /// Legacy SSE sessions: where a POSTed message goes.
    pub(crate) sse_sessions:
        Mutex<HashMap<u64, tokio::sync::mpsc::UnboundedSender<ClientJsonRpcMessage>>>,
    /// Keys that sign JWT access tokens: the last one signs, all are published at /jwks.
    pub(crate) keys: Mutex<Vec<crate::jwt::SigningKey>>,
}

pub(crate) fn reply(status: StatusCode, body: Value) -> Response<Body> {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .header("cache-control", "no-store")
        .body(Full::new(Bytes::from(body.to_string())).boxed())
        .expect("response")
}

pub(crate) fn query_pairs(q: Option<&str>) -> HashMap<String, String> {
    url::form_urlencoded::parse(q.unwrap_or("").as_bytes())
        .into_owned()
        .collect()
}

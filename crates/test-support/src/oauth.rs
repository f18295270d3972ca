//! A mock OAuth 2.1 authorization server and an MCP server (streamable HTTP) that it
//! protects, both on loopback, in the test's own process.
//!
//! The authorization server publishes RFC 8414 metadata, registers clients (RFC 7591),
//! answers `/authorize` at once with a redirect to the registered `redirect_uri` carrying a
//! code and the `state` (what a browser does after the user consents), and at `/token`
//! checks what a real one checks: the code is single use and bound to its client, redirect
//! URI and PKCE challenge (the verifier must hash to it, S256), a confidential client's
//! secret, and refresh tokens (rotated on use). Access tokens expire after
//! [`MockOptions::access_ttl`].
//!
//! The protected resource publishes RFC 9728 metadata and answers every MCP request without
//! a valid bearer token with 401 and a `WWW-Authenticate` challenge naming that metadata.
//! Behind it runs the [`Fixture`](crate::fixture::Fixture) MCP server, over streamable HTTP
//! at `/mcp` ([`MockOAuth::resource`]) and over the legacy HTTP+SSE transport at `/sse`
//! ([`MockOAuth::sse`], messages POSTed to `/messages?session=N`).
//!
//! Tests steer it: [`MockOAuth::revoke_access_tokens`] (a 401 that a refresh fixes),
//! [`MockOAuth::revoke_all`] (only a new login fixes it), and read what happened in
//! [`MockOAuth::events`].

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio::net::TcpListener;

use crate::fixture::Fixture;

mod resource;
mod shared;
use resource::resource;
pub use shared::MockOptions;
use shared::{AccessGrant, AuthState, Body, ClientReg, CodeGrant, Ctx, query_pairs, reply};

/// The running mock; its servers stop when it is dropped.
pub struct MockOAuth {
    /// The authorization server's issuer URL (`http://127.0.0.1:PORT`).
    pub issuer: String,
    /// The protected MCP endpoint (`http://127.0.0.1:PORT/mcp`).
    pub resource: String,
    /// The same server over legacy SSE (`http://127.0.0.1:PORT/sse`).
    pub sse: String,
    ctx: Arc<Ctx>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for MockOAuth {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

impl MockOAuth {
    /// Starts both servers on ephemeral loopback ports.
    pub async fn start(opts: MockOptions) -> MockOAuth {
        let auth = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let rs = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let issuer = format!(
            "http://127.0.0.1:{}",
            auth.local_addr().expect("addr").port()
        );
        let rs_base = format!("http://127.0.0.1:{}", rs.local_addr().expect("addr").port());
        let mut state = AuthState::default();
        if let Some((id, secret)) = &opts.preregistered {
            state.clients.insert(
                id.clone(),
                ClientReg {
                    secret: secret.clone(),
                    // Any loopback redirect (RFC 8252 §7.3).
                    redirect_uris: Vec::new(),
                },
            );
        }
        let mcp = StreamableHttpService::new(
            || Ok(Fixture::new("secure")),
            Arc::new(LocalSessionManager::default()),
            StreamableHttpServerConfig::default(),
        );
        let ctx = Arc::new(Ctx {
            opts,
            issuer: issuer.clone(),
            resource: format!("{rs_base}/mcp"),
            rs_base: rs_base.clone(),
            state: Mutex::new(state),
            mcp,
            sse_sessions: Mutex::new(HashMap::new()),
            keys: Mutex::new(vec![crate::jwt::SigningKey::generate("key-1")]),
        });
        let tasks = vec![
            tokio::spawn(serve(auth, ctx.clone(), Role::AuthorizationServer)),
            tokio::spawn(serve(rs, ctx.clone(), Role::Resource)),
        ];
        MockOAuth {
            issuer,
            resource: ctx.resource.clone(),
            sse: format!("{rs_base}/sse"),
            ctx,
            tasks,
        }
    }

    /// What happened, in order: `register`, `authorize`, `token:authorization_code`,
    /// `token:refresh_token`, `rejected:<why>`, `mcp:401`.
    pub fn events(&self) -> Vec<String> {
        self.ctx.state.lock().expect("state").events.clone()
    }

    /// How many events equal `event`.
    pub fn count(&self, event: &str) -> usize {
        self.events().iter().filter(|e| *e == event).count()
    }

    /// Access tokens the protected resource accepted, in order (one per distinct token).
    pub fn accepted_tokens(&self) -> Vec<String> {
        self.ctx.state.lock().expect("state").accepted.clone()
    }

    /// Every access token stops working; refresh tokens still work.
    pub fn revoke_access_tokens(&self) {
        self.ctx.state.lock().expect("state").access.clear();
    }

    /// A JWT access token with `claims`, signed with the current key (published at
    /// `ISSUER/jwks`, named by the metadata's `jwks_uri`).
    pub fn jwt(&self, claims: &Value) -> String {
        let keys = self.ctx.keys.lock().expect("keys");
        keys.last().expect("a key").sign(claims)
    }

    /// Claims of a valid access token for `sub`, audience `aud`, with `scope`, valid an hour.
    pub fn claims(&self, sub: &str, aud: &str, scope: &str) -> Value {
        let now = crate::jwt::now();
        json!({"iss": self.issuer, "sub": sub, "aud": aud, "scope": scope, "iat": now, "exp": now + 3600})
    }

    /// A new signing key: published from now on (the old ones stay published); new tokens
    /// are signed with it.
    pub fn rotate_key(&self) {
        let mut keys = self.ctx.keys.lock().expect("keys");
        let kid = format!("key-{}", keys.len() + 1);
        keys.push(crate::jwt::SigningKey::generate(&kid));
        drop(keys);
        self.ctx
            .state
            .lock()
            .expect("state")
            .events
            .push("rotate".into());
    }

    /// Every access and refresh token stops working: only a new login helps.
    pub fn revoke_all(&self) {
        let mut s = self.ctx.state.lock().expect("state");
        s.access.clear();
        s.refresh.clear();
    }
}

#[derive(Clone, Copy)]
enum Role {
    AuthorizationServer,
    Resource,
}

async fn serve(listener: TcpListener, ctx: Arc<Ctx>, role: Role) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            return;
        };
        let ctx = ctx.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| {
                let ctx = ctx.clone();
                async move {
                    Ok::<_, Infallible>(match role {
                        Role::AuthorizationServer => authorization_server(&ctx, req).await,
                        Role::Resource => resource(&ctx, req).await,
                    })
                }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

fn oauth_error(ctx: &Ctx, status: StatusCode, error: &str, why: &str) -> Response<Body> {
    ctx.state
        .lock()
        .expect("state")
        .events
        .push(format!("rejected:{why}"));
    reply(status, json!({ "error": error, "error_description": why }))
}

fn is_loopback_redirect(uri: &str) -> bool {
    url::Url::parse(uri).is_ok_and(|u| {
        u.scheme() == "http" && matches!(u.host_str(), Some("127.0.0.1" | "localhost" | "[::1]"))
    })
}

async fn authorization_server(ctx: &Ctx, req: Request<Incoming>) -> Response<Body> {
    let path = req.uri().path().to_string();
    match (req.method().as_str(), path.as_str()) {
        ("GET", "/.well-known/oauth-authorization-server") => reply(
            StatusCode::OK,
            json!({
                "issuer": ctx.issuer,
                "authorization_endpoint": format!("{}/authorize", ctx.issuer),
                "token_endpoint": format!("{}/token", ctx.issuer),
                "registration_endpoint": if ctx.opts.registration { json!(format!("{}/register", ctx.issuer)) } else { Value::Null },
                "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code", "refresh_token"],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["none", "client_secret_basic", "client_secret_post"],
                "scopes_supported": ctx.opts.scopes.iter().cloned().chain(["offline_access".to_string()]).collect::<Vec<_>>(),
                "authorization_response_iss_parameter_supported": true,
                "jwks_uri": format!("{}/jwks", ctx.issuer),
            }),
        ),
        ("GET", "/jwks") => {
            ctx.state.lock().expect("state").events.push("jwks".into());
            let keys: Vec<Value> = ctx
                .keys
                .lock()
                .expect("keys")
                .iter()
                .map(crate::jwt::SigningKey::jwk)
                .collect();
            reply(StatusCode::OK, json!({ "keys": keys }))
        }
        ("POST", "/register") if ctx.opts.registration => {
            let body = req.into_body().collect().await.map(|b| b.to_bytes());
            let Ok(Ok(meta)) = body.map(|b| serde_json::from_slice::<Value>(&b)) else {
                return oauth_error(
                    ctx,
                    StatusCode::BAD_REQUEST,
                    "invalid_client_metadata",
                    "body",
                );
            };
            let uris: Vec<String> = meta["redirect_uris"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default();
            if uris.is_empty() || !uris.iter().all(|u| is_loopback_redirect(u)) {
                return oauth_error(
                    ctx,
                    StatusCode::BAD_REQUEST,
                    "invalid_redirect_uri",
                    "redirect_uris",
                );
            }
            let mut s = ctx.state.lock().expect("state");
            let id = s.token("client");
            s.clients.insert(
                id.clone(),
                ClientReg {
                    secret: None,
                    redirect_uris: uris.clone(),
                },
            );
            s.events.push("register".into());
            reply(
                StatusCode::CREATED,
                json!({
                    "client_id": id, "redirect_uris": uris,
                    "token_endpoint_auth_method": "none",
                    "grant_types": ["authorization_code", "refresh_token"],
                    "response_types": ["code"],
                    "client_name": meta["client_name"],
                }),
            )
        }
        ("GET", "/authorize") => authorize(ctx, req.uri().query()),
        ("POST", "/token") => {
            let basic = req
                .headers()
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Basic "))
                .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
                .and_then(|b| String::from_utf8(b).ok())
                .and_then(|s| {
                    s.split_once(':').map(|(a, b)| {
                        let dec = |x: &str| {
                            url::form_urlencoded::parse(format!("x={x}").as_bytes())
                                .next()
                                .map(|(_, v)| v.into_owned())
                                .unwrap_or_default()
                        };
                        (dec(a), dec(b))
                    })
                });
            let body = req
                .into_body()
                .collect()
                .await
                .map(|b| b.to_bytes())
                .unwrap_or_default();
            let form: HashMap<String, String> =
                url::form_urlencoded::parse(&body).into_owned().collect();
            token(ctx, &form, basic)
        }
        _ => reply(StatusCode::NOT_FOUND, json!({"error": "not_found"})),
    }
}

fn authorize(ctx: &Ctx, query: Option<&str>) -> Response<Body> {
    let q = query_pairs(query);
    let get = |k: &str| q.get(k).cloned().unwrap_or_default();
    let (client_id, redirect_uri, state) = (get("client_id"), get("redirect_uri"), get("state"));
    let known = {
        let s = ctx.state.lock().expect("state");
        s.clients.get(&client_id).map(|c| {
            if c.redirect_uris.is_empty() {
                is_loopback_redirect(&redirect_uri)
            } else {
                c.redirect_uris.contains(&redirect_uri)
            }
        })
    };
    // Errors about the client or its redirect URI are never redirected (RFC 6749 §4.1.2.1).
    match known {
        None => {
            return oauth_error(
                ctx,
                StatusCode::BAD_REQUEST,
                "invalid_client",
                "unknown client",
            );
        }
        Some(false) => {
            return oauth_error(
                ctx,
                StatusCode::BAD_REQUEST,
                "invalid_request",
                "redirect_uri",
            );
        }
        Some(true) => {}
    }
    if get("response_type") != "code"
        || get("code_challenge_method") != "S256"
        || get("code_challenge").len() < 43
        || state.is_empty()
    {
        return oauth_error(
            ctx,
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "authorize parameters (PKCE S256 and state required)",
        );
    }
    let mut s = ctx.state.lock().expect("state");
    let code = s.token("code");
    s.codes.insert(
        code.clone(),
        CodeGrant {
            client_id,
            redirect_uri: redirect_uri.clone(),
            challenge: get("code_challenge"),
            scope: get("scope"),
        },
    );
    s.events.push("authorize".into());
    let mut location = url::Url::parse(&redirect_uri).expect("checked above");
    location
        .query_pairs_mut()
        .append_pair("code", &code)
        .append_pair("state", &state)
        .append_pair("iss", &ctx.issuer);
    Response::builder()
        .status(StatusCode::FOUND)
        .header("location", location.as_str())
        .body(Full::new(Bytes::new()).boxed())
        .expect("response")
}

fn token(
    ctx: &Ctx,
    form: &HashMap<String, String>,
    basic: Option<(String, String)>,
) -> Response<Body> {
    let get = |k: &str| form.get(k).cloned().unwrap_or_default();
    let client_id = basic
        .as_ref()
        .map(|(id, _)| id.clone())
        .unwrap_or_else(|| get("client_id"));
    let presented_secret = basic
        .map(|(_, s)| s)
        .or_else(|| form.get("client_secret").cloned());
    let secret_ok = {
        let s = ctx.state.lock().expect("state");
        s.clients.get(&client_id).map(|c| match &c.secret {
            None => true,
            Some(want) => presented_secret.as_deref() == Some(want.as_str()),
        })
    };
    match secret_ok {
        None => {
            return oauth_error(
                ctx,
                StatusCode::UNAUTHORIZED,
                "invalid_client",
                "unknown client",
            );
        }
        Some(false) => {
            return oauth_error(
                ctx,
                StatusCode::UNAUTHORIZED,
                "invalid_client",
                "client secret",
            );
        }
        Some(true) => {}
    }
    let grant_type = get("grant_type");
    let scope = match grant_type.as_str() {
        "authorization_code" => {
            // Single use: the code is gone whatever happens next.
            let grant = ctx.state.lock().expect("state").codes.remove(&get("code"));
            let Some(grant) = grant else {
                return oauth_error(ctx, StatusCode::BAD_REQUEST, "invalid_grant", "code");
            };
            if grant.client_id != client_id || grant.redirect_uri != get("redirect_uri") {
                return oauth_error(
                    ctx,
                    StatusCode::BAD_REQUEST,
                    "invalid_grant",
                    "code client or redirect_uri",
                );
            }
            let verifier = get("code_verifier");
            let hashed = base64::engine::general_purpose::URL_SAFE_NO_PAD
                .encode(Sha256::digest(verifier.as_bytes()));
            if verifier.len() < 43 || hashed != grant.challenge {
                return oauth_error(ctx, StatusCode::BAD_REQUEST, "invalid_grant", "pkce");
            }
            grant.scope
        }
        "refresh_token" => {
            let found = ctx
                .state
                .lock()
                .expect("state")
                .refresh
                .remove(&get("refresh_token"));
            match found {
                Some((owner, scope)) if owner == client_id => scope,
                _ => {
                    return oauth_error(
                        ctx,
                        StatusCode::BAD_REQUEST,
                        "invalid_grant",
                        "refresh_token",
                    );
                }
            }
        }
        _ => {
            return oauth_error(
                ctx,
                StatusCode::BAD_REQUEST,
                "unsupported_grant_type",
                "grant_type",
            );
        }
    };
    let mut s = ctx.state.lock().expect("state");
    let access = s.token("access");
    s.access.insert(
        access.clone(),
        AccessGrant {
            expires: Instant::now() + ctx.opts.access_ttl,
        },
    );
    let mut body = json!({
        "access_token": access,
        "token_type": "Bearer",
        "expires_in": ctx.opts.access_ttl.as_secs(),
        "scope": scope,
    });
    if ctx.opts.refresh_tokens {
        let refresh = s.token("refresh");
        s.refresh
            .insert(refresh.clone(), (client_id.clone(), scope.clone()));
        body["refresh_token"] = json!(refresh);
    }
    s.events.push(format!("token:{grant_type}"));
    reply(StatusCode::OK, body)
}

/// What a browser does with the authorization URL: follows it (the mock redirects at once
/// to the loopback redirect URI) and returns the final status and page.
pub async fn browse(url: &str) -> (u16, String) {
    crate::tls::install_tls_provider();
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client");
    let r = client.get(url).send().await.expect("GET");
    let status = r.status().as_u16();
    (status, r.text().await.unwrap_or_default())
}

/// GETs `url` without following a redirect; returns the `Location` header (or panics).
pub async fn location_of(url: &str) -> String {
    crate::tls::install_tls_provider();
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client");
    let r = client.get(url).send().await.expect("GET");
    assert_eq!(r.status().as_u16(), 302, "{url}");
    r.headers()
        .get("location")
        .and_then(|v| v.to_str().ok())
        .expect("location")
        .to_string()
}

/// An S256 PKCE pair a test chooses: (verifier, challenge).
pub fn pkce_pair(seed: &str) -> (String, String) {
    let verifier = format!("{seed:-<50}");
    let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(Sha256::digest(verifier.as_bytes()));
    (verifier, challenge)
}

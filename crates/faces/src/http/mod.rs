//! `serve --http ADDR`: MCP over streamable HTTP for many agents (see docs/http.md).
//!
//! One hyper HTTP/1.1 server in front of rmcp's streamable HTTP service, which speaks both
//! protocol generations on `/mcp`: 2025-11-25 with transport sessions (`Mcp-Session-Id`) and
//! 2026-07-28 stateless (`server/discover`, per-request metadata). Around it:
//!
//! ```text
//! accept ── over --max-connections? ──> 503 busy, connection closed
//!   │  header read timeout (also the keep-alive idle timeout)
//! route: /healthz /readyz (no checks) ─ everything else: Host, Origin (403)
//!   │  /metrics (the token, when the server requires one)
//!   │  /.well-known/oauth-protected-resource[/mcp]
//!   │  /approvals[...] (authenticated; a principal's own approvals: `approvals`)
//! /mcp: shutting down? 503 ─ authenticate (401 / 403 + WWW-Authenticate) ─ bearer removed
//!   │  Mcp-Session-Id of another principal? 404 like an unknown one
//!   │  body: read within the time and size caps (408, 413)
//!   │  a new transport session over the caps? 503 busy
//!   v
//! rmcp StreamableHttpService  ── the request's http::request::Parts carry the Principal,
//!                                 which server::principal_of reads
//! ```
//!
//! Shutdown (SIGTERM, SIGINT): `/mcp` answers 503 and `/readyz` fails; connections are still
//! accepted for `--drain-delay` (a proxy's check notices first; closing the listener at once
//! would reset the connections waiting in its backlog), then no longer; running and queued
//! executions get until the grace deadline to finish; then every connection is
//! dropped, which cancels what still runs (its workers are killed), sessions are ended and
//! the audit log flushed.

mod approvals;
pub mod auth;
pub(crate) mod guard;
mod mcp;
pub(crate) mod metrics;
mod reply;
mod shim;
mod state;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context;
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::json;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, watch};
use tokio_util::sync::CancellationToken;

use crate::composition::Core;
use crate::server::CodeExecutorServer;
use auth::{Authenticator, OAuthSettings, OAuthValidator, StaticTokens};
use guard::{HostPolicy, TransportSessions};
use mcp::mcp;
use metrics::HttpMetrics;
use reply::{Body, busy, full, json_response, rpc_error};
pub use state::HttpLimits;
use state::{State, prune_sessions};

/// The address `--http` binds without a value.
pub const DEFAULT_ADDR: &str = "127.0.0.1:3333";
/// The MCP endpoint's path.
pub const MCP_PATH: &str = "/mcp";
/// At shutdown, how long answers already produced get to reach their clients, and how long
/// cancelled executions get to record their end.
const FLUSH_WAIT: Duration = Duration::from_secs(2);
/// Connections over the cap being answered busy at once; more are closed unanswered.
const MAX_REJECTING: usize = 64;

/// What `serve --http` was asked.
#[derive(Debug, Clone, Default)]
pub struct HttpOptions {
    pub addr: String,
    /// Our URL as clients reach it (behind a proxy); default `http://ADDR`.
    pub public_url: Option<String>,
    pub tokens_file: Option<PathBuf>,
    /// The value of `CODE_EXECUTOR_HTTP_TOKENS`, if set.
    pub tokens_env: Option<String>,
    /// The authorization server whose JWTs we accept.
    pub oauth_issuer: Option<String>,
    pub oauth_jwks_url: Option<String>,
    /// The `aud` tokens must carry; default our resource URL (`PUBLIC_URL/mcp`).
    pub oauth_audience: Option<String>,
    pub oauth_scopes: Vec<String>,
    pub allowed_hosts: Vec<String>,
    pub allowed_origins: Vec<String>,
    /// A second address serving only `GET /metrics`, without a token (for a scraper).
    pub metrics_addr: Option<String>,
    pub limits: HttpLimits,
}

fn is_loopback(addr: &SocketAddr) -> bool {
    addr.ip().is_loopback()
}

/// Starts serving on `opts.addr` and returns once the server has shut down (after
/// `shutdown` resolves, or SIGTERM/SIGINT when `shutdown` is `None`).
pub async fn serve(
    core: Arc<Core>,
    opts: HttpOptions,
    shutdown: Option<tokio::sync::oneshot::Receiver<()>>,
) -> anyhow::Result<()> {
    let listener = TcpListener::bind(&opts.addr)
        .await
        .with_context(|| format!("cannot listen on {}", opts.addr))?;
    let local = listener
        .local_addr()
        .context("cannot read the bound address")?;
    let public = opts
        .public_url
        .clone()
        .unwrap_or_else(|| format!("http://{local}"))
        .trim_end_matches('/')
        .to_string();
    let resource_url = format!("{public}{MCP_PATH}");

    let mut auth = Authenticator {
        tokens: StaticTokens::default(),
        oauth: None,
    };
    if let Some(path) = &opts.tokens_file {
        auth.tokens.add_file(path)?;
    }
    if let Some(text) = &opts.tokens_env {
        auth.tokens.add(text, auth::TOKENS_ENV, true)?;
    }
    let mut resource = None;
    if let Some(issuer) = &opts.oauth_issuer {
        let v = OAuthValidator::new(OAuthSettings {
            issuer: issuer.clone(),
            jwks_url: opts.oauth_jwks_url.clone(),
            audience: opts
                .oauth_audience
                .clone()
                .unwrap_or_else(|| resource_url.clone()),
            scopes: opts.oauth_scopes.clone(),
        })?;
        match v.refresh().await {
            Ok(n) => tracing::info!(keys = n, "OAuth: loaded the authorization server's keys"),
            // Not fatal: it may come up after us; /readyz says so meanwhile.
            Err(e) => tracing::warn!("OAuth: cannot load the authorization server's keys yet: {e}"),
        }
        let mut doc = json!({
            "resource": resource_url,
            "authorization_servers": [issuer],
            "bearer_methods_supported": ["header"],
            "resource_name": "code-executor-mcp",
        });
        if !opts.oauth_scopes.is_empty() {
            doc["scopes_supported"] = json!(opts.oauth_scopes);
        }
        if opts.public_url.is_none() && local.ip().is_unspecified() {
            tracing::warn!(
                "OAuth: tokens must name {resource_url} as their audience; set --public-url to the URL clients use"
            );
        }
        resource = Some((
            format!("{public}/.well-known/oauth-protected-resource{MCP_PATH}"),
            doc,
        ));
        auth.oauth = Some(Arc::new(v));
    }
    let require_auth = auth.configured();
    if !is_loopback(&local) && !require_auth {
        anyhow::bail!(
            "refusing to serve {local} without authentication: it is not a loopback address. \
             Configure --tokens-file, {} or --oauth-issuer (see docs/http.md)",
            auth::TOKENS_ENV
        );
    }

    // The loopback names are always allowed (a rebinding attack cannot use them);
    // --allowed-host adds to them.
    let mut hosts: Vec<String> = guard::LOOPBACK_HOSTS.map(String::from).to_vec();
    hosts.extend(opts.allowed_hosts.iter().cloned());
    // The public URL's own host is always allowed.
    if let Some(h) = public
        .split_once("://")
        .map(|(_, rest)| rest.split('/').next().unwrap_or(rest).to_string())
    {
        hosts.push(h);
    }

    let ct = CancellationToken::new();
    let mut manager = LocalSessionManager::default();
    manager.session_config.keep_alive = Some(opts.limits.session_idle);
    let session_manager = Arc::new(manager);
    let factory_core = core.clone();
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(true)
        // Our own checks (guard) run before, with the configured lists.
        .disable_allowed_hosts()
        .disable_allowed_origins()
        .with_cancellation_token(ct.clone())
        .with_max_request_body_bytes(opts.limits.max_body_bytes);
    let mcp = StreamableHttpService::new(
        move || Ok(CodeExecutorServer::new(factory_core.clone())),
        session_manager.clone(),
        config,
    );
    let state = Arc::new(State {
        core: core.clone(),
        mcp,
        session_manager,
        auth,
        require_auth,
        hosts: HostPolicy::new(hosts, opts.allowed_origins.clone()),
        transport: TransportSessions::default(),
        limits: opts.limits.clone(),
        metrics: HttpMetrics::default(),
        resource,
        shutting_down: AtomicBool::new(false),
    });
    // Behind authentication, each principal answers its own approvals here.
    if state.require_auth {
        core.runtime
            .inbox()
            .serve_over_http(format!("{public}/approvals"));
    }
    // Bound before the "serving MCP" line, so that line means both listen.
    let metrics_listener = match &opts.metrics_addr {
        Some(addr) => {
            let l = TcpListener::bind(addr)
                .await
                .with_context(|| format!("cannot listen on {addr} (--metrics-addr)"))?;
            tracing::info!(
                "serving /metrics without a token on http://{}/metrics",
                l.local_addr().map(|a| a.to_string()).unwrap_or_default()
            );
            Some(tokio::spawn(serve_metrics(l, Arc::downgrade(&state))))
        }
        None => None,
    };
    tracing::info!(
        auth = if state.require_auth {
            let mut ways = vec![];
            if !state.auth.tokens.is_empty() {
                ways.push(format!("{} static token(s)", state.auth.tokens.len()));
            }
            if state.auth.oauth.is_some() {
                ways.push("OAuth".to_string());
            }
            ways.join(" + ")
        } else {
            "none (loopback; the client's declared name is its principal)".to_string()
        },
        servers = core.catalog.upstreams().names().count(),
        "serving MCP on http://{local}{MCP_PATH}"
    );
    spawn_session_sweeper(Arc::downgrade(&state));

    let shutdown = async move {
        match shutdown {
            Some(rx) => {
                let _ = rx.await;
            }
            None => {
                // Awaited outside the macro: a log level that turns `info` off must not
                // skip the wait (the server would stop as soon as it started).
                let signal = crate::shutdown::signal().await;
                tracing::info!("{signal}: shutting down");
            }
        }
    };
    tokio::pin!(shutdown);
    let slots = Arc::new(Semaphore::new(state.limits.max_connections.max(1)));
    let rejecting = Arc::new(Semaphore::new(MAX_REJECTING));
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut conns = tokio::task::JoinSet::new();
    // Set at SIGTERM when there is a drain delay: until then connections are still accepted
    // (and new requests answered 503), since closing the listener at once resets the
    // connections a proxy has already opened in its backlog, which it cannot retry safely.
    let mut signalled: Option<tokio::time::Instant> = None;
    loop {
        let drained = async {
            match signalled {
                Some(at) => {
                    let delay = state.limits.drain_delay.min(state.limits.shutdown_grace);
                    tokio::time::sleep_until(at + delay).await;
                }
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, _peer) = match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        // Out of descriptors and the like: the next accept may work.
                        tracing::warn!("accept: {e}");
                        tokio::task::yield_now().await;
                        continue;
                    }
                };
                let _ = stream.set_nodelay(true);
                match slots.clone().try_acquire_owned() {
                    Ok(permit) => {
                        let state = state.clone();
                        let stop = stop_rx.clone();
                        conns.spawn(async move {
                            serve_connection(stream, state, stop).await;
                            drop(permit);
                        });
                    }
                    Err(_) => {
                        state.metrics.connections_rejected.fetch_add(1, Ordering::Relaxed);
                        // Answering busy costs a task; under a flood, past a bound, the
                        // connection is just closed.
                        if let Ok(permit) = rejecting.clone().try_acquire_owned() {
                            tokio::spawn(async move {
                                reject_connection(stream).await;
                                drop(permit);
                            });
                        }
                    }
                }
            }
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
            () = &mut shutdown, if signalled.is_none() => {
                // No new work from here on: /mcp answers 503, /readyz fails.
                state.shutting_down.store(true, Ordering::SeqCst);
                if state.limits.drain_delay.is_zero() {
                    break;
                }
                tracing::info!(
                    drain_s = state.limits.drain_delay.as_secs(),
                    "shutting down: answering 503 while a proxy takes this server out"
                );
                signalled = Some(tokio::time::Instant::now());
            }
            () = drained => break,
        }
    }
    drop(listener);
    state.shutting_down.store(true, Ordering::SeqCst);
    let running = core.policy.admission.in_flight();
    tracing::info!(
        running,
        grace_s = state.limits.shutdown_grace.as_secs(),
        "shutting down: no new connections or requests; waiting for running executions"
    );
    // The grace counts from the signal, the drain delay included.
    let stopped_at = signalled.unwrap_or_else(tokio::time::Instant::now);
    let deadline = stopped_at + state.limits.shutdown_grace;
    while core.policy.admission.in_flight() > 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let left = core.policy.admission.in_flight();
    if left > 0 {
        tracing::warn!(
            left,
            "shutdown grace over: cancelling the executions still running"
        );
    }
    // Let the answers in flight reach their clients: connections finish their current
    // response and close. A connection holding an endless stream (a session's GET) is cut
    // after a short wait; then transport sessions are closed and whatever is left dropped
    // (a dropped request's execution is cancelled and its worker killed).
    let _ = stop_tx.send(true);
    let flush_by = tokio::time::Instant::now() + FLUSH_WAIT;
    while tokio::time::Instant::now() < flush_by {
        tokio::select! {
            next = conns.join_next() => if next.is_none() { break },
            () = tokio::time::sleep_until(flush_by) => break,
        }
    }
    ct.cancel();
    conns.abort_all();
    while conns.join_next().await.is_some() {}
    // Cancelled executions end in their own tasks: wait for their run.end lines.
    let ends_by = tokio::time::Instant::now() + FLUSH_WAIT;
    while core.policy.admission.in_flight() > 0 && tokio::time::Instant::now() < ends_by {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    if let Some(task) = metrics_listener {
        task.abort();
    }
    core.runtime.live().sessions().end_all(&core.policy.audit);
    core.policy.audit.flush();
    tracing::info!("shut down");
    Ok(())
}

/// Closes transport sessions rmcp has ended (idle) in our ownership table.
fn spawn_session_sweeper(state: std::sync::Weak<State>) {
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_secs(30)).await;
            let Some(state) = state.upgrade() else { return };
            prune_sessions(&state).await;
        }
    });
}

async fn serve_connection(stream: TcpStream, state: Arc<State>, mut stop: watch::Receiver<bool>) {
    state
        .metrics
        .connections_open
        .fetch_add(1, Ordering::Relaxed);
    state
        .metrics
        .connections_total
        .fetch_add(1, Ordering::Relaxed);
    let svc_state = state.clone();
    let svc = hyper::service::service_fn(move |req: Request<Incoming>| {
        let state = svc_state.clone();
        async move { Ok::<_, Infallible>(route(&state, req).await) }
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(state.limits.header_timeout)
        .max_buf_size(64 * 1024)
        .serve_connection(TokioIo::new(stream), svc);
    tokio::pin!(conn);
    let mut stopping = *stop.borrow();
    if stopping {
        conn.as_mut().graceful_shutdown();
    }
    loop {
        tokio::select! {
            r = conn.as_mut() => {
                if let Err(e) = r {
                    tracing::debug!("connection: {e}");
                }
                break;
            }
            changed = stop.changed(), if !stopping => {
                if changed.is_err() || *stop.borrow() {
                    stopping = true;
                    conn.as_mut().graceful_shutdown();
                }
            }
        }
    }
    state
        .metrics
        .connections_open
        .fetch_sub(1, Ordering::Relaxed);
}

/// `--metrics-addr`: `GET /metrics` without a token and nothing else, each connection in a
/// task of its own (a scraper's load); it ends with the server.
/// How long the metrics listener waits after a failed accept (out of descriptors): a
/// failing accept would otherwise spin a core.
const METRICS_ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

async fn serve_metrics(listener: TcpListener, state: std::sync::Weak<State>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            // Out of descriptors and the like: wait before the next accept instead of
            // spinning on the same error.
            tokio::time::sleep(METRICS_ACCEPT_BACKOFF).await;
            continue;
        };
        let state = state.clone();
        tokio::spawn(async move {
            let svc = hyper::service::service_fn(move |req: Request<Incoming>| {
                let state = state.clone();
                async move {
                    let Some(state) = state.upgrade() else {
                        return Ok::<_, Infallible>(busy("the server is shutting down"));
                    };
                    Ok(
                        if req.method() == Method::GET && req.uri().path() == "/metrics" {
                            metrics_page(&state).await
                        } else {
                            rpc_error(
                                StatusCode::NOT_FOUND,
                                -32000,
                                "not found: this address serves only GET /metrics",
                            )
                        },
                    )
                }
            });
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(Duration::from_secs(10))
                .serve_connection(TokioIo::new(stream), svc);
            let _ = conn.await;
        });
    }
}

async fn metrics_page(state: &State) -> Response<Body> {
    let text = state
        .metrics
        .render(&state.core, state.transport.count())
        .await;
    let mut r = Response::new(full(text));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    r
}

/// The answer to a connection over the cap: one 503 and close.
async fn reject_connection(stream: TcpStream) {
    let svc = hyper::service::service_fn(|_req: Request<Incoming>| async {
        let mut r = busy("the server is serving its maximum of connections; retry shortly");
        r.headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
        Ok::<_, Infallible>(r)
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(Duration::from_secs(5))
        .keep_alive(false)
        .serve_connection(TokioIo::new(stream), svc);
    let _ = tokio::time::timeout(Duration::from_secs(10), conn).await;
}

async fn route(state: &Arc<State>, req: Request<Incoming>) -> Response<Body> {
    let path = req.uri().path().to_string();
    // Liveness and readiness answer probes whatever Host they use, and say nothing private.
    match (req.method(), path.as_str()) {
        (&Method::GET, "/healthz") => {
            return json_response(StatusCode::OK, &json!({"status": "alive"}));
        }
        (&Method::GET, "/readyz") => return readiness(state).await,
        _ => {}
    }
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_string)
        .or_else(|| req.uri().authority().map(|a| a.to_string()));
    let origin = req
        .headers()
        .get(header::ORIGIN)
        .map(|o| o.to_str().unwrap_or("(not text)").to_string());
    if let Err(why) = state
        .hosts
        .check_host(host.as_deref())
        .and_then(|()| state.hosts.check_origin(origin.as_deref()))
    {
        state
            .metrics
            .forbidden_origin
            .fetch_add(1, Ordering::Relaxed);
        return rpc_error(StatusCode::FORBIDDEN, -32000, &format!("forbidden: {why}"));
    }
    match path.as_str() {
        "/metrics" if req.method() == Method::GET => {
            // A server that requires a token requires it here too: the page names the
            // upstream servers and shows the load (docs/http.md, "Operations").
            if state.require_auth {
                let value = req
                    .headers()
                    .get(header::AUTHORIZATION)
                    .and_then(|v| v.to_str().ok());
                if let Err(e) = state.auth.authenticate(value).await {
                    return mcp::unauthorized(state, &e);
                }
            }
            metrics_page(state).await
        }
        "/.well-known/oauth-protected-resource" | "/.well-known/oauth-protected-resource/mcp"
            if req.method() == Method::GET =>
        {
            match &state.resource {
                Some((_, doc)) => json_response(StatusCode::OK, doc),
                None => rpc_error(
                    StatusCode::NOT_FOUND,
                    -32000,
                    "this server does not use OAuth",
                ),
            }
        }
        p if approvals::is_inbox_path(p) => approvals::approvals(state, req).await,
        MCP_PATH => {
            let r = mcp(state, req).await;
            state.metrics.request(r.status().as_u16());
            r
        }
        _ => rpc_error(
            StatusCode::NOT_FOUND,
            -32000,
            &format!("not found: MCP is served on {MCP_PATH}"),
        ),
    }
}

async fn readiness(state: &State) -> Response<Body> {
    let pools = state.core.runtime.pool_stats().await;
    let mut problems: Vec<String> = vec![];
    if state.shutting_down.load(Ordering::SeqCst) {
        problems.push("shutting down".into());
    }
    // The pools' and the audit log's, which `health` reports too.
    problems.extend(state.core.runtime.problems(&pools));
    if let Some(o) = &state.auth.oauth
        && !o.has_keys()
    {
        problems.push("the authorization server's keys are not loaded".into());
    }
    let body = json!({
        "ready": problems.is_empty(),
        "problems": problems,
        "pools": pools,
    });
    json_response(
        if problems.is_empty() {
            StatusCode::OK
        } else {
            StatusCode::SERVICE_UNAVAILABLE
        },
        &body,
    )
}

//! What every connection of the HTTP server shares ([`State`]) with its caps and timeouts
//! ([`HttpLimits`]), and the pruning of transport sessions whose MCP session is gone.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use rmcp::transport::StreamableHttpService;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use serde_json::Value;

use super::auth::Authenticator;
use super::guard::{HostPolicy, TransportSessions};
use super::metrics::HttpMetrics;
use crate::composition::Core;
use crate::server::CodeExecutorServer;

/// Caps and timeouts of the HTTP layer; every one is a flag (see `cli`).
#[derive(Debug, Clone)]
pub struct HttpLimits {
    /// Largest request body; larger is 413. Code is at most 1 MiB (policy) plus JSON.
    pub max_body_bytes: usize,
    /// Connections served at once; more are answered 503 and closed.
    pub max_connections: usize,
    /// Transport sessions (2025-11-25) open at once, and per principal.
    pub max_sessions: usize,
    pub max_sessions_per_principal: usize,
    /// Time to send a request's headers; also how long an idle keep-alive connection stays.
    pub header_timeout: Duration,
    /// Time to send a request's body.
    pub body_timeout: Duration,
    /// A transport session unused this long is closed.
    pub session_idle: Duration,
    /// On shutdown, how long running executions get to finish.
    pub shutdown_grace: Duration,
    /// On shutdown, how long connections stay open at least (new requests answered 503,
    /// `/readyz` failing), so that a proxy's health check marks this server down before it
    /// closes the keep-alive connections the proxy may still send on; within the grace.
    pub drain_delay: Duration,
}

impl Default for HttpLimits {
    fn default() -> Self {
        HttpLimits {
            max_body_bytes: 4 * 1024 * 1024,
            max_connections: 512,
            max_sessions: 1024,
            max_sessions_per_principal: 64,
            header_timeout: Duration::from_secs(30),
            body_timeout: Duration::from_secs(30),
            session_idle: Duration::from_secs(30 * 60),
            shutdown_grace: Duration::from_secs(30),
            drain_delay: Duration::ZERO,
        }
    }
}

pub(super) struct State {
    pub(super) core: Arc<Core>,
    pub(super) mcp: StreamableHttpService<CodeExecutorServer, LocalSessionManager>,
    pub(super) session_manager: Arc<LocalSessionManager>,
    pub(super) auth: Authenticator,
    pub(super) require_auth: bool,
    pub(super) hosts: HostPolicy,
    pub(super) transport: TransportSessions,
    pub(super) limits: HttpLimits,
    pub(super) metrics: HttpMetrics,
    /// `resource_metadata` URL and document, with OAuth.
    pub(super) resource: Option<(String, Value)>,
    pub(super) shutting_down: AtomicBool,
}

pub(super) async fn prune_sessions(state: &State) {
    use rmcp::transport::streamable_http_server::SessionManager;
    for id in state.transport.ids() {
        let sid: rmcp::transport::streamable_http_server::SessionId = id.clone().into();
        if !state
            .session_manager
            .has_session(&sid)
            .await
            .unwrap_or(false)
        {
            state.transport.closed(&id);
        }
    }
}

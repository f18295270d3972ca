//! Our side of one upstream session, as rmcp's client handler: tool list changes, progress,
//! and the server's own requests, routed to the calling execution's client or refused.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rmcp::handler::client::progress::ProgressDispatcher;
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ClientHandler, ErrorData, RoleClient};

use super::forward::{self, Callers, Forward};

/// Our side of one upstream session: notes a changed tool list, passes progress notifications
/// to the call that asked for them, and routes the server's requests to the client of the
/// execution calling it when `forwardRequests` names the server (else refuses them: the
/// defaults).
#[derive(Clone)]
pub(super) struct Handler {
    pub(super) stale: Arc<AtomicBool>,
    /// Told this server's name when its list changed (`Upstreams::changes`).
    pub(super) changes: tokio::sync::broadcast::Sender<String>,
    /// Routes a server's progress notifications to the call that asked for them.
    pub(super) progress: ProgressDispatcher,
    pub(super) server: String,
    /// Set when this server's requests are routed.
    pub(super) forward: Option<Routing>,
}

#[derive(Clone)]
pub(super) struct Routing {
    pub(super) callers: Arc<Callers>,
    pub(super) roots: Arc<[String]>,
}

impl Handler {
    /// The execution calling this server now, to route a request to.
    fn caller(&self) -> Result<(Arc<dyn Forward>, &Routing), ErrorData> {
        let Some(routing) = &self.forward else {
            return Err(ErrorData::invalid_request(
                "code-executor-mcp does not route this server's requests (forwardRequests)",
                None,
            ));
        };
        match routing.callers.current(&self.server) {
            Some(c) => Ok((c, routing)),
            None => Err(ErrorData::invalid_request(
                "no execution is calling this server now; its requests are answered only during a tool call",
                None,
            )),
        }
    }

    async fn route<T: serde::de::DeserializeOwned>(
        &self,
        method: &str,
        params: serde_json::Value,
    ) -> Result<T, ErrorData> {
        let (caller, _) = self.caller()?;
        let answer = caller
            .ask(serde_json::json!({"method": method, "params": params}))
            .await?;
        serde_json::from_value(answer).map_err(|e| {
            ErrorData::internal_error(format!("the client's answer does not fit: {e}"), None)
        })
    }
}

#[allow(
    deprecated,
    reason = "sampling and roots are what upstreams still send"
)]
impl ClientHandler for Handler {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.stale.store(true, Ordering::Release);
        let _ = self.changes.send(self.server.clone());
    }

    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.handle_notification(params).await;
    }

    async fn create_message(
        &self,
        params: rmcp::model::CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<rmcp::model::CreateMessageResult, ErrorData> {
        let params = serde_json::to_value(params).unwrap_or_default();
        self.route("sampling/createMessage", params).await
    }

    async fn create_elicitation(
        &self,
        params: rmcp::model::ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, ErrorData> {
        let params = serde_json::to_value(params).unwrap_or_default();
        self.route("elicitation/create", params).await
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ListRootsResult, ErrorData> {
        let (caller, routing) = self.caller()?;
        if !caller.has_roots() {
            return Ok(rmcp::model::ListRootsResult::default());
        }
        let answer = caller
            .ask(serde_json::json!({"method": "roots/list"}))
            .await?;
        serde_json::from_value(forward::narrow_roots(&answer, &routing.roots)).map_err(|e| {
            ErrorData::internal_error(format!("the client's roots do not fit: {e}"), None)
        })
    }

    fn get_info(&self) -> ClientConfig {
        let caps = match self.forward {
            Some(_) => serde_json::from_value(
                serde_json::json!({"elicitation": {}, "sampling": {}, "roots": {"listChanged": false}}),
            )
            .unwrap_or_default(),
            None => ClientCapabilities::default(),
        };
        ClientConfig::new(
            caps,
            Implementation::new("code-executor-mcp", env!("CARGO_PKG_VERSION")),
        )
    }
}

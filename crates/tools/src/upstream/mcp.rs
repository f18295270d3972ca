//! MCP servers as a source of tools (stdio, streamable HTTP, legacy SSE, started by
//! `super::connect`): an rmcp client session, its list of tools (stale once the server sends
//! `notifications/tools/list_changed`), calls with progress and cancellation, and why the
//! server last refused our authorization.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use rmcp::RoleClient;
use rmcp::handler::client::progress::ProgressDispatcher;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientRequest, ServerResult, Tool,
};
use rmcp::service::{PeerRequestOptions, RunningService};

use super::handler::Handler;
use super::source::{SourceCall, SourceError, ToolSource};
use crate::oauth::AuthWatch;

/// Times a call that passes progress on yields after its answer, to take the notifications
/// the server sent just before it.
const PROGRESS_DRAIN_YIELDS: usize = 4;

/// One live session with an MCP server.
pub struct McpSource {
    pub(super) service: RunningService<RoleClient, Handler>,
    /// Set by the handler when the server says its tools changed.
    pub(super) stale: Arc<AtomicBool>,
    /// HTTP and SSE connections: why the server last refused our authorization.
    pub(super) auth: Option<Arc<AuthWatch>>,
    /// The handler's progress routes: a call that passes progress on subscribes here.
    pub(super) progress: ProgressDispatcher,
}

/// Sends `notifications/cancelled` for a request whose caller stopped waiting for it (as
/// rmcp's own `call_tool` does when its future is dropped).
struct CancelOnDrop<'a> {
    peer: &'a rmcp::Peer<RoleClient>,
    id: Option<rmcp::model::RequestId>,
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else {
            return;
        };
        let peer = self.peer.clone();
        tokio::spawn(async move {
            let _ = peer
                .notify_cancelled(rmcp::model::CancelledNotificationParam::new(
                    Some(id),
                    Some("the execution that made this call ended".into()),
                ))
                .await;
        });
    }
}

#[async_trait]
impl ToolSource for McpSource {
    fn alive(&self) -> bool {
        !self.service.is_closed() && !self.service.peer().is_transport_closed()
    }

    fn take_stale(&self) -> bool {
        self.stale.swap(false, Ordering::AcqRel)
    }

    fn mark_stale(&self) {
        self.stale.store(true, Ordering::Release);
    }

    async fn list_tools(&self) -> Result<Vec<Tool>, SourceError> {
        Ok(self.service.peer().list_all_tools().await?)
    }

    async fn call(&self, call: SourceCall<'_>) -> Result<CallToolResult, SourceError> {
        let mut params =
            CallToolRequestParams::new(call.tool.to_string()).with_arguments(call.args);
        if let Some(trace) = call.trace {
            let mut meta = rmcp::model::RequestMetaObject::new();
            trace.write_meta(&mut meta);
            params.meta = Some(meta);
        }
        let peer = self.service.peer();
        let Some(report) = call.on_progress else {
            return Ok(peer.call_tool(params).await?);
        };
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let handle = peer
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await?;
        // rmcp picks the request's progress token; the notifications for it are routed here
        // from the handler.
        let mut updates = self.progress.subscribe(handle.progress_token.clone()).await;
        let mut abandoned = CancelOnDrop {
            peer,
            id: Some(handle.id.clone()),
        };
        let answer = handle.await_response();
        tokio::pin!(answer);
        let answer = loop {
            tokio::select! {
                answer = &mut answer => break answer,
                Some(p) = futures::StreamExt::next(&mut updates) => report(&p),
            }
        };
        abandoned.id = None;
        // rmcp hands each notification to its own task, so ones the server sent just before
        // its answer may still be on their way: take what arrives while this task yields a
        // few times.
        for _ in 0..PROGRESS_DRAIN_YIELDS {
            tokio::task::yield_now().await;
            while let Some(Some(p)) =
                futures::FutureExt::now_or_never(futures::StreamExt::next(&mut updates))
            {
                report(&p);
            }
        }
        match answer? {
            ServerResult::CallToolResult(r) => Ok(r),
            _ => Err(rmcp::service::ServiceError::UnexpectedResponse.into()),
        }
    }

    fn version(&self) -> Option<String> {
        let info = self.service.peer().peer_info()?;
        info.server_info.as_ref().map(|i| i.version.clone())
    }

    fn auth_failure(&self) -> Option<String> {
        self.auth.as_ref().and_then(|w| w.failure())
    }

    fn mcp_peer(&self) -> Option<&rmcp::Peer<RoleClient>> {
        Some(self.service.peer())
    }
}

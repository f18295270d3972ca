//! The two ways a task runs: directly, through a real MCP client session to each upstream
//! (the same client we use upstream), and through our own server, served in-process to an
//! MCP client over an in-memory pipe, with the user's configuration and settings.
//! [`context_text`] is what a tool result puts into a model's context, the same rule both ways.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, CallToolResult, Tool};
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Map, Value, json};

use super::error::EvalError;
use crate::composition::Core;
use crate::server::CodeExecutorServer;

/// Buffer of the in-memory pipe between the client and our server, each way.
const PIPE_BYTES: usize = 1 << 20;
/// Longest wait for the worker pools to fill before the first timed run.
const POOL_WAIT: Duration = Duration::from_secs(20);

/// What a tool result puts into a model's context: its `content` blocks (text as it is,
/// other blocks as their JSON), or its `structuredContent` when it has no content. MCP clients
/// hand the model `content` (it carries the structured result's JSON too, for compatibility).
pub(crate) fn context_text(result: &CallToolResult) -> String {
    if result.content.is_empty() {
        return result
            .structured_content
            .as_ref()
            .map(Value::to_string)
            .unwrap_or_default();
    }
    let parts: Vec<String> = result
        .content
        .iter()
        .map(|c| match c.as_text() {
            Some(t) => t.text.clone(),
            None => serde_json::to_string(c).unwrap_or_default(),
        })
        .collect();
    parts.join("\n")
}

/// Our server, in this process, and an MCP client session to it.
pub(crate) struct Ours {
    pub core: Arc<Core>,
    client: RunningService<RoleClient, ()>,
    server: tokio::task::JoinHandle<()>,
}

impl Ours {
    pub(crate) async fn start(core: Arc<Core>) -> Result<Ours, EvalError> {
        let (client_end, server_end) = tokio::io::duplex(PIPE_BYTES);
        let (sr, sw) = tokio::io::split(server_end);
        let (cr, cw) = tokio::io::split(client_end);
        let serving = CodeExecutorServer::new(core.clone());
        let server = tokio::spawn(async move {
            if let Ok(running) = serving.serve((sr, sw)).await {
                let _ = running.waiting().await;
            }
        });
        let client = ()
            .serve((cr, cw))
            .await
            .map_err(|e| EvalError::OurServer(format!("the MCP handshake failed: {e}")))?;
        Ok(Ours {
            core,
            client,
            server,
        })
    }

    /// Our `tools/list`, as a client receives it (pinned direct tools included).
    pub(crate) async fn tools(&self) -> Result<Vec<Tool>, EvalError> {
        self.client
            .peer()
            .list_all_tools()
            .await
            .map_err(|e| EvalError::OurServer(format!("tools/list failed: {e}")))
    }

    /// One `tools/call` to our server, timed.
    pub(crate) async fn call(
        &self,
        tool: &str,
        args: Map<String, Value>,
    ) -> (Result<CallToolResult, String>, Duration) {
        let t = Instant::now();
        let r = self
            .client
            .peer()
            .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(args))
            .await
            .map_err(|e| e.to_string());
        (r, t.elapsed())
    }

    /// Waits (at most [`POOL_WAIT`]) until every worker pool holds its target, so the first
    /// timed run does not pay for workers still starting.
    pub(crate) async fn wait_for_pools(&self) {
        let t = Instant::now();
        while t.elapsed() < POOL_WAIT {
            let (r, _) = self.call("health", Map::new()).await;
            let full = r
                .ok()
                .and_then(|r| r.structured_content)
                .and_then(|h| h["pools"].as_array().cloned())
                .is_some_and(|pools| {
                    !pools.is_empty()
                        && pools
                            .iter()
                            .all(|p| p["ready"].as_u64() >= p["target"].as_u64())
                });
            if full {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub(crate) async fn stop(self) {
        let _ = self.client.cancel().await;
        self.server.abort();
        self.core
            .runtime
            .live()
            .sessions()
            .end_all(&self.core.policy.audit);
        self.core.policy.audit.flush();
    }
}

/// The arguments of an `execute_*` call with `code`.
pub(crate) fn code_args(code: &str) -> Map<String, Value> {
    match json!({ "code": code }) {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

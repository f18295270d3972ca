//! The seam every source of tools implements ([`ToolSource`]): what the pool of upstreams
//! holds once a source has started, and all it asks of it.
//!
//! The pool ([`super::Upstreams`]) does the rest the same way for every source: it starts a
//! source lazily and once (concurrent callers join the start), retries a failed start after a
//! growing pause, takes configured secrets out of whatever a source returns, drops the tools
//! a client config hides, fingerprints every definition (changed ones are held), caps
//! results, bounds each call by its deadline and words its failure. Catalog, search, policy,
//! learned types and pinned tools see only the pool, so they never know which kind of source
//! a tool came from.
//!
//! A source of a new kind is one module: a type implementing [`ToolSource`], a start
//! function that returns it with its first list of tools ([`Started`]), and one arm in
//! `connect::connect` choosing it from the entry's kind. MCP servers over stdio, streamable
//! HTTP and legacy SSE are one kind ([`super::mcp::McpSource`]).

use std::sync::Arc;

use async_trait::async_trait;
use rmcp::model::{CallToolResult, ProgressNotificationParam, Tool};

use crate::trace::TraceContext;

/// One call of a tool, as the pool hands it to its source.
pub struct SourceCall<'a> {
    pub tool: &'a str,
    pub args: serde_json::Map<String, serde_json::Value>,
    /// Gets the progress the source reports for this call, when given.
    pub on_progress: Option<&'a (dyn Fn(&ProgressNotificationParam) + Send + Sync)>,
    /// The trace context the request carries, when the source can carry one.
    pub trace: Option<&'a TraceContext>,
}

/// Why a source could not answer a call or a listing. The pool words it for the caller
/// (naming the server and tool) and adds whether the source is still alive.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// The MCP exchange failed (transport closed, an error answer, an unexpected response).
    #[error(transparent)]
    Mcp(#[from] rmcp::service::ServiceError),
    /// A source of another kind failed, in its own words.
    #[error(transparent)]
    Other(Box<dyn std::error::Error + Send + Sync>),
}

/// A source that has started: itself and the tools it listed first (before the pool cleans
/// and filters them).
pub struct Started {
    pub source: Arc<dyn ToolSource>,
    pub tools: Vec<Tool>,
}

/// A started source of tools.
#[async_trait]
pub trait ToolSource: Send + Sync {
    /// False once the source is gone (its process exited, its connection closed): the pool
    /// starts it again on next use.
    fn alive(&self) -> bool;

    /// True once since the source said its tools changed (the flag is taken): the pool then
    /// lists them again with [`ToolSource::list_tools`].
    fn take_stale(&self) -> bool;

    /// Marks the list stale again (a relisting that failed is tried on next use).
    fn mark_stale(&self);

    /// Lists every tool the source has now.
    async fn list_tools(&self) -> Result<Vec<Tool>, SourceError>;

    /// Calls one tool. The pool bounds it by the call's deadline: dropping the future
    /// abandons the call (an MCP source tells the server it was cancelled).
    async fn call(&self, call: SourceCall<'_>) -> Result<CallToolResult, SourceError>;

    /// The version the source reports of itself, if any.
    fn version(&self) -> Option<String> {
        None
    }

    /// Why the source last refused our authorization, if it did.
    fn auth_failure(&self) -> Option<String> {
        None
    }

    /// The MCP peer behind the source, for what only MCP has (skills served as resources,
    /// SEP-2640); `None` for a source of another kind.
    fn mcp_peer(&self) -> Option<&rmcp::Peer<rmcp::RoleClient>> {
        None
    }
}

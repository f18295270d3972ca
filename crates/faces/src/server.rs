//! The MCP server: our few tools, and the one mapping from outcomes to the wire.
//!
//! Tool schemas are written by hand so that the whole `tools/list` stays small (a test
//! counts its tokens). Every tool returns `structuredContent` plus a short text rendering. A
//! failed execution is a tool error (`isError: true`) carrying the same structure; only a
//! malformed request is a protocol error.
//!
//! A call's name is looked up in one table ([`tools::own_tools`]): our listed names, and the
//! product line's documents' names for the same tools, callable and never listed; the
//! arguments are turned into ours there (an unknown one is a protocol error naming the ones
//! the tool takes), and an execution called by a documents' name answers with their fields
//! too. Anything else is a pinned direct tool's name, or unknown.

mod answer;
mod args;
mod direct;
mod follow;
mod handlers;
pub mod legacy_tasks;
mod long_runs;
mod param_headers;
mod render;
mod skills;

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, GetTaskParams, GetTaskResult,
    Implementation, InitializeResult, ListToolsResult, PaginatedRequestParams, ProtocolVersion,
    ServerCapabilities, ServerConfig, Tool, UpdateTaskParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::Value;

use crate::composition::Core;
use policy::principal::Principal;
pub use render::{render_text, render_text_within};
use runtime::run::client::{ClientCaps, ClientLink, InputRoute};
use tools::own_tools::{self};

pub use tools::own_tools::tool_definitions;

/// The rmcp handler. Cheap to clone; everything lives in the shared [`Core`].
#[derive(Clone)]
pub struct CodeExecutorServer {
    core: Arc<Core>,
}

impl CodeExecutorServer {
    pub fn new(core: Arc<Core>) -> Self {
        CodeExecutorServer { core }
    }
}

/// What the client declared it can answer: in the request's `_meta` (2026-07-28), else at
/// `initialize`.
fn client_caps(context: &RequestContext<RoleServer>) -> ClientCaps {
    let caps = context
        .meta
        .client_capabilities()
        .or_else(|| context.peer.peer_info().map(|p| p.capabilities.clone()));
    match caps {
        Some(c) => ClientCaps {
            elicitation: c.elicitation.is_some(),
            sampling: c.sampling.is_some(),
            roots: c.roots.is_some(),
        },
        None => ClientCaps::default(),
    }
}

/// Who sent a request. Over HTTP the transport authenticated it (the `http` module puts the
/// [`Principal`] in the request's `http::request::Parts`, which rmcp hands over in the
/// context's extensions); otherwise (stdio, loopback HTTP without tokens) the client is
/// named by what its `initialize` declared. Everything that keeps state per caller keys on
/// this value (rate limits, sessions, parked runs, audit lines).
/// The span of one `tools/call`, under the caller's trace context: `_meta.traceparent` first,
/// else (streamable HTTP) the `traceparent` header. See `tools::trace`.
fn request_span(context: &RequestContext<RoleServer>, tool: &str) -> tools::trace::Span {
    use tools::trace::{Kind, Span, TraceContext};
    let parent = TraceContext::from_meta(&context.meta.0.0).or_else(|| {
        context
            .extensions
            .get::<http::request::Parts>()
            .and_then(|parts| TraceContext::from_headers(&parts.headers))
    });
    let mut span = Span::start(
        || format!("tools/call {tool}").into(),
        Kind::Server,
        parent.as_ref(),
    );
    if span.recording() {
        span.set("mcp.method.name", "tools/call");
        span.set("gen_ai.tool.name", tool);
        span.set("gen_ai.operation.name", "execute_tool");
        if let Some(v) = context.protocol_version() {
            span.set("mcp.protocol.version", v.as_str());
        }
        span.set(
            "network.transport",
            if context.extensions.get::<http::request::Parts>().is_some() {
                "tcp"
            } else {
                "pipe"
            },
        );
    }
    span
}

pub(crate) fn principal_of(context: &RequestContext<RoleServer>) -> Principal {
    if let Some(p) = context
        .extensions
        .get::<http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<Principal>())
    {
        return p.clone();
    }
    Principal::new(
        &context
            .peer
            .peer_info()
            .map_or_else(|| "unknown".to_string(), |p| p.client_info.name.clone()),
    )
}

impl ServerHandler for CodeExecutorServer {
    fn get_info(&self) -> ServerConfig {
        let tools = ServerCapabilities::builder()
            .enable_tools()
            .enable_tasks()
            .enable_resources()
            .enable_skills_with_directory_read();
        // Pinned direct tools come and go with their servers' lists.
        let capabilities = if self.core.catalog.direct().is_empty() {
            tools.build()
        } else {
            tools.enable_tool_list_changed().build()
        };
        InitializeResult::new(capabilities).with_server_info(Implementation::new(
            "code-executor-mcp",
            env!("CARGO_PKG_VERSION"),
        ))
    }

    async fn on_initialized(&self, context: rmcp::service::NotificationContext<RoleServer>) {
        direct::announce_changes(self.core.catalog.clone(), context.peer);
    }

    /// 2026-07-28 `subscriptions/listen`: offered for `tools/list_changed` when tools are
    /// pinned (`directTools`).
    fn accepted_subscription_filter(
        &self,
        _requested: &rmcp::model::SubscriptionFilter,
    ) -> Option<rmcp::model::SubscriptionFilter> {
        direct::accepted_filter(&self.core.catalog)
    }

    async fn listen(&self, context: rmcp::service::SubscriptionContext) -> Result<(), McpError> {
        direct::listen(self.core.catalog.clone(), context).await;
        Ok(())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        // The x-mcp-header annotations only where there are headers to mirror them into.
        let modern = context
            .protocol_version()
            .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str());
        let http = context.extensions.get::<http::request::Parts>().is_some();
        let mut tools = if modern && http {
            param_headers::annotated(tool_definitions())
        } else {
            tool_definitions()
        };
        tools.extend(direct::listed(&self.core).await);
        Ok(ListToolsResult::with_all_items(tools))
    }

    /// Skills' files (SEP-2640: `skill://` resources; see [`skills`]).
    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourcesResult, McpError> {
        Ok(skills::resources(self.core.runtime.skills()))
    }

    async fn read_resource(
        &self,
        request: rmcp::model::ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ReadResourceResponse, McpError> {
        skills::read(
            self.core.runtime.skills(),
            self.core.catalog.upstreams(),
            &request.uri,
        )
        .await
        .map(Into::into)
    }

    async fn list_skills(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListSkillsResult, McpError> {
        let upstream = skills::upstream(self.core.catalog.upstreams()).await;
        Ok(skills::list(self.core.runtime.skills(), upstream))
    }

    async fn get_skill(
        &self,
        request: rmcp::model::GetSkillRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetSkillResult, McpError> {
        let upstream = skills::upstream(self.core.catalog.upstreams()).await;
        skills::get(self.core.runtime.skills(), &upstream, &request.uri)
    }

    async fn read_resource_directory(
        &self,
        request: rmcp::model::ReadResourceDirectoryRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ReadResourceDirectoryResult, McpError> {
        skills::directory(self.core.runtime.skills(), &request.uri)
    }

    /// What rmcp checks a 2026-07-28 `tools/call`'s `Mcp-Param-*` headers against.
    fn get_tool(&self, name: &str) -> Option<Tool> {
        param_headers::annotated(tool_definitions())
            .into_iter()
            .find(|t| t.name == name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let modern = context
            .protocol_version()
            .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str());
        let caps = client_caps(&context);
        let args = Value::Object(request.arguments.unwrap_or_default());
        let principal = principal_of(&context);
        let mut span = request_span(&context, &request.name);
        let tasks = if context.meta.0.0.contains_key(legacy_tasks::TASK_META) {
            if !own_tools::lookup(&request.name).is_some_and(|n| n.tool.executes()) {
                return Err(McpError::invalid_params(
                    format!(
                        "{} does not run as a task; only execute_typescript and execute_python \
                         (by any of their names) do",
                        request.name
                    ),
                    None,
                ));
            }
            args::Tasks::Asked
        } else if context
            .client_capabilities()
            .is_some_and(|c| c.supports_tasks())
        {
            args::Tasks::Declared
        } else {
            args::Tasks::None
        };
        // rmcp only signals a client's notifications/cancelled; dropping the work here is
        // what stops it (an execution's worker is killed when its future is dropped, and the
        // cancellation is audited).
        let link = ClientLink {
            peer: context.peer.clone(),
            progress_token: context.meta.get_progress_token(),
            route: if modern {
                // The sender is made per execution (`dispatch`); this one is a placeholder.
                InputRoute::Mrtr(tokio::sync::mpsc::channel(1).0)
            } else {
                InputRoute::Inline
            },
            caps,
        };
        let work = async {
            match request.request_state.as_deref() {
                // A `wait` that answered input_required: its retry answers the run's questions.
                Some(state) if &*request.name == "wait" => {
                    let a: long_runs::WaitArgs = args::parse("wait", args)?;
                    let answers = request.input_responses.clone().unwrap_or_default();
                    Ok(long_runs::wait(&self.core, a, &principal, Some((state, answers))).await)
                }
                Some(state) => {
                    follow::resume(
                        &self.core,
                        &request.name,
                        state,
                        request.input_responses.clone().unwrap_or_default(),
                        &principal,
                    )
                    .await
                }
                None => {
                    let trace = span.context().cloned();
                    handlers::dispatch(
                        &self.core,
                        &request.name,
                        args,
                        principal.clone(),
                        link,
                        tasks,
                        trace,
                    )
                    .await
                }
            }
        };
        let mut result = tokio::select! {
            result = work => result,
            () = context.ct.cancelled() => Err(McpError::internal_error("the request was cancelled by the client", None)),
        };
        // An execution called by a name of the documents answers with their fields too.
        if let Ok(CallToolResponse::Complete(r)) = &mut result
            && own_tools::lookup(&request.name).is_some_and(|n| !n.listed && n.tool.executes())
            && let Some(v) = r.structured_content.as_mut()
        {
            own_tools::documents_fields(v);
        }
        if span.recording() {
            match &result {
                Ok(CallToolResponse::Complete(r)) if r.is_error == Some(true) => {
                    span.set("code_executor.outcome", "tool_error");
                    span.fail("the tool call ended in an error");
                }
                Ok(CallToolResponse::InputRequired(_)) => {
                    span.set("code_executor.outcome", "input_required")
                }
                Ok(CallToolResponse::Task(_)) => span.set("code_executor.outcome", "task"),
                Ok(_) => span.set("code_executor.outcome", "ok"),
                Err(e) => {
                    span.set("code_executor.outcome", "error");
                    span.set("rpc.jsonrpc.error_code", i64::from(e.code.0));
                    span.fail(&e.message);
                }
            }
        }
        result
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        long_runs::get_task(&self.core, &principal_of(&context), &request.task_id).await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        long_runs::cancel_task(
            &self.core,
            &principal_of(&context),
            &request.task_id,
            "tasks/cancel",
        )
        .await
    }

    /// The older revision's `tasks/*`, renamed by [`legacy_tasks::Shim`].
    async fn on_custom_request(
        &self,
        request: rmcp::model::CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CustomResult, McpError> {
        legacy_tasks::custom_request(
            &self.core,
            &principal_of(&context),
            &request.method,
            request.params,
        )
        .await
    }

    /// The client's answers to a task's questions (`inputRequests` of `tasks/get`); keys that
    /// name no open question are ignored.
    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        long_runs::answer_task(
            &self.core,
            &principal_of(&context),
            &request.task_id,
            request.input_responses,
        )
    }
}

#[cfg(test)]
#[path = "server_tests.rs"]
mod tests;

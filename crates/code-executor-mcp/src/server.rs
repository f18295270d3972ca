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

mod direct;
pub(crate) mod legacy_tasks;
mod long_runs;
mod param_headers;
mod render;
mod skills;

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ContentBlock,
    GetTaskParams, GetTaskResult, Implementation, InitializeResult, InputRequest, InputRequests,
    InputRequiredResult, InputResponses, ListToolsResult, PaginatedRequestParams, ProtocolVersion,
    ServerCapabilities, ServerConfig, Tool, UpdateTaskParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::composition::Core;
use policy::ToolAllowlist;
use policy::principal::Principal;
pub use render::{execution_result, execution_result_owned, render_text, render_text_within};
use runtime::ExecOutcome;
use runtime::door::{Caller, DirectCall, Mode, Start, Started, Work};
use runtime::execution::{Event, ExecRequest, Execution, SessionArg};
use runtime::parked::Kind;
use runtime::run::client::{ClientCaps, ClientLink, InputRoute};
use runtime::worker::Language;
use tools::catalog::SearchParams;
use tools::own_tools::{self, OwnTool};

pub use tools::own_tools::tool_definitions;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ExecuteArgs {
    /// The code to run; or, with `skill`, none.
    #[serde(default)]
    code: Option<String>,
    /// Run this saved skill with `args` instead of code.
    skill: Option<String>,
    args: Option<Value>,
    /// Keep `code` as a skill instead of running it.
    save: Option<SaveArgs>,
    timeout_ms: Option<u64>,
    allowed_tools: Option<Vec<String>>,
    #[serde(default)]
    limits: policy::RequestLimits,
    session: Option<String>,
    #[serde(default)]
    reset: bool,
    yield_after_ms: Option<u64>,
    #[serde(default)]
    enable_sampling: bool,
    permissions: Option<policy::access::PermissionsRequest>,
    /// Type-check the code before it runs (against the declared and inferred types of the
    /// tools it can reach); errors come back like a syntax error and nothing runs.
    check: Option<bool>,
}

/// `save` of an execute tool: a client keeps code as a skill without running it.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SaveArgs {
    name: String,
    description: String,
    input_schema: Option<Value>,
}

/// The code that runs skill `name` with `args` in `language` (a client's `skill`): the
/// execution calls it as code would, so it runs as a skill with this request's limits.
fn skill_call_code(
    language: Language,
    name: &str,
    args: Option<Value>,
) -> Result<String, McpError> {
    let args = args.unwrap_or_else(|| json!({}));
    if !args.is_object() {
        return Err(McpError::invalid_params(
            "args: a skill's arguments are an object of named values",
            None,
        ));
    }
    let name = Value::String(name.to_string());
    Ok(match language {
        Language::JavaScript => format!("return await skills[{name}]({args})"),
        // JSON is a Python literal once true, false and null are names.
        Language::Python => format!(
            "import json\nskills[{name}](json.loads({}))",
            Value::String(args.to_string())
        ),
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchArgs {
    query: String,
    detail: Option<String>,
    server: Option<String>,
    limit: Option<u32>,
    cursor: Option<String>,
}

/// `get_tool_schema`: `name` (`mcp__server__tool`, or one of our own tools), or `server`
/// and `tool` (the documents' `get_tool_signature`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SchemaArgs {
    name: Option<String>,
    server: Option<String>,
    tool: Option<String>,
}

impl SchemaArgs {
    /// The server (when named apart) and the tool's name.
    fn named(&self) -> Result<(Option<&str>, &str), McpError> {
        match (&self.name, &self.server, &self.tool) {
            (Some(name), None, None) => Ok((None, name)),
            (None, Some(server), Some(tool)) => Ok((Some(server), tool)),
            _ => Err(McpError::invalid_params(
                "give `name` (mcp__server__tool), or `server` and `tool`",
                None,
            )),
        }
    }
}

/// What else a client may call, for the error naming an unknown tool.
const PINNED_TOO: &str = ", and the upstream tools pinned by directTools";

/// The rmcp handler. Cheap to clone; everything lives in the shared [`Core`].
#[derive(Clone)]
pub struct CodeExecutorServer {
    core: Arc<Core>,
}

impl CodeExecutorServer {
    pub fn new(core: Arc<Core>) -> Self {
        CodeExecutorServer { core }
    }

    async fn dispatch(
        &self,
        name: &str,
        args: Value,
        principal: Principal,
        client: ClientLink,
        tasks: Tasks,
        trace: Option<tools::trace::TraceContext>,
    ) -> Result<CallToolResponse, McpError> {
        let named = match own_tools::named(name, PINNED_TOO) {
            Ok(named) => named,
            Err(unknown) => {
                if let Some((server, tool)) = direct::find(&self.core, name).await {
                    let call = DirectCall {
                        server,
                        tool,
                        args,
                        trace,
                    };
                    return self.call_direct(name, call, principal, client).await;
                }
                return Err(McpError::invalid_params(unknown.to_string(), None));
            }
        };
        // The documents' parameter names become ours; an unknown one is an error.
        let call = own_tools::normalize(named, args)
            .map_err(|e| McpError::invalid_params(e.to_string(), None))?;
        let args = Value::Object(call.args);
        match call.tool {
            OwnTool::Execute(code) => {
                let a: ExecuteArgs = parse(named.name, args)?;
                // A pattern that can match nothing is a mistake to name, not a silent denial.
                if let Some(problem) = a
                    .allowed_tools
                    .iter()
                    .flatten()
                    .find_map(|p| policy::pattern::problem(p))
                {
                    return Err(McpError::invalid_params(
                        format!("allowedTools: {problem}"),
                        None,
                    ));
                }
                let language = match code {
                    Some(own_tools::Code::Python) => Language::Python,
                    Some(own_tools::Code::TypeScript) | None => Language::JavaScript,
                };
                let code = match (a.code, a.skill, a.save) {
                    (Some(code), None, Some(save)) => {
                        let req = (
                            save.name,
                            code,
                            save.description,
                            Some(language.tool_language().to_string()),
                            save.input_schema,
                        );
                        let saved = runtime::host::skills::save_skill(
                            &self.core.catalog,
                            self.core.runtime.skills(),
                            &self.core.policy.audit,
                            &principal.to_string(),
                            runtime::host::skills::owner_of(&principal),
                            req,
                        )
                        .await;
                        return Ok(saved_result(saved).into());
                    }
                    (Some(code), None, None) => code,
                    (None, Some(skill), None) => skill_call_code(language, &skill, a.args)?,
                    (None, None, _) => {
                        return Err(McpError::invalid_params(
                            "give `code` to run (or to keep with `save`), or `skill` (and `args`) to run a saved skill",
                            None,
                        ));
                    }
                    (Some(_), Some(_), _) | (None, Some(_), Some(_)) => {
                        return Err(McpError::invalid_params(
                            "`skill` runs a saved skill and takes no `code` or `save`; give one or the other",
                            None,
                        ));
                    }
                };
                let req = ExecRequest {
                    code,
                    timeout_ms: a.timeout_ms,
                    allowed_tools: a.allowed_tools,
                    limits: a.limits,
                    session: a.session.as_deref().map(SessionArg::parse),
                    reset: a.reset,
                    long_run: false,
                    enable_sampling: a.enable_sampling,
                    permissions: a.permissions,
                    trace,
                    args: None,
                    check: a.check,
                };
                let core = &self.core;
                let mut client = client;
                // Every way in builds one `Start` for the runtime's one door.
                let start = |request, client, mode| Start {
                    work: Work::Code {
                        language,
                        request: Box::new(request),
                    },
                    context: Caller {
                        principal: principal.clone(),
                        client: Some(client),
                    },
                    mode,
                };
                if tasks == Tasks::Asked {
                    // A task outlives this request: its questions go to the client inline
                    // (or meet the rule's fallback).
                    client.route = InputRoute::Inline;
                    let mode = Mode::Parked {
                        kind: Kind::Task,
                        asks: None,
                        documents: !named.listed,
                    };
                    let handle = long_runs::start_task(core, start(req, client, mode));
                    return legacy_tasks::create(core, handle).await.map(Into::into);
                }
                let req = match long_runs::Answer::choose(
                    core,
                    tasks == Tasks::Declared,
                    a.yield_after_ms,
                ) {
                    long_runs::Answer::Early(early) => {
                        let mut link = client.clone();
                        // A 2026-07-28 run that outlives its request carries its questions
                        // through its handle (tasks/get, or wait); an older client's are asked
                        // inline (or meet the fallback).
                        let asks = match &client.route {
                            InputRoute::Mrtr(_) => {
                                let (tx, rx) = tokio::sync::mpsc::channel(MAX_QUESTIONS_AT_ONCE);
                                link.route = InputRoute::Mrtr(tx);
                                Some(rx)
                            }
                            InputRoute::Inline => None,
                        };
                        let mode = Mode::Parked {
                            kind: early.kind(),
                            asks,
                            documents: !named.listed,
                        };
                        match long_runs::early(core, start(req, link, mode), early).await {
                            Ok(answer) => return Ok(answer),
                            // The server chose a task it could not make: answered plainly.
                            Err(req) => req,
                        }
                    }
                    long_runs::Answer::Plain => req,
                };
                match client.route {
                    InputRoute::Inline => {
                        let mode = Mode::Plain { asks: None };
                        Ok(long_runs::plain(core, start(req, client, mode))
                            .await
                            .into())
                    }
                    InputRoute::Mrtr(_) => {
                        let (tx, rx) = tokio::sync::mpsc::channel(MAX_QUESTIONS_AT_ONCE);
                        client.route = InputRoute::Mrtr(tx);
                        let mode = Mode::Plain { asks: Some(rx) };
                        match core
                            .runtime
                            .begin(start(req, client, mode))
                            .and_then(Started::waiting)
                        {
                            Ok(execution) => self.follow(execution, &principal, name).await,
                            Err(e) => Ok(execution_result(&ExecOutcome::refused(e.info())).into()),
                        }
                    }
                }
            }
            OwnTool::Wait => {
                let a: long_runs::WaitArgs = parse(named.name, args)?;
                Ok(long_runs::wait(&self.core, a, &principal, None).await)
            }
            OwnTool::SearchTools => {
                let a: SearchArgs = parse(named.name, args)?;
                let catalog = &self.core.catalog;
                let skills =
                    runtime::host::skills::search_docs(catalog, self.core.runtime.skills()).await;
                let found = catalog
                    .search_with(
                        &tools::catalog::ToolView::default(),
                        &SearchParams {
                            query: &a.query,
                            detail: a.detail.as_deref(),
                            server: a.server.as_deref(),
                            limit: a.limit,
                            cursor: a.cursor.as_deref(),
                        },
                        &ToolAllowlist::allow_all(),
                        Some(skills),
                    )
                    .await;
                Ok(value_result(found).into())
            }
            OwnTool::GetToolSchema => {
                let a: SchemaArgs = parse(named.name, args)?;
                let (server, name) = a.named()?;
                // Our own execute tools answer with their long reference, by any of their
                // names.
                let upstreams = self.core.catalog.upstreams().names();
                let own = match own_tools::from_code(upstreams, server, name) {
                    Some(Ok(n)) => Some(n),
                    Some(Err(unknown)) => {
                        return Err(McpError::invalid_params(unknown.to_string(), None));
                    }
                    None if server.is_none() => own_tools::lookup(name),
                    None => None,
                };
                if let Some(r) = own.and_then(own_tools::own_schema) {
                    return Ok(value_result(Ok(r)).into());
                }
                Ok(value_result(self.core.catalog.schema(server, name).await).into())
            }
            OwnTool::ListServers => {
                let mut servers = self.core.catalog.servers().await;
                servers["sessions"] = self.core.runtime.live().sessions().report(&principal);
                servers["runs"] = runs_report(&self.core, &principal);
                Ok(value_result(Ok(servers)).into())
            }
            OwnTool::Health => Ok(value_result(Ok(self.core.health(&principal).await)).into()),
        }
    }

    /// A pinned direct tool's call (`directTools`): one upstream call through the runtime's
    /// door, followed like an execution (its approval may pause it on 2026-07-28).
    async fn call_direct(
        &self,
        name: &str,
        call: DirectCall,
        principal: Principal,
        mut client: ClientLink,
    ) -> Result<CallToolResponse, McpError> {
        let asks = match &client.route {
            InputRoute::Mrtr(_) => {
                let (tx, rx) = tokio::sync::mpsc::channel(MAX_QUESTIONS_AT_ONCE);
                client.route = InputRoute::Mrtr(tx);
                Some(rx)
            }
            InputRoute::Inline => None,
        };
        let start = Start {
            work: Work::Direct(call),
            context: Caller {
                principal: principal.clone(),
                client: Some(client),
            },
            mode: Mode::Plain { asks },
        };
        match self.core.runtime.begin(start).and_then(Started::waiting) {
            Ok(execution) => self.follow(execution, &principal, name).await,
            Err(e) => Ok(direct::answer(ExecOutcome::refused(e.info())).into()),
        }
    }
}

/// The parked runs `principal` holds, for `list_servers`.
fn runs_report(core: &Core, principal: &Principal) -> Value {
    core.runtime
        .live()
        .parked()
        .list(principal)
        .into_iter()
        .map(|(handle, kind, running)| {
            json!({
                "handle": handle,
                "kind": match kind {
                    runtime::parked::Kind::Task => "task",
                    runtime::parked::Kind::Yielded => "yielded",
                },
                "running": running,
            })
        })
        .collect()
}

/// What the request says about tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tasks {
    /// Nothing: the answer is a result (or a handle for `wait` with `yieldAfterMs`).
    None,
    /// The client declared the tasks extension (2026-07-28): the server may answer with a
    /// task.
    Declared,
    /// The request asked for a task (2025-11-25 task-augmented `tools/call`).
    Asked,
}

/// Questions one execution may have open at once on 2026-07-28 (each waits in its own
/// pause; more wait for a slot in the channel).
const MAX_QUESTIONS_AT_ONCE: usize = 64;
/// How long a paused execution waits for its client's retry past the answer's own timeout.
const PAUSED_GRACE: std::time::Duration = std::time::Duration::from_secs(60);

impl CodeExecutorServer {
    /// Waits for `execution`: its result, or (2026-07-28) the questions it asks, answered as
    /// `input_required` with the execution kept in the paused table until the client's retry.
    async fn follow(
        &self,
        mut execution: Execution,
        principal: &Principal,
        tool: &str,
    ) -> Result<CallToolResponse, McpError> {
        loop {
            match execution.next().await {
                Event::Done(outcome) => {
                    // Only the execute tools follow executions; any other name is a pinned
                    // direct tool's, answered with the upstream's result.
                    let executes = own_tools::lookup(tool).is_some_and(|n| n.tool.executes());
                    return Ok(if executes {
                        execution_result_owned(*outcome)
                    } else {
                        direct::answer(*outcome)
                    }
                    .into());
                }
                Event::Asks(asks) => {
                    let mut requests = InputRequests::new();
                    let mut waiting = Vec::new();
                    for (i, ask) in asks.into_iter().enumerate() {
                        match serde_json::from_value::<InputRequest>(ask.request) {
                            Ok(request) => {
                                let key = format!("q{i}");
                                requests.insert(key.clone(), request);
                                waiting.push((key, ask.reply));
                            }
                            Err(e) => {
                                tracing::warn!("a question could not be put to the client: {e}");
                                let _ = ask.reply.send(Value::Null);
                            }
                        }
                    }
                    if requests.is_empty() {
                        continue;
                    }
                    let ttl = self.core.policy.approvals.timeout() + PAUSED_GRACE;
                    let state = self
                        .core
                        .runtime
                        .live()
                        .paused()
                        .park(principal, tool, execution, waiting, ttl)
                        .map_err(|e| McpError::invalid_request(e.to_string(), None))?;
                    return Ok(InputRequiredResult::new(Some(requests), Some(state)).into());
                }
            }
        }
    }

    /// A retried `tools/call` with the `requestState` of a paused execution: its answers go to
    /// the questions, and the same execution goes on.
    async fn resume(
        &self,
        tool: &str,
        state: &str,
        responses: InputResponses,
        principal: &Principal,
    ) -> Result<CallToolResponse, McpError> {
        let resumed = self
            .core
            .runtime
            .live()
            .paused()
            .resume(principal, tool, state)
            .map_err(|e| McpError::invalid_params(e.to_string(), None))?;
        for (key, reply) in resumed.waiting {
            let _ = reply.send(responses.get(&key).cloned().unwrap_or(Value::Null));
        }
        self.follow(resumed.execution, principal, tool).await
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

/// `args` of our tool `tool` as `T`; a value of the wrong kind is an error naming the tool
/// and the parameter, and where the parameters are described.
fn parse<T: for<'de> Deserialize<'de>>(tool: &str, args: Value) -> Result<T, McpError> {
    serde_path_to_error::deserialize(args).map_err(|e| {
        let at = e.path().to_string();
        let at = if at == "." {
            String::new()
        } else {
            format!(" \"{at}\"")
        };
        McpError::invalid_params(
            format!(
                "{tool}: invalid parameter{at}: {}; get_tool_schema {{\"name\": \"{tool}\"}} \
                 describes each parameter",
                e.inner()
            ),
            None,
        )
    })
}

/// The answer to a client's `save`: what was saved as the result, or the error, in the
/// execute tools' shape.
fn saved_result(saved: Result<Value, worker_protocol::CallOutcome>) -> CallToolResult {
    let (v, is_error) = match saved {
        Ok(v) => (json!({"result": v, "logs": []}), false),
        Err(outcome) => {
            let error = match outcome {
                worker_protocol::CallOutcome::Err { error } => json!(error),
                _ => json!({"name": "Error", "message": "the skill was not saved"}),
            };
            (json!({"result": null, "logs": [], "error": error}), true)
        }
    };
    let mut r = if is_error {
        CallToolResult::error(vec![ContentBlock::text(v.to_string())])
    } else {
        CallToolResult::success(vec![ContentBlock::text(v.to_string())])
    };
    r.structured_content = Some(v);
    r
}

/// A discovery answer: the value as structured content, or a tool error with the message.
/// Servers the answer could not cover (`unavailable`) are also said in a text block of their
/// own, in plain words, after the JSON one.
fn value_result(v: Result<Value, tools::catalog::error::CatalogError>) -> CallToolResult {
    match v {
        Ok(v) => {
            let mut blocks = vec![ContentBlock::text(v.to_string())];
            if let Some(skipped) = v["unavailable"].as_array().filter(|a| !a.is_empty()) {
                let lines: Vec<&str> = skipped.iter().filter_map(Value::as_str).collect();
                blocks.push(ContentBlock::text(format!(
                    "Not covered by this answer:\n{}",
                    lines.join("\n")
                )));
            }
            let mut r = CallToolResult::success(blocks);
            r.structured_content = Some(v);
            r
        }
        Err(e) => CallToolResult::error(vec![ContentBlock::text(e.to_string())]),
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
            Tasks::Asked
        } else if context
            .client_capabilities()
            .is_some_and(|c| c.supports_tasks())
        {
            Tasks::Declared
        } else {
            Tasks::None
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
                    let a: long_runs::WaitArgs = parse("wait", args)?;
                    let answers = request.input_responses.clone().unwrap_or_default();
                    Ok(long_runs::wait(&self.core, a, &principal, Some((state, answers))).await)
                }
                Some(state) => {
                    self.resume(
                        &request.name,
                        state,
                        request.input_responses.clone().unwrap_or_default(),
                        &principal,
                    )
                    .await
                }
                None => {
                    let trace = span.context().cloned();
                    self.dispatch(&request.name, args, principal.clone(), link, tasks, trace)
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
        long_runs::get_task(&self.core, &principal_of(&context), &request.task_id)
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

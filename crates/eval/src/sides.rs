//! The two ways a task runs: directly, one upstream call per step, and through our own
//! server, served in-process to an MCP client over an in-memory pipe, with the user's
//! configuration and settings. [`context_text`] is what a tool result puts into a model's
//! context, the same rule both ways.
//!
//! A direct step is not a side door: it enters the runtime through its one door as a pinned
//! direct tool's call does (`runtime::door::Work::Direct`), so the settings' rules
//! (`policy`, `readOnly`, client configs' held-back tools), the schema check, the rate,
//! approvals and the audit line are those of a pinned direct call. `eval` has no person to
//! ask: a call that needs approval gets the configured `approvals.fallback` (deny by default),
//! and the refusal says so.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, CallToolResult, Tool};
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Map, Value, json};

use super::error::EvalError;
use faces::Core;
use faces::server::CodeExecutorServer;
use policy::principal::Principal;
use runtime::door::{Caller, DirectCall, Mode, Start, Started, Work};
use runtime::outcome::{Called, Outcome};
use worker_protocol::ErrorInfo;

/// The principal both sides run as: the name our MCP client declares to our server, and the
/// one its direct steps are made for (rules, rate, approvals remembered, audit lines).
pub(crate) const PRINCIPAL: &str = "code-executor-mcp-eval";

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
    client: RunningService<RoleClient, rmcp::model::ClientConfig>,
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
        let info = rmcp::model::ClientConfig::new(
            rmcp::model::ClientCapabilities::default(),
            rmcp::model::Implementation::new(PRINCIPAL, env!("CARGO_PKG_VERSION")),
        );
        let client = info
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
    ) -> (Result<CallToolResult, rmcp::ServiceError>, Duration) {
        let t = Instant::now();
        let r = self
            .client
            .peer()
            .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(args))
            .await;
        (r, t.elapsed())
    }

    /// One direct step: a call of `tool` of `server` through the runtime's door, as a pinned
    /// direct tool's call is made (rules, schema, rate, approval, audit), timed. Its outcome
    /// holds the upstream's result, or the refusal or failure as code would have caught it.
    pub(crate) async fn direct(
        &self,
        server: &str,
        tool: &str,
        args: Map<String, Value>,
    ) -> (Direct, Duration) {
        let t = Instant::now();
        let start = Start {
            work: Work::Direct(DirectCall {
                server: server.to_string(),
                tool: tool.to_string(),
                args: Value::Object(args),
                trace: None,
            }),
            context: Caller {
                principal: Principal::new(PRINCIPAL),
                client: None,
            },
            mode: Mode::Plain { asks: None },
        };
        let called = match self.core.runtime.begin(start).and_then(Started::waiting) {
            Ok(run) => match run.outcome().await {
                Outcome::Called(called) => called,
                Outcome::Ran(out) => Called::refused(out.error.unwrap_or_else(|| ErrorInfo {
                    name: "InternalError".into(),
                    message: "a direct call ended as code".into(),
                    stack: None,
                })),
            },
            Err(e) => Called::refused(e.info()),
        };
        (Direct::of(called), t.elapsed())
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

/// What became of one direct step.
#[derive(Debug)]
pub(crate) enum Direct {
    /// The upstream answered (its own `isError` included).
    Answered(CallToolResult),
    /// The call was not made: the settings' rules, the schema, a limit or an approval
    /// refused it (`PolicyError`, `TypeError`, `LimitError`, `ApprovalDenied`).
    Refused { error: String, message: String },
    /// It was made and failed: the server could not be reached, the tool does not exist,
    /// the call timed out.
    Failed(String),
}

impl Direct {
    fn of(called: Called) -> Direct {
        match called.result {
            Ok(result) => Direct::Answered(*result),
            Err(e) if REFUSALS.contains(&e.name.as_str()) => Direct::Refused {
                error: e.name,
                message: e.message,
            },
            Err(e) => Direct::Failed(format!("{}: {}", e.name, e.message)),
        }
    }

    /// The result a client of a pinned direct tool would get: the upstream's, or a tool error
    /// naming what refused or failed the call.
    pub(crate) fn into_result(self) -> CallToolResult {
        match self {
            Direct::Answered(r) => r,
            Direct::Refused { error, message } => {
                CallToolResult::error(vec![rmcp::model::ContentBlock::text(format!(
                    "{error}: {message}"
                ))])
            }
            Direct::Failed(text) => {
                CallToolResult::error(vec![rmcp::model::ContentBlock::text(text)])
            }
        }
    }
}

/// The error names of a call that was refused before it went out.
const REFUSALS: [&str; 4] = ["PolicyError", "TypeError", "LimitError", "ApprovalDenied"];

/// The arguments of an `execute_*` call with `code`.
pub(crate) fn code_args(code: &str) -> Map<String, Value> {
    match json!({ "code": code }) {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

//! Tasks for clients of the 2025-11-25 revision: a `tools/call` augmented with
//! `params.task`, answered with `{task}` at once, then `tasks/get`, `tasks/result` (waits for
//! the end and returns the tool's result), `tasks/list` and `tasks/cancel`.
//!
//! rmcp 3.11 speaks only the tasks extension of 2026-07-28: it drops `params.task`, parses
//! `tasks/get` and `tasks/cancel` as the newer methods (and refuses them for a client that did
//! not declare the extension), and has no `tasks/result` or `tasks/list`. So on stdio a
//! [`Shim`] sits in the transport between the pipes and rmcp (`tools::lines`; over HTTP,
//! `http::shim` applies one per transport session to request bodies and answer messages) and
//! rewrites the few messages concerned, for a session that negotiated 2025-11-25 with
//! `initialize` (in that revision a client asks for a task per request; it declares nothing
//! for it; a client of an older revision knows no tasks and is offered none):
//!
//! - the `initialize` answer gains `capabilities.tasks` (list, cancel, tools/call), and the
//!   execute tools in `tools/list` gain `execution.taskSupport: "optional"`;
//! - `params.task` of a `tools/call` moves to `params._meta[TASK_META]`, where the handler
//!   finds it; the handler answers with an empty result carrying the task under
//!   `_meta[TASK_META]`, which the shim turns into the `{task}` answer;
//! - `tasks/*` requests are renamed `code-executor-mcp/tasks/*`, which rmcp hands to
//!   [`custom_request`] as custom requests.
//!
//! Everything else passes through untouched (a substring check decides whether a line is
//! parsed at all). The rewrites are pure functions of the message, tested by value.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::ErrorData as McpError;
use rmcp::model::{CallToolResult, CustomResult};
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite};

use super::long_runs::result_object;
use crate::composition::Core;
use policy::principal::Principal;
use policy::redact::Redactor;
use runtime::error::RunError;
use runtime::parked::{Published, Snapshot};
use tools::lines::{LineFilter, LineTransport};

/// Where the shim puts a request's `task` for the handler, and the handler the task for the
/// shim.
pub(crate) const TASK_META: &str = "io.github.code-executor-mcp/legacy-task";
/// Prefix of the renamed `tasks/*` methods.
const RENAMED: &str = "code-executor-mcp/";
/// Related-task key of `tasks/result` answers.
const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";
/// The revision that brought tasks: an older client knows none, and is offered none.
const TASKS_REVISION: &str = "2025-11-25";
/// The revision from which tasks are the extension instead.
const EXTENSION_REVISION: &str = "2026-07-28";

/// What the shim knows of the session.
#[derive(Debug, Default)]
pub(crate) struct Shim {
    /// Id of the `initialize` request whose answer is awaited.
    init_id: Option<Value>,
    /// The client declared the tasks extension: it speaks the newer task methods even on an
    /// older revision, and nothing is rewritten.
    extension: bool,
    /// The session negotiated 2025-11-25 (tasks, but not yet the extension of 2026-07-28).
    legacy: bool,
    /// Ids of `tools/list` requests whose answers get `execution.taskSupport`.
    tool_lists: Vec<Value>,
}

impl Shim {
    fn active(&self) -> bool {
        self.legacy && !self.extension
    }

    /// A message from the client: the rewritten line, or `None` to pass it as it is.
    pub(crate) fn inbound(&mut self, line: &[u8]) -> Option<Vec<u8>> {
        let relevant = self.init_id.is_none() && contains(line, b"\"initialize\"")
            || self.active()
                && (contains(line, b"tasks/")
                    || contains(line, b"\"task\"")
                    || contains(line, b"tools/list"));
        if !relevant {
            return None;
        }
        let mut msg: Value = serde_json::from_slice(line).ok()?;
        let method = msg.get("method").and_then(Value::as_str)?.to_string();
        match method.as_str() {
            "initialize" => {
                self.init_id = msg.get("id").cloned();
                self.extension = msg
                    .pointer("/params/capabilities/extensions")
                    .and_then(|e| e.get(rmcp::model::TASKS_EXTENSION_ID))
                    .is_some();
                None
            }
            _ if !self.active() => None,
            "tools/list" => {
                if let Some(id) = msg.get("id") {
                    self.tool_lists.push(id.clone());
                }
                None
            }
            "tools/call" => {
                let params = msg.get_mut("params")?.as_object_mut()?;
                let task = params.remove("task")?;
                let meta = params
                    .entry("_meta")
                    .or_insert_with(|| json!({}))
                    .as_object_mut()?;
                meta.insert(TASK_META.into(), task);
                serde_json::to_vec(&msg).ok()
            }
            "tasks/get" | "tasks/result" | "tasks/list" | "tasks/cancel" => {
                msg["method"] = Value::String(format!("{RENAMED}{method}"));
                serde_json::to_vec(&msg).ok()
            }
            _ => None,
        }
    }

    /// A message to the client: the rewritten line, or `None` to pass it as it is.
    pub(crate) fn outbound(&mut self, line: &[u8]) -> Option<Vec<u8>> {
        let relevant = self.init_id.is_some()
            || self.active()
                && (contains(line, TASK_META.as_bytes())
                    || !self.tool_lists.is_empty() && contains(line, b"\"tools\""));
        if !relevant {
            return None;
        }
        let mut msg: Value = serde_json::from_slice(line).ok()?;
        let id = msg.get("id").cloned()?;
        if self.init_id.as_ref() == Some(&id) {
            self.init_id = None;
            let version = msg.pointer("/result/protocolVersion")?.as_str()?;
            // Revisions are dates, which compare as strings.
            self.legacy = (TASKS_REVISION..EXTENSION_REVISION).contains(&version);
            if !self.active() {
                return None;
            }
            let caps = msg.pointer_mut("/result/capabilities")?.as_object_mut()?;
            caps.insert(
                "tasks".into(),
                json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}),
            );
            return serde_json::to_vec(&msg).ok();
        }
        if let Some(at) = self.tool_lists.iter().position(|t| *t == id) {
            self.tool_lists.swap_remove(at);
            for tool in msg.pointer_mut("/result/tools")?.as_array_mut()? {
                if matches!(
                    tool.get("name").and_then(Value::as_str),
                    Some("execute_typescript" | "execute_python")
                ) {
                    tool["execution"] = json!({"taskSupport": "optional"});
                }
            }
            return serde_json::to_vec(&msg).ok();
        }
        let task = msg
            .pointer(&format!("/result/_meta/{}", escape(TASK_META)))?
            .clone();
        msg["result"] = json!({ "task": task });
        serde_json::to_vec(&msg).ok()
    }
}

/// Whether `needle` occurs in `hay`. Every message to and from the client passes here, a
/// large result among them: a vectorised search, not a comparison at every offset.
fn contains(hay: &[u8], needle: &[u8]) -> bool {
    memchr::memmem::find(hay, needle).is_some()
}

/// A key as one step of a JSON pointer.
fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// The longest message a client may send over stdio (rmcp's own default): a longer one is
/// read and thrown away as it arrives, and a request answered with an error with its id. With
/// the item and depth bounds of `lines::shape`, what one request can cost the server in
/// memory is bounded (README, Limits).
pub const MAX_REQUEST_BYTES: usize = 16 << 20;

/// The stdio transport rmcp serves, with a [`Shim`] on every line between it and the
/// client's pipes (`lines::LineTransport`), and every line to the client redacted last (no
/// configured secret reaches the client, whatever message carries it:
/// `policy::redact`).
pub fn transport<R, W>(
    reader: R,
    writer: W,
    redactor: Arc<Redactor>,
) -> LineTransport<rmcp::RoleServer, R, W, ClientLines>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    LineTransport::new(
        reader,
        writer,
        MAX_REQUEST_BYTES,
        Arc::new(ClientLines {
            shim: Mutex::new(Shim::default()),
            redactor,
        }),
    )
    .refusal_hint("Send less in one request")
}

/// What passes between the client's pipes and rmcp: the task shim both ways, then the
/// redaction of what goes out.
pub struct ClientLines {
    shim: Mutex<Shim>,
    redactor: Arc<Redactor>,
}

impl LineFilter for ClientLines {
    fn inbound(&self, line: &[u8]) -> Option<Vec<u8>> {
        self.shim.lock().ok().and_then(|mut s| s.inbound(line))
    }
    fn outbound(&self, line: &[u8]) -> Option<Vec<u8>> {
        let shimmed = self.shim.lock().ok().and_then(|mut s| s.outbound(line));
        self.redactor.after_rewrite(line, shimmed)
    }
}

/// The older revision's task object.
fn legacy_task(core: &Core, snap: &Snapshot) -> Value {
    let task = super::long_runs::detailed_task(core, snap).task;
    let mut v = json!({
        "taskId": task.task_id,
        "status": task.status,
        "createdAt": task.created_at,
        "lastUpdatedAt": task.last_updated_at,
        "ttl": task.ttl_ms,
        "pollInterval": task.poll_interval_ms,
    });
    if let Some(m) = task.status_message {
        v["statusMessage"] = Value::String(m);
    }
    v
}

/// A task-augmented `tools/call` of an execute tool: the run starts as a task, and the answer
/// carries the task for the shim.
pub(super) async fn create(
    core: &Core,
    handle: Result<String, RunError>,
) -> Result<CallToolResult, McpError> {
    let handle = match handle {
        Ok(h) => h,
        Err(refused) => return Err(McpError::invalid_params(refused.to_string(), None)),
    };
    match core
        .runtime
        .live()
        .parked()
        .publish_as(&handle, Duration::ZERO, true)
        .await
    {
        Some(Published::Handed(snap)) => {
            let mut r = CallToolResult::success(Vec::new());
            let mut meta = rmcp::model::MetaObject::new();
            meta.0.insert(TASK_META.into(), legacy_task(core, &snap));
            r.meta = Some(meta);
            Ok(r)
        }
        _ => Err(McpError::internal_error(
            "the task vanished before it was handed out",
            None,
        )),
    }
}

/// Methods of the protocol: a request for one that reaches [`custom_request`] had params
/// that did not parse, which is an invalid-params error, not an unknown method.
const STANDARD_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "tools/call",
    "tools/list",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
    "tasks/get",
    "tasks/list",
    "tasks/result",
    "tasks/cancel",
];

/// `tasks/get`, `tasks/result`, `tasks/list` and `tasks/cancel` of the older revision,
/// renamed by the shim.
pub(super) async fn custom_request(
    core: &Core,
    principal: &Principal,
    method: &str,
    params: Option<Value>,
) -> Result<CustomResult, McpError> {
    let parked = core.runtime.live().parked();
    let task_id = || -> Result<String, McpError> {
        params
            .as_ref()
            .and_then(|p| p.get("taskId"))
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| McpError::invalid_params("taskId (a string) is required", None))
    };
    let invalid = |e: runtime::parked::ParkError| McpError::invalid_params(e.to_string(), None);
    let value = match method.strip_prefix(RENAMED) {
        Some("tasks/get") => {
            let snap = parked.get_or_recall(principal, &task_id()?).await;
            legacy_task(core, &snap.map_err(invalid)?)
        }
        Some("tasks/result") => {
            let id = task_id()?;
            // Waits for the end (the run's deadline bounds it); a client that gives up
            // cancels this request, not the task.
            let snap = loop {
                let snap = parked
                    .finished(principal, &id, Duration::from_secs(3600))
                    .await
                    .map_err(invalid)?;
                if snap.outcome.is_some() {
                    break snap;
                }
            };
            let task = legacy_task(core, &snap);
            if task["status"] == "cancelled" {
                return Err(McpError::invalid_params(
                    format!("task {id} was cancelled; it has no result"),
                    None,
                ));
            }
            let outcome = snap
                .outcome
                .as_deref()
                .map(|o| super::long_runs::finished_result(&snap, o));
            let mut result = Value::Object(outcome.as_ref().map(result_object).unwrap_or_default());
            result["_meta"] = json!({ RELATED_TASK: { "taskId": id } });
            result
        }
        Some("tasks/list") => {
            let tasks: Vec<Value> = parked
                .tasks(principal)
                .await
                .map_err(invalid)?
                .iter()
                .map(|snap| legacy_task(core, snap))
                .collect();
            json!({ "tasks": tasks })
        }
        Some("tasks/cancel") => {
            let id = task_id()?;
            let snap = parked
                .get_or_recall(principal, &id)
                .await
                .map_err(invalid)?;
            if snap.outcome.is_some() {
                return Err(McpError::invalid_params(
                    format!("task {id} has already finished; it cannot be cancelled"),
                    None,
                ));
            }
            parked
                .cancel(principal, &id, "tasks/cancel", &core.policy.audit)
                .map_err(invalid)?;
            let snap = parked
                .finished(principal, &id, Duration::from_secs(5))
                .await
                .map_err(invalid)?;
            legacy_task(core, &snap)
        }
        // A method the protocol defines arrives here only when its params did not parse.
        _ if STANDARD_METHODS.contains(&method) => {
            let shape = match method {
                "tools/call" => {
                    " (params.name a string, params.arguments an object when given, as \
                     {\"name\": \"execute_typescript\", \"arguments\": {\"code\": \"return 1\"}})"
                }
                _ => "",
            };
            return Err(McpError::invalid_params(
                format!(
                    "{method}: its params are not what the MCP specification gives{shape}; \
                     check the request's params"
                ),
                None,
            ));
        }
        _ => {
            return Err(McpError::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                format!("method not found: {method}"),
                None,
            ));
        }
    };
    Ok(CustomResult::new(value))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(v: Value) -> Vec<u8> {
        serde_json::to_vec(&v).unwrap_or_default()
    }

    fn parsed(bytes: Option<Vec<u8>>) -> Value {
        bytes
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or(Value::Null)
    }

    fn legacy_session() -> Shim {
        let mut s = Shim::default();
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}});
        assert_eq!(s.inbound(&line(init)), None);
        let answer = json!({"jsonrpc": "2.0", "id": 0, "result": {
            "protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
            "serverInfo": {"name": "code-executor-mcp", "version": "0"}}});
        let out = parsed(s.outbound(&line(answer)));
        assert_eq!(
            out["result"]["capabilities"]["tasks"],
            json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}})
        );
        s
    }

    #[test]
    fn a_task_augmented_call_and_its_answer_are_rewritten() {
        let mut s = legacy_session();
        let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
            "name": "execute_typescript", "arguments": {"code": "1"}, "task": {"ttl": 60000}}});
        assert_eq!(
            parsed(s.inbound(&line(call))),
            json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
                "name": "execute_typescript", "arguments": {"code": "1"},
                "_meta": {TASK_META: {"ttl": 60000}}}})
        );
        let task = json!({"taskId": "run-1", "status": "working"});
        let answer = json!({"jsonrpc": "2.0", "id": 7, "result": {"content": [], "_meta": {TASK_META: task}}});
        assert_eq!(
            parsed(s.outbound(&line(answer))),
            json!({"jsonrpc": "2.0", "id": 7, "result": {"task": task}})
        );
        let get = json!({"jsonrpc": "2.0", "id": 8, "method": "tasks/result", "params": {"taskId": "run-1"}});
        assert_eq!(
            parsed(s.inbound(&line(get)))["method"],
            json!("code-executor-mcp/tasks/result")
        );
    }

    #[test]
    fn the_execute_tools_are_listed_with_task_support() {
        let mut s = legacy_session();
        let list = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"});
        assert_eq!(s.inbound(&line(list)), None);
        let answer = json!({"jsonrpc": "2.0", "id": 3, "result": {"tools": [
            {"name": "execute_python"}, {"name": "health"}]}});
        assert_eq!(
            parsed(s.outbound(&line(answer)))["result"]["tools"],
            json!([{"name": "execute_python", "execution": {"taskSupport": "optional"}},
                   {"name": "health"}])
        );
    }

    #[test]
    fn a_client_with_the_extension_keeps_the_newer_methods() {
        let mut s = Shim::default();
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
            "clientInfo": {"name": "t", "version": "1"}}});
        assert_eq!(s.inbound(&line(init)), None);
        let answer = json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": "2025-11-25", "capabilities": {}}});
        assert_eq!(s.outbound(&line(answer)), None);
        let get =
            json!({"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"taskId": "x"}});
        assert_eq!(s.inbound(&line(get)), None);
    }

    /// Revisions before 2025-11-25 have no tasks: nothing is offered or rewritten.
    #[test]
    fn an_older_session_is_offered_no_tasks() {
        for version in ["2024-11-05", "2025-03-26", "2025-06-18"] {
            let mut s = Shim::default();
            let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
            assert_eq!(s.inbound(&line(init)), None);
            let answer = json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": version, "capabilities": {"tools": {}}}});
            assert_eq!(s.outbound(&line(answer)), None, "{version}");
            let list = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"});
            assert_eq!(s.inbound(&line(list)), None);
            let answer = json!({"jsonrpc": "2.0", "id": 3, "result": {"tools": [
                {"name": "execute_typescript"}, {"name": "execute_python"}]}});
            assert_eq!(s.outbound(&line(answer)), None, "{version}");
            let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
                "name": "execute_typescript", "arguments": {"code": "1"}, "task": {"ttl": 60000}}});
            assert_eq!(s.inbound(&line(call)), None, "{version}");
        }
    }

    #[test]
    fn a_newer_session_passes_through() {
        let mut s = Shim::default();
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2026-07-28", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
        assert_eq!(s.inbound(&line(init)), None);
        let answer = json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": "2026-07-28", "capabilities": {}}});
        assert_eq!(s.outbound(&line(answer)), None);
        let get =
            json!({"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"taskId": "x"}});
        assert_eq!(s.inbound(&line(get)), None);

        let mut s = Shim::default();
        let get = json!({"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"taskId": "x",
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}});
        assert_eq!(s.inbound(&line(get)), None);
    }
}

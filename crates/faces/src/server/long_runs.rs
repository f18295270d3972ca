//! The wire side of executions that outlive their request: MCP tasks (the
//! `io.modelcontextprotocol/tasks` extension of 2026-07-28), the early return of
//! `yieldAfterMs` and the `wait` tool, and cancellation by the client.
//!
//! A client that declared tasks gets a task for an execution still running after
//! `yieldAfterMs` (or `longRuns.taskAfterMs` when it gave none): `tools/call` answers with the
//! task handle, `tasks/get` shows the status (progress and the last lines printed in the
//! status message, both also structured in `_meta`) and, once finished, the same
//! `CallToolResult` a plain call returns; `tasks/cancel` stops it. A client without tasks that
//! passed `yieldAfterMs` gets what the run printed so far and a handle for `wait`.
//! A long run of a 2026-07-28 client asks its questions (approvals, `llm.ask`) through its
//! handle: a task shows `input_required` with `inputRequests` in `tasks/get`, answered by
//! `tasks/update`; `wait` answers `input_required`, and its retry (with `inputResponses` and
//! the `requestState`) carries the answers. A task of an older client asks inline (or meets
//! the fallback).
//! Everything parked lives in `runtime::parked`; this module only maps it to the wire.

use std::time::Duration;

use rmcp::ErrorData as McpError;
use rmcp::model::{
    CallToolResponse, CallToolResult, ContentBlock, CreateTaskResult, DetailedTask, GetTaskResult,
    InputRequest, InputRequests, InputRequiredResult, InputResponses, JsonObject, MetaObject, Task,
    TaskPayload, TaskStatus,
};
use serde::Deserialize;
use serde_json::{Value, json};

use super::render::{execution_result, push_indented};
use crate::composition::Core;
use policy::audit::AuditEvent;
use policy::long_runs::{DEFAULT_WAIT_MS, MAX_WAIT_MS};
use policy::principal::Principal;
use runtime::ExecOutcome;
use runtime::door::{Start, Work};
use runtime::error::RunError;
use runtime::outcome::Outcome;
use runtime::parked::{Kind, Published, Snapshot};

/// `_meta` key of a task's structured progress in `tasks/get`.
pub(crate) const META_PROGRESS: &str = "io.github.code-executor-mcp/progress";
/// `_meta` key of a task's last log lines in `tasks/get`.
pub(crate) const META_LOGS: &str = "io.github.code-executor-mcp/logs";

/// How an execution request wants to be answered.
pub(super) enum Answer {
    /// Wait for the outcome (the client may cancel the request).
    Plain,
    /// Return early after this long: as a task, or with a handle for `wait`.
    Early(Early),
}

/// How a run that may return early does.
pub(super) struct Early {
    kind: Kind,
    after: Duration,
    /// The server chose it (a client with tasks that passed no `yieldAfterMs`): when no long
    /// run can be parked, the run is answered plainly instead of refused.
    optional: bool,
}

impl Early {
    /// What the run is parked as.
    pub(super) fn kind(&self) -> Kind {
        self.kind
    }
}

impl Answer {
    /// A task when the client declared tasks (after `yieldAfterMs`, or `taskAfterMs`), a
    /// handle for `wait` when it passed `yieldAfterMs`, else a plain answer.
    pub(super) fn choose(core: &Core, tasks: bool, yield_after_ms: Option<u64>) -> Answer {
        let limits = &core.policy.long_runs;
        if !limits.enabled() && yield_after_ms.is_none() {
            return Answer::Plain;
        }
        let after = |ms: u64| Duration::from_millis(ms.min(MAX_WAIT_MS));
        match (tasks && limits.enabled(), yield_after_ms) {
            (true, ms) => Answer::Early(Early {
                kind: Kind::Task,
                after: after(ms.unwrap_or(limits.task_after_ms)),
                optional: ms.is_none(),
            }),
            (false, Some(ms)) => Answer::Early(Early {
                kind: Kind::Yielded,
                after: after(ms),
                optional: false,
            }),
            (false, None) => Answer::Plain,
        }
    }
}

/// Runs an execution and waits for its outcome; a request the client cancels (dropped
/// here) stops it, and that is audited.
pub(super) async fn plain(core: &Core, start: Start) -> CallToolResult {
    let client = start.context.principal.clone();
    let started = match core.runtime.begin(start) {
        Ok(s) => s,
        Err(e) => return refused(e),
    };
    let mut audit = CancelAudit {
        core,
        execution: Some(started.execution.clone()),
        client,
    };
    let outcome = match started.waiting() {
        Ok(run) => run.outcome().await,
        Err(e) => Outcome::Ran(ExecOutcome::refused(e.info())),
    };
    audit.execution = None;
    super::follow::answer(outcome)
}

/// Writes `run.cancel` (by `notifications/cancelled`) when a request is dropped before its
/// execution answered: the client cancelled it.
struct CancelAudit<'a> {
    core: &'a Core,
    /// Cleared once the answer is there.
    execution: Option<String>,
    client: Principal,
}

impl Drop for CancelAudit<'_> {
    fn drop(&mut self) {
        if let Some(execution) = self.execution.take() {
            self.core.policy.audit.record_now(AuditEvent::RunCancel {
                execution,
                client: self.client.to_string(),
                by: "notifications/cancelled",
            });
        }
    }
}

/// A reserved long run whose request has not handed the handle out: dropping the request
/// (the client cancelled it) cancels the run.
struct Unpublished<'a> {
    core: &'a Core,
    handle: Option<String>,
    audit: CancelAudit<'a>,
}

impl Drop for Unpublished<'_> {
    fn drop(&mut self) {
        if let Some(h) = self.handle.take() {
            self.core.runtime.live().parked().abandon(&h);
        }
    }
}

/// Starts a long run and answers after `after`: with the outcome if it finished, else with a
/// task (`kind` Task) or with the output so far and a handle for `wait`. `asks` receives the
/// questions of a run whose client answers them through its handle (2026-07-28); the first
/// one hands the handle out at once. A run the server chose to make long that cannot be one
/// comes back as `Err` with its work, to be answered plainly.
pub(super) async fn early(
    core: &Core,
    start: Start,
    early: Early,
) -> Result<CallToolResponse, Work> {
    let Early {
        kind,
        after,
        optional,
    } = early;
    let principal = start.context.principal.clone();
    // A run the door refuses (a deadline it could not have as a long run, no room to park
    // it) that the server chose to make long is answered plainly, under the per-call limits.
    let fallback = match &start.work {
        Work::Code { .. } | Work::Skill { .. } if optional => Some(start.work.clone()),
        _ => None,
    };
    let parked = core.runtime.begin(start).and_then(|s| {
        let execution = s.execution.clone();
        Ok((execution, s.parked()?))
    });
    let (execution, handle) = match parked {
        Ok(p) => p,
        Err(e) => {
            return match fallback {
                Some(req) => Err(req),
                None => Ok(refused(e).into()),
            };
        }
    };
    let mut guard = Unpublished {
        core,
        handle: Some(handle.clone()),
        audit: CancelAudit {
            core,
            execution: Some(execution),
            client: principal,
        },
    };
    // 0 asks for the handle at once, whatever the run has done meanwhile.
    let published = core
        .runtime
        .live()
        .parked()
        .publish_as(&handle, after, after.is_zero())
        .await;
    guard.handle = None;
    guard.audit.execution = None;
    Ok(match published {
        Some(Published::Finished(outcome)) => execution_result(&outcome).into(),
        Some(Published::Handed(snap)) => match kind {
            Kind::Task => {
                let status = if snap.questions.is_empty() {
                    TaskStatus::Working
                } else {
                    TaskStatus::InputRequired
                };
                let mut task = Task::new(
                    snap.handle.clone(),
                    status,
                    snap.created_at.clone(),
                    snap.updated_at.clone(),
                )
                .with_ttl_ms(snap.ttl_ms)
                .with_poll_interval_ms(core.policy.long_runs.poll_interval_ms);
                task.status_message = Some(snap.status_message());
                CallToolResponse::Task(CreateTaskResult::new(task))
            }
            Kind::Yielded => running_result(&snap).into(),
        },
        None => refused(RunError::Internal(
            "the execution's entry vanished before it was handed out".into(),
        ))
        .into(),
    })
}

/// Starts an execution as a task at the client's request (the older revision's
/// task-augmented call): its handle, or why it was refused.
pub(super) fn start_task(core: &Core, start: Start) -> Result<String, RunError> {
    core.runtime.begin(start)?.parked()
}

/// What a running execution's answer says: the lines so far, progress, and the handle.
fn running_result(snap: &Snapshot) -> CallToolResult {
    let mut text = match snap.outcome {
        None => format!(
            "still running after {} ms: call wait with handle \"{}\" for more output and the \
             result\n",
            snap.elapsed_ms, snap.handle
        ),
        Some(_) => format!(
            "finished: call wait with handle \"{}\" for the result\n",
            snap.handle
        ),
    };
    if let Some(p) = &snap.progress {
        push_indented(&mut text, "progress: ", &p.line());
    }
    if !snap.logs.is_empty() {
        text.push_str("--- logs ---\n");
        for l in &snap.logs {
            push_indented(&mut text, &format!("[{}] ", l.level), &l.text);
        }
    }
    let mut r = CallToolResult::success(vec![ContentBlock::text(text.trim_end().to_string())]);
    r.structured_content = Some(snap.running_value());
    r
}

/// The `wait` tool's arguments.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct WaitArgs {
    handle: String,
    timeout_ms: Option<u64>,
    #[serde(default)]
    cancel: bool,
}

/// `requestState` of a `wait` answered `input_required`: names the run (bound to its client
/// in the table), so the retry's answers reach its questions.
const WAIT_STATE: &str = "wait:";

/// `wait`: new output of a parked execution, or its outcome once finished; `input_required`
/// while the run (of a 2026-07-28 client) has questions open. `answers` are a retry's
/// `inputResponses` with its `requestState`.
pub(super) async fn wait(
    core: &Core,
    args: WaitArgs,
    principal: &Principal,
    answers: Option<(&str, InputResponses)>,
) -> CallToolResponse {
    if args.timeout_ms.is_some_and(|ms| ms > MAX_WAIT_MS) {
        return refused(RunError::Range(format!(
            "timeoutMs of wait must be at most {MAX_WAIT_MS}; call wait again to wait longer"
        )))
        .into();
    }
    let parked = core.runtime.live().parked();
    if let Some((state, responses)) = answers {
        if state.strip_prefix(WAIT_STATE) != Some(args.handle.as_str()) {
            return refused(RunError::Handle(
                "requestState does not belong to this handle: retry wait with the requestState \
                 its input_required answer gave"
                    .into(),
            ))
            .into();
        }
        if let Err(e) = parked.answer(principal, &args.handle, responses) {
            return refused(e.into()).into();
        }
    }
    let limit = Duration::from_millis(args.timeout_ms.unwrap_or(DEFAULT_WAIT_MS));
    match parked
        .wait(
            principal,
            &args.handle,
            limit,
            args.cancel,
            &core.policy.audit,
        )
        .await
    {
        Ok(snap) => match &snap.outcome {
            Some(outcome) => finished_result(&snap, outcome).into(),
            None => match input_required(&snap.questions) {
                TaskPayload::InputRequired { input_requests } => InputRequiredResult::new(
                    Some(input_requests),
                    Some(format!("{WAIT_STATE}{}", snap.handle)),
                )
                .into(),
                _ => running_result(&snap).into(),
            },
        },
        Err(e) => refused(e.into()).into(),
    }
}

/// The answer of an execution that ended (or never started) with `e`.
fn refused(e: RunError) -> CallToolResult {
    execution_result(&ExecOutcome::refused(e.info()))
}

/// `tasks/get`: the task's status; progress and the last lines in the status message and in
/// `_meta`; the result once it finished.
pub(super) async fn get_task(
    core: &Core,
    principal: &Principal,
    task_id: &str,
) -> Result<GetTaskResult, McpError> {
    let snap = core
        .runtime
        .live()
        .parked()
        .get_or_recall(principal, task_id)
        .await
        .map_err(|e| McpError::invalid_params(e.to_string(), None))?;
    let mut result = GetTaskResult::new(detailed_task(core, &snap));
    let mut meta = MetaObject::new();
    meta.0.insert(
        META_PROGRESS.into(),
        serde_json::to_value(&snap.progress).unwrap_or(Value::Null),
    );
    meta.0.insert(
        META_LOGS.into(),
        json!({"last": snap.logs, "total": snap.log_count}),
    );
    result.meta = Some(meta);
    Ok(result)
}

/// The answer of a parked run that finished: the execution's, with the product line's
/// documents' fields when a name of theirs started it.
pub(super) fn finished_result(snap: &Snapshot, outcome: &ExecOutcome) -> CallToolResult {
    let mut r = execution_result(outcome);
    if snap.documents
        && let Some(v) = r.structured_content.as_mut()
    {
        tools::own_tools::documents_fields(v);
    }
    r
}

/// The task a snapshot describes.
pub(super) fn detailed_task(core: &Core, snap: &Snapshot) -> DetailedTask {
    let payload = match &snap.outcome {
        None if !snap.questions.is_empty() => input_required(&snap.questions),
        None => TaskPayload::Working,
        Some(o) if snap.cancelled_by.is_some() && o.was_cancelled() => TaskPayload::Cancelled,
        Some(o) => TaskPayload::Completed {
            result: result_object(&finished_result(snap, o)),
        },
    };
    let mut task = Task::new(
        snap.handle.clone(),
        payload.status(),
        snap.created_at.clone(),
        snap.updated_at.clone(),
    )
    .with_ttl_ms(snap.ttl_ms)
    .with_poll_interval_ms(core.policy.long_runs.poll_interval_ms);
    task.status_message = Some(match &snap.outcome {
        None => snap.status_message(),
        Some(o) => match (&o.error, snap.cancelled_by) {
            (Some(_), Some(by)) if o.was_cancelled() => format!("cancelled by {by}"),
            (Some(e), _) => format!("finished with {}: {}", e.name, first_line(&e.message)),
            (None, _) => format!("finished in {} ms", o.duration_ms),
        },
    });
    DetailedTask::new(task, payload)
}

/// The task's open questions as `inputRequests`; a question that is not one the client can
/// be asked (it never is) is left out, and with none left the task is `working`.
fn input_required(questions: &[(String, Value)]) -> TaskPayload {
    let mut input_requests = InputRequests::new();
    for (key, request) in questions {
        match serde_json::from_value::<InputRequest>(request.clone()) {
            Ok(r) => {
                input_requests.insert(key.clone(), r);
            }
            Err(e) => tracing::warn!("a question could not be put to the client: {e}"),
        }
    }
    if input_requests.is_empty() {
        TaskPayload::Working
    } else {
        TaskPayload::InputRequired { input_requests }
    }
}

/// `tasks/update`: the client's answers to the task's open questions.
pub(super) fn answer_task(
    core: &Core,
    principal: &Principal,
    task_id: &str,
    responses: InputResponses,
) -> Result<(), McpError> {
    core.runtime
        .live()
        .parked()
        .answer(principal, task_id, responses)
        .map_err(|e| McpError::invalid_params(e.to_string(), None))
}

fn first_line(s: &str) -> String {
    s.lines()
        .next()
        .unwrap_or_default()
        .chars()
        .take(200)
        .collect()
}

pub(super) fn result_object(r: &CallToolResult) -> JsonObject {
    match serde_json::to_value(r) {
        Ok(Value::Object(m)) => m,
        _ => JsonObject::new(),
    }
}

/// `tasks/cancel`: stops the run (its worker is killed, its upstream calls cancelled);
/// audited. A finished task is left as it is.
pub(super) async fn cancel_task(
    core: &Core,
    principal: &Principal,
    task_id: &str,
    by: &'static str,
) -> Result<(), McpError> {
    core.runtime
        .live()
        .parked()
        .cancel_or_recall(principal, task_id, by, &core.policy.audit)
        .await
        .map_err(|e| McpError::invalid_params(e.to_string(), None))
}

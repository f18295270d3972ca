//! Following an execution to its answer: its result, or (2026-07-28) the questions it asks,
//! answered as `input_required` with the execution kept until the client's retry, which
//! [`resume`] takes up.

use rmcp::ErrorData as McpError;
use rmcp::model::{
    CallToolResponse, CallToolResult, InputRequest, InputRequests, InputRequiredResult,
    InputResponses,
};
use serde_json::Value;

use super::direct;
use super::render::execution_result_owned;
use crate::composition::Core;
use policy::principal::Principal;
use runtime::execution::{Event, Execution};
use runtime::outcome::Outcome;

/// Questions one execution may have open at once on 2026-07-28 (each waits in its own
/// pause; more wait for a slot in the channel).
pub(super) const MAX_QUESTIONS_AT_ONCE: usize = 64;
/// How long a paused execution waits for its client's retry past the answer's own timeout.
const PAUSED_GRACE: std::time::Duration = std::time::Duration::from_secs(60);

/// Waits for `execution`: its result, or (2026-07-28) the questions it asks, answered as
/// `input_required` with the execution kept in the paused table until the client's retry.
pub(super) async fn follow(
    core: &Core,
    mut execution: Execution,
    principal: &Principal,
    tool: &str,
) -> Result<CallToolResponse, McpError> {
    loop {
        match execution.next().await {
            Event::Done(outcome) => return Ok(answer(*outcome).into()),
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
                let ttl = core.policy.approvals.timeout() + PAUSED_GRACE;
                let state = core
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

/// The answer to what ended: code's outcome as an execution's result, a pinned direct tool's
/// call as the upstream's own result.
pub(super) fn answer(outcome: Outcome) -> CallToolResult {
    match outcome {
        Outcome::Ran(out) => execution_result_owned(out),
        Outcome::Called(called) => direct::answer(called),
    }
}

/// A retried `tools/call` with the `requestState` of a paused execution: its answers go to
/// the questions, and the same execution goes on.
pub(super) async fn resume(
    core: &Core,
    tool: &str,
    state: &str,
    responses: InputResponses,
    principal: &Principal,
) -> Result<CallToolResponse, McpError> {
    let resumed = core
        .runtime
        .live()
        .paused()
        .resume(principal, tool, state)
        .map_err(|e| McpError::invalid_params(e.to_string(), None))?;
    for (key, reply) in resumed.waiting {
        let _ = reply.send(responses.get(&key).cloned().unwrap_or(Value::Null));
    }
    follow(core, resumed.execution, principal, tool).await
}

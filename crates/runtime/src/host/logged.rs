//! The bridge's tool calls and model answers through the request's call log
//! ([`crate::run::calllog`]): served from the log when the run is a replay and the log has
//! them, refused when the replay diverged, else made live and logged with what came back.
//! An approval's question and answer are logged by the gate ([`super::approval`]).

use std::future::Future;
use std::sync::atomic::Ordering;

use rmcp::model::CallToolResult;
use serde_json::{Value, json};
use worker_protocol::{CallOutcome, ErrorInfo, LlmMessage};

use super::scope::{RunScope, ok};
use crate::run::calllog::{Answered, Called, Entry, Replayed, digest};

/// What a tool call gives its caller: the server and tool, and the result; or the error.
pub(super) type CallResult = Result<(String, String, CallToolResult), ErrorInfo>;

/// A tool call to `tool` (as code named it) with arguments of digest `args`
/// ([`digest`]): from the log, or `live`, logged.
pub(super) async fn call(
    scope: &RunScope,
    tool: String,
    args: String,
    live: impl Future<Output = CallResult>,
) -> CallResult {
    let calls = &scope.ledger.calls;
    match calls.replay_call(&tool, &args) {
        Replayed::Live => {}
        Replayed::Diverged(error) => return Err(error),
        Replayed::Served { outcome, approvals } => {
            super::approval::replayed(scope, &approvals);
            // It counts as the call it was.
            scope.tool_calls.fetch_add(1, Ordering::Relaxed);
            return match outcome {
                Called::Ok {
                    server,
                    tool,
                    result,
                } => serde_json::from_value(result)
                    .map(|r| (server, tool, r))
                    .map_err(|e| ErrorInfo {
                        name: worker_protocol::CallError::Tool.name().into(),
                        message: format!("the call log's result cannot be read back: {e}"),
                        stack: None,
                    }),
                Called::Err(error) => Err(error),
            };
        }
    }
    let out = live.await;
    let failed = !matches!(&out, Ok((_, _, r)) if r.is_error != Some(true));
    let (outcome, result) = if calls.keeps_results() {
        let mut outcome = match &out {
            Ok((server, name, result)) => Called::Ok {
                server: server.clone(),
                tool: name.clone(),
                result: serde_json::to_value(result).unwrap_or(Value::Null),
            },
            Err(e) => Called::Err(e.clone()),
        };
        // The log may go to the store: personal data leaves as tokens, as from every exit.
        if let Some(exit) = &scope.pii_exit {
            match &mut outcome {
                Called::Ok { result, .. } => exit.value(result),
                Called::Err(e) => e.message = exit.text(&e.message).into_owned(),
            }
        }
        let result = match &outcome {
            Called::Ok { result, .. } => digest(result),
            Called::Err(e) => digest(&json!({"name": e.name, "message": e.message})),
        };
        (outcome, result)
    } else {
        // Not kept nor replayed: the call, not what came back (neither copied nor hashed).
        let outcome = Called::Ok {
            server: String::new(),
            tool: String::new(),
            result: Value::Null,
        };
        (outcome, String::new())
    };
    calls
        .record(Entry::Call {
            tool,
            args,
            result,
            failed,
            outcome,
        })
        .await;
    out
}

/// `llm.ask`: from the log, or asked live ([`super::llm::call`]), logged.
pub(super) async fn llm(
    scope: &RunScope,
    messages: Vec<LlmMessage>,
    system: Option<String>,
    max_tokens: Option<u32>,
    model: Option<String>,
) -> CallOutcome {
    let request = digest(&json!({
        "messages": messages, "system": system, "maxTokens": max_tokens, "model": model
    }));
    let calls = &scope.ledger.calls;
    match calls.replay_llm(&request) {
        Replayed::Live => {}
        Replayed::Diverged(error) => return CallOutcome::Err { error },
        Replayed::Served { outcome, .. } => {
            return match outcome {
                Answered::Ok(v) => ok(v),
                Answered::Text(text) => CallOutcome::Text { text },
                Answered::Err(error) => CallOutcome::Err { error },
            };
        }
    }
    let out = super::llm::call(scope, messages, system, max_tokens, model).await;
    let mut outcome = match &out {
        CallOutcome::Ok { value } => {
            Answered::Ok(serde_json::from_str(value.get()).unwrap_or(Value::Null))
        }
        CallOutcome::Text { text } => Answered::Text(text.clone()),
        CallOutcome::Err { error } => Answered::Err(error.clone()),
    };
    if let Some(exit) = &scope.pii_exit {
        match &mut outcome {
            Answered::Ok(v) => exit.value(v),
            Answered::Text(text) => *text = exit.text(text).into_owned(),
            Answered::Err(e) => e.message = exit.text(&e.message).into_owned(),
        }
    }
    let answer = digest(&serde_json::to_value(&outcome).unwrap_or(Value::Null));
    calls
        .record(Entry::Llm {
            request,
            answer,
            outcome,
        })
        .await;
    out
}

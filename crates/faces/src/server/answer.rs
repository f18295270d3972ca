//! Answers of our tools that are not executions: a client's `save`, discovery values, and
//! the parked runs `list_servers` reports.

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Value, json};

use crate::composition::Core;
use policy::principal::Principal;

/// The answer to a client's `save`: what was saved as the result, or the error, in the
/// execute tools' shape.
pub(super) fn saved_result(saved: Result<Value, worker_protocol::CallOutcome>) -> CallToolResult {
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
pub(super) fn value_result(
    v: Result<Value, tools::catalog::error::CatalogError>,
) -> CallToolResult {
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

/// The parked runs `principal` holds, for `list_servers`.
pub(super) fn runs_report(core: &Core, principal: &Principal) -> Value {
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

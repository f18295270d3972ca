//! SEP-2243 (protocol 2026-07-28, streamable HTTP): the tool arguments that carry a handle
//! are annotated with `x-mcp-header`, so clients mirror them into `Mcp-Param-*` request
//! headers and a proxy routes on the affinity key (the replica id after `@`,
//! [`policy::replica`]) without reading the body (docs/kubernetes.md, deploy/haproxy/).
//!
//! Only a 2026-07-28 client over HTTP gets the annotations in `tools/list`: over stdio, or
//! to a 2025-11-25 client, there are no such headers and the words would be paid for on every
//! turn for nothing. rmcp checks the headers of a 2026-07-28 `tools/call` against its body
//! with the annotated schema ([`annotated`], which `get_tool` answers): a header that
//! contradicts its argument, or an annotated argument sent without its header, is refused
//! (`-32020`, the SDKs list the tools again and resend).

use std::sync::Arc;

use rmcp::model::Tool;
use serde_json::{Value, json};

/// (tool, argument, header name after `Mcp-Param-`).
pub(crate) const PARAM_HEADERS: [(&str, &str, &str); 3] = [
    ("execute_typescript", "session", "Session"),
    ("execute_python", "session", "Session"),
    ("wait", "handle", "Handle"),
];

/// `tools` with the handle-carrying arguments annotated (typed `string`, which the
/// annotation requires).
pub(crate) fn annotated(mut tools: Vec<Tool>) -> Vec<Tool> {
    for tool in &mut tools {
        for (name, arg, header) in PARAM_HEADERS {
            if tool.name != name {
                continue;
            }
            let schema = Arc::make_mut(&mut tool.input_schema);
            let props = schema
                .entry("properties")
                .or_insert_with(|| Value::Object(Default::default()));
            if let Some(props) = props.as_object_mut() {
                let prop = props.entry(arg).or_insert_with(|| json!({}));
                if let Some(prop) = prop.as_object_mut() {
                    prop.insert("type".into(), json!("string"));
                    prop.insert("x-mcp-header".into(), json!(header));
                }
            }
        }
    }
    tools
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail loudly")]

    use super::*;

    #[test]
    fn the_handle_arguments_are_annotated_and_nothing_else_changes() {
        let plain = crate::server::tool_definitions();
        let tools = annotated(plain.clone());
        let find = |name: &str| tools.iter().find(|t| t.name == name).unwrap();
        for (name, arg, header) in PARAM_HEADERS {
            let prop = &find(name).input_schema["properties"][arg];
            assert_eq!(prop["x-mcp-header"], header, "{name}.{arg}");
            assert_eq!(prop["type"], "string", "{name}.{arg}");
        }
        // The other tools, and the other arguments, are as they were.
        for (a, b) in plain.iter().zip(&tools) {
            if PARAM_HEADERS.iter().all(|(n, _, _)| *n != a.name) {
                assert_eq!(a.input_schema, b.input_schema, "{}", a.name);
            }
        }
        let ts = find("execute_typescript");
        assert_eq!(
            ts.input_schema["properties"]["session"]["description"],
            "new|id: keeps state, store/load, /workspace"
        );
    }

    /// What the annotations cost a 2026-07-28 HTTP client's `tools/list` (cl100k, compact
    /// JSON, as `our_tools_list_fits_the_token_budget` counts the list everyone else gets).
    #[test]
    fn the_annotations_cost_a_few_dozen_tokens() {
        let plain = crate::server::tool_definitions();
        let bpe = tiktoken_rs::cl100k_base().unwrap();
        let count = |tools: &[Tool]| {
            bpe.encode_with_special_tokens(&serde_json::to_string(tools).unwrap())
                .len()
        };
        let (before, after) = (count(&plain), count(&annotated(plain.clone())));
        eprintln!("tools/list: {before} cl100k tokens, {after} with the x-mcp-header annotations");
        assert!(
            after > before && after - before <= 45,
            "{before} -> {after}"
        );
    }
}

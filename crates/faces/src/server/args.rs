//! Our tools' arguments as a `tools/call` gives them, each parsed with the tool and the
//! parameter named in its error, and what the request says about tasks.

use rmcp::ErrorData as McpError;
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct ExecuteArgs {
    /// The code to run; or, with `skill`, none.
    #[serde(default)]
    pub(super) code: Option<String>,
    /// Run this saved skill with `args` instead of code.
    pub(super) skill: Option<String>,
    pub(super) args: Option<Value>,
    /// Keep `code` as a skill instead of running it.
    pub(super) save: Option<SaveArgs>,
    pub(super) timeout_ms: Option<u64>,
    pub(super) allowed_tools: Option<Vec<String>>,
    #[serde(default)]
    pub(super) limits: policy::RequestLimits,
    pub(super) session: Option<String>,
    #[serde(default)]
    pub(super) reset: bool,
    pub(super) yield_after_ms: Option<u64>,
    #[serde(default)]
    pub(super) enable_sampling: bool,
    pub(super) permissions: Option<policy::access::PermissionsRequest>,
    /// Type-check the code before it runs (against the declared and inferred types of the
    /// tools it can reach); errors come back like a syntax error and nothing runs.
    pub(super) check: Option<bool>,
}

/// `save` of an execute tool: a client keeps code as a skill without running it.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct SaveArgs {
    pub(super) name: String,
    pub(super) description: String,
    pub(super) input_schema: Option<Value>,
}

/// A client's `skill` arguments (`args`): an object of named values, `{}` when absent.
pub(super) fn skill_args(args: Option<Value>) -> Result<Value, McpError> {
    let args = args.unwrap_or_else(|| json!({}));
    if !args.is_object() {
        return Err(McpError::invalid_params(
            "args: a skill's arguments are an object of named values",
            None,
        ));
    }
    Ok(args)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SearchArgs {
    pub(super) query: String,
    pub(super) detail: Option<String>,
    pub(super) server: Option<String>,
    pub(super) limit: Option<u32>,
    pub(super) cursor: Option<String>,
}

/// `get_tool_schema`: `name` (`mcp__server__tool`, or one of our own tools), or `server`
/// and `tool` (the documents' `get_tool_signature`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SchemaArgs {
    pub(super) name: Option<String>,
    pub(super) server: Option<String>,
    pub(super) tool: Option<String>,
}

impl SchemaArgs {
    /// The server (when named apart) and the tool's name.
    pub(super) fn named(&self) -> Result<(Option<&str>, &str), McpError> {
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
pub(super) const PINNED_TOO: &str = ", and the upstream tools pinned by directTools";

/// What the request says about tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Tasks {
    /// Nothing: the answer is a result (or a handle for `wait` with `yieldAfterMs`).
    None,
    /// The client declared the tasks extension (2026-07-28): the server may answer with a
    /// task.
    Declared,
    /// The request asked for a task (2025-11-25 task-augmented `tools/call`).
    Asked,
}

/// `args` of our tool `tool` as `T`; a value of the wrong kind is an error naming the tool
/// and the parameter, and where the parameters are described.
pub(super) fn parse<T: for<'de> Deserialize<'de>>(tool: &str, args: Value) -> Result<T, McpError> {
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

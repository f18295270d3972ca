//! How a tool is shown: its typed declaration (`.signature`), and the answer of a search or
//! a schema lookup at a detail level (`describe`), a learned output type apart from a
//! declared one.

use rmcp::model::Tool;
use serde_json::{Value, json};

use super::error::CatalogError;
use super::learned::INFERRED_KEY;
use super::{schema_py, schema_ts};

/// A tool's typed declaration in `dialect`: the types from its JSON Schemas, its description
/// and the call's signature, as `tools.server.tool.signature` shows it.
pub fn declaration(server: &str, tool: &Tool, dialect: worker_protocol::Dialect) -> String {
    match dialect {
        worker_protocol::Dialect::Typescript => {
            let ts = schema_ts::render(tool);
            let mut s = ts.types.join("\n");
            s.push('\n');
            s.push_str(&ts.doc);
            s.push_str(&ts.signature(server, &tool.name));
            s
        }
        worker_protocol::Dialect::Python => schema_py::render(tool).declarations(&tool.name),
    }
}

/// A skill found by a search: what its tool's `_meta.skill` holds, at the detail asked for.
pub(super) fn describe_skill(tool: &Tool, detail: Detail) -> Value {
    let full = tool
        .meta
        .as_ref()
        .and_then(|m| m.get("skill"))
        .cloned()
        .unwrap_or_else(|| json!({"name": tool.name}));
    let mut v = json!({"kind": "skill", "name": full["name"], "call": full["call"]});
    if let Some(changed) = full.get("changed") {
        v["changed"] = changed.clone();
    }
    match detail {
        Detail::Names => {}
        Detail::Summary => {
            v["description"] = json!(summary(full["description"].as_str().unwrap_or("")));
            v["origin"] = full["origin"].clone();
            v["language"] = full["language"].clone();
        }
        Detail::Full => {
            let mut all = full;
            if let Value::Object(m) = &mut all {
                m.insert("kind".into(), json!("skill"));
            }
            v = all;
        }
    }
    v
}

/// How much of each tool a search returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    Names,
    Summary,
    Full,
}

impl Detail {
    /// Ours (`names`, `summary`, `full`), or the product line's documents' words for the
    /// first two (`minimal`, `standard`: `crate::own_tools`).
    pub fn parse(s: Option<&str>) -> Result<Detail, CatalogError> {
        match s {
            None | Some("summary" | "standard") => Ok(Detail::Summary),
            Some("names" | "minimal") => Ok(Detail::Names),
            Some("full") => Ok(Detail::Full),
            Some(other) => Err(CatalogError::Detail(other.to_string())),
        }
    }
}

/// Renders one tool at a detail level.
pub fn describe(server: &str, tool: &Tool, detail: Detail) -> Value {
    let mut v = json!({
        "name": policy::qualified_name(server, &tool.name),
        "server": server,
        "tool": tool.name,
    });
    if detail != Detail::Names
        && let Some(desc) = &tool.description
    {
        v["description"] = Value::String(if detail == Detail::Summary {
            summary(desc)
        } else {
            desc.to_string()
        });
    }
    if detail == Detail::Full {
        v["inputSchema"] = Value::Object((*tool.input_schema).clone());
        if let Some(out) = &tool.output_schema {
            // A learned type is shown apart from a declared one (see `Catalog::typed`).
            let key = if out.contains_key(INFERRED_KEY) {
                "inferredOutputSchema"
            } else {
                "outputSchema"
            };
            v[key] = Value::Object((**out).clone());
        }
        let ts = schema_ts::render(tool);
        v["signature"] = Value::String(ts.signature(server, &tool.name));
        v["typescript"] = Value::String(ts.declarations(&tool.name));
    }
    v
}

/// The first sentence of a description, at most 200 characters.
fn summary(desc: &str) -> String {
    const MAX: usize = 200;
    let first = desc
        .split_inclusive(". ")
        .next()
        .unwrap_or(desc)
        .lines()
        .next()
        .unwrap_or("")
        .trim();
    if first.chars().count() > MAX {
        let cut: String = first.chars().take(MAX - 1).collect();
        format!("{cut}…")
    } else {
        first.to_string()
    }
}

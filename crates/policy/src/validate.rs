//! Arguments are checked against the tool's `inputSchema` before they are forwarded.
//!
//! Validators are compiled once per distinct schema and cached. A failure lists every failing
//! path with what was expected there, and the tool's one-line signature, so the code's author
//! can fix the call without another round trip to `getToolSchema`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rmcp::model::Tool;
use serde_json::{Map, Value};

/// Most failing paths listed in one error; more are summarised as a count.
const MAX_LISTED_ERRORS: usize = 10;
/// Compiled validators kept; beyond this the cache starts over (schemas rarely change).
const MAX_CACHED_VALIDATORS: usize = 4096;

type Compiled = Option<Arc<jsonschema::Validator>>;
/// A schema's allocation kept alive with what it compiled to.
type Entry = (Arc<Map<String, Value>>, Compiled);

/// Compiled input-schema validators, shared by every execution. Keyed by the schema's
/// allocation (a tool list is fetched once and shared), so the hot path neither serializes
/// nor hashes the schema; the cached `Arc` keeps that allocation, and so the key, alive.
/// Arguments that do not fit a tool's input schema: each error (by its path, cut, at most
/// [`MAX_LISTED_ERRORS`] and a count of the rest) and the tool's signature.
#[derive(Debug, thiserror::Error)]
#[error("invalid arguments for {tool}:\n  {}\nexpected: {expected}", errors.join("\n  "))]
pub struct InvalidArguments {
    pub tool: String,
    pub errors: Vec<String>,
    pub expected: String,
}

#[derive(Default)]
pub struct Validators {
    cache: Mutex<HashMap<usize, Entry>>,
}

impl Validators {
    /// `Ok` when `args` fit `tool`'s input schema (or the schema cannot be compiled, in which
    /// case the upstream judges the arguments itself); otherwise the error text.
    pub fn check(
        &self,
        server: &str,
        tool: &Tool,
        args: &Map<String, Value>,
    ) -> Result<(), InvalidArguments> {
        let Some(validator) = self.validator(&tool.input_schema) else {
            return Ok(());
        };
        let instance = Value::Object(args.clone());
        let errors: Vec<String> = validator
            .iter_errors(&instance)
            .map(|e| {
                let path = e.instance_path().to_string();
                let at = if path.is_empty() {
                    "arguments".to_string()
                } else {
                    format!("arguments{path}")
                };
                // The message quotes the value: a large one is cut, so that the error stays
                // readable (and small) whatever was passed.
                cut(format!("{at}: {e}"))
            })
            .collect();
        if errors.is_empty() {
            return Ok(());
        }
        let mut listed: Vec<String> = errors.iter().take(MAX_LISTED_ERRORS).cloned().collect();
        if errors.len() > MAX_LISTED_ERRORS {
            listed.push(format!("... and {} more", errors.len() - MAX_LISTED_ERRORS));
        }
        Err(InvalidArguments {
            tool: format!("mcp__{server}__{}", tool.name),
            errors: listed,
            expected: signature(tool),
        })
    }

    /// The arguments (by their path, `options.code`, `items[0]`) whose schema wants a string
    /// and that are objects or arrays, with their values: what a caller can explain better
    /// than the schema's error (which call returned that object, and which field to take).
    /// At most [`MAX_LISTED_ERRORS`]; none when the arguments fit.
    pub fn wanted_strings<'a>(
        &self,
        tool: &Tool,
        args: &'a Map<String, Value>,
    ) -> Vec<(String, &'a Value)> {
        use jsonschema::error::{TypeKind, ValidationErrorKind};
        let Some(validator) = self.validator(&tool.input_schema) else {
            return Vec::new();
        };
        let instance = Value::Object(args.clone());
        validator
            .iter_errors(&instance)
            .filter_map(|e| {
                let ValidationErrorKind::Type { kind } = e.kind() else {
                    return None;
                };
                let wants_string = match kind {
                    TypeKind::Single(t) => *t == jsonschema::JsonType::String,
                    TypeKind::Multiple(set) => set.contains(jsonschema::JsonType::String),
                };
                if !wants_string {
                    return None;
                }
                let path = e.instance_path().to_string();
                let value = at_pointer(args, &path)?;
                matches!(value, Value::Object(_) | Value::Array(_)).then(|| (dotted(&path), value))
            })
            .take(MAX_LISTED_ERRORS)
            .collect()
    }

    fn validator(&self, schema: &Arc<Map<String, Value>>) -> Compiled {
        let key = Arc::as_ptr(schema) as usize;
        if let Ok(cache) = self.cache.lock()
            && let Some((_, v)) = cache.get(&key)
        {
            return v.clone();
        }
        let compiled = match jsonschema::validator_for(&Value::Object((**schema).clone())) {
            Ok(v) => Some(Arc::new(v)),
            Err(e) => {
                tracing::warn!(
                    "an upstream input schema does not compile ({e}); its arguments are not checked"
                );
                None
            }
        };
        if let Ok(mut cache) = self.cache.lock() {
            if cache.len() >= MAX_CACHED_VALIDATORS {
                cache.clear();
            }
            cache.insert(key, (schema.clone(), compiled.clone()));
        }
        compiled
    }
}

/// Longest line of a validation error; the rest of a value it quotes is left out.
const MAX_ERROR_LINE_BYTES: usize = 400;

fn cut(mut line: String) -> String {
    if line.len() > MAX_ERROR_LINE_BYTES {
        let mut end = MAX_ERROR_LINE_BYTES;
        while !line.is_char_boundary(end) {
            end -= 1;
        }
        line.truncate(end);
        line.push_str(" ...");
    }
    line
}

/// The value at JSON pointer `path` (`/a/0/b`) in an object's members.
fn at_pointer<'a>(args: &'a Map<String, Value>, path: &str) -> Option<&'a Value> {
    let rest = path.strip_prefix('/')?;
    let (first, rest) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let first = first.replace("~1", "/").replace("~0", "~");
    args.get(&first)?.pointer(rest)
}

/// A JSON pointer as code writes the path: `/options/code` as `options.code`, `/items/0` as
/// `items[0]`.
fn dotted(path: &str) -> String {
    let mut out = String::new();
    for part in path.split('/').skip(1) {
        let part = part.replace("~1", "/").replace("~0", "~");
        if !out.is_empty() && part.bytes().all(|b| b.is_ascii_digit()) && !part.is_empty() {
            out.push_str(&format!("[{part}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&part);
        }
    }
    out
}

/// `name({a: number, b?: string})`: the top level of the input schema on one line.
pub fn signature(tool: &Tool) -> String {
    let schema = &tool.input_schema;
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let props: Vec<String> = schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| {
            p.iter()
                .map(|(k, v)| {
                    let opt = if required.contains(&k.as_str()) {
                        ""
                    } else {
                        "?"
                    };
                    format!("{k}{opt}: {}", type_name(v))
                })
                .collect()
        })
        .unwrap_or_default();
    format!("{}({{{}}})", tool.name, props.join(", "))
}

fn type_name(schema: &Value) -> String {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        return values
            .iter()
            .map(Value::to_string)
            .collect::<Vec<_>>()
            .join(" | ");
    }
    match schema.get("type") {
        Some(Value::String(t)) if t == "array" => {
            let item = schema.get("items").map_or("unknown".to_string(), type_name);
            format!("{item}[]")
        }
        Some(Value::String(t)) if t == "integer" => "number".into(),
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(" | "),
        _ if schema.get("$ref").is_some() => "object".into(),
        _ => "unknown".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool() -> Tool {
        serde_json::from_value(json!({
            "name": "create_issue",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "title": {"type": "string"},
                    "labels": {"type": "array", "items": {"type": "string"}},
                    "priority": {"enum": ["low", "high"]},
                    "count": {"type": "integer", "minimum": 1}
                },
                "required": ["title"],
                "additionalProperties": false
            }
        }))
        .unwrap()
    }

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    /// Objects and arrays where a string is wanted are found at any depth, by the path code
    /// writes; other failures are not theirs, and a huge value quoted is cut in the error.
    #[test]
    fn objects_where_strings_are_wanted_are_found() {
        let v = Validators::default();
        let tool: Tool = serde_json::from_value(json!({
            "name": "review",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "code": {"type": "string"},
                    "either": {"type": ["string", "null"]},
                    "count": {"type": "integer"},
                    "opts": {"type": "object", "properties": {"a/b": {"type": "string"}}},
                    "lines": {"type": "array", "items": {"type": "string"}}
                }
            }
        }))
        .unwrap();
        let a = args(json!({
            "code": {"content": "x".repeat(100_000)},
            "either": [1],
            "count": {"n": 1},
            "opts": {"a/b": {"deep": true}},
            "lines": ["ok", {"no": 1}]
        }));
        let found: Vec<(String, Value)> = v
            .wanted_strings(&tool, &a)
            .into_iter()
            .map(|(p, v)| (p, v.clone()))
            .collect();
        let names: Vec<&str> = found.iter().map(|(p, _)| p.as_str()).collect();
        for want in ["code", "either", "opts.a/b", "lines[1]"] {
            assert!(names.contains(&want), "{want}: {names:?}");
        }
        assert!(!names.contains(&"count"), "{names:?}");
        assert_eq!(found.len(), 4, "{names:?}");
        let err = v.check("s", &tool, &a).unwrap_err().to_string();
        assert!(err.len() < 4_000, "{} bytes", err.len());
        assert!(
            v.wanted_strings(&tool, &args(json!({"code": "fine"})))
                .is_empty()
        );
    }

    #[test]
    fn valid_arguments_pass() {
        let v = Validators::default();
        assert!(
            v.check(
                "gh",
                &tool(),
                &args(json!({"title": "x", "labels": ["a"], "count": 2}))
            )
            .is_ok()
        );
    }

    #[test]
    fn every_failing_path_is_listed_with_the_signature() {
        let v = Validators::default();
        let err = v
            .check(
                "gh",
                &tool(),
                &args(json!({"labels": [1], "priority": "urgent", "count": 0, "extra": true})),
            )
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("invalid arguments for mcp__gh__create_issue:"),
            "{err}"
        );
        for needle in [
            "\"title\" is a required property",
            "arguments/labels/0",
            "arguments/priority",
            "arguments/count",
            "extra",
        ] {
            assert!(err.contains(needle), "{needle} missing in {err}");
        }
        assert!(err.ends_with("expected: create_issue({title: string, labels?: string[], priority?: \"low\" | \"high\", count?: number})"), "{err}");
    }

    #[test]
    fn validators_are_compiled_once_per_schema() {
        let v = Validators::default();
        let t = tool();
        for _ in 0..3 {
            let _ = v.check("gh", &t, &args(json!({"title": "x"})));
        }
        assert_eq!(v.cache.lock().unwrap().len(), 1);
    }
}

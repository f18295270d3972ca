//! The output types learned per tool: for each tool that declares no `outputSchema`, the
//! [`Shape`] of every result code received from it, kept per server and per server version
//! (a new version starts afresh) in memory and in the schema cache's directory
//! (`types-v1-<server>-<key>.json`, written when a shape widens), so a later process starts
//! with them.
//!
//! What is kept is shapes only (see [`super::infer`]): no value of any result. A tool that
//! declares an `outputSchema` is never learned: the declaration always wins.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use rmcp::model::{CallToolResult, ContentBlock, Tool};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::OnceCell;

use super::cache::ToolCache;
use super::infer::Shape;
use policy::pii::detect::Detectors;

/// A result larger than this (its text, or its structured content's bytes as sent) refines
/// a type only while the tool has fewer than [`SETTLED`] results: reading it costs more than
/// a small result's shape, on a thread of its own.
const LARGE: usize = 256 * 1024;
const SETTLED: u64 = 3;
/// The key in an inferred schema's root that marks it as inferred, with the number of
/// results it was learned from.
pub const INFERRED_KEY: &str = "x-inferred";

/// What was learned of one server's tools, as the cache file holds it.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ServerTypes {
    /// The `serverInfo.version` the shapes were learned under.
    server_version: Option<String>,
    tools: BTreeMap<String, Learned>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Learned {
    results: u64,
    shape: Shape,
}

/// The learned types of every configured server.
pub struct LearnedTypes {
    cache: ToolCache,
    servers: OnceCell<Mutex<HashMap<String, ServerTypes>>>,
    /// One writer per server's file at a time; each writes the latest state.
    writing: Mutex<HashMap<String, Arc<Mutex<()>>>>,
    names: Vec<String>,
}

impl LearnedTypes {
    pub fn new(cache: ToolCache, names: Vec<String>) -> Self {
        LearnedTypes {
            cache,
            servers: OnceCell::new(),
            writing: Mutex::default(),
            names,
        }
    }

    /// Every server's file, read on first use (off the async threads).
    async fn servers(&self) -> &Mutex<HashMap<String, ServerTypes>> {
        self.servers
            .get_or_init(|| async {
                let cache = self.cache.clone();
                let names = self.names.clone();
                let loaded = tokio::task::spawn_blocking(move || {
                    names
                        .into_iter()
                        .filter_map(|n| Some((n.clone(), cache.load_types::<ServerTypes>(&n)?)))
                        .collect()
                })
                .await
                .unwrap_or_default();
                Mutex::new(loaded)
            })
            .await
    }

    /// Learns from one result of `tool` (of `server`, at `version`): what code receives
    /// from it, unless the tool declares an `outputSchema` or the result is an error.
    pub async fn observe(
        self: &Arc<Self>,
        server: &str,
        version: Option<String>,
        tool: &Tool,
        result: &CallToolResult,
        data: Option<Detectors>,
    ) {
        if tool.output_schema.is_some() || result.is_error == Some(true) {
            return;
        }
        let large = size(result) > LARGE;
        if large && self.results(server, &tool.name, version.as_deref()).await >= SETTLED {
            return;
        }
        let shape = if large {
            let copy = result.clone();
            match tokio::task::spawn_blocking(move || shape_of(&copy, data.as_ref())).await {
                Ok(s) => s,
                Err(_) => return,
            }
        } else {
            shape_of(result, data.as_ref())
        };
        let Some(shape) = shape else { return };
        let servers = self.servers().await;
        let changed = {
            let Ok(mut servers) = servers.lock() else {
                return;
            };
            let entry = servers.entry(server.to_string()).or_default();
            if version.is_some() && entry.server_version != version {
                *entry = ServerTypes {
                    server_version: version,
                    tools: BTreeMap::new(),
                };
            }
            match entry.tools.get_mut(&*tool.name) {
                Some(l) => {
                    l.results += 1;
                    let widened = l.shape.clone().merged(shape);
                    let changed = widened != l.shape;
                    l.shape = widened;
                    changed
                }
                None => {
                    entry
                        .tools
                        .insert(tool.name.to_string(), Learned { results: 1, shape });
                    true
                }
            }
        };
        if changed {
            let me = self.clone();
            let server = server.to_string();
            tokio::task::spawn_blocking(move || me.write(&server));
        }
    }

    /// Writes `server`'s latest state (blocking).
    fn write(&self, server: &str) {
        let lock = match self.writing.lock() {
            Ok(mut w) => w.entry(server.to_string()).or_default().clone(),
            Err(_) => return,
        };
        let _one = lock.lock();
        let Some(snapshot) = self
            .servers
            .get()
            .and_then(|s| s.lock().ok()?.get(server).cloned())
        else {
            return;
        };
        self.cache.store_types(server, &snapshot);
    }

    /// How many results of `tool` were learned from (under `version`, when known).
    async fn results(&self, server: &str, tool: &str, version: Option<&str>) -> u64 {
        let servers = self.servers().await;
        let Ok(servers) = servers.lock() else {
            return 0;
        };
        servers
            .get(server)
            .filter(|e| version.is_none() || e.server_version.as_deref() == version)
            .and_then(|e| e.tools.get(tool))
            .map_or(0, |l| l.results)
    }

    /// Whether anything was learned of `server`'s tools (loading the files on first use).
    pub async fn knows(&self, server: &str) -> bool {
        let servers = self.servers().await;
        servers
            .lock()
            .is_ok_and(|s| s.get(server).is_some_and(|e| !e.tools.is_empty()))
    }

    /// The output schema learned for `tool`, marked as inferred (see [`INFERRED_KEY`]);
    /// `None` when it declares one, nothing was learned (under `version`, when known), or
    /// the files are not loaded yet ([`LearnedTypes::knows`] loads them).
    pub fn schema_now(&self, server: &str, tool: &Tool, version: Option<&str>) -> Option<Value> {
        if tool.output_schema.is_some() {
            return None;
        }
        let (results, shape) = {
            let servers = self.servers.get()?.lock().ok()?;
            let entry = servers.get(server)?;
            if version.is_some() && entry.server_version.as_deref() != version {
                return None;
            }
            let l = entry.tools.get(&*tool.name)?;
            (l.results, l.shape.to_schema())
        };
        let mut schema = match shape {
            Value::Object(o) => o,
            _ => return None,
        };
        let noun = if results == 1 { "result" } else { "results" };
        schema.insert(
            "description".into(),
            Value::String(format!(
                "Inferred by code-executor-mcp from {results} {noun} (the tool declares no \
                 outputSchema): fields missing from some results are optional, and a later \
                 result may still differ."
            )),
        );
        schema.insert(INFERRED_KEY.into(), json!({ "results": results }));
        Some(Value::Object(schema))
    }
}

/// Bytes of a result's text and structured content (a bound, not exact).
fn size(result: &CallToolResult) -> usize {
    let text: usize = result
        .content
        .iter()
        .map(|c| match c {
            ContentBlock::Text(t) => t.text.len(),
            _ => 256,
        })
        .sum();
    // Structured content was decoded already; its size is guessed from its node count.
    let structured = result
        .structured_content
        .as_ref()
        .map_or(0, |s| nodes(s, 0).saturating_mul(16));
    text.saturating_add(structured)
}

fn nodes(v: &Value, acc: usize) -> usize {
    if acc > LARGE {
        return acc;
    }
    match v {
        Value::Array(a) => a.iter().fold(acc + 1, |n, x| nodes(x, n)),
        Value::Object(o) => o.values().fold(acc + 1, |n, x| nodes(x, n)),
        _ => acc + 1,
    }
}

/// The shape of what code receives for `result` (as `shape::unwrap_result` builds it):
/// structured content; else one text's JSON, or a string when it is not JSON; several
/// blocks as an array; other blocks as their MCP objects. (A text too deep for the parser's
/// bounds reaches code as text, and is learned as a string.) With `data` (personal data is
/// scanned: `policy::pii`), a key in which a detector finds a value (an address, a
/// key, a user pattern's match, also encoded) is not kept: its object becomes a map.
fn shape_of(result: &CallToolResult, data: Option<&Detectors>) -> Option<Shape> {
    let seen = std::cell::RefCell::new(HashMap::<String, bool>::new());
    let is_data = |key: &str| -> bool {
        let Some(d) = data else { return false };
        if let Some(&known) = seen.borrow().get(key) {
            return known;
        }
        let found = !d.find(key, false, &mut 0).is_empty();
        seen.borrow_mut().insert(key.to_string(), found);
        found
    };
    if let Some(s) = &result.structured_content {
        return Some(Shape::of_value_with(s, &is_data));
    }
    let block = |c: &ContentBlock| match c {
        ContentBlock::Text(t) => {
            Some(Shape::of_json_with(&t.text, &is_data).unwrap_or_else(Shape::string))
        }
        other => serde_json::to_value(other)
            .ok()
            .map(|v| Shape::of_value_with(&v, &is_data)),
    };
    match result.content.as_slice() {
        [] => Shape::of_json_with("null", &is_data),
        [one] => block(one),
        many => {
            let shapes: Option<Vec<Shape>> = many.iter().map(block).collect();
            Some(Shape::array_of(shapes?))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(v: Value) -> CallToolResult {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn what_code_receives_is_what_is_learned() {
        let text = |t: &str| result(json!({"content": [{"type": "text", "text": t}]}));
        let schema = |r: &CallToolResult| shape_of(r, None).unwrap().to_schema();
        assert_eq!(schema(&text("Echo: hi")), json!({"type": "string"}));
        assert_eq!(schema(&text(" 42 ")), json!({"type": "integer"}));
        assert_eq!(
            schema(&result(json!({"content": [{"type": "text", "text": "x"}],
                "structuredContent": {"a": true}}))),
            json!({"type": "object", "properties": {"a": {"type": "boolean"}}, "required": ["a"]})
        );
        let two = schema(&result(json!({"content": [{"type": "text", "text": "a"},
            {"type": "image", "data": "AAA=", "mimeType": "image/png"}]})));
        assert_eq!(two["type"], "array", "{two}");
        assert!(!two.to_string().contains("AAA="), "{two}");
        assert_eq!(
            schema(&result(json!({"content": []}))),
            json!({"type": "null"})
        );
    }

    /// With personal data scanned, a key in which a detector finds a value is not kept, even
    /// one that reads as a field name (`sk-...`, `xoxb-...`, a user pattern's match, a
    /// percent-encoded address): its object is typed as a map; ordinary keys stay fields.
    #[test]
    fn keys_that_are_personal_data_are_not_kept() {
        let detectors = Detectors::new(
            &["email".into(), "secret".into(), "phone".into()],
            &[("PROJECT".into(), "proj-[a-z]{6}".into())],
        )
        .unwrap();
        for key in [
            "sk-abcdefghijklmnopqrstuvwx",
            "xoxb-abcdefghijklmnopqr",
            "proj-abcdef",
            "judy%40example.com",
            "judy&commat;example.com",
        ] {
            let value = json!({"byKey": {key: {"n": 1}, "plain": {"n": 2}}, "total": 1});
            for r in [
                result(json!({"content": [{"type": "text", "text": value.to_string()}]})),
                result(json!({"content": [], "structuredContent": value})),
            ] {
                let got = shape_of(&r, Some(&detectors)).unwrap();
                let stored = serde_json::to_string(&got).unwrap();
                let schema = got.to_schema().to_string();
                for text in [&stored, &schema] {
                    assert!(!text.contains(key), "{key}: {text}");
                }
                assert!(schema.contains("additionalProperties"), "{key}: {schema}");
                assert!(schema.contains("\"total\""), "{schema}");
            }
        }
    }
}

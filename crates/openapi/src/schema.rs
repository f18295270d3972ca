//! OpenAPI Schema Objects to JSON Schema (2020-12): `$ref`s inlined while that is cheap and
//! finite; a reference met again inside itself (a cycle), or past the inlining budget,
//! becomes a `$defs` entry and a `$ref` to it. 3.0's `nullable` becomes a type array,
//! boolean `exclusiveMinimum`s become numbers, `example` becomes `examples`; `readOnly`
//! properties leave input schemas and `writeOnly` ones leave output schemas. Vendor
//! extensions, `discriminator`, `xml` and `externalDocs` are dropped; descriptions lose
//! invisible characters.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value, json};

use crate::error::{OperationError, RefError};
use crate::names::{clean_text, sanitize};
use crate::refs::{DocId, Docs, MAX_CHAIN};

/// What the schema describes: what the caller sends, or what the server answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Direction {
    Input,
    Output,
}

/// Values a tool's schema may hold.
const MAX_NODES: usize = 250_000;
/// After this many values, references are no longer inlined (each becomes one `$defs` entry).
const INLINE_BUDGET: usize = 20_000;
/// Schema nesting past which references are no longer inlined.
const MAX_INLINE_DEPTH: usize = 48;
/// Schema nesting refused outright (the document's own depth is bounded when parsed).
const MAX_DEPTH: usize = 256;
/// Longest description kept in a schema.
const MAX_DESCRIPTION: usize = 2_000;

const COPIED: &[&str] = &[
    "type",
    "format",
    "enum",
    "const",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "multipleOf",
    "maximum",
    "minimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "maxContains",
    "minContains",
    "maxProperties",
    "minProperties",
    "required",
    "contentMediaType",
    "contentEncoding",
    "dependentRequired",
];
const SINGLE: &[&str] = &[
    "additionalProperties",
    "not",
    "contains",
    "propertyNames",
    "if",
    "then",
    "else",
    "unevaluatedProperties",
    "unevaluatedItems",
    "additionalItems",
    "contentSchema",
];
const LISTS: &[&str] = &["allOf", "oneOf", "anyOf", "prefixItems"];
const MAPS: &[&str] = &["properties", "patternProperties", "dependentSchemas"];

pub(crate) struct SchemaBuilder<'d> {
    docs: &'d Docs,
    direction: Direction,
    stack: Vec<String>,
    nodes: usize,
    depth: usize,
    def_names: HashMap<String, String>,
    taken: HashSet<String>,
    next_suffix: HashMap<String, usize>,
    pending: Vec<(String, DocId, &'d Value)>,
    defs: Map<String, Value>,
}

impl<'d> SchemaBuilder<'d> {
    pub fn new(docs: &'d Docs, direction: Direction) -> Self {
        Self {
            docs,
            direction,
            stack: Vec::new(),
            nodes: 0,
            depth: 0,
            def_names: HashMap::new(),
            taken: HashSet::new(),
            next_suffix: HashMap::new(),
            pending: Vec::new(),
            defs: Map::new(),
        }
    }

    /// The `$defs` the converted schemas refer to, built now.
    pub fn finish(mut self) -> Result<Map<String, Value>, OperationError> {
        while let Some((key, doc, value)) = self.pending.pop() {
            let name = self.def_names.get(&key).cloned().unwrap_or_default();
            self.stack = vec![key.clone()];
            self.depth = 0;
            let out = self.convert(&doc, value, &key)?;
            self.defs.insert(name, out);
        }
        Ok(self.defs)
    }

    /// `schema` (found at `at` in `doc`) as JSON Schema.
    pub fn convert(
        &mut self,
        doc: &DocId,
        schema: &Value,
        at: &str,
    ) -> Result<Value, OperationError> {
        self.nodes += 1;
        if self.nodes > MAX_NODES || self.depth > MAX_DEPTH {
            return Err(OperationError::SchemaTooLarge {
                max: MAX_NODES,
                pointer: at.to_owned(),
            });
        }
        let Some(map) = schema.as_object() else {
            // `true`/`false` schemas (3.1) stay; anything else accepts anything.
            return Ok(if schema.is_boolean() {
                schema.clone()
            } else {
                json!({})
            });
        };
        if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
            return self.reference(doc, map, reference, at);
        }
        self.depth += 1;
        let out = self.object(doc, map, at);
        self.depth -= 1;
        out
    }

    fn reference(
        &mut self,
        doc: &DocId,
        map: &Map<String, Value>,
        reference: &str,
        at: &str,
    ) -> Result<Value, OperationError> {
        let mut target = self.docs.resolve(doc, reference, at)?;
        // A reference to a bare reference: follow the chain to a schema (or fail on a loop).
        let mut hops = 0;
        while let Some(next) = bare_ref(target.value) {
            hops += 1;
            if hops > MAX_CHAIN {
                return Err(RefError::ChainTooLong {
                    reference: reference.to_owned(),
                    at: at.to_owned(),
                    max: MAX_CHAIN,
                }
                .into());
            }
            let next = next.to_owned();
            target = self.docs.resolve(&target.doc, &next, &target.key)?;
        }
        let inline = !self.stack.contains(&target.key)
            && !self.def_names.contains_key(&target.key)
            && self.nodes < INLINE_BUDGET
            && self.depth < MAX_INLINE_DEPTH;
        let out = if inline {
            self.stack.push(target.key.clone());
            let key = target.key.clone();
            let out = self.convert(&target.doc, target.value, &key);
            self.stack.pop();
            out?
        } else {
            let name = self.def_name(&target.key, &target.name, target.doc.clone(), target.value);
            json!({ "$ref": format!("#/$defs/{name}") })
        };
        // 3.1 allows keywords beside `$ref`: annotations override, constraints combine.
        // `nullable` beside a `$ref` (common in 3.0 documents) widens the whole.
        let nullable = map.get("nullable").and_then(Value::as_bool) == Some(true);
        let siblings: Map<String, Value> = map
            .iter()
            .filter(|(k, _)| !matches!(k.as_str(), "$ref" | "nullable") && !k.starts_with("x-"))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let out = self.siblings(doc, out, &siblings, at)?;
        Ok(if nullable {
            json!({ "anyOf": [out, { "type": "null" }] })
        } else {
            out
        })
    }

    fn siblings(
        &mut self,
        doc: &DocId,
        mut out: Value,
        siblings: &Map<String, Value>,
        at: &str,
    ) -> Result<Value, OperationError> {
        if siblings.is_empty() {
            return Ok(out);
        }
        self.depth += 1;
        let extra = self.object(doc, siblings, at);
        self.depth -= 1;
        let extra = extra?;
        let annotations_only = extra.as_object().is_some_and(|e| {
            e.keys().all(|k| {
                matches!(
                    k.as_str(),
                    "description"
                        | "title"
                        | "deprecated"
                        | "readOnly"
                        | "writeOnly"
                        | "default"
                        | "examples"
                )
            })
        });
        match (annotations_only, out.as_object_mut(), extra) {
            (true, Some(o), Value::Object(extra)) if !o.contains_key("$ref") => {
                o.extend(extra);
                Ok(out)
            }
            (_, _, extra) => Ok(json!({ "allOf": [out, extra] })),
        }
    }

    fn def_name(&mut self, key: &str, hint: &str, doc: DocId, value: &'d Value) -> String {
        if let Some(name) = self.def_names.get(key) {
            return name.clone();
        }
        let base = match sanitize(hint) {
            s if s.is_empty() => "def".to_owned(),
            s => s,
        };
        let mut name = base.clone();
        let next = self.next_suffix.entry(base.clone()).or_insert(2);
        while !self.taken.insert(name.clone()) {
            name = format!("{base}_{next}");
            *next += 1;
        }
        self.def_names.insert(key.to_owned(), name.clone());
        self.pending.push((key.to_owned(), doc, value));
        name
    }

    fn object(
        &mut self,
        doc: &DocId,
        map: &Map<String, Value>,
        at: &str,
    ) -> Result<Value, OperationError> {
        let mut out = Map::new();
        for (key, value) in map {
            let k = key.as_str();
            if COPIED.contains(&k) {
                out.insert(key.clone(), value.clone());
            } else if matches!(k, "description" | "title") {
                if let Some(text) = value.as_str() {
                    out.insert(
                        key.clone(),
                        Value::String(clean_text(text, MAX_DESCRIPTION)),
                    );
                }
            } else if k == "example" && !map.contains_key("examples") {
                out.insert("examples".to_owned(), json!([value]));
            } else if k == "items" {
                let item_at = format!("{at}/items");
                if let Value::Array(items) = value {
                    // Draft-4-style tuple `items`: `prefixItems` in 2020-12.
                    let mut list = Vec::with_capacity(items.len());
                    for (i, item) in items.iter().enumerate() {
                        list.push(self.convert(doc, item, &format!("{item_at}/{i}"))?);
                    }
                    out.insert("prefixItems".to_owned(), Value::Array(list));
                } else {
                    out.insert(key.clone(), self.convert(doc, value, &item_at)?);
                }
            } else if SINGLE.contains(&k) {
                out.insert(key.clone(), self.convert(doc, value, &format!("{at}/{k}"))?);
            } else if LISTS.contains(&k) {
                let Some(items) = value.as_array() else {
                    continue;
                };
                let mut list = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    list.push(self.convert(doc, item, &format!("{at}/{k}/{i}"))?);
                }
                out.insert(key.clone(), Value::Array(list));
            } else if MAPS.contains(&k) {
                let Some(entries) = value.as_object() else {
                    continue;
                };
                let mut converted = Map::new();
                for (name, sub) in entries {
                    let sub_at = format!("{at}/{k}/{}", name.replace('~', "~0").replace('/', "~1"));
                    converted.insert(name.clone(), self.convert(doc, sub, &sub_at)?);
                }
                out.insert(key.clone(), Value::Object(converted));
            }
        }
        exclusive_bounds(map, &mut out);
        self.drop_hidden_properties(&mut out);
        if map.get("nullable").and_then(Value::as_bool) == Some(true) {
            return Ok(nullable(out));
        }
        Ok(Value::Object(out))
    }

    /// `readOnly` properties are not sent; `writeOnly` ones are not answered.
    fn drop_hidden_properties(&self, out: &mut Map<String, Value>) {
        let hidden = match self.direction {
            Direction::Input => "readOnly",
            Direction::Output => "writeOnly",
        };
        let Some(Value::Object(props)) = out.get_mut("properties") else {
            return;
        };
        let dropped: HashSet<String> = props
            .iter()
            .filter(|(_, s)| s.get(hidden).and_then(Value::as_bool) == Some(true))
            .map(|(k, _)| k.clone())
            .collect();
        if dropped.is_empty() {
            return;
        }
        props.retain(|k, _| !dropped.contains(k));
        if let Some(Value::Array(required)) = out.get_mut("required") {
            required.retain(|r| r.as_str().is_none_or(|r| !dropped.contains(r)));
        }
    }
}

/// The target of `{"$ref": ...}` with nothing beside it.
fn bare_ref(value: &Value) -> Option<&str> {
    let map = value.as_object()?;
    if map.len() == 1 {
        map.get("$ref")?.as_str()
    } else {
        None
    }
}

/// 3.0's `exclusiveMinimum: true` beside `minimum` is 3.1's `exclusiveMinimum: <minimum>`.
fn exclusive_bounds(map: &Map<String, Value>, out: &mut Map<String, Value>) {
    for (flag, bound) in [
        ("exclusiveMinimum", "minimum"),
        ("exclusiveMaximum", "maximum"),
    ] {
        match map.get(flag) {
            Some(Value::Bool(true)) => {
                if let Some(b) = out.shift_remove(bound) {
                    out.insert(flag.to_owned(), b);
                }
            }
            Some(n @ Value::Number(_)) => {
                out.insert(flag.to_owned(), n.clone());
            }
            _ => {}
        }
    }
}

/// A schema that also accepts `null`.
fn nullable(mut out: Map<String, Value>) -> Value {
    if let Some(Value::Array(values)) = out.get_mut("enum")
        && !values.contains(&Value::Null)
    {
        values.push(Value::Null);
    }
    match out.get_mut("type") {
        Some(Value::String(t)) => {
            let t = std::mem::take(t);
            out.insert("type".to_owned(), json!([t, "null"]));
            Value::Object(out)
        }
        Some(Value::Array(types)) => {
            if !types.iter().any(|t| t == "null") {
                types.push(json!("null"));
            }
            Value::Object(out)
        }
        _ => json!({ "anyOf": [Value::Object(out), { "type": "null" }] }),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]
    use super::*;
    use crate::parse::Limits;
    use crate::refs::RefPolicy;

    fn convert(root: Value, schema: Value, direction: Direction) -> (Value, Map<String, Value>) {
        let docs = Docs::new(root, RefPolicy::LocalOnly, Limits::default());
        let mut b = SchemaBuilder::new(&docs, direction);
        let out = b.convert(&DocId::Root, &schema, "/s").unwrap();
        (out, b.finish().unwrap())
    }

    #[test]
    fn nullable_becomes_type_arrays() {
        let (out, _) = convert(
            json!({}),
            json!({"type": "string", "nullable": true, "enum": ["a"]}),
            Direction::Input,
        );
        assert_eq!(
            out,
            json!({"type": ["string", "null"], "enum": ["a", null]})
        );
        let (out, _) = convert(
            json!({}),
            json!({"allOf": [{"type": "integer"}], "nullable": true}),
            Direction::Input,
        );
        assert_eq!(
            out,
            json!({"anyOf": [{"allOf": [{"type": "integer"}]}, {"type": "null"}]})
        );
    }

    #[test]
    fn open_api_specifics_are_translated_or_dropped() {
        let (out, _) = convert(
            json!({}),
            json!({"type": "number", "minimum": 1, "exclusiveMinimum": true, "example": 3,
                   "x-internal": "secret", "discriminator": {"propertyName": "t"},
                   "description": "a\u{202E}b"}),
            Direction::Input,
        );
        assert_eq!(
            out,
            json!({"type": "number", "exclusiveMinimum": 1, "examples": [3], "description": "ab"})
        );
    }

    #[test]
    fn read_only_leaves_input_and_write_only_leaves_output() {
        let schema = json!({"type": "object", "required": ["id", "name", "password"], "properties": {
            "id": {"type": "integer", "readOnly": true},
            "name": {"type": "string"},
            "password": {"type": "string", "writeOnly": true}}});
        let (input, _) = convert(json!({}), schema.clone(), Direction::Input);
        assert_eq!(input["required"], json!(["name", "password"]));
        assert!(input["properties"].get("id").is_none());
        let (output, _) = convert(json!({}), schema, Direction::Output);
        assert_eq!(output["required"], json!(["id", "name"]));
        assert!(output["properties"].get("password").is_none());
    }

    #[test]
    fn combinators_formats_and_tuples_are_converted_inside() {
        let root = json!({"components": {"schemas": {"Id": {"type": "string", "format": "uuid"}}}});
        let (out, _) = convert(
            root,
            json!({"oneOf": [{"$ref": "#/components/schemas/Id"}, {"type": "integer", "nullable": true}],
                   "anyOf": [{"type": "string", "x-y": 1}],
                   "not": {"enum": [1]},
                   "items": [{"type": "string"}, {"type": "number"}]}),
            Direction::Input,
        );
        assert_eq!(
            out,
            json!({"oneOf": [{"type": "string", "format": "uuid"}, {"type": ["integer", "null"]}],
                   "anyOf": [{"type": "string"}],
                   "not": {"enum": [1]},
                   "prefixItems": [{"type": "string"}, {"type": "number"}]})
        );
    }

    #[test]
    fn keywords_beside_a_ref() {
        let root = json!({"components": {"schemas": {"P": {"type": "object"}}}});
        let (out, _) = convert(
            root.clone(),
            json!({"$ref": "#/components/schemas/P", "description": "d", "readOnly": true}),
            Direction::Output,
        );
        assert_eq!(
            out,
            json!({"type": "object", "description": "d", "readOnly": true})
        );
        let (out, _) = convert(
            root.clone(),
            json!({"$ref": "#/components/schemas/P", "nullable": true}),
            Direction::Input,
        );
        assert_eq!(
            out,
            json!({"anyOf": [{"type": "object"}, {"type": "null"}]})
        );
        let (out, _) = convert(
            root,
            json!({"$ref": "#/components/schemas/P", "minProperties": 1}),
            Direction::Input,
        );
        assert_eq!(
            out,
            json!({"allOf": [{"type": "object"}, {"minProperties": 1}]})
        );
    }

    #[test]
    fn cycles_become_defs() {
        let root = json!({"components": {"schemas": {
            "Node": {"type": "object", "properties": {"next": {"$ref": "#/components/schemas/Node"}}},
            "A": {"type": "object", "properties": {"b": {"$ref": "#/components/schemas/B"}}},
            "B": {"type": "object", "properties": {"a": {"$ref": "#/components/schemas/A"}}},
            "C": {"allOf": [{"$ref": "#/components/schemas/C"}, {"type": "object"}]}}}});
        let (out, defs) = convert(
            root.clone(),
            json!({"$ref": "#/components/schemas/Node"}),
            Direction::Input,
        );
        assert_eq!(out["properties"]["next"], json!({"$ref": "#/$defs/Node"}));
        assert_eq!(
            defs["Node"]["properties"]["next"],
            json!({"$ref": "#/$defs/Node"})
        );
        let (out, defs) = convert(
            root.clone(),
            json!({"$ref": "#/components/schemas/A"}),
            Direction::Input,
        );
        assert_eq!(
            out["properties"]["b"]["properties"]["a"],
            json!({"$ref": "#/$defs/A"})
        );
        assert_eq!(
            defs["A"]["properties"]["b"]["properties"]["a"],
            json!({"$ref": "#/$defs/A"})
        );
        let (out, defs) = convert(
            root,
            json!({"$ref": "#/components/schemas/C"}),
            Direction::Input,
        );
        assert_eq!(out["allOf"][0], json!({"$ref": "#/$defs/C"}));
        assert_eq!(defs["C"]["allOf"][0], json!({"$ref": "#/$defs/C"}));
    }

    #[test]
    fn exponential_sharing_stays_bounded() {
        // S0 refers to S1 twice, S1 to S2 twice, ...: inlining all would be 2^40 values.
        let mut schemas = Map::new();
        for i in 0..40 {
            let next = format!("#/components/schemas/S{}", i + 1);
            schemas.insert(
                format!("S{i}"),
                json!({"type": "object", "properties": {"l": {"$ref": next}, "r": {"$ref": next}}}),
            );
        }
        schemas.insert("S40".to_owned(), json!({"type": "string"}));
        let root = json!({"components": {"schemas": schemas}});
        let (out, defs) = convert(
            root,
            json!({"$ref": "#/components/schemas/S0"}),
            Direction::Input,
        );
        let size = out.to_string().len() + Value::Object(defs).to_string().len();
        assert!(size < 10_000_000, "{size}");
    }

    #[test]
    fn dangling_refs_name_the_ref() {
        let docs = Docs::new(json!({}), RefPolicy::LocalOnly, Limits::default());
        let mut b = SchemaBuilder::new(&docs, Direction::Input);
        let err = b
            .convert(
                &DocId::Root,
                &json!({"$ref": "#/components/schemas/Nope"}),
                "/s",
            )
            .unwrap_err();
        assert!(
            err.to_string().contains("#/components/schemas/Nope"),
            "{err}"
        );
    }
}

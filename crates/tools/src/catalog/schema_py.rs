//! JSON Schema to Python type hints: `TypedDict` classes with docstrings.
//!
//! The same coverage as the TypeScript rendering, mapped to what Python typing has: objects
//! become `TypedDict` classes (inline objects get a class named after their place, optional
//! keys are `NotRequired`), keys that are not identifiers use the functional `TypedDict`
//! form, unions are `A | B`, `enum`/`const` are `Literal[...]`, tuples are `tuple[...]`,
//! maps are `dict[str, T]`, and `allOf` of objects merges their keys (Python has no
//! intersection; other `allOf`s are `Any`). Output is meant for Python 3.11+, with
//! `from __future__ import annotations` so recursive types need no quoting.

use rmcp::model::Tool;
use serde_json::Value;

use super::names::ident;
use super::schema::Roots;
use super::schema::{
    MAX_DEPTH, Registry, doc_lines, looks_like_object, nullable, pascal, required, types,
};

/// What a Python module of generated types imports.
pub const PRELUDE: &str = "from __future__ import annotations\n\nfrom typing import Any, Literal, NotRequired, TypeAlias, TypedDict, Unpack\n";

/// The Python rendering of one tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PyTool {
    /// Class and alias definitions, each ending with a newline.
    pub types: Vec<String>,
    pub args_type: String,
    pub result_type: String,
    /// The tool's description, for the function's docstring.
    pub doc: Option<String>,
}

impl PyTool {
    /// The call as code writes it: `tools.server.tool(**args: Unpack[Args]) -> Result`.
    pub fn signature(&self, server: &str, tool: &str) -> String {
        format!(
            "tools.{}.{}(**args: Unpack[{}]) -> {}",
            ident(server),
            ident(tool),
            self.args_type,
            self.result_type
        )
    }

    /// The types and a documented stub of the function.
    pub fn declarations(&self, tool: &str) -> String {
        let mut s = String::new();
        for t in &self.types {
            s.push_str(t);
            s.push('\n');
        }
        s.push_str(&format!(
            "def {}(**args: Unpack[{}]) -> {}:\n",
            py_ident(tool),
            self.args_type,
            self.result_type
        ));
        if let Some(d) = &self.doc {
            s.push_str(&docstring(d, "    "));
        }
        s.push_str("    ...\n");
        s
    }
}

/// Renders one tool.
pub fn render(tool: &Tool) -> PyTool {
    let roots = Roots::of(tool);
    let Roots {
        input,
        output,
        args_name,
        result_name,
    } = &roots;
    let (args_name, result_name) = (args_name.clone(), result_name.clone());
    let mut r = Renderer {
        reg: Registry::new(roots.list()),
        out: Vec::new(),
    };
    r.define(&args_name, input, 0);
    let result_type = match output {
        Some(o) => {
            r.define(&result_name, o, 1);
            result_name
        }
        None => "Any".to_string(),
    };
    let mut i = 0;
    while i < r.reg.named.len() {
        let n = r.reg.named[i].clone();
        r.define(&n.name, n.schema, n.root);
        i += 1;
    }
    PyTool {
        types: r.out,
        args_type: args_name,
        result_type,
        doc: tool.description.as_deref().map(|d| d.trim().to_string()),
    }
}

/// An object's properties (in order) and its required keys.
type Shape<'a> = (Vec<(&'a str, &'a Value)>, Vec<&'a str>);

struct Renderer<'a> {
    reg: Registry<'a>,
    out: Vec<String>,
}

impl<'a> Renderer<'a> {
    /// Emits `name` as a class (object schemas) or an alias (everything else).
    fn define(&mut self, name: &str, schema: &'a Value, root: usize) {
        if let Some(obj) = self.object_shape(schema, root) {
            self.class(name, schema, &obj, root, 0);
        } else {
            let t = self.ty(schema, root, name, 0);
            let mut s = format!("{name}: TypeAlias = {}\n", Value::String(t));
            let doc = doc_lines(schema);
            if !doc.is_empty() {
                s.push_str(&docstring(&doc.join("\n"), ""));
            }
            self.out.push(s);
        }
    }

    /// The properties and required keys of an object schema with declared properties,
    /// merging `allOf` members; `None` for anything else.
    fn object_shape(&self, schema: &'a Value, root: usize) -> Option<Shape<'a>> {
        let mut props: Vec<(&'a str, &'a Value)> = Vec::new();
        let mut req: Vec<&'a str> = Vec::new();
        let mut add = |s: &'a Value| {
            if let Some(p) = s.get("properties").and_then(Value::as_object) {
                for (k, v) in p {
                    if !props.iter().any(|(n, _)| *n == k) {
                        props.push((k.as_str(), v));
                    }
                }
            }
            req.extend(required(s));
        };
        let has_props = schema
            .get("properties")
            .and_then(Value::as_object)
            .is_some_and(|p| !p.is_empty());
        let all_of: Vec<&'a Value> = schema
            .get("allOf")
            .and_then(Value::as_array)
            .map(|a| a.iter().map(|s| self.deref(s, root)).collect())
            .unwrap_or_default();
        let all_of_objects =
            !all_of.is_empty() && all_of.iter().all(|s| s.get("properties").is_some());
        if schema.get("$ref").is_some()
            || schema.get("anyOf").is_some()
            || schema.get("oneOf").is_some()
            || (!has_props && !all_of_objects)
            || (!all_of.is_empty() && !all_of_objects)
        {
            return None;
        }
        add(schema);
        for s in all_of {
            add(s);
        }
        Some((props, req))
    }

    /// Follows a local `$ref` (one step) for merging `allOf`.
    fn deref(&self, s: &'a Value, root: usize) -> &'a Value {
        s.get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix('#'))
            .and_then(|p| self.reg.roots[root].0.pointer(p))
            .unwrap_or(s)
    }

    fn class(
        &mut self,
        name: &str,
        schema: &'a Value,
        (props, req): &Shape<'a>,
        root: usize,
        depth: usize,
    ) {
        let functional = props.iter().any(|(k, _)| !is_py_ident(k));
        let doc = doc_lines(schema);
        // Reserve the slot so a class comes before the classes of its nested objects.
        let slot = self.out.len();
        self.out.push(String::new());
        let mut fields: Vec<(String, String, Vec<String>)> = Vec::new();
        for (k, v) in props {
            let nested = format!("{name}{}", pascal(k));
            let mut t = self.ty(v, root, &nested, depth + 1);
            if !req.contains(k) {
                t = format!("NotRequired[{t}]");
            }
            fields.push((k.to_string(), t, doc_lines(v)));
        }
        let mut s = String::new();
        if functional {
            s.push_str(&format!(
                "{name} = TypedDict(\n    {},\n    {{\n",
                Value::String(name.into())
            ));
            for (k, t, d) in &fields {
                for line in d {
                    s.push_str(&format!("        # {line}\n"));
                }
                s.push_str(&format!(
                    "        {}: {},\n",
                    Value::String(k.clone()),
                    Value::String(t.clone())
                ));
            }
            s.push_str("    },\n)\n");
            if !doc.is_empty() {
                s.push_str(&docstring(&doc.join("\n"), ""));
            }
        } else {
            s.push_str(&format!("class {name}(TypedDict):\n"));
            if !doc.is_empty() {
                s.push_str(&docstring(&doc.join("\n"), "    "));
            }
            for (k, t, d) in &fields {
                s.push_str(&format!("    {k}: {t}\n"));
                if !d.is_empty() {
                    s.push_str(&docstring(&d.join("\n"), "    "));
                }
            }
            if fields.is_empty() && doc.is_empty() {
                s.push_str("    pass\n");
            }
        }
        self.out[slot] = s;
    }

    /// A type expression; inline objects become classes named `place`.
    fn ty(&mut self, schema: &'a Value, root: usize, place: &str, depth: usize) -> String {
        if depth > MAX_DEPTH {
            return "Any".into();
        }
        if !schema.is_object() {
            return "Any".into();
        }
        let t = self.ty_inner(schema, root, place, depth);
        if nullable(schema) && t != "Any" && !t.ends_with("| None") {
            format!("{t} | None")
        } else {
            t
        }
    }

    fn ty_inner(&mut self, schema: &'a Value, root: usize, place: &str, depth: usize) -> String {
        if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
            return self.reg.resolve(root, r).unwrap_or_else(|| "Any".into());
        }
        if let Some(c) = schema.get("const") {
            return literal(std::slice::from_ref(c));
        }
        if let Some(e) = schema.get("enum").and_then(Value::as_array) {
            return literal(e);
        }
        if let Some(list) = schema
            .get("anyOf")
            .or_else(|| schema.get("oneOf"))
            .and_then(Value::as_array)
        {
            let parts: Vec<String> = list
                .iter()
                .enumerate()
                .map(|(i, s)| self.ty(s, root, &format!("{place}{}", i + 1), depth + 1))
                .collect();
            return union(parts);
        }
        if let Some(shape) = self.object_shape(schema, root) {
            let name = self.reg.fresh(place);
            self.class(&name, schema, &shape, root, depth);
            return name;
        }
        if schema.get("allOf").is_some() {
            return "Any".into();
        }
        let mut ts = types(schema);
        if ts.is_empty() && looks_like_object(schema) {
            ts.push("object");
        }
        if ts.is_empty() && (schema.get("items").is_some() || schema.get("prefixItems").is_some()) {
            ts.push("array");
        }
        let parts: Vec<String> = ts
            .iter()
            .map(|t| match *t {
                "string" => "str".to_string(),
                "integer" => "int".to_string(),
                "number" => "float".to_string(),
                "boolean" => "bool".to_string(),
                "null" => "None".to_string(),
                "array" => self.array(schema, root, place, depth),
                "object" => self.map(schema, root, place, depth),
                _ => "Any".to_string(),
            })
            .collect();
        if parts.is_empty() {
            return "Any".into();
        }
        union(parts)
    }

    fn array(&mut self, schema: &'a Value, root: usize, place: &str, depth: usize) -> String {
        let tuple = schema
            .get("prefixItems")
            .and_then(Value::as_array)
            .map(|p| (p, schema.get("items")))
            .or_else(|| {
                schema
                    .get("items")
                    .and_then(Value::as_array)
                    .map(|p| (p, schema.get("additionalItems")))
            });
        if let Some((prefix, rest)) = tuple {
            if !matches!(rest, Some(Value::Bool(false))) {
                return "list[Any]".into();
            }
            let elems: Vec<String> = prefix
                .iter()
                .enumerate()
                .map(|(i, s)| self.ty(s, root, &format!("{place}{}", i + 1), depth + 1))
                .collect();
            return format!("tuple[{}]", elems.join(", "));
        }
        match schema.get("items") {
            Some(items) => format!(
                "list[{}]",
                self.ty(items, root, &format!("{place}Item"), depth + 1)
            ),
            None => "list[Any]".into(),
        }
    }

    fn map(&mut self, schema: &'a Value, root: usize, place: &str, depth: usize) -> String {
        match schema.get("additionalProperties") {
            Some(s @ Value::Object(_)) => {
                format!(
                    "dict[str, {}]",
                    self.ty(s, root, &format!("{place}Value"), depth + 1)
                )
            }
            _ => "dict[str, Any]".into(),
        }
    }
}

/// `Literal[...]` of JSON values (`None` kept apart: `Literal["a"] | None`).
fn literal(values: &[Value]) -> String {
    let mut lits = Vec::new();
    let mut none = false;
    for v in values {
        match v {
            Value::Null => none = true,
            Value::Bool(b) => lits.push(if *b { "True" } else { "False" }.to_string()),
            Value::String(_) | Value::Number(_) => lits.push(v.to_string()),
            _ => return "Any".into(),
        }
    }
    let mut out = if lits.is_empty() {
        String::new()
    } else {
        format!("Literal[{}]", lits.join(", "))
    };
    if none {
        out = if out.is_empty() {
            "None".into()
        } else {
            format!("{out} | None")
        };
    }
    if out.is_empty() { "Any".into() } else { out }
}

fn union(parts: Vec<String>) -> String {
    let mut out: Vec<String> = Vec::new();
    for p in parts {
        if !out.contains(&p) {
            out.push(p);
        }
    }
    if out.iter().any(|p| p == "Any") {
        return "Any".into();
    }
    out.join(" | ")
}

const KEYWORDS: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
    "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
    "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
    "with", "yield",
];

fn is_py_ident(s: &str) -> bool {
    let mut c = s.chars();
    c.next()
        .is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_')
        && !KEYWORDS.contains(&s)
}

/// A Python identifier for a tool or server name (`get-sum` -> `get_sum`, `class` -> `class_`).
pub fn py_ident(name: &str) -> String {
    let mut s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit()) {
        s.insert(0, '_');
    }
    if KEYWORDS.contains(&s.as_str()) {
        s.push('_');
    }
    s
}

/// A docstring at `pad`, with quotes and backslashes made safe.
fn docstring(text: &str, pad: &str) -> String {
    let clean = text.replace('\\', "\\\\").replace("\"\"\"", "\\\"\\\"\\\"");
    let lines: Vec<&str> = clean.trim().lines().collect();
    if lines.len() == 1 {
        let l = lines[0].trim_end_matches('"');
        let tail = if l.len() < lines[0].len() { " " } else { "" };
        return format!("{pad}\"\"\"{}{tail}\"\"\"\n", lines[0]);
    }
    let mut s = format!("{pad}\"\"\"\n");
    for l in lines {
        if l.trim().is_empty() {
            s.push('\n');
        } else {
            s.push_str(&format!("{pad}{}\n", l.trim_end()));
        }
    }
    s.push_str(&format!("{pad}\"\"\"\n"));
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn typed_dict_with_optional_and_nested() {
        let tool: Tool = serde_json::from_value(json!({"name": "get-sum", "description": "Adds.",
            "inputSchema": {"type": "object", "properties": {
                "a": {"type": "number", "description": "First"},
                "opts": {"type": "object", "properties": {"round": {"type": "boolean"}}},
                "from": {"type": "string"}}, "required": ["a"]}}))
        .unwrap();
        let p = render(&tool);
        assert_eq!(
            p.signature("every thing", "get-sum"),
            "tools.every_thing.get_sum(**args: Unpack[GetSumArgs]) -> Any"
        );
        let text = p.declarations("get-sum");
        assert!(
            text.contains("GetSumArgs = TypedDict(\n    \"GetSumArgs\",\n"),
            "{text}"
        );
        assert!(
            text.contains("\"opts\": \"NotRequired[GetSumArgsOpts]\""),
            "{text}"
        );
        assert!(
            text.contains("class GetSumArgsOpts(TypedDict):\n    round: NotRequired[bool]\n"),
            "{text}"
        );
        assert!(
            text.contains(
                "def get_sum(**args: Unpack[GetSumArgs]) -> Any:\n    \"\"\"Adds.\"\"\"\n"
            ),
            "{text}"
        );
    }
}

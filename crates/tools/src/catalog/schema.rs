//! What the TypeScript and Python renderings of a JSON Schema share: type names, `$ref`
//! resolution against `$defs`/`definitions`, and the guards against runaway schemas.

use std::collections::BTreeMap;

use serde_json::Value;

/// Nesting deeper than this renders as the language's "any" type: a guard against
/// pathological schemas (recursion goes through named `$ref` types and needs no depth).
pub const MAX_DEPTH: usize = 12;
/// At most this many named types are emitted for one tool.
pub const MAX_NAMED: usize = 64;

/// `get-current_time` -> `GetCurrentTime`; a leading digit gets `T`.
/// A tool's schemas as rendering roots: its input as `<Name>Args` and, when it declares one,
/// its output as `<Name>Result`.
pub struct Roots {
    pub input: Value,
    pub output: Option<Value>,
    pub args_name: String,
    pub result_name: String,
}

impl Roots {
    pub fn of(tool: &rmcp::model::Tool) -> Roots {
        let base = pascal(&tool.name);
        Roots {
            input: Value::Object((*tool.input_schema).clone()),
            output: tool
                .output_schema
                .as_ref()
                .map(|o| Value::Object((**o).clone())),
            args_name: format!("{base}Args"),
            result_name: format!("{base}Result"),
        }
    }

    /// The roots a [`Registry`] starts from.
    pub fn list(&self) -> Vec<(&Value, String)> {
        let mut roots = vec![(&self.input, self.args_name.clone())];
        if let Some(o) = &self.output {
            roots.push((o, self.result_name.clone()));
        }
        roots
    }
}

pub fn pascal(name: &str) -> String {
    let mut out = String::new();
    for w in super::search::words(name) {
        let mut c = w.chars();
        if let Some(f) = c.next() {
            out.extend(f.to_uppercase());
            out.push_str(c.as_str());
        }
    }
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, 'T');
    }
    out
}

/// A named type to emit: a definition of one root schema, or a root itself.
#[derive(Debug, Clone)]
pub struct Named<'a> {
    pub name: String,
    pub schema: &'a Value,
    /// Which root it belongs to (its `$ref`s resolve there).
    pub root: usize,
}

/// The roots (input and output schema) of one tool and the names given to their parts.
pub struct Registry<'a> {
    pub roots: Vec<(&'a Value, String)>,
    /// (root, ref string) -> index into `named`.
    by_ref: BTreeMap<(usize, String), usize>,
    pub named: Vec<Named<'a>>,
    used: Vec<String>,
}

impl<'a> Registry<'a> {
    /// `roots`: each schema with the name of the type it becomes.
    pub fn new(roots: Vec<(&'a Value, String)>) -> Self {
        let used = roots.iter().map(|(_, n)| n.clone()).collect();
        Registry {
            roots,
            by_ref: BTreeMap::new(),
            named: Vec::new(),
            used,
        }
    }

    /// A name not taken yet, from `base`.
    pub fn fresh(&mut self, base: &str) -> String {
        let mut name = base.to_string();
        let mut i = 2;
        while self.used.contains(&name) {
            name = format!("{base}{i}");
            i += 1;
        }
        self.used.push(name.clone());
        name
    }

    /// The type name a `$ref` of root `root` stands for, registering it on first sight;
    /// `None` for references that do not resolve inside the schema.
    pub fn resolve(&mut self, root: usize, reference: &str) -> Option<String> {
        if reference == "#" {
            return Some(self.roots[root].1.clone());
        }
        if let Some(i) = self.by_ref.get(&(root, reference.to_string())) {
            return Some(self.named[*i].name.clone());
        }
        if self.named.len() >= MAX_NAMED {
            return None;
        }
        let pointer = reference.strip_prefix('#')?;
        let schema = self.roots[root].0.pointer(pointer)?;
        let last = pointer.rsplit('/').next().unwrap_or("Def");
        let last = last.replace("~1", "/").replace("~0", "~");
        let name = self.fresh(&pascal(&last));
        self.by_ref
            .insert((root, reference.to_string()), self.named.len());
        self.named.push(Named {
            name: name.clone(),
            schema,
            root,
        });
        Some(name)
    }
}

/// The `type` keyword as a list (`"string"` or `["string", "null"]`).
pub fn types(schema: &Value) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// True for schemas that describe an object by their keywords, with or without `type`.
pub fn looks_like_object(schema: &Value) -> bool {
    schema.get("properties").is_some()
        || schema.get("additionalProperties").is_some()
        || schema.get("patternProperties").is_some()
}

/// `nullable: true` (OpenAPI style).
pub fn nullable(schema: &Value) -> bool {
    schema.get("nullable").and_then(Value::as_bool) == Some(true)
}

/// The required property names of an object schema.
pub fn required(schema: &Value) -> Vec<&str> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// Documentation lines of a schema: its description, default, format, bounds, pattern and deprecation.
pub fn doc_lines(schema: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let s = |k: &str| schema.get(k);
    // Titles are left out: generators (pydantic) set them to the key or class name.
    if let Some(d) = s("description").and_then(Value::as_str) {
        out.extend(d.trim().lines().map(|l| l.trim_end().to_string()));
    }
    for (key, tag) in [
        ("default", "default"),
        ("format", "format"),
        ("minimum", "minimum"),
        ("maximum", "maximum"),
        ("exclusiveMinimum", "exclusiveMinimum"),
        ("exclusiveMaximum", "exclusiveMaximum"),
        ("minLength", "minLength"),
        ("maxLength", "maxLength"),
        ("minItems", "minItems"),
        ("maxItems", "maxItems"),
        ("pattern", "pattern"),
    ] {
        if let Some(v) = s(key) {
            let text = match v {
                Value::String(x) if key == "format" || key == "pattern" => x.clone(),
                other => other.to_string(),
            };
            out.push(format!("@{tag} {text}"));
        }
    }
    if s("deprecated").and_then(Value::as_bool) == Some(true) {
        out.push("@deprecated".to_string());
    }
    out
}

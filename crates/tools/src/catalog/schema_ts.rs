//! JSON Schema to TypeScript declarations, with JSDoc from descriptions.
//!
//! A tool becomes `<Tool>Args` (from `inputSchema`), `<Tool>Result` (from `outputSchema`,
//! `unknown` without one), a named type per `$ref`'d definition, and a function
//! declaration. Covered: `$ref` to `$defs`/`definitions` (and `#`), recursive references
//! (named types, emitted once), `enum`, `const`, `oneOf`/`anyOf` (unions), `allOf`
//! (intersections), `type` lists and `nullable`, arrays, tuples (`prefixItems` and array
//! `items`), `additionalProperties` and `patternProperties` (index signatures or
//! `Record`). Anything else is `unknown`, never an error: a signature is a guide.

use rmcp::model::Tool;
use serde_json::Value;

use super::names::ident;
use super::schema::Roots;
use super::schema::{MAX_DEPTH, Registry, doc_lines, looks_like_object, nullable, required, types};

/// The TypeScript rendering of one tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TsTool {
    /// Type declarations (arguments, result, definitions), without `export`.
    pub types: Vec<String>,
    /// JSDoc of the function (from the tool's description), ending with a newline, or empty.
    pub doc: String,
    pub args_type: String,
    pub result_type: String,
}

impl TsTool {
    /// The call as code writes it: `tools.server.tool(args: Args): Promise<Result>`.
    pub fn signature(&self, server: &str, tool: &str) -> String {
        format!(
            "{}({}): Promise<{}>",
            proxy_path(server, tool),
            self.params(),
            self.result_type
        )
    }

    fn params(&self) -> String {
        format!("args: {}", self.args_type)
    }

    /// The whole declaration: types, then the documented function.
    pub fn declarations(&self, tool: &str) -> String {
        let mut s = String::new();
        for t in &self.types {
            s.push_str(t);
            s.push('\n');
        }
        s.push_str(&self.doc);
        s.push_str(&format!(
            "declare function {}({}): Promise<{}>;\n",
            ident(tool),
            self.params(),
            self.result_type
        ));
        s
    }
}

/// `tools.server.tool`, with the bracket form where a name is not an identifier.
pub fn proxy_path(server: &str, tool: &str) -> String {
    let part = |n: &str| {
        if is_ident(n) {
            format!(".{n}")
        } else {
            format!("[{}]", Value::String(n.to_string()))
        }
    };
    format!("tools{}{}", part(server), part(tool))
}

/// Renders one tool.
pub fn render(tool: &Tool) -> TsTool {
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
    };
    let mut types = Vec::new();
    types.push(r.declaration(&args_name, input, 0));
    let result_type = match output {
        Some(o) => {
            types.push(r.declaration(&result_name, o, 1));
            result_name
        }
        None => "unknown".to_string(),
    };
    let mut i = 0;
    while i < r.reg.named.len() {
        let n = r.reg.named[i].clone();
        types.push(r.declaration(&n.name, n.schema, n.root));
        i += 1;
    }
    TsTool {
        types,
        doc: jsdoc(
            &tool
                .description
                .as_deref()
                .map(|d| d.trim().lines().map(str::to_string).collect::<Vec<_>>())
                .unwrap_or_default(),
            "",
        ),
        args_type: args_name,
        result_type,
    }
}

struct Renderer<'a> {
    reg: Registry<'a>,
}

impl<'a> Renderer<'a> {
    /// `interface Name {...}` for object literals, else `type Name = ...;`, with JSDoc.
    fn declaration(&mut self, name: &str, schema: &'a Value, root: usize) -> String {
        let ty = self.ty(schema, root, 0, 0);
        let doc = jsdoc(&doc_lines(schema), "");
        if ty.starts_with('{') && paren(&ty) == ty {
            format!("{doc}interface {name} {ty}")
        } else {
            format!("{doc}type {name} = {ty};")
        }
    }

    fn ty(&mut self, schema: &'a Value, root: usize, indent: usize, depth: usize) -> String {
        if depth > MAX_DEPTH {
            return "unknown".into();
        }
        let obj = match schema {
            Value::Bool(true) => return "unknown".into(),
            Value::Bool(false) => return "never".into(),
            Value::Object(o) => o,
            _ => return "unknown".into(),
        };
        let _ = obj;
        let t = self.ty_inner(schema, root, indent, depth);
        if nullable(schema) && t != "unknown" && !t.ends_with("| null") {
            format!("{} | null", paren(&t))
        } else {
            t
        }
    }

    fn ty_inner(&mut self, schema: &'a Value, root: usize, indent: usize, depth: usize) -> String {
        if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
            return self
                .reg
                .resolve(root, r)
                .unwrap_or_else(|| "unknown".into());
        }
        if let Some(c) = schema.get("const") {
            return literal(c);
        }
        if let Some(e) = schema.get("enum").and_then(Value::as_array) {
            if e.is_empty() {
                return "never".into();
            }
            return e.iter().map(literal).collect::<Vec<_>>().join(" | ");
        }
        let mut parts: Vec<String> = Vec::new();
        let own = self.own_type(schema, root, indent, depth);
        for key in ["anyOf", "oneOf"] {
            if let Some(list) = schema.get(key).and_then(Value::as_array) {
                let u: Vec<String> = list
                    .iter()
                    .map(|s| paren(&self.ty(s, root, indent, depth + 1)))
                    .collect();
                parts.push(dedup_union(u));
            }
        }
        if let Some(list) = schema.get("allOf").and_then(Value::as_array) {
            let i: Vec<String> = list
                .iter()
                .map(|s| paren(&self.ty(s, root, indent, depth + 1)))
                .collect();
            parts.push(i.join(" & "));
        }
        match (own, parts.is_empty()) {
            (Some(own), true) => own,
            (None, true) => "unknown".into(),
            (None, false) if parts.len() == 1 => parts.remove(0),
            (own, false) => {
                let mut all: Vec<String> = own.into_iter().collect();
                all.extend(parts);
                all.iter().map(|p| paren(p)).collect::<Vec<_>>().join(" & ")
            }
        }
    }

    /// The type from the `type` keyword (or object keywords); `None` if there is neither.
    fn own_type(
        &mut self,
        schema: &'a Value,
        root: usize,
        indent: usize,
        depth: usize,
    ) -> Option<String> {
        let mut ts = types(schema);
        if ts.is_empty() && looks_like_object(schema) {
            ts.push("object");
        }
        if ts.is_empty() && (schema.get("items").is_some() || schema.get("prefixItems").is_some()) {
            ts.push("array");
        }
        if ts.is_empty() {
            return None;
        }
        let out: Vec<String> = ts
            .iter()
            .map(|t| match *t {
                "string" => "string".to_string(),
                "number" | "integer" => "number".to_string(),
                "boolean" => "boolean".to_string(),
                "null" => "null".to_string(),
                "array" => self.array(schema, root, indent, depth),
                "object" => self.object(schema, root, indent, depth),
                _ => "unknown".to_string(),
            })
            .collect();
        Some(dedup_union(out))
    }

    fn array(&mut self, schema: &'a Value, root: usize, indent: usize, depth: usize) -> String {
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
            let mut elems: Vec<String> = prefix
                .iter()
                .map(|s| self.ty(s, root, indent, depth + 1))
                .collect();
            match rest {
                Some(Value::Bool(false)) => {}
                None | Some(Value::Bool(true)) => elems.push("...unknown[]".into()),
                Some(r) => {
                    let t = self.ty(r, root, indent, depth + 1);
                    elems.push(format!("...{}[]", paren(&t)));
                }
            }
            return format!("[{}]", elems.join(", "));
        }
        match schema.get("items") {
            Some(items) => format!("{}[]", paren(&self.ty(items, root, indent, depth + 1))),
            None => "unknown[]".into(),
        }
    }

    fn object(&mut self, schema: &'a Value, root: usize, indent: usize, depth: usize) -> String {
        let props = schema.get("properties").and_then(Value::as_object);
        let extra = schema
            .get("additionalProperties")
            .or_else(|| schema.get("unevaluatedProperties"));
        let patterns = schema.get("patternProperties").and_then(Value::as_object);
        let index_ty = match extra {
            Some(Value::Bool(false)) => None,
            Some(Value::Bool(true)) => Some("unknown".to_string()),
            Some(s @ Value::Object(_)) => Some(self.ty(s, root, indent + 1, depth + 1)),
            _ => patterns.filter(|p| !p.is_empty()).map(|p| {
                let u: Vec<String> = p
                    .values()
                    .map(|s| self.ty(s, root, indent + 1, depth + 1))
                    .collect();
                dedup_union(u)
            }),
        };
        let props = match props {
            Some(p) if !p.is_empty() => p,
            _ => {
                return match (index_ty, extra) {
                    (Some(t), _) => format!("Record<string, {t}>"),
                    (None, Some(Value::Bool(false))) => "Record<string, never>".into(),
                    (None, _) => "Record<string, unknown>".into(),
                };
            }
        };
        let req = required(schema);
        let pad = "  ".repeat(indent + 1);
        let mut s = String::from("{\n");
        for (name, prop) in props {
            s.push_str(&jsdoc(&doc_lines(prop), &pad));
            let key = if is_ident(name) {
                name.clone()
            } else {
                Value::String(name.clone()).to_string()
            };
            let opt = if req.contains(&name.as_str()) {
                ""
            } else {
                "?"
            };
            let t = self.ty(prop, root, indent + 1, depth + 1);
            s.push_str(&format!("{pad}{key}{opt}: {t};\n"));
        }
        if index_ty.is_some() {
            // Declared properties must fit the index signature; `unknown` always does.
            s.push_str(&format!("{pad}[key: string]: unknown;\n"));
        }
        s.push_str(&"  ".repeat(indent));
        s.push('}');
        s
    }
}

/// A JSON value as a TypeScript literal type.
fn literal(v: &Value) -> String {
    match v {
        Value::String(_) | Value::Number(_) | Value::Bool(_) | Value::Null => v.to_string(),
        _ => "unknown".into(),
    }
}

fn dedup_union(parts: Vec<String>) -> String {
    let mut out: Vec<String> = Vec::new();
    for p in parts {
        if !out.contains(&p) {
            out.push(p);
        }
    }
    if out.iter().any(|p| p == "unknown") {
        return "unknown".into();
    }
    out.join(" | ")
}

/// Parenthesizes a union or intersection so it can take `[]` or join another operator.
fn paren(t: &str) -> String {
    let mut depth = 0i32;
    let mut in_string = false;
    let mut escaped = false;
    let mut found = false;
    for c in t.chars() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' | '[' | '(' | '<' => depth += 1,
            '}' | ']' | ')' | '>' => depth -= 1,
            '|' | '&' if depth == 0 => found = true,
            _ => {}
        }
    }
    if found {
        format!("({t})")
    } else {
        t.to_string()
    }
}

pub fn is_ident(s: &str) -> bool {
    let mut c = s.chars();
    c.next()
        .is_some_and(|f| f.is_ascii_alphabetic() || f == '_' || f == '$')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_' || x == '$')
}

/// A JSDoc comment from lines, indented by `pad`; empty for no lines.
fn jsdoc(lines: &[String], pad: &str) -> String {
    if lines.is_empty() {
        return String::new();
    }
    let clean: Vec<String> = lines.iter().map(|l| l.replace("*/", "*\\/")).collect();
    if clean.len() == 1 && clean[0].len() < 90 {
        return format!("{pad}/** {} */\n", clean[0]);
    }
    let mut s = format!("{pad}/**\n");
    for l in clean {
        if l.is_empty() {
            s.push_str(&format!("{pad} *\n"));
        } else {
            s.push_str(&format!("{pad} * {l}\n"));
        }
    }
    s.push_str(&format!("{pad} */\n"));
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(input: Value, output: Option<Value>) -> Tool {
        let mut t =
            json!({"name": "do-thing", "description": "Does a thing.", "inputSchema": input});
        if let Some(o) = output {
            t["outputSchema"] = o;
        }
        serde_json::from_value(t).unwrap()
    }

    #[test]
    fn simple_object_with_docs_and_optional_fields() {
        let t = render(&tool(
            json!({"type": "object", "properties": {
                "path": {"type": "string", "description": "Where."},
                "n": {"type": "integer", "default": 3}}, "required": ["path"]}),
            None,
        ));
        assert_eq!(
            t.signature("fs", "do-thing"),
            "tools.fs[\"do-thing\"](args: DoThingArgs): Promise<unknown>"
        );
        assert_eq!(
            t.declarations("do-thing"),
            "interface DoThingArgs {\n  /** Where. */\n  path: string;\n  /** @default 3 */\n  n?: number;\n}\n/** Does a thing. */\ndeclare function do_thing(args: DoThingArgs): Promise<unknown>;\n"
        );
    }

    #[test]
    fn recursion_is_named_once() {
        let t = render(&tool(
            json!({"type": "object", "properties": {"root": {"$ref": "#/$defs/Node"}},
                   "$defs": {"Node": {"type": "object", "properties": {
                       "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}}}),
            None,
        ));
        assert_eq!(t.types.len(), 2);
        assert!(t.types[1].starts_with("interface Node {"), "{}", t.types[1]);
        assert!(t.types[1].contains("children?: Node[];"), "{}", t.types[1]);
    }
}

//! One operation as a tool: name, description, input and output schemas, annotations, the
//! credentials it asks for, and the plan [`crate::build_request`] follows.
//!
//! The input schema is an object with one property per parameter (named as in the
//! document; when two locations share a name, or a parameter is named `body`, each such
//! property is prefixed with its location: `query_id`, `path_id`) and, when the operation
//! takes a request body, a `body` property holding the whole body.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value, json};

use crate::error::OperationError;
use crate::names::{clean_text, is_invisible};
use crate::refs::DocId;
use crate::schema::{Direction, SchemaBuilder};
use crate::security::SecurityRequirement;
use crate::spec::{Method, Spec, Warning};

/// Longest tool description.
const MAX_DESCRIPTION: usize = 4_000;
/// Headers a document may not hand to callers: framing, routing, connection handling and
/// cookies (cookie parameters have their own location).
const TRANSPORT_HEADERS: &[&str] = &[
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "upgrade",
    "te",
    "trailer",
    "expect",
    "cookie",
    "forwarded",
    "x-forwarded-for",
    "x-forwarded-host",
    "x-forwarded-proto",
];
/// Longest parameter description.
const MAX_PARAM_DESCRIPTION: usize = 1_000;

/// A tool built from one operation.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Operation {
    pub name: String,
    pub operation_id: Option<String>,
    pub method: Method,
    /// The path template as written (`/pets/{petId}`).
    pub path: String,
    pub description: String,
    /// A JSON Schema object (see the module's documentation for its shape).
    pub input_schema: Value,
    /// The JSON Schema of the first 2xx (else `default`) JSON response, when there is one.
    /// It is the body's schema as written: not necessarily of type `object`.
    pub output_schema: Option<Value>,
    pub annotations: Annotations,
    /// Alternatives: satisfying any one requirement (all its schemes) is enough. Empty when
    /// the operation needs no credentials.
    pub security: Vec<SecurityRequirement>,
    pub warnings: Vec<Warning>,
    /// The operation's or its path item's `servers[0]`, when either has one.
    pub(crate) servers: Option<Value>,
    pub(crate) params: Vec<Param>,
    pub(crate) body: Option<BodyPlan>,
}

/// MCP tool annotations, from the method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Annotations {
    /// GET, HEAD, OPTIONS, TRACE.
    pub read_only: bool,
    /// DELETE.
    pub destructive: bool,
    /// Read-only methods, PUT, DELETE.
    pub idempotent: bool,
    /// Always: the tool talks to a remote API.
    pub open_world: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum ParamIn {
    Path,
    Query,
    Header,
    Cookie,
}

impl ParamIn {
    fn key(self) -> &'static str {
        match self {
            Self::Path => "path",
            Self::Query => "query",
            Self::Header => "header",
            Self::Cookie => "cookie",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    Simple,
    Label,
    Matrix,
    Form,
    SpaceDelimited,
    PipeDelimited,
    DeepObject,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Param {
    /// The argument's name in the input schema.
    pub arg: String,
    pub name: String,
    pub location: ParamIn,
    pub required: bool,
    pub style: Style,
    pub explode: bool,
    pub allow_reserved: bool,
    /// Declared with `content` (a JSON media type): the value is sent as JSON text.
    pub json: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyKind {
    Json,
    Form,
    Multipart,
    Text,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BodyPlan {
    pub content_type: String,
    pub kind: BodyKind,
    pub required: bool,
}

fn body_kind(content_type: &str) -> Option<BodyKind> {
    // The type becomes a header: only visible ASCII and spaces.
    if !content_type.bytes().all(|b| (b' '..=b'~').contains(&b)) {
        return None;
    }
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    match essence.as_str() {
        "application/x-www-form-urlencoded" => Some(BodyKind::Form),
        "multipart/form-data" => Some(BodyKind::Multipart),
        "text/plain" => Some(BodyKind::Text),
        e if is_json(e) => Some(BodyKind::Json),
        _ => None,
    }
}

/// `application/json`, `text/json` and `+json` types.
pub(crate) fn is_json(essence: &str) -> bool {
    essence == "application/json" || essence == "text/json" || essence.ends_with("+json")
}

fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

impl Spec {
    /// Like [`Spec::server_url`], preferring the operation's own `servers`, then its path
    /// item's, then the document's.
    pub fn operation_server_url(
        &self,
        op: &Operation,
        variables: &std::collections::BTreeMap<String, String>,
    ) -> Result<url::Url, crate::error::RequestError> {
        match &op.servers {
            Some(server) => self.server_from(Some(server), variables),
            None => self.server_url(variables),
        }
    }

    /// Builds the tool for the operation named `name` (its tool name, in any case, or its
    /// `operationId`).
    pub fn operation(&self, name: &str) -> Result<Operation, OperationError> {
        let summary = self
            .find(name)
            .ok_or_else(|| OperationError::NotFound(name.to_owned()))?;
        let docs = &self.docs;
        let item_at = format!("/paths/{}", escape(&summary.path));
        let raw_item = docs
            .root
            .get("paths")
            .and_then(|p| p.get(&summary.path))
            .ok_or_else(|| OperationError::NotFound(name.to_owned()))?;
        let (item_doc, item) = docs.deref(&DocId::Root, raw_item, &item_at)?;
        let op_at = format!("{item_at}/{}", summary.method.key());
        let op = item
            .get(summary.method.key())
            .ok_or_else(|| OperationError::NotFound(name.to_owned()))?;
        let mut warnings = Vec::new();
        let mut inputs = SchemaBuilder::new(docs, Direction::Input);

        // Parameters: the path item's, then the operation's (same name and location replace).
        let mut declared: Vec<(Param, Value, String)> = Vec::new();
        let mut slots: HashMap<(String, ParamIn), usize> = HashMap::new();
        for (source, at) in [(item, item_at.clone()), (op, op_at.clone())] {
            let Some(list) = source.get("parameters") else {
                continue;
            };
            let Some(list) = list.as_array() else {
                return Err(invalid(
                    &format!("{at}/parameters"),
                    "`parameters` must be an array",
                ));
            };
            for (i, raw) in list.iter().enumerate() {
                let p_at = format!("{at}/parameters/{i}");
                let (p_doc, p) = docs.deref(&item_doc, raw, &p_at)?;
                let Some((param, schema)) = parameter(p, &p_at, &mut warnings)? else {
                    continue;
                };
                let schema = match schema {
                    Some(s) => inputs.convert(&p_doc, &s, &p_at)?,
                    None => json!({}),
                };
                let mut schema = schema;
                if let (Some(d), Value::Object(m)) =
                    (p.get("description").and_then(Value::as_str), &mut schema)
                    && !m.contains_key("$ref")
                {
                    m.insert(
                        "description".to_owned(),
                        Value::String(clean_text(d, MAX_PARAM_DESCRIPTION)),
                    );
                }
                match slots.entry((param.name.clone(), param.location)) {
                    Entry::Occupied(slot) => declared[*slot.get()] = (param, schema, p_at),
                    Entry::Vacant(slot) => {
                        slot.insert(declared.len());
                        declared.push((param, schema, p_at));
                    }
                }
            }
        }
        check_path_template(&summary.path, &declared, &op_at)?;

        // The request body.
        let mut body = None;
        let mut body_schema = None;
        if let Some(raw) = op.get("requestBody") {
            let rb_at = format!("{op_at}/requestBody");
            let (rb_doc, rb) = docs.deref(&item_doc, raw, &rb_at)?;
            let required = rb.get("required").and_then(Value::as_bool) == Some(true);
            let content = rb.get("content").and_then(Value::as_object);
            let chosen = content.and_then(|c| {
                c.iter()
                    .find_map(|(ct, media)| Some((ct, body_kind(ct)?, media)))
            });
            match chosen {
                Some((ct, kind, media)) => {
                    let m_at = format!("{rb_at}/content/{}", escape(ct));
                    let mut schema = match media.get("schema") {
                        Some(s) => inputs.convert(&rb_doc, s, &format!("{m_at}/schema"))?,
                        None => json!({}),
                    };
                    if let (Some(d), Value::Object(m)) =
                        (rb.get("description").and_then(Value::as_str), &mut schema)
                        && !m.contains_key("$ref")
                    {
                        m.insert(
                            "description".to_owned(),
                            Value::String(clean_text(d, MAX_PARAM_DESCRIPTION)),
                        );
                    }
                    body = Some(BodyPlan {
                        content_type: ct.clone(),
                        kind,
                        required,
                    });
                    body_schema = Some(schema);
                }
                None => {
                    let types: Vec<&str> = content
                        .map(|c| c.keys().map(String::as_str).collect())
                        .unwrap_or_default();
                    let message = format!(
                        "no supported request body type among [{}] (JSON, form, multipart, text/plain)",
                        types.join(", ")
                    );
                    if required {
                        return Err(invalid(&rb_at, &message));
                    }
                    warnings.push(Warning {
                        pointer: rb_at,
                        message: format!("{message}; the body is not offered"),
                    });
                }
            }
        }

        // Argument names: unique, `body` kept for the body.
        let mut params = Vec::with_capacity(declared.len());
        let mut properties = Map::new();
        let mut required = Vec::new();
        let mut locations: HashMap<&str, usize> = HashMap::new();
        for (p, _, _) in &declared {
            *locations.entry(p.name.as_str()).or_default() += 1;
        }
        let clashes = |p: &Param| {
            (body.is_some() && p.name == "body") || locations.get(p.name.as_str()) > Some(&1)
        };
        let mut named: Vec<(Param, Value)> = Vec::with_capacity(declared.len());
        for (param, schema, _) in &declared {
            let mut param = param.clone();
            if clashes(&param) {
                param.arg = format!("{}_{}", param.location.key(), param.arg);
            }
            named.push((param, schema.clone()));
        }
        for (mut param, schema) in named {
            let base = param.arg.clone();
            let mut n = 2;
            while properties.contains_key(&param.arg) || (body.is_some() && param.arg == "body") {
                param.arg = format!("{base}_{n}");
                n += 1;
            }
            if param.required {
                required.push(Value::String(param.arg.clone()));
            }
            properties.insert(param.arg.clone(), schema);
            params.push(param);
        }
        if let (Some(plan), Some(schema)) = (&body, body_schema) {
            if plan.required {
                required.push(json!("body"));
            }
            properties.insert("body".to_owned(), schema);
        }
        let defs = inputs.finish()?;
        let mut input_schema =
            json!({ "type": "object", "properties": properties, "additionalProperties": false });
        if !required.is_empty() {
            input_schema["required"] = Value::Array(required);
        }
        if !defs.is_empty() {
            input_schema["$defs"] = Value::Object(defs);
        }

        Ok(Operation {
            name: summary.name.clone(),
            operation_id: summary.operation_id.clone(),
            method: summary.method,
            path: summary.path.clone(),
            description: description(op, summary.method, &summary.path),
            input_schema,
            output_schema: self.output_schema(&item_doc, op, &op_at)?,
            annotations: annotations(summary.method),
            servers: [op, item]
                .iter()
                .find_map(|v| v.pointer("/servers/0"))
                .cloned(),
            security: self.security(op),
            warnings,
            params,
            body,
        })
    }

    fn output_schema(
        &self,
        doc: &DocId,
        op: &Value,
        op_at: &str,
    ) -> Result<Option<Value>, OperationError> {
        let Some(responses) = op.get("responses").and_then(Value::as_object) else {
            return Ok(None);
        };
        let mut codes: Vec<&String> = responses.keys().filter(|c| c.starts_with('2')).collect();
        codes.sort_by_key(|c| (c.to_ascii_uppercase().contains('X'), c.as_str()));
        let Some(code) = codes
            .first()
            .copied()
            .or_else(|| responses.keys().find(|c| *c == "default"))
        else {
            return Ok(None);
        };
        let r_at = format!("{op_at}/responses/{code}");
        let Some(raw) = responses.get(code) else {
            return Ok(None);
        };
        let (r_doc, response) = self.docs.deref(doc, raw, &r_at)?;
        let Some(content) = response.get("content").and_then(Value::as_object) else {
            return Ok(None);
        };
        let Some((ct, media)) = content.iter().find(|(ct, _)| {
            is_json(
                ct.split(';')
                    .next()
                    .unwrap_or("")
                    .trim()
                    .to_ascii_lowercase()
                    .as_str(),
            )
        }) else {
            return Ok(None);
        };
        let Some(schema) = media.get("schema") else {
            return Ok(None);
        };
        let mut builder = SchemaBuilder::new(&self.docs, Direction::Output);
        let mut out = builder.convert(
            &r_doc,
            schema,
            &format!("{r_at}/content/{}/schema", escape(ct)),
        )?;
        let defs = builder.finish()?;
        if !defs.is_empty() {
            out = match out {
                Value::Object(mut m) => {
                    m.insert("$defs".to_owned(), Value::Object(defs));
                    Value::Object(m)
                }
                other => json!({ "allOf": [other], "$defs": defs }),
            };
        }
        Ok(Some(out))
    }
}

fn invalid(pointer: &str, message: &str) -> OperationError {
    OperationError::Invalid {
        pointer: pointer.to_owned(),
        message: message.to_owned(),
    }
}

/// A Parameter Object as a plan and its schema; `None` for headers the spec says to ignore.
fn parameter(
    p: &Value,
    at: &str,
    warnings: &mut Vec<Warning>,
) -> Result<Option<(Param, Option<Value>)>, OperationError> {
    let name = p
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| invalid(at, "a parameter needs a `name`"))?;
    let location = match p.get("in").and_then(Value::as_str) {
        Some("path") => ParamIn::Path,
        Some("query") => ParamIn::Query,
        Some("header") => ParamIn::Header,
        Some("cookie") => ParamIn::Cookie,
        other => {
            return Err(invalid(
                at,
                &format!(
                    "parameter `{name}` has `in: {}`; expected path, query, header or cookie",
                    other.unwrap_or("(missing)")
                ),
            ));
        }
    };
    if location == ParamIn::Header {
        let lower = name.to_ascii_lowercase();
        if ["accept", "content-type", "authorization"].contains(&lower.as_str()) {
            warnings.push(Warning {
                pointer: at.to_owned(),
                message: format!("header parameter `{name}` is ignored (OpenAPI says so)"),
            });
            return Ok(None);
        }
        if TRANSPORT_HEADERS.contains(&lower.as_str()) || lower.starts_with("proxy-") {
            warnings.push(Warning {
                pointer: at.to_owned(),
                message: format!(
                    "header parameter `{name}` is ignored (the host's HTTP client owns it)"
                ),
            });
            return Ok(None);
        }
        if name.is_empty()
            || !name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
        {
            return Err(invalid(
                at,
                &format!("header parameter `{name}` is not a valid header name"),
            ));
        }
    }
    if location == ParamIn::Cookie
        && (name.is_empty()
            || name
                .bytes()
                .any(|b| b <= b' ' || b"=;,\"\\\x7f".contains(&b)))
    {
        return Err(invalid(
            at,
            &format!("cookie parameter `{name}` is not a valid cookie name"),
        ));
    }
    let style = match p.get("style").and_then(Value::as_str) {
        None => match location {
            ParamIn::Query | ParamIn::Cookie => Style::Form,
            ParamIn::Path | ParamIn::Header => Style::Simple,
        },
        Some("simple") => Style::Simple,
        Some("label") => Style::Label,
        Some("matrix") => Style::Matrix,
        Some("form") => Style::Form,
        Some("spaceDelimited") => Style::SpaceDelimited,
        Some("pipeDelimited") => Style::PipeDelimited,
        Some("deepObject") => Style::DeepObject,
        Some(other) => {
            return Err(invalid(
                at,
                &format!("parameter `{name}` has unknown style `{other}`"),
            ));
        }
    };
    let explode = p
        .get("explode")
        .and_then(Value::as_bool)
        .unwrap_or(style == Style::Form);
    let (schema, json) = match (p.get("schema"), p.get("content").and_then(Value::as_object)) {
        (Some(s), _) => (Some(s.clone()), false),
        // `content` (one media type): JSON types send the value as JSON text, others as is.
        (None, Some(content)) => match content.iter().next() {
            Some((media, m)) => (
                m.get("schema").cloned(),
                is_json(
                    &media
                        .split(';')
                        .next()
                        .unwrap_or("")
                        .trim()
                        .to_ascii_lowercase(),
                ),
            ),
            None => (None, false),
        },
        (None, None) => (None, false),
    };
    let param = Param {
        // What the caller sees: the name without invisible characters (the request uses
        // the name as written).
        arg: match name
            .chars()
            .filter(|c| !is_invisible(*c))
            .collect::<String>()
        {
            visible if visible.is_empty() => "param".to_owned(),
            visible => visible,
        },
        name: name.to_owned(),
        location,
        required: location == ParamIn::Path
            || p.get("required").and_then(Value::as_bool) == Some(true),
        style,
        explode,
        allow_reserved: p.get("allowReserved").and_then(Value::as_bool) == Some(true),
        json,
    };
    Ok(Some((param, schema)))
}

/// Every `{variable}` of the path has a path parameter, and every path parameter a variable.
fn check_path_template(
    path: &str,
    declared: &[(Param, Value, String)],
    at: &str,
) -> Result<(), OperationError> {
    let mut variables = HashSet::new();
    let mut rest = path;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else {
            return Err(invalid(at, &format!("unclosed `{{` in path `{path}`")));
        };
        variables.insert(&rest[open + 1..open + close]);
        rest = &rest[open + close + 1..];
    }
    let path_params: HashSet<&str> = declared
        .iter()
        .filter(|(p, _, _)| p.location == ParamIn::Path)
        .map(|(p, _, _)| p.name.as_str())
        .collect();
    for v in &variables {
        if !path_params.contains(v) {
            return Err(invalid(
                at,
                &format!("path variable `{{{v}}}` has no path parameter"),
            ));
        }
    }
    for (p, _, p_at) in declared {
        if p.location == ParamIn::Path && !variables.contains(&p.name.as_str()) {
            return Err(invalid(
                p_at,
                &format!("path parameter `{}` is not in the path `{path}`", p.name),
            ));
        }
    }
    Ok(())
}

fn description(op: &Value, method: Method, path: &str) -> String {
    let text = |k: &str| {
        op.get(k)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
    };
    let joined = match (text("summary"), text("description")) {
        (Some(s), Some(d)) if d.starts_with(s) => d.to_owned(),
        (Some(s), Some(d)) => format!("{s}\n\n{d}"),
        (Some(s), None) => s.to_owned(),
        (None, Some(d)) => d.to_owned(),
        (None, None) => format!("{method} {path}"),
    };
    clean_text(&joined, MAX_DESCRIPTION)
}

fn annotations(method: Method) -> Annotations {
    let read_only = matches!(
        method,
        Method::Get | Method::Head | Method::Options | Method::Trace
    );
    Annotations {
        read_only,
        destructive: method == Method::Delete,
        idempotent: read_only || matches!(method, Method::Put | Method::Delete),
        open_world: true,
    }
}

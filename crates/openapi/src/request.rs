//! Arguments to an HTTP request: path values percent-encoded inside their segment (never
//! `.`, `..` or empty, never outside the base URL's path), query styles, headers without
//! controls, cookies, and JSON, form, multipart and text bodies.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

use percent_encoding::{
    AsciiSet, CONTROLS, NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode,
};
use serde_json::{Map, Value};
use url::Url;

use crate::error::RequestError;
use crate::operation::{BodyKind, Operation, Param, ParamIn, Style};
use crate::spec::Method;

/// Everything but RFC 3986's unreserved characters.
const STRICT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');
/// `allowReserved`: reserved characters stay, but never those that would end or split the
/// query (`#`, `&`, `=`), nor `+` (a space to form decoders) or `%`.
const RESERVED_OK: &AsciiSet = &STRICT
    .remove(b':')
    .remove(b'/')
    .remove(b'?')
    .remove(b'@')
    .remove(b'!')
    .remove(b'$')
    .remove(b'\'')
    .remove(b'(')
    .remove(b')')
    .remove(b'*')
    .remove(b',')
    .remove(b';')
    .remove(b'[')
    .remove(b']');
/// What a cookie value may not hold as is.
const COOKIE: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b',')
    .add(b';')
    .add(b'\\')
    .add(b'%');

/// Names listed in an error message.
const MAX_LISTED: usize = 50;

/// A request for the host to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpRequest {
    pub method: Method,
    pub url: Url,
    /// Lower-case names; `cookie` at most once.
    pub headers: Vec<(String, String)>,
    pub body: Option<Vec<u8>>,
    /// The body's `Content-Type` (with the multipart boundary).
    pub content_type: Option<String>,
}

/// Builds the request `args` (an object shaped by `op.input_schema`) asks for, under `base`
/// (whose path is a prefix the request never leaves).
pub fn build_request(
    op: &Operation,
    base: &Url,
    args: &Value,
) -> Result<HttpRequest, RequestError> {
    if base.cannot_be_a_base() || !matches!(base.scheme(), "http" | "https") {
        return Err(RequestError::Server(format!(
            "`{base}` is not an http(s) base URL"
        )));
    }
    let empty = Map::new();
    let args = match args {
        Value::Object(map) => map,
        Value::Null => &empty,
        other => return Err(RequestError::NotAnObject(kind(other))),
    };
    check_names(op, args)?;
    let value_of = |p: &Param| args.get(&p.arg).filter(|v| !v.is_null());

    // The path, under the base's.
    let prefix = base.path().trim_end_matches('/').to_owned();
    let mut path = prefix.clone();
    let path_params: HashMap<&str, &Param> = op
        .params
        .iter()
        .filter(|p| p.location == ParamIn::Path)
        .map(|p| (p.name.as_str(), p))
        .collect();
    let mut rest = op.path.as_str();
    while let Some(open) = rest.find('{') {
        path.push_str(&rest[..open]);
        let close = rest[open..].find('}').map_or(rest.len(), |c| open + c);
        let name = rest.get(open + 1..close).unwrap_or("");
        let param = *path_params
            .get(name)
            .ok_or_else(|| RequestError::BadArgument {
                name: name.to_owned(),
                message: "the path names a parameter the operation does not declare".to_owned(),
            })?;
        let value = value_of(param)
            .ok_or_else(|| RequestError::MissingRequired(vec![param.arg.clone()]))?;
        path.push_str(&path_value(param, value)?);
        rest = rest.get(close + 1..).unwrap_or("");
    }
    path.push_str(rest);
    // No dot segment, whatever the template and the values made together.
    for segment in path[prefix.len()..].split('/') {
        let decoded = percent_decode_str(segment).decode_utf8_lossy();
        if decoded == "." || decoded == ".." {
            return Err(RequestError::EscapesBase {
                base: base.to_string(),
                built: path.clone(),
            });
        }
    }
    let mut url = base.clone();
    url.set_fragment(None);
    url.set_path(&path);
    let built = url.path();
    let inside = built
        .strip_prefix(prefix.as_str())
        .is_some_and(|r| r.is_empty() || r.starts_with('/'));
    if !inside {
        return Err(RequestError::EscapesBase {
            base: base.to_string(),
            built: built.to_owned(),
        });
    }

    // Query, headers, cookies.
    let mut query: Vec<String> = base
        .query()
        .filter(|q| !q.is_empty())
        .map(str::to_owned)
        .into_iter()
        .collect();
    let mut headers = Vec::new();
    let mut cookies = Vec::new();
    for param in &op.params {
        let Some(value) = value_of(param) else {
            continue;
        };
        match param.location {
            ParamIn::Path => {}
            ParamIn::Query => query_value(param, value, &mut query)?,
            ParamIn::Header => {
                let text = header_value(param, value);
                if text.chars().any(|c| c.is_control() && c != '\t') {
                    return Err(RequestError::HeaderValue {
                        name: param.name.clone(),
                    });
                }
                if !text.is_ascii() {
                    return Err(RequestError::BadArgument {
                        name: param.arg.clone(),
                        message: "header values must be ASCII".to_owned(),
                    });
                }
                headers.push((param.name.to_ascii_lowercase(), text));
            }
            ParamIn::Cookie => {
                let text = if param.json {
                    value.to_string()
                } else {
                    simple(value, false)
                };
                cookies.push(format!(
                    "{}={}",
                    param.name,
                    utf8_percent_encode(&text, COOKIE)
                ));
            }
        }
    }
    if !query.is_empty() {
        url.set_query(Some(&query.join("&")));
    } else {
        url.set_query(None);
    }
    if !cookies.is_empty() {
        headers.push(("cookie".to_owned(), cookies.join("; ")));
    }

    let (body, content_type) = match (&op.body, args.get("body").filter(|v| !v.is_null())) {
        (Some(plan), Some(value)) => {
            let (bytes, ct) = encode_body(plan.kind, &plan.content_type, value)?;
            (Some(bytes), Some(ct))
        }
        _ => (None, None),
    };
    Ok(HttpRequest {
        method: op.method,
        url,
        headers,
        body,
        content_type,
    })
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Unknown arguments, then missing required ones.
fn check_names(op: &Operation, args: &Map<String, Value>) -> Result<(), RequestError> {
    let mut accepted: HashSet<&str> = op.params.iter().map(|p| p.arg.as_str()).collect();
    if op.body.is_some() {
        accepted.insert("body");
    }
    let unknown: Vec<String> = args
        .keys()
        .filter(|k| !accepted.contains(k.as_str()))
        .cloned()
        .collect();
    if !unknown.is_empty() {
        let accepted = accepted.into_iter().map(str::to_owned).collect();
        return Err(RequestError::UnknownArguments {
            unknown: bounded(unknown),
            accepted: bounded(accepted),
        });
    }
    let present = |k: &str| args.get(k).is_some_and(|v| !v.is_null());
    let mut missing: Vec<String> = op
        .params
        .iter()
        .filter(|p| p.required && !present(&p.arg))
        .map(|p| p.arg.clone())
        .collect();
    if op.body.as_ref().is_some_and(|b| b.required) && !present("body") {
        missing.push("body".to_owned());
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(RequestError::MissingRequired(bounded(missing)))
    }
}

/// Names for a message: sorted, at most [`MAX_LISTED`], then how many more.
fn bounded(mut names: Vec<String>) -> Vec<String> {
    names.sort();
    if names.len() > MAX_LISTED {
        let more = names.len() - MAX_LISTED;
        names.truncate(MAX_LISTED);
        names.push(format!("… {more} more"));
    }
    names
}

/// A scalar as text (JSON text for anything nested).
fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        other => other.to_string(),
    }
}

/// `simple` style, unencoded: `a,b`; objects `k,v` or, exploded, `k=v`.
fn simple(v: &Value, explode: bool) -> String {
    match v {
        Value::Array(items) => items.iter().map(scalar).collect::<Vec<_>>().join(","),
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| {
                if explode {
                    format!("{k}={}", scalar(v))
                } else {
                    format!("{k},{}", scalar(v))
                }
            })
            .collect::<Vec<_>>()
            .join(","),
        other => scalar(other),
    }
}

fn enc(text: &str) -> String {
    utf8_percent_encode(text, STRICT).to_string()
}

/// A path parameter's text: every piece encoded (`/`, `?`, `#`, `%` included), separators
/// as the style says. Empty, `.` and `..` are refused.
fn path_value(p: &Param, v: &Value) -> Result<String, RequestError> {
    let pieces: Vec<(Option<String>, String)> = match (p.json, v) {
        (true, v) => vec![(None, v.to_string())],
        (false, Value::Array(items)) => items.iter().map(|i| (None, scalar(i))).collect(),
        (false, Value::Object(map)) => map
            .iter()
            .map(|(k, v)| (Some(k.clone()), scalar(v)))
            .collect(),
        (false, other) => vec![(None, scalar(other))],
    };
    let sep = match (p.style, p.explode) {
        (Style::Label, true) => ".",
        (Style::Matrix, true) => ";",
        _ => ",",
    };
    let joined = pieces
        .iter()
        .map(|(k, v)| match (k, p.explode, p.style) {
            (Some(k), true, _) => format!("{}={}", enc(k), enc(v)),
            (Some(k), false, _) => format!("{},{}", enc(k), enc(v)),
            (None, true, Style::Matrix) => format!("{}={}", enc(&p.name), enc(v)),
            (None, _, _) => enc(v),
        })
        .collect::<Vec<_>>()
        .join(sep);
    let text = match p.style {
        Style::Label => format!(".{joined}"),
        Style::Matrix if p.explode && v.is_array() => format!(";{joined}"),
        Style::Matrix => format!(";{}={joined}", enc(&p.name)),
        _ => joined,
    };
    let decoded = percent_decode_str(&text).decode_utf8_lossy();
    if text.is_empty() || decoded == "." || decoded == ".." {
        return Err(RequestError::PathTraversal {
            name: p.arg.clone(),
        });
    }
    Ok(text)
}

fn query_value(p: &Param, v: &Value, out: &mut Vec<String>) -> Result<(), RequestError> {
    let encode = |t: &str| {
        if p.allow_reserved {
            utf8_percent_encode(t, RESERVED_OK).to_string()
        } else {
            enc(t)
        }
    };
    let name = enc(&p.name);
    if p.json {
        out.push(format!("{name}={}", encode(&v.to_string())));
        return Ok(());
    }
    match (p.style, v) {
        (Style::DeepObject, Value::Object(map)) => {
            for (k, v) in map {
                if !v.is_null() {
                    out.push(format!("{name}[{}]={}", enc(k), encode(&scalar(v))));
                }
            }
        }
        (Style::DeepObject, _) => {
            return Err(RequestError::BadArgument {
                name: p.arg.clone(),
                message: "a deepObject parameter takes an object".to_owned(),
            });
        }
        (_, Value::Array(items)) if p.explode => {
            for item in items {
                out.push(format!("{name}={}", encode(&scalar(item))));
            }
        }
        (_, Value::Object(map)) if p.explode => {
            for (k, v) in map {
                out.push(format!("{}={}", enc(k), encode(&scalar(v))));
            }
        }
        (style, Value::Array(_) | Value::Object(_)) => {
            let sep = match style {
                Style::SpaceDelimited => "%20",
                Style::PipeDelimited => "|",
                _ => ",",
            };
            let pieces: Vec<String> = match v {
                Value::Array(items) => items.iter().map(|i| encode(&scalar(i))).collect(),
                Value::Object(map) => map
                    .iter()
                    .flat_map(|(k, v)| [enc(k), encode(&scalar(v))])
                    .collect(),
                _ => Vec::new(),
            };
            out.push(format!("{name}={}", pieces.join(sep)));
        }
        (_, other) => out.push(format!("{name}={}", encode(&scalar(other)))),
    }
    Ok(())
}

fn header_value(p: &Param, v: &Value) -> String {
    if p.json {
        v.to_string()
    } else {
        simple(v, p.explode)
    }
}

fn encode_body(
    kind: BodyKind,
    declared: &str,
    value: &Value,
) -> Result<(Vec<u8>, String), RequestError> {
    let object = || {
        value.as_object().ok_or_else(|| RequestError::BadArgument {
            name: "body".to_owned(),
            message: format!(
                "a {declared} body takes an object, not {}",
                self::kind(value)
            ),
        })
    };
    match kind {
        BodyKind::Json => Ok((value.to_string().into_bytes(), declared.to_owned())),
        BodyKind::Text => Ok((scalar(value).into_bytes(), declared.to_owned())),
        BodyKind::Form => {
            let mut form = url::form_urlencoded::Serializer::new(String::new());
            for (k, v) in object()? {
                match v {
                    Value::Null => {}
                    Value::Array(items) => {
                        for item in items {
                            form.append_pair(k, &scalar(item));
                        }
                    }
                    other => {
                        form.append_pair(k, &scalar(other));
                    }
                }
            }
            Ok((
                form.finish().into_bytes(),
                "application/x-www-form-urlencoded".to_owned(),
            ))
        }
        BodyKind::Multipart => {
            let fields: Vec<(String, String, bool)> = object()?
                .iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), scalar(v), v.is_object() || v.is_array()))
                .collect();
            let boundary = boundary(&fields);
            let mut out = String::new();
            for (name, text, json) in &fields {
                let name = name
                    .replace('"', "%22")
                    .replace('\r', "%0D")
                    .replace('\n', "%0A");
                let _ = write!(
                    out,
                    "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n"
                );
                if *json {
                    out.push_str("Content-Type: application/json\r\n");
                }
                let _ = write!(out, "\r\n{text}\r\n");
            }
            let _ = write!(out, "--{boundary}--\r\n");
            Ok((
                out.into_bytes(),
                format!("multipart/form-data; boundary={boundary}"),
            ))
        }
    }
}

/// A boundary found in no field (deterministic: the same fields give the same bytes).
fn boundary(fields: &[(String, String, bool)]) -> String {
    let mut hash = 0xcbf2_9ce4_8422_2325_u64;
    for (k, v, _) in fields {
        for b in k.bytes().chain(v.bytes()) {
            hash = (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    let mut n = 0u32;
    loop {
        let candidate = format!("code-executor-{hash:016x}-{n}");
        if !fields
            .iter()
            .any(|(k, v, _)| k.contains(&candidate) || v.contains(&candidate))
        {
            return candidate;
        }
        n += 1;
    }
}

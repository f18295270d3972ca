//! A parsed document: its version, its operations listed cheaply (names given once, in
//! document order), and its server URL.

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use serde_json::Value;
use url::Url;

use crate::error::{RequestError, SpecError};
use crate::names::{Namer, clean_text, fallback, sanitize};
use crate::parse::{Format, Limits, parse_value};
use crate::refs::{DocId, Docs, RefPolicy};

/// How to read a document.
#[derive(Debug, Clone, Default)]
pub struct ParseOptions {
    pub format: Format,
    pub limits: Limits,
    /// Where `$ref`s may lead outside the document (nowhere by default).
    pub refs: RefPolicy,
    /// Where the document came from: relative server URLs are resolved against it.
    pub location: Option<Url>,
}

/// The OpenAPI version (3.2 documents are read as 3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    V3_0,
    V3_1,
}

/// Something odd that did not stop the document from being read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    /// Where, as a JSON pointer.
    pub pointer: String,
    pub message: String,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.pointer, self.message)
    }
}

/// An HTTP method an OpenAPI path item can hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    Get,
    Put,
    Post,
    Delete,
    Options,
    Head,
    Patch,
    Trace,
}

impl Method {
    /// In the order path items list them.
    pub(crate) const ALL: [Self; 8] = [
        Self::Get,
        Self::Put,
        Self::Post,
        Self::Delete,
        Self::Options,
        Self::Head,
        Self::Patch,
        Self::Trace,
    ];

    /// The upper-case name (`GET`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Get => "GET",
            Self::Put => "PUT",
            Self::Post => "POST",
            Self::Delete => "DELETE",
            Self::Options => "OPTIONS",
            Self::Head => "HEAD",
            Self::Patch => "PATCH",
            Self::Trace => "TRACE",
        }
    }

    pub(crate) fn key(self) -> &'static str {
        match self {
            Self::Get => "get",
            Self::Put => "put",
            Self::Post => "post",
            Self::Delete => "delete",
            Self::Options => "options",
            Self::Head => "head",
            Self::Patch => "patch",
            Self::Trace => "trace",
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An operation as listed: enough to choose it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperationSummary {
    /// The tool's name: unique in the document, case-insensitively.
    pub name: String,
    /// The `operationId` as written (it also finds the operation).
    pub operation_id: Option<String>,
    pub method: Method,
    pub path: String,
    pub summary: Option<String>,
    pub tags: Vec<String>,
    pub deprecated: bool,
}

/// Longest summary kept in a listing.
const MAX_SUMMARY: usize = 300;

/// A parsed OpenAPI 3.0 or 3.1 document.
#[derive(Debug)]
pub struct Spec {
    pub(crate) docs: Docs,
    version: Version,
    location: Option<Url>,
    summaries: Vec<OperationSummary>,
    by_name: HashMap<String, usize>,
    by_id: HashMap<String, usize>,
    warnings: Vec<Warning>,
}

impl Spec {
    /// Reads a document with the default limits and no external references.
    pub fn parse(bytes: &[u8], format: Format) -> Result<Self, SpecError> {
        Self::parse_with(
            bytes,
            &ParseOptions {
                format,
                ..ParseOptions::default()
            },
        )
    }

    /// Reads a document as `options` say.
    pub fn parse_with(bytes: &[u8], options: &ParseOptions) -> Result<Self, SpecError> {
        let root = parse_value(bytes, options.format, &options.limits)?;
        let version = detect_version(&root)?;
        let docs = Docs::new(root, options.refs.clone(), options.limits);
        let mut spec = Self {
            docs,
            version,
            location: options.location.clone(),
            summaries: Vec::new(),
            by_name: HashMap::new(),
            by_id: HashMap::new(),
            warnings: Vec::new(),
        };
        spec.list_operations()?;
        Ok(spec)
    }

    pub fn version(&self) -> Version {
        self.version
    }

    /// `info.title`, without invisible characters.
    pub fn title(&self) -> Option<String> {
        let title = self.docs.root.pointer("/info/title")?.as_str()?;
        Some(clean_text(title, MAX_SUMMARY))
    }

    /// Every operation, in document order.
    pub fn operations(&self) -> &[OperationSummary] {
        &self.summaries
    }

    /// What was odd but not fatal: renamed operations, skipped entries.
    pub fn warnings(&self) -> &[Warning] {
        &self.warnings
    }

    /// The listing of the operation named `name` (tool name, any case, or `operationId`).
    pub(crate) fn find(&self, name: &str) -> Option<&OperationSummary> {
        let index = self
            .by_name
            .get(&name.to_ascii_lowercase())
            .or_else(|| self.by_id.get(name))?;
        self.summaries.get(*index)
    }

    /// The base URL from the document's `servers[0]`: `{variables}` take the caller's values
    /// (checked against their `enum`) or their defaults; a relative URL is resolved against
    /// the document's location. Callers with their own base URL need not call this.
    pub fn server_url(&self, variables: &BTreeMap<String, String>) -> Result<Url, RequestError> {
        self.server_from(self.docs.root.pointer("/servers/0"), variables)
    }

    pub(crate) fn server_from(
        &self,
        server: Option<&Value>,
        variables: &BTreeMap<String, String>,
    ) -> Result<Url, RequestError> {
        let template = server
            .and_then(|s| s.get("url"))
            .and_then(Value::as_str)
            .unwrap_or("/");
        let declared = server
            .and_then(|s| s.get("variables"))
            .and_then(Value::as_object);
        for name in variables.keys() {
            if !declared.is_some_and(|d| d.contains_key(name)) {
                return Err(RequestError::Server(format!(
                    "no server variable is named `{name}`"
                )));
            }
        }
        let mut url = String::new();
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            url.push_str(&rest[..open]);
            let Some(close) = rest[open..].find('}') else {
                return Err(RequestError::Server(format!(
                    "unclosed `{{` in `{template}`"
                )));
            };
            let name = &rest[open + 1..open + close];
            let spec = declared.and_then(|d| d.get(name));
            let choices: Option<Vec<&str>> = spec
                .and_then(|s| s.get("enum"))
                .and_then(Value::as_array)
                .map(|e| e.iter().filter_map(Value::as_str).collect());
            let value = match variables.get(name) {
                Some(v) => {
                    if let Some(choices) = &choices
                        && !choices.contains(&v.as_str())
                    {
                        return Err(RequestError::Server(format!(
                            "`{v}` is not one of {} for server variable `{name}`",
                            choices.join(", ")
                        )));
                    }
                    if !v
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "-._~/".contains(c))
                    {
                        return Err(RequestError::Server(format!(
                            "server variable `{name}` may only hold letters, digits and -._~/"
                        )));
                    }
                    v.clone()
                }
                None => spec
                    .and_then(|s| s.get("default"))
                    .and_then(Value::as_str)
                    .ok_or_else(|| {
                        RequestError::Server(format!(
                            "server variable `{name}` has no value and no default"
                        ))
                    })?
                    .to_owned(),
            };
            url.push_str(&value);
            rest = &rest[open + close + 1..];
        }
        url.push_str(rest);
        let parsed = match Url::parse(&url) {
            Ok(u) => u,
            Err(url::ParseError::RelativeUrlWithoutBase) => {
                let Some(location) = &self.location else {
                    return Err(RequestError::Server(format!(
                        "`{url}` is relative and the document's location is unknown; pass a base URL"
                    )));
                };
                location
                    .join(&url)
                    .map_err(|e| RequestError::Server(format!("`{url}`: {e}")))?
            }
            Err(e) => return Err(RequestError::Server(format!("`{url}`: {e}"))),
        };
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(RequestError::Server(format!(
                "`{parsed}` is not an http(s) URL"
            )));
        }
        Ok(parsed)
    }

    fn list_operations(&mut self) -> Result<(), SpecError> {
        let Some(paths) = self.docs.root.get("paths") else {
            return Ok(());
        };
        let Some(paths) = paths.as_object() else {
            return Err(SpecError::Invalid {
                pointer: "/paths".to_owned(),
                message: "`paths` must be an object".to_owned(),
            });
        };
        let mut namer = Namer::default();
        let mut summaries = Vec::new();
        let mut warnings = Vec::new();
        let mut taken_by: HashMap<String, String> = HashMap::new();
        for (path, item) in paths {
            let item_at = format!("/paths/{}", path.replace('~', "~0").replace('/', "~1"));
            if path.starts_with("x-") {
                continue;
            }
            if !path.starts_with('/') {
                warnings.push(Warning {
                    pointer: item_at.clone(),
                    message: format!("path `{path}` does not start with `/`; skipped"),
                });
                continue;
            }
            let item = match self.docs.deref(&DocId::Root, item, &item_at) {
                Ok((_, item)) => item,
                Err(e) => {
                    warnings.push(Warning {
                        pointer: item_at,
                        message: format!("path item skipped: {e}"),
                    });
                    continue;
                }
            };
            for method in Method::ALL {
                let Some(op) = item.get(method.key()) else {
                    continue;
                };
                let op_at = format!("{item_at}/{}", method.key());
                if !op.is_object() {
                    warnings.push(Warning {
                        pointer: op_at,
                        message: "operation is not an object; skipped".to_owned(),
                    });
                    continue;
                }
                let operation_id = op
                    .get("operationId")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                let base = match operation_id.as_deref().map(sanitize) {
                    Some(s) if !s.is_empty() => s,
                    _ => fallback(method.key(), path),
                };
                let (name, renamed) = namer.claim(&base);
                let who = format!("{} {path}", method.as_str());
                if renamed {
                    let first = taken_by
                        .get(&base.to_ascii_lowercase())
                        .cloned()
                        .unwrap_or_default();
                    warnings.push(Warning {
                        pointer: op_at.clone(),
                        message: format!(
                            "{who} would be named `{base}` like {first}; named `{name}`"
                        ),
                    });
                }
                taken_by
                    .entry(base.to_ascii_lowercase())
                    .or_insert_with(|| who.clone());
                taken_by.entry(name.to_ascii_lowercase()).or_insert(who);
                let summary = op
                    .get("summary")
                    .and_then(Value::as_str)
                    .map(|s| clean_text(s, MAX_SUMMARY));
                let tags = op
                    .get("tags")
                    .and_then(Value::as_array)
                    .map(|t| {
                        t.iter()
                            .filter_map(Value::as_str)
                            .map(|t| clean_text(t, 100))
                            .collect()
                    })
                    .unwrap_or_default();
                let deprecated = op.get("deprecated").and_then(Value::as_bool) == Some(true);
                summaries.push(OperationSummary {
                    name,
                    operation_id,
                    method,
                    path: path.clone(),
                    summary,
                    tags,
                    deprecated,
                });
            }
        }
        for (i, s) in summaries.iter().enumerate() {
            self.by_name.insert(s.name.to_ascii_lowercase(), i);
            if let Some(id) = &s.operation_id {
                self.by_id.entry(id.clone()).or_insert(i);
            }
        }
        self.summaries = summaries;
        self.warnings = warnings;
        Ok(())
    }
}

fn detect_version(root: &Value) -> Result<Version, SpecError> {
    let Some(map) = root.as_object() else {
        return Err(SpecError::NotAnObject);
    };
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    if let Some(v) = map.get("swagger") {
        return Err(SpecError::Swagger2 { version: text(v) });
    }
    let Some(v) = map.get("openapi") else {
        return Err(SpecError::NotOpenApi);
    };
    let version = text(v);
    let mut parts = version.split('.');
    match (parts.next(), parts.next()) {
        (Some("3"), Some("0")) => Ok(Version::V3_0),
        (Some("3"), Some("1" | "2")) => Ok(Version::V3_1),
        _ => Err(SpecError::UnsupportedVersion(version)),
    }
}

//! OpenAPI documents as a source of tools (`"type": "openapi"`): each operation of the
//! document is a tool (`openapi::Spec::operation`: name, description, input and output
//! schemas, annotations from the method), and a call is an HTTP request the host makes
//! ([`http`]), never the sandbox.
//!
//! The start reads the document (a file, or an http(s) URL fetched under the same guard as
//! calls, within the document size cap and the connect timeout), parses it on a blocking
//! thread within `openapi::Limits`, builds every operation's tool once (GitHub's 1,223 take
//! well under a second; an operation that cannot be built is left out with a warning naming
//! why), and refuses a base URL at a special address (loopback, private, link-local,
//! metadata...) unless the entry's `allowAddresses` names it. The pool does the rest as for
//! MCP servers: laziness, retries, redaction, hidden tools, fingerprints, result caps and
//! deadlines (dropping a call's future drops its request).
//!
//! A call's trace context goes with its request as a `traceparent` header.
//!
//! Answers: a 2xx JSON body is the result (structured when it is an object), text is text,
//! an image is an image block and other bytes an embedded blob; any other status is a tool
//! error `HTTP <status>: <excerpt>` the code can read.

mod error;
mod http;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use async_trait::async_trait;
use base64::Engine as _;
use rmcp::model::{CallToolResult, ContentBlock, Tool, ToolAnnotations};
use serde_json::Value;
use url::Url;

use super::error::ConnectError;
use super::source::{SourceCall, SourceError, Started, ToolSource};
use crate::config::{DocumentLocation, OpenApiSpec, ServerSpec, Settings};
pub(crate) use error::{CallError, StartError};
use http::{Http, Outgoing, ResolvedAuth};
use policy::access::Reach;

/// A started OpenAPI source: the parsed document, its operations built, its HTTP side.
pub(super) struct OpenApiSource {
    spec: Arc<openapi::Spec>,
    operations: HashMap<String, Arc<openapi::Operation>>,
    tools: Vec<Tool>,
    /// The entry's `baseUrl`, else each operation's server from the document.
    base_url: Option<Url>,
    variables: BTreeMap<String, String>,
    http: Http,
    limits: openapi::ResponseLimits,
}

/// Starts the source `spec` describes (`o` is its OpenAPI part), within its connect timeout.
pub(super) async fn start(
    spec: &ServerSpec,
    o: &OpenApiSpec,
    settings: &Settings,
) -> Result<Started, ConnectError> {
    let timeout = spec.startup_timeout.unwrap_or(settings.connect_timeout);
    match tokio::time::timeout(timeout, start_within(spec, o, settings)).await {
        Ok(Ok(started)) => Ok(started),
        Ok(Err(e)) => Err(ConnectError::Other(e.to_string())),
        Err(_) => Err(ConnectError::TimedOut(format!(
            "its OpenAPI document was not read within {} ms (connectTimeoutMs or startup_timeout_sec)",
            timeout.as_millis()
        ))),
    }
}

async fn start_within(
    spec: &ServerSpec,
    o: &OpenApiSpec,
    settings: &Settings,
) -> Result<Started, StartError> {
    let reach = Reach::of_addresses(&o.allow_addresses).map_err(StartError::AllowAddresses)?;
    let client = crate::net::guarded_client(
        reach.clone(),
        crate::net::system_lookup(),
        http::CONNECT_TIMEOUT,
    )
    .map_err(StartError::Client)?;
    let limits = openapi::Limits::default();
    let (bytes, location) = match &o.document {
        DocumentLocation::File(path) => {
            let path = path.clone();
            let max = limits.max_bytes as u64;
            let bytes = tokio::task::spawn_blocking(move || {
                crate::config::read::read_bytes(&path, max).map_err(|error| StartError::Read {
                    path: path.display().to_string(),
                    error,
                })
            })
            .await
            .map_err(|_| StartError::Abandoned)??;
            (bytes, None)
        }
        DocumentLocation::Url(u) => {
            let url = Url::parse(u).map_err(|e| StartError::Fetch {
                url: crate::config::spec::mask_url(u),
                error: Box::new(CallError::Location {
                    url: crate::config::spec::mask_url(u),
                    error: e,
                }),
            })?;
            let fetcher = Http {
                client: client.clone(),
                reach: reach.clone(),
                auth: None,
                token: Default::default(),
            };
            let out = Outgoing {
                method: reqwest::Method::GET,
                url: url.clone(),
                headers: Default::default(),
                body: None,
            };
            let answer =
                fetcher
                    .send(out, limits.max_bytes)
                    .await
                    .map_err(|e| StartError::Fetch {
                        url: error::shown(&url),
                        error: Box::new(e),
                    })?;
            if !(200..300).contains(&answer.status) {
                return Err(StartError::Fetch {
                    url: error::shown(&url),
                    error: Box::new(CallError::Network {
                        url: error::shown(&url),
                        reason: format!("HTTP {}", answer.status),
                    }),
                });
            }
            (answer.body, Some(url))
        }
    };
    let at = crate::config::openapi_shown(&o.document);
    let refs = match &o.refs_directory {
        Some(d) => openapi::RefPolicy::Directory(d.clone()),
        None => openapi::RefPolicy::LocalOnly,
    };
    let server = spec.name.clone();
    let options = openapi::ParseOptions {
        format: openapi::Format::Sniff,
        limits,
        refs,
        location,
    };
    let (parsed, operations, tools) = tokio::task::spawn_blocking(move || {
        let parsed = openapi::Spec::parse_with(&bytes, &options)
            .map_err(|error| StartError::Parse { at, error })?;
        drop(bytes);
        let (operations, tools) = build_all(&server, &parsed);
        Ok::<_, StartError>((parsed, operations, tools))
    })
    .await
    .map_err(|_| StartError::Abandoned)??;
    let base_url = match &o.base_url {
        Some(u) => Some(Url::parse(u).map_err(|_| StartError::BaseScheme(u.clone()))?),
        None => None,
    };
    let default_base = match &base_url {
        Some(u) => u.clone(),
        None => parsed
            .server_url(&o.server_variables)
            .map_err(StartError::BaseUrl)?,
    };
    check_base(&reach, &default_base).await?;
    let auth = match &o.auth {
        Some(a) => Some(ResolvedAuth::resolve(a, &parsed.security_schemes())?),
        None => None,
    };
    tracing::info!(
        server = %spec.name,
        operations = parsed.operations().len(),
        tools = tools.len(),
        base = %error::shown(&default_base),
        "OpenAPI document read"
    );
    let source = OpenApiSource {
        spec: Arc::new(parsed),
        operations,
        tools: tools.clone(),
        base_url,
        variables: o.server_variables.clone(),
        http: Http {
            client,
            reach,
            auth,
            token: Default::default(),
        },
        limits: openapi::ResponseLimits {
            max_body_bytes: settings.max_result_bytes.max(1 << 20),
            ..openapi::ResponseLimits::default()
        },
    };
    Ok(Started {
        source: Arc::new(source),
        tools,
    })
}

/// Refuses a base URL that is not http(s), or that is (or whose name resolves only to) a
/// special address the entry does not allow. A name that does not resolve now is left to
/// the call (the guarded resolver checks it again then).
async fn check_base(reach: &Reach, base: &Url) -> Result<(), StartError> {
    let refused = |addr: std::net::IpAddr| StartError::SpecialAddress {
        url: error::shown(base),
        addr,
        why: policy::access::special(addr).unwrap_or("a special address"),
    };
    match http::check_hop(reach, base, false) {
        Ok(()) => {}
        Err(CallError::Special { addr, .. }) => return Err(refused(addr)),
        Err(_) => return Err(StartError::BaseScheme(error::shown(base))),
    }
    if let Some(url::Host::Domain(name)) = base.host()
        && let Ok(found) = crate::net::system_lookup()(name.to_string()).await
        && let Err(u) = reach.filter(&found)
    {
        return Err(refused(u.addr));
    }
    Ok(())
}

/// Every operation's tool; one that cannot be built is left out, with a warning.
fn build_all(
    server: &str,
    spec: &openapi::Spec,
) -> (HashMap<String, Arc<openapi::Operation>>, Vec<Tool>) {
    let mut operations = HashMap::new();
    let mut tools = Vec::with_capacity(spec.operations().len());
    for summary in spec.operations() {
        match spec.operation(&summary.name) {
            Ok(op) => {
                tools.push(tool(&op, summary.summary.as_deref()));
                operations.insert(op.name.clone(), Arc::new(op));
            }
            Err(e) => {
                tracing::warn!(server, operation = %summary.name, "operation left out: {e}");
            }
        }
    }
    (operations, tools)
}

/// The MCP tool of an operation; its summary is its title (search reads it as the name).
fn tool(op: &openapi::Operation, summary: Option<&str>) -> Tool {
    let input = match &op.input_schema {
        Value::Object(m) => m.clone(),
        _ => serde_json::Map::new(),
    };
    let mut t = Tool::new(op.name.clone(), op.description.clone(), Arc::new(input));
    if let Some(title) = summary.filter(|s| !s.trim().is_empty()) {
        t = t.with_title(title);
    }
    if let Some(Value::Object(out)) = &op.output_schema
        && out.get("type").and_then(Value::as_str) == Some("object")
    {
        t = t.with_raw_output_schema(Arc::new(out.clone()));
    }
    let a = op.annotations;
    t.with_annotations(ToolAnnotations::from_raw(
        None,
        Some(a.read_only),
        Some(a.destructive),
        Some(a.idempotent),
        Some(a.open_world),
    ))
}

/// A successful body as a tool result.
fn result(body: openapi::ResponseBody) -> CallToolResult {
    match body {
        openapi::ResponseBody::Json(v @ Value::Object(_)) => CallToolResult::structured(v),
        openapi::ResponseBody::Json(v) => {
            CallToolResult::success(vec![ContentBlock::text(v.to_string())])
        }
        openapi::ResponseBody::Text(t) => CallToolResult::success(vec![ContentBlock::text(t)]),
        openapi::ResponseBody::Binary { mime, bytes } => {
            let data = base64::engine::general_purpose::STANDARD.encode(&bytes);
            let block = if mime.starts_with("image/") {
                ContentBlock::image(data, mime)
            } else {
                ContentBlock::resource(
                    rmcp::model::ResourceContents::blob(data, "openapi:response")
                        .with_mime_type(mime),
                )
            };
            CallToolResult::success(vec![block])
        }
    }
}

impl OpenApiSource {
    async fn request(
        &self,
        name: &str,
        args: serde_json::Map<String, Value>,
        trace: Option<&crate::trace::TraceContext>,
    ) -> Result<CallToolResult, CallError> {
        let op = self
            .operations
            .get(name)
            .ok_or_else(|| CallError::UnknownOperation(name.to_string()))?;
        let base = match &self.base_url {
            Some(b) => b.clone(),
            None => self.spec.operation_server_url(op, &self.variables)?,
        };
        let req = openapi::build_request(op, &base, &Value::Object(args))?;
        let mut headers = reqwest::header::HeaderMap::new();
        for (k, v) in &req.headers {
            let (Ok(name), Ok(value)) = (
                reqwest::header::HeaderName::from_bytes(k.as_bytes()),
                reqwest::header::HeaderValue::from_str(v),
            ) else {
                return Err(CallError::Header {
                    url: error::shown(&req.url),
                    name: k.clone(),
                });
            };
            headers.append(name, value);
        }
        if let Some(ct) = &req.content_type
            && let Ok(v) = reqwest::header::HeaderValue::from_str(ct)
        {
            headers.insert(reqwest::header::CONTENT_TYPE, v);
        }
        // The call's trace goes on as W3C trace context (unless the operation sets it).
        if let Some(t) = trace
            && !headers.contains_key("traceparent")
            && let Ok(v) = reqwest::header::HeaderValue::from_str(&t.traceparent())
        {
            headers.insert("traceparent", v);
        }
        if !headers.contains_key(reqwest::header::ACCEPT) {
            headers.insert(
                reqwest::header::ACCEPT,
                reqwest::header::HeaderValue::from_static("application/json, */*;q=0.8"),
            );
        }
        let method = reqwest::Method::from_bytes(req.method.as_str().as_bytes())
            .unwrap_or(reqwest::Method::GET);
        let answer = self
            .http
            .send(
                Outgoing {
                    method,
                    url: req.url,
                    headers,
                    body: req.body,
                },
                self.limits.max_body_bytes,
            )
            .await?;
        Ok(
            match openapi::interpret_response(
                answer.status,
                answer.content_type.as_deref(),
                &answer.body,
                &self.limits,
            ) {
                Ok(body) => result(body),
                Err(openapi::ResponseError::HttpStatus { status, excerpt }) => {
                    CallToolResult::error(vec![ContentBlock::text(format!(
                        "HTTP {status}: {excerpt}"
                    ))])
                }
                Err(e) => CallToolResult::error(vec![ContentBlock::text(e.to_string())]),
            },
        )
    }
}

#[async_trait]
impl ToolSource for OpenApiSource {
    /// A document does not go away: its source lives until the pool drops it.
    fn alive(&self) -> bool {
        true
    }

    fn take_stale(&self) -> bool {
        false
    }

    fn mark_stale(&self) {}

    async fn list_tools(&self) -> Result<Vec<Tool>, SourceError> {
        Ok(self.tools.clone())
    }

    async fn call(&self, call: SourceCall<'_>) -> Result<CallToolResult, SourceError> {
        self.request(call.tool, call.args, call.trace)
            .await
            .map_err(|e| SourceError::Other(Box::new(e)))
    }

    fn version(&self) -> Option<String> {
        None
    }
}

//! Making one connection to an upstream: spawn or reach it, `initialize`, the first
//! `tools/list`, all within the connect timeout; a failure is worded by [`super::start_error`].

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

use super::connection::Connection;
use super::error::ConnectError;
use super::handler::{Handler, Routing};
use super::mcp::McpSource;
use super::source::Started;
use super::sse;
use super::start_error::{self, PostMortem};
use super::stdio::{self, spawn_stdio};
use crate::config::{ServerSpec, Settings, Transport};
use crate::oauth::{self, AuthWatch, PrepareError};
use crate::tls::install_tls_provider;
use policy::filter::retain_visible;

/// How long a failed start waits for the child's exit status and last stderr lines, which
/// usually arrive a moment after its pipe closed.
const POST_MORTEM_WAIT: Duration = Duration::from_millis(300);

/// Room for what surrounds a result in its message (`jsonrpc`, `id`, `content`'s blocks,
/// `_meta`): a result a little over `maxResultBytes` is still cut with its start kept
/// (`super::cap`); a message past the cap and this margin is dropped as it arrives.
pub const ENVELOPE_MARGIN_BYTES: usize = 64 << 10;
/// Least bytes one message may have whatever `maxResultBytes` says: a large tool list must
/// still arrive.
const MIN_MESSAGE_BYTES: usize = 1 << 20;

/// The most bytes one message from an upstream may have, on every transport: read and thrown
/// away past it (stdio), refused (streamable HTTP bodies and events, SSE events), never
/// decoded.
pub fn message_limit(max_result_bytes: usize) -> usize {
    max_result_bytes
        .saturating_add(ENVELOPE_MARGIN_BYTES)
        .max(MIN_MESSAGE_BYTES)
}

/// The authorization manager of a stored login for an HTTP/SSE server, unless its entry
/// sets a static `Authorization` header (which then wins).
async fn stored_login(
    spec: &ServerSpec,
    url: &str,
    headers: &BTreeMap<String, String>,
    token_dir: Option<&Path>,
) -> Result<Option<rmcp::transport::auth::AuthorizationManager>, ConnectError> {
    if headers
        .keys()
        .any(|k| k.eq_ignore_ascii_case("authorization"))
    {
        return Ok(None);
    }
    oauth::prepare(spec, url, token_dir)
        .await
        .map_err(|e| match e {
            PrepareError::NeedsLogin(why) => ConnectError::NeedsLogin(why),
            PrepareError::Other(why) => ConnectError::Other(why),
        })
}

/// Starts the source `spec` names, of whichever kind it is, and takes its first list of
/// tools (less those its client config hides).
pub(super) async fn connect(
    spec: &ServerSpec,
    settings: &Settings,
    token_dir: Option<&Path>,
    callers: &Arc<super::forward::Callers>,
    changes: &tokio::sync::broadcast::Sender<String>,
) -> Result<Connection, ConnectError> {
    let started = match &spec.transport {
        Transport::Stdio { .. } | Transport::Http { .. } | Transport::Sse { .. } => {
            start_mcp(spec, settings, token_dir, callers, changes).await?
        }
        Transport::OpenApi(o) => super::openapi::start(spec, o, settings).await?,
    };
    let tools = retain_visible(spec.tool_filter.as_ref(), &spec.name, started.tools);
    tracing::info!(server = %spec.name, tools = tools.len(), "upstream connected");
    Ok(Connection {
        source: started.source,
        tools: std::sync::Mutex::new(Arc::new(tools)),
        filter: spec.tool_filter.clone(),
    })
}

/// Starts an MCP server (stdio, streamable HTTP or SSE): spawn or reach it, `initialize`,
/// the first `tools/list`, all within the connect timeout.
async fn start_mcp(
    spec: &ServerSpec,
    settings: &Settings,
    token_dir: Option<&Path>,
    callers: &Arc<super::forward::Callers>,
    changes: &tokio::sync::broadcast::Sender<String>,
) -> Result<Started, ConnectError> {
    let timeout = spec.startup_timeout.unwrap_or(settings.connect_timeout);
    let stale = Arc::new(AtomicBool::new(false));
    let progress = rmcp::handler::client::progress::ProgressDispatcher::new();
    let handler = Handler {
        stale: stale.clone(),
        changes: changes.clone(),
        progress: progress.clone(),
        server: spec.name.clone(),
        forward: settings
            .forward_requests
            .forwards(&spec.name)
            .then(|| Routing {
                callers: callers.clone(),
                roots: settings.forward_requests.roots.clone().into(),
            }),
    };
    let watch = match spec.transport {
        Transport::Stdio { .. } => None,
        Transport::Http { .. } | Transport::Sse { .. } => Some(Arc::new(AuthWatch::default())),
        Transport::OpenApi(_) => None,
    };
    let child: std::sync::Mutex<Option<stdio::ChildWatch>> = std::sync::Mutex::new(None);
    let start = async {
        let max_message = message_limit(settings.max_result_bytes);
        let service = match &spec.transport {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let (transport, watch) =
                    spawn_stdio(&spec.name, command, args, env, cwd.as_deref(), max_message)
                        .await
                        .map_err(|e| format!("{e}; {}", start_error::fix_hint(spec)))?;
                if let Ok(mut c) = child.lock() {
                    *c = Some(watch);
                }
                match handler.serve(transport).await {
                    Ok(service) => service,
                    Err(e) => {
                        let post = post_mortem(&child, POST_MORTEM_WAIT).await;
                        return Err(start_error::initialize(&e, &post, spec).into());
                    }
                }
            }
            Transport::Http { url, headers } => {
                install_tls_provider();
                let manager = stored_login(spec, url, headers, token_dir).await?;
                let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                    .max_json_response_size(max_message)
                    .max_sse_event_size(max_message);
                let mut custom = HashMap::new();
                for (k, v) in headers {
                    if k.eq_ignore_ascii_case("authorization")
                        && let Some(token) = v.strip_prefix("Bearer ")
                    {
                        config = config.auth_header(token);
                        continue;
                    }
                    let name = http::HeaderName::from_bytes(k.as_bytes())
                        .map_err(|e| format!("header name {k:?}: {e}"))?;
                    let value =
                        http::HeaderValue::from_str(v).map_err(|e| format!("header {k}: {e}"))?;
                    custom.insert(name, value);
                }
                let client = oauth::HttpClient::new(
                    reqwest::Client::new(),
                    manager,
                    watch.clone().unwrap_or_default(),
                );
                let transport = StreamableHttpClientTransport::with_client(
                    client,
                    config.custom_headers(custom),
                );
                handler
                    .serve(transport)
                    .await
                    .map_err(|e| start_error::initialize(&e, &None, spec))?
            }
            Transport::Sse { url, headers } => {
                install_tls_provider();
                let manager = stored_login(spec, url, headers, token_dir).await?;
                let auth = oauth::SseAuth::new(manager, watch.clone().unwrap_or_default());
                let transport = sse::connect(url, headers, auth, max_message).await?;
                handler
                    .serve(transport)
                    .await
                    .map_err(|e| start_error::initialize(&e, &None, spec))?
            }
            Transport::OpenApi(_) => {
                return Err(ConnectError::Other(
                    "an OpenAPI entry is not an MCP server".into(),
                ));
            }
        };
        let tools = match service.peer().list_all_tools().await {
            Ok(tools) => tools,
            Err(e) => {
                let post = post_mortem(&child, POST_MORTEM_WAIT).await;
                return Err(start_error::list_tools(&e, &post, spec).into());
            }
        };
        let source = McpSource {
            service,
            stale,
            auth: watch.clone(),
            progress,
        };
        Ok::<_, ConnectError>(Started {
            source: Arc::new(source),
            tools,
        })
    };
    let result = match tokio::time::timeout(timeout, start).await {
        Ok(r) => r,
        Err(_) => {
            let post = post_mortem(&child, Duration::ZERO).await;
            Err(ConnectError::TimedOut(start_error::timed_out(
                timeout, &post, spec,
            )))
        }
    };
    match result {
        Ok(started) => Ok(started),
        // Whatever the transport made of it, a refused authorization is what to report.
        Err(ConnectError::Other(reason)) => match watch.as_ref().and_then(|w| w.failure()) {
            Some(why) => Err(ConnectError::NeedsLogin(why)),
            None => Err(ConnectError::Other(reason)),
        },
        Err(e) => Err(e),
    }
}

/// How the stdio child of a failed start ended, if there was one.
async fn post_mortem(
    child: &std::sync::Mutex<Option<stdio::ChildWatch>>,
    wait: Duration,
) -> PostMortem {
    let watch = child.lock().ok().and_then(|c| c.clone());
    match watch {
        Some(w) => Some(w.post_mortem(wait).await),
        None => None,
    }
}

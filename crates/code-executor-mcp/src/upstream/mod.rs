//! The pool of MCP clients, one per configured upstream server.
//!
//! A server is started on first use (lazily) and its connection kept; servers named in the
//! settings' `connectedServers` connect in the background at start. A stdio child gets a
//! curated environment (its entry's `env` plus a few basics, never ours), its own process
//! group, dies with us, and its stderr goes to our log. Streamable HTTP and legacy SSE
//! servers get their configured headers, and the OAuth token of a stored login
//! ([`crate::oauth`]), refreshed as needed. A server that fails to start or crashes gives an
//! error naming it; the next use tries again, with a growing pause after repeated failures
//! (none after an authorization failure, so a new login is used at once); the others keep
//! working. A server that refuses us for want of a login gives an error saying which
//! `login` to run. `notifications/tools/list_changed` marks a server's tool list stale, and
//! the next look refetches it. Requests an upstream sends us (sampling, elicitation) are
//! refused; roots are an empty list. A result over `maxResultBytes` is cut with a note; a
//! stdio message over twice that is dropped as it arrives and its call answered with an
//! error ([`bounded`]). Tools the entry's client config hides (`crate::policy::filter`) are
//! dropped from every list as it arrives, and a call to one is refused; a server its client
//! would not start (`crate::config::trust`) is held back: listed with the reason, never
//! started.

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ContentBlock,
    Implementation, Tool,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde::Serialize;
use tokio::sync::Mutex;

use crate::config::{Config, INHERITED_ENV, ServerSpec, Settings, Transport};
use crate::oauth::{self, AuthWatch, PrepareError};
use crate::policy::Decision;
use crate::policy::filter::{ToolFilter, retain_visible};

mod bounded;
mod sse;
mod stdio;

use stdio::spawn_stdio;

/// Longest pause between start attempts of a server that keeps failing.
const MAX_RETRY_PAUSE: Duration = Duration::from_secs(30);

/// Why an upstream operation failed.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum UpstreamError {
    #[error("no MCP server named \"{0}\" is configured")]
    UnknownServer(String),
    /// Configured, but its client would not start it (see `config::trust`).
    #[error("MCP server \"{server}\" is held back: {reason}")]
    HeldBack { server: String, reason: String },
    /// The server's client config hides the tool (`policy::filter`).
    #[error("{reason}")]
    HiddenTool { reason: String },
    #[error("MCP server \"{server}\" failed to start: {reason}")]
    Start { server: String, reason: String },
    #[error("MCP server \"{server}\": tool {tool} did not answer within {}s", timeout.as_secs_f64())]
    Timeout {
        server: String,
        tool: String,
        timeout: Duration,
    },
    #[error("MCP server \"{server}\" failed calling {tool}: {reason}")]
    Call {
        server: String,
        tool: String,
        reason: String,
    },
    /// The server wants a (new) OAuth login.
    #[error(
        "MCP server \"{server}\" needs a login: {reason}; {}",
        oauth::login_hint(server)
    )]
    Unauthorized { server: String, reason: String },
}

/// Connection state of one server, as `list_servers` shows it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ServerStatus {
    pub name: String,
    /// `connected`, `available` (configured, not started yet), `failed`, or `heldBack` (its
    /// client would not start it; `reason` says why and how to allow it).
    pub status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_count: Option<usize>,
}

/// Our side of one upstream session: refuses server-to-client requests (the defaults) and
/// notes a changed tool list.
#[derive(Clone)]
struct Handler {
    stale: Arc<AtomicBool>,
}

impl ClientHandler for Handler {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.stale.store(true, Ordering::Release);
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("code-executor-mcp", env!("CARGO_PKG_VERSION")),
        )
    }
}

struct Connection {
    service: RunningService<RoleClient, Handler>,
    tools: std::sync::Mutex<Arc<Vec<Tool>>>,
    stale: Arc<AtomicBool>,
    /// HTTP and SSE connections: why the server last refused our authorization.
    auth: Option<Arc<AuthWatch>>,
    /// The tools the entry's client config hides, dropped from every list as it arrives.
    filter: Option<ToolFilter>,
}

impl Connection {
    /// False once the server process exited or its pipe closed.
    fn alive(&self) -> bool {
        !self.service.is_closed() && !self.service.peer().is_transport_closed()
    }

    fn tools(&self) -> Arc<Vec<Tool>> {
        self.tools.lock().map(|t| t.clone()).unwrap_or_default()
    }

    fn auth_failure(&self) -> Option<String> {
        self.auth.as_ref().and_then(|w| w.failure())
    }

    /// Refetches the tool list if the server announced a change.
    async fn refresh(&self, server: &str) {
        if !self.stale.swap(false, Ordering::AcqRel) {
            return;
        }
        match self.service.peer().list_all_tools().await {
            Ok(tools) => {
                tracing::info!(server, tools = tools.len(), "upstream tool list changed");
                if let Ok(mut t) = self.tools.lock() {
                    *t = Arc::new(retain_visible(self.filter.as_ref(), server, tools));
                }
            }
            Err(e) => {
                tracing::warn!(server, "refetching the changed tool list failed: {e}");
                self.stale.store(true, Ordering::Release);
            }
        }
    }
}

enum State {
    Idle,
    Connected(Arc<Connection>),
    Failed {
        reason: String,
        at: Instant,
        attempts: u32,
        /// The server refused our authorization: only a login helps, so no pause.
        auth: bool,
    },
}

struct Upstream {
    spec: ServerSpec,
    state: Mutex<State>,
}

/// Every configured upstream server.
pub struct Upstreams {
    servers: BTreeMap<String, Arc<Upstream>>,
    /// Entries their clients would not start: name -> why.
    held_back: BTreeMap<String, String>,
    settings: Settings,
    token_dir: Option<PathBuf>,
}

impl Upstreams {
    pub fn new(config: &Config, settings: &Settings) -> Self {
        let servers = config
            .servers
            .iter()
            .map(|(name, spec)| {
                (
                    name.clone(),
                    Arc::new(Upstream {
                        spec: spec.clone(),
                        state: Mutex::new(State::Idle),
                    }),
                )
            })
            .collect();
        Upstreams {
            servers,
            held_back: config
                .held_back
                .iter()
                .map(|(n, h)| (n.clone(), h.reason.clone()))
                .collect(),
            settings: settings.clone(),
            token_dir: config.token_dir.clone(),
        }
    }

    /// Configured server names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> + Clone {
        self.servers.keys().map(String::as_str)
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Why `server` is held back, if it is.
    pub fn held_back(&self, server: &str) -> Option<&str> {
        self.held_back.get(server).map(String::as_str)
    }

    /// Why `tool` of `server` is hidden by the server's client config, if it is.
    pub fn hidden(&self, server: &str, tool: &str) -> Option<String> {
        let filter = self.servers.get(server)?.spec.tool_filter.as_ref()?;
        match filter.decide(server, tool) {
            Decision::Allow => None,
            Decision::Deny { reason } => Some(reason),
        }
    }

    /// Starts the servers named in `connectedServers` in the background.
    pub fn connect_eagerly(self: &Arc<Self>) {
        for name in &self.settings.connected_servers {
            if !self.servers.contains_key(name) {
                tracing::warn!(server = %name, "connectedServers names a server that is not configured");
                continue;
            }
            let me = self.clone();
            let name = name.clone();
            tokio::spawn(async move {
                if let Err(e) = me.connection(&name).await {
                    tracing::warn!("{e}");
                }
            });
        }
    }

    /// The tools of `server`, connecting it first if needed.
    pub async fn tools(&self, server: &str) -> Result<Arc<Vec<Tool>>, UpstreamError> {
        let conn = self.connection(server).await?;
        conn.refresh(server).await;
        Ok(conn.tools())
    }

    /// Tools of a server that is already connected, without starting it.
    pub async fn tools_if_connected(&self, server: &str) -> Option<Arc<Vec<Tool>>> {
        let up = self.servers.get(server)?;
        let conn = match &*up.state.lock().await {
            State::Connected(c) if c.alive() => c.clone(),
            _ => return None,
        };
        conn.refresh(server).await;
        Some(conn.tools())
    }

    /// Connects every configured server concurrently; failures are recorded, not returned.
    pub async fn connect_all(&self) {
        futures::future::join_all(self.servers.keys().map(|name| self.connection(name))).await;
    }

    pub async fn status(&self) -> Vec<ServerStatus> {
        let mut out = Vec::with_capacity(self.servers.len());
        for (name, up) in &self.servers {
            let state = up.state.lock().await;
            let (status, reason, tool_count) = match &*state {
                State::Idle => ("available", None, None),
                State::Connected(c) if !c.alive() => (
                    "failed",
                    Some(match c.auth_failure() {
                        Some(why) => format!("needs a login: {why}; {}", oauth::login_hint(name)),
                        None => "the server exited; it restarts on next use".to_string(),
                    }),
                    None,
                ),
                State::Connected(c) => ("connected", None, Some(c.tools().len())),
                State::Failed {
                    reason, auth: true, ..
                } => (
                    "failed",
                    Some(format!(
                        "needs a login: {reason}; {}",
                        oauth::login_hint(name)
                    )),
                    None,
                ),
                State::Failed { reason, .. } => ("failed", Some(reason.clone()), None),
            };
            out.push(ServerStatus {
                name: name.clone(),
                status,
                reason,
                tool_count,
            });
        }
        for (name, reason) in &self.held_back {
            out.push(ServerStatus {
                name: name.clone(),
                status: "heldBack",
                reason: Some(reason.clone()),
                tool_count: None,
            });
        }
        out
    }

    /// Calls one tool with a deadline (at most the configured upstream call timeout), returning
    /// its result (capped) and its size in bytes. The call is cancelled upstream
    /// (`notifications/cancelled`) if this future is dropped.
    pub async fn call(
        &self,
        server: &str,
        tool: &str,
        args: serde_json::Map<String, serde_json::Value>,
        timeout: Duration,
    ) -> Result<(CallToolResult, usize), UpstreamError> {
        if let Some(reason) = self.hidden(server, tool) {
            return Err(UpstreamError::HiddenTool { reason });
        }
        let own = self
            .servers
            .get(server)
            .and_then(|u| u.spec.tool_timeout)
            .unwrap_or(self.settings.upstream_call_timeout);
        let timeout = timeout.min(own);
        let conn = self.connection(server).await?;
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(args);
        let result = self.call_on(&conn, server, tool, params, timeout).await;
        if let Err(UpstreamError::Unauthorized { reason, .. }) = &result {
            self.drop_unauthorized(server, &conn, reason).await;
        }
        result
    }

    /// A connection the server stopped authorizing is closed and its server marked as
    /// needing a login (for `list_servers`); the next use connects again, at once, with
    /// whatever login is stored by then.
    async fn drop_unauthorized(&self, server: &str, conn: &Arc<Connection>, reason: &str) {
        let Some(up) = self.servers.get(server) else {
            return;
        };
        let mut state = up.state.lock().await;
        if matches!(&*state, State::Connected(c) if Arc::ptr_eq(c, conn)) {
            *state = State::Failed {
                reason: reason.to_string(),
                at: Instant::now(),
                attempts: 1,
                auth: true,
            };
        }
    }

    async fn call_on(
        &self,
        conn: &Connection,
        server: &str,
        tool: &str,
        params: CallToolRequestParams,
        timeout: Duration,
    ) -> Result<(CallToolResult, usize), UpstreamError> {
        match tokio::time::timeout(timeout, conn.service.peer().call_tool(params)).await {
            Ok(Ok(result)) => Ok(cap_result(result, self.settings.max_result_bytes)),
            Ok(Err(e)) => Err(match conn.auth_failure() {
                Some(reason) => UpstreamError::Unauthorized {
                    server: server.to_string(),
                    reason,
                },
                None => UpstreamError::Call {
                    server: server.to_string(),
                    tool: tool.to_string(),
                    reason: if conn.alive() {
                        e.to_string()
                    } else {
                        format!("{e} (the server exited; it restarts on next use)")
                    },
                },
            }),
            Err(_) => Err(UpstreamError::Timeout {
                server: server.to_string(),
                tool: tool.to_string(),
                timeout,
            }),
        }
    }

    async fn connection(&self, server: &str) -> Result<Arc<Connection>, UpstreamError> {
        let up = self
            .servers
            .get(server)
            .ok_or_else(|| match self.held_back(server) {
                Some(reason) => UpstreamError::HeldBack {
                    server: server.to_string(),
                    reason: reason.to_string(),
                },
                None => UpstreamError::UnknownServer(server.to_string()),
            })?;
        // One connect at a time per server: concurrent first calls wait for the same start.
        let mut state = up.state.lock().await;
        let mut attempts = 0;
        match &*state {
            State::Connected(c) if c.alive() => return Ok(c.clone()),
            State::Connected(_) => tracing::warn!(server, "upstream server exited; restarting it"),
            State::Failed { auth: true, .. } => {}
            State::Failed {
                reason,
                at,
                attempts: n,
                ..
            } => {
                let pause = retry_pause(*n);
                if at.elapsed() < pause {
                    return Err(UpstreamError::Start {
                        server: server.to_string(),
                        reason: format!(
                            "{reason} (next attempt in {:.0}s)",
                            (pause - at.elapsed()).as_secs_f64().ceil()
                        ),
                    });
                }
                attempts = *n;
            }
            State::Idle => {}
        }
        match connect(&up.spec, &self.settings, self.token_dir.as_deref()).await {
            Ok(conn) => {
                let conn = Arc::new(conn);
                *state = State::Connected(conn.clone());
                Ok(conn)
            }
            Err(ConnectError::NeedsLogin(reason)) => {
                tracing::warn!(
                    server,
                    "upstream needs a login: {reason}; {}",
                    oauth::login_hint(server)
                );
                *state = State::Failed {
                    reason: reason.clone(),
                    at: Instant::now(),
                    attempts: attempts + 1,
                    auth: true,
                };
                Err(UpstreamError::Unauthorized {
                    server: server.to_string(),
                    reason,
                })
            }
            Err(ConnectError::Other(reason)) => {
                tracing::warn!(server, "upstream failed to start: {reason}");
                *state = State::Failed {
                    reason: reason.clone(),
                    at: Instant::now(),
                    attempts: attempts + 1,
                    auth: false,
                };
                Err(UpstreamError::Start {
                    server: server.to_string(),
                    reason,
                })
            }
        }
    }
}

/// Pause before the next start after `failures` failed starts: none after the first failure
/// (the user may just have fixed it), then 1 s, 2 s, 4 s ... up to [`MAX_RETRY_PAUSE`].
fn retry_pause(failures: u32) -> Duration {
    match failures {
        0 | 1 => Duration::ZERO,
        n => Duration::from_secs(1u64 << (n - 2).min(5)).min(MAX_RETRY_PAUSE),
    }
}

/// Cuts a result larger than `max` bytes down to a text that says so and keeps the start.
/// Also returns the result's size as received, so nobody serializes it again to measure it.
pub fn cap_result(result: CallToolResult, max: usize) -> (CallToolResult, usize) {
    let size = serde_json::to_vec(&result).map_or(0, |v| v.len());
    if size <= max {
        return (result, size);
    }
    let text: String = result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.as_str()))
        .collect::<Vec<_>>()
        .join("\n");
    let mut cut = max.min(text.len());
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let mut r = CallToolResult::success(vec![
        ContentBlock::text(format!(
            "[result truncated: {size} bytes exceed the {max}-byte limit (maxResultBytes); the first {cut} bytes of its text follow]"
        )),
        ContentBlock::text(&text[..cut]),
    ]);
    r.is_error = result.is_error;
    (r, size)
}

/// The environment an upstream child gets: basics from ours, then its entry's `env`.
pub fn child_env(env: &BTreeMap<String, String>) -> Vec<(OsString, OsString)> {
    let mut out: BTreeMap<OsString, OsString> = INHERITED_ENV
        .iter()
        .filter_map(|k| std::env::var_os(k).map(|v| (OsString::from(k), v)))
        .collect();
    for (k, v) in env {
        out.insert(k.into(), v.into());
    }
    out.into_iter().collect()
}

/// Finds `command` the way a shell would, on the child's PATH; relative paths with a slash
/// are taken from the server's working directory.
fn resolve_program(
    command: &str,
    env: &[(OsString, OsString)],
    cwd: Option<&Path>,
) -> Result<PathBuf, String> {
    if command.contains('/') {
        let p = Path::new(command);
        return Ok(match (p.is_absolute(), cwd) {
            (true, _) => p.to_path_buf(),
            (false, Some(cwd)) => cwd.join(p),
            (false, None) => std::env::current_dir().map_err(|e| e.to_string())?.join(p),
        });
    }
    let path = env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(command))
        .find(|p| {
            use std::os::unix::fs::PermissionsExt;
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
        .ok_or_else(|| {
            format!(
                "`{command}` was not found on PATH ({})",
                path.to_string_lossy()
            )
        })
}

/// Why a connection could not be made.
enum ConnectError {
    /// The server refused our authorization (or the stored login cannot be used).
    NeedsLogin(String),
    Other(String),
}

impl From<String> for ConnectError {
    fn from(s: String) -> Self {
        ConnectError::Other(s)
    }
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

async fn connect(
    spec: &ServerSpec,
    settings: &Settings,
    token_dir: Option<&Path>,
) -> Result<Connection, ConnectError> {
    let timeout = spec.startup_timeout.unwrap_or(settings.connect_timeout);
    let stale = Arc::new(AtomicBool::new(false));
    let handler = Handler {
        stale: stale.clone(),
    };
    let watch = match spec.transport {
        Transport::Stdio { .. } => None,
        Transport::Http { .. } | Transport::Sse { .. } => Some(Arc::new(AuthWatch::default())),
    };
    let start = async {
        // One message may be up to twice the result cap: a result a little over the cap is
        // still cut with its start kept; a larger one is an error at once.
        let max_message = settings.max_result_bytes.saturating_mul(2).max(1 << 20);
        let service = match &spec.transport {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let transport =
                    spawn_stdio(&spec.name, command, args, env, cwd.as_deref(), max_message)
                        .await?;
                handler.serve(transport).await.map_err(|e| e.to_string())?
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
                handler.serve(transport).await.map_err(|e| e.to_string())?
            }
            Transport::Sse { url, headers } => {
                install_tls_provider();
                let manager = stored_login(spec, url, headers, token_dir).await?;
                let auth = oauth::SseAuth::new(manager, watch.clone().unwrap_or_default());
                let transport = sse::connect(url, headers, auth, max_message).await?;
                handler.serve(transport).await.map_err(|e| e.to_string())?
            }
        };
        let tools = service
            .peer()
            .list_all_tools()
            .await
            .map_err(|e| format!("tools/list failed: {e}"))?;
        Ok::<_, ConnectError>(Connection {
            service,
            tools: std::sync::Mutex::new(Arc::new(retain_visible(
                spec.tool_filter.as_ref(),
                &spec.name,
                tools,
            ))),
            stale,
            auth: watch.clone(),
            filter: spec.tool_filter.clone(),
        })
    };
    let result = match tokio::time::timeout(timeout, start).await {
        Ok(r) => r,
        Err(_) => Err(ConnectError::Other(format!(
            "no answer to initialize/tools/list within {} ms (connectTimeoutMs)",
            timeout.as_millis()
        ))),
    };
    match result {
        Ok(conn) => {
            tracing::info!(server = %spec.name, tools = conn.tools().len(), "upstream connected");
            Ok(conn)
        }
        // Whatever the transport made of it, a refused authorization is what to report.
        Err(ConnectError::Other(reason)) => match watch.as_ref().and_then(|w| w.failure()) {
            Some(why) => Err(ConnectError::NeedsLogin(why)),
            None => Err(ConnectError::Other(reason)),
        },
        Err(e) => Err(e),
    }
}

/// TLS for HTTPS upstreams uses rustls with the ring provider (lighter to build than
/// aws-lc); installed once, on first use.
pub(crate) fn install_tls_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_pauses_grow_and_stop_growing() {
        let pauses: Vec<u64> = (0..10).map(|n| retry_pause(n).as_secs()).collect();
        assert_eq!(pauses, [0, 0, 1, 2, 4, 8, 16, 30, 30, 30]);
    }

    #[test]
    fn oversized_results_are_cut_and_say_so() {
        let r = CallToolResult::success(vec![ContentBlock::text("é".repeat(100))]);
        let (capped, size) = cap_result(r.clone(), 50);
        assert!(size > 200);
        let texts: Vec<&str> = capped
            .content
            .iter()
            .filter_map(|c| c.as_text().map(|t| t.text.as_str()))
            .collect();
        assert!(texts[0].starts_with("[result truncated:"), "{texts:?}");
        assert!(texts[1].len() <= 50 && texts[1].chars().all(|c| c == 'é'));
        assert_eq!(cap_result(r.clone(), 1 << 20).0, r);
    }
}

//! The pool of MCP clients, one per configured upstream server.
//!
//! A server is started on first use (lazily) and its connection kept; servers named in the
//! settings' `connectedServers` connect in the background at start. A stdio child gets a
//! curated environment (its entry's `env` plus a few basics, never ours), its own process
//! group, dies with us, and its stderr goes to our log. Streamable HTTP and legacy SSE
//! servers get their configured headers, and the OAuth token of a stored login
//! ([`crate::oauth`]), refreshed as needed. A start runs as a task of its own: a caller that
//! stops waiting (a search bounded by [`SEARCH_START_WAIT`], an execution at its deadline)
//! leaves it running, and later callers join it instead of starting another. A server that
//! fails to start (or does not answer within the connect timeout) or crashes gives an error
//! naming it in plain words ([`start_error`]); the next use tries again after a pause that
//! grows with repeated failures (none after an authorization failure, so a new login is used
//! at once); the others keep working. A server that refuses us for want of a login gives an error saying which
//! `login` to run. `notifications/tools/list_changed` marks a server's tool list stale, and
//! the next look refetches it. Requests an upstream sends us (sampling, elicitation) are
//! refused; roots are an empty list. A result over `maxResultBytes` is cut with a note; a
//! message over that plus an envelope margin is dropped as it arrives, before it is decoded,
//! and its call answered with an error ([`connect::message_limit`]). Tools the entry's client config hides (`policy::filter`) are
//! dropped from every list as it arrives, and a call to one is refused; a server its client
//! would not start (`crate::config::trust`) is held back: listed with the reason, never
//! started.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::{CallToolResult, ProgressNotificationParam, Tool};
use serde::Serialize;
use tokio::sync::Mutex;

use crate::config::{Config, ServerSpec, Settings};
use crate::oauth;
use policy::Decision;
use policy::redact::Redactor;

mod cap;
mod connect;
mod connection;
pub mod definitions;
mod error;
pub mod forward;
mod handler;
mod mcp;
mod openapi;
mod redact;
mod skills;
pub mod source;
mod sse;
mod start_error;
mod stdio;

pub use cap::cap_result;
use connect::connect;
use connection::Connection;
use error::ConnectError;
pub use error::UpstreamError;
use forward::{Callers, Forward};
use source::{SourceCall, SourceError};
use start_error::MAX_RETRY_PAUSE;
use start_error::{retry_pause, with_next_attempt};

/// Longest a discovery request (search, `discoverMCPTools`) waits for a server that is
/// starting, counted from when its start began: enough for a local server to answer even
/// when several start at once on a busy 2-core machine (Python reference servers took 3-5 s
/// there), short enough that one hung server does not hold up the answer from all the others
/// for the whole connect timeout. The start goes on in the background.
pub const SEARCH_START_WAIT: Duration = Duration::from_secs(10);

/// Changes a slow receiver of [`Upstreams::changes`] may fall behind before it lags.
const CHANGES_KEPT: usize = 64;

/// Connection state of one server, as `list_servers` shows it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ServerStatus {
    pub name: String,
    /// `connected`, `starting`, `available` (configured, not started yet), `failed`, or
    /// `heldBack` (its client would not start it; `reason` says why and how to allow it).
    pub status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_count: Option<usize>,
}

/// The outcome of a start, as its waiters see it.
type StartResult = Option<Result<Arc<Connection>, UpstreamError>>;

enum State {
    Idle,
    /// A start under way, in a task of its own; waiters watch for its outcome.
    Starting {
        since: Instant,
        done: tokio::sync::watch::Receiver<StartResult>,
        task: tokio::task::AbortHandle,
    },
    Connected(Arc<Connection>),
    Failed {
        reason: String,
        at: Instant,
        attempts: u32,
        /// Pause before the next attempt.
        pause: Duration,
        /// The server refused our authorization: only a login helps, so no pause.
        auth: bool,
    },
}

struct Upstream {
    spec: ServerSpec,
    state: Mutex<State>,
}

impl Drop for Upstreams {
    /// Starts still under way end with us (their child processes are killed on drop).
    fn drop(&mut self) {
        for up in self.servers.values() {
            if let Ok(state) = up.state.try_lock()
                && let State::Starting { task, .. } = &*state
            {
                task.abort();
            }
        }
    }
}

/// Every configured upstream server.
pub struct Upstreams {
    servers: BTreeMap<String, Arc<Upstream>>,
    /// Entries their clients would not start: name -> why.
    held_back: BTreeMap<String, String>,
    settings: Settings,
    token_dir: Option<PathBuf>,
    /// Executions calling each server now (where its requests are routed).
    callers: Arc<Callers>,
    /// Takes the configured secrets out of all that comes from a server ([`redact`]).
    redactor: Arc<Redactor>,
    /// The skills the servers serve (SEP-2640), as last listed.
    skills: skills::UpstreamSkills,
    /// The name of each server whose tool list may have changed: it connected, or it sent
    /// `notifications/tools/list_changed` ([`Upstreams::changes`]).
    changes: tokio::sync::broadcast::Sender<String>,
    /// The fingerprints of every tool's definition: changed ones are held
    /// ([`definitions`]).
    definitions: Arc<definitions::Definitions>,
}

/// How a call from code goes out (see [`Upstreams::call_for`]).
pub struct CallOptions<'a> {
    /// At most this long (and at most the server's own timeout).
    pub timeout: Duration,
    /// Answers the server's requests during the call.
    pub forward: Option<Arc<dyn Forward>>,
    /// Gets the server's progress for the call.
    pub on_progress: Option<&'a (dyn Fn(&ProgressNotificationParam) + Send + Sync)>,
    /// The trace context the request carries.
    pub trace: Option<&'a crate::trace::TraceContext>,
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
            skills: Default::default(),
            callers: Arc::default(),
            redactor: Arc::new(Redactor::new(crate::config::secret_values(config))),
            changes: tokio::sync::broadcast::channel(CHANGES_KEPT).0,
            definitions: Arc::default(),
        }
    }

    /// The same pool, keeping the tools' fingerprints in `definitions`.
    pub fn with_definitions(mut self, definitions: definitions::Definitions) -> Self {
        self.definitions = Arc::new(definitions);
        self
    }

    /// The fingerprints of every tool's definition (held and flagged tools).
    pub fn definitions(&self) -> &Arc<definitions::Definitions> {
        &self.definitions
    }

    /// `tools` without the configured secrets (for lists from elsewhere: the disk cache).
    pub fn redact_tools(&self, tools: Vec<Tool>) -> Vec<Tool> {
        definitions::clean_tools(redact::tools(&self.redactor, tools))
    }

    /// The same pool, redacting with `redactor` (which knows more secrets than the config's).
    pub fn with_redactor(mut self, redactor: Arc<Redactor>) -> Self {
        self.redactor = redactor;
        self
    }

    /// Like [`Upstreams::call`], with the options of a call from code: `forward` answers the
    /// requests the server sends while the call is in flight (when `forwardRequests` names
    /// it), `on_progress` gets its progress, `trace` goes into the request (see `crate::trace`).
    pub async fn call_for(
        &self,
        server: &str,
        tool: &str,
        args: serde_json::Map<String, serde_json::Value>,
        opts: CallOptions<'_>,
    ) -> Result<(CallToolResult, usize), UpstreamError> {
        let _calling = opts
            .forward
            .filter(|_| self.settings.forward_requests.forwards(server))
            .map(|f| self.callers.enter(server, f));
        self.call_traced(
            server,
            tool,
            args,
            opts.timeout,
            opts.on_progress,
            opts.trace,
        )
        .await
        .map_err(|e| redact::error(&self.redactor, e))
    }

    /// Names of the servers whose tool lists may have changed from now on: one connected
    /// (its list is known for the first time, or again), or announced a change. A receiver
    /// that falls more than a few behind gets `Lagged`, and should assume any changed.
    pub fn changes(&self) -> tokio::sync::broadcast::Receiver<String> {
        self.changes.subscribe()
    }

    /// The longest a call to `server` may take: its entry's own timeout, else
    /// `upstreamCallTimeoutMs`.
    pub fn call_timeout(&self, server: &str) -> Duration {
        self.servers
            .get(server)
            .and_then(|u| u.spec.tool_timeout)
            .unwrap_or(self.settings.upstream_call_timeout)
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

    /// Starts the servers named in `connectedServers`, and those a `directTools` pattern
    /// reaches (their tools are listed as ours), in the background.
    pub fn connect_eagerly(self: &Arc<Self>) {
        let pinned = self.names().filter(|s| {
            self.settings
                .direct_tools
                .iter()
                .any(|p| policy::pattern::reaches(p, self.names(), s))
        });
        let mut eager: Vec<String> = self.settings.connected_servers.clone();
        eager.extend(pinned.map(str::to_string));
        let mut started = std::collections::BTreeSet::new();
        for name in &eager {
            if !started.insert(name.as_str()) {
                continue;
            }
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
        self.tools_within(server, None).await
    }

    /// The tools of `server`, connecting it first if needed, waiting at most `wait` (counted
    /// from the start of a start already under way) for it to start: past that, a
    /// [`UpstreamError::Starting`] and the start goes on.
    pub async fn tools_within(
        &self,
        server: &str,
        wait: Option<Duration>,
    ) -> Result<Arc<Vec<Tool>>, UpstreamError> {
        let conn = (self.connection_within(server, wait).await)
            .map_err(|e| redact::error(&self.redactor, e))?;
        conn.refresh(server, &self.redactor, &self.definitions)
            .await;
        Ok(conn.tools())
    }

    /// The `serverInfo.version` of a server that is connected now.
    pub async fn version_if_connected(&self, server: &str) -> Option<String> {
        let up = self.servers.get(server)?;
        let conn = match &*up.state.lock().await {
            State::Connected(c) if c.alive() => c.clone(),
            _ => return None,
        };
        conn.source.version()
    }

    /// Tools of a server that is already connected, without starting it.
    pub async fn tools_if_connected(&self, server: &str) -> Option<Arc<Vec<Tool>>> {
        let up = self.servers.get(server)?;
        let conn = match &*up.state.lock().await {
            State::Connected(c) if c.alive() => c.clone(),
            _ => return None,
        };
        conn.refresh(server, &self.redactor, &self.definitions)
            .await;
        Some(conn.tools())
    }

    /// The skills a connected server serves over the skills extension (none when it does not
    /// declare it), without starting it.
    pub async fn skills_if_connected(&self, server: &str) -> Option<Arc<Vec<rmcp::model::Skill>>> {
        let conn = self.connected(server).await?;
        Some(self.skills.of(server, &conn).await)
    }

    /// Reads `uri`, a file of one of the skills `server` lists, from that server.
    pub async fn read_skill_file(
        &self,
        server: &str,
        uri: &str,
    ) -> Result<rmcp::model::ReadResourceResult, UpstreamError> {
        let conn = self
            .connection_within(server, Some(SEARCH_START_WAIT))
            .await
            .map_err(|e| redact::error(&self.redactor, e))?;
        let listed = self.skills.of(server, &conn).await;
        skills::read(&conn, &listed, uri).await.map_err(|reason| {
            let e = UpstreamError::SkillFile {
                server: server.to_string(),
                uri: uri.to_string(),
                reason: reason.to_string(),
            };
            redact::error(&self.redactor, e)
        })
    }

    /// The live connection to `server`, if it is connected.
    async fn connected(&self, server: &str) -> Option<Arc<Connection>> {
        let up = self.servers.get(server)?;
        match &*up.state.lock().await {
            State::Connected(c) if c.alive() => Some(c.clone()),
            _ => None,
        }
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
                State::Starting { since, .. } => (
                    "starting",
                    Some(format!(
                        "starting for {}s (connectTimeoutMs: {} ms)",
                        since.elapsed().as_secs(),
                        self.settings.connect_timeout.as_millis()
                    )),
                    None,
                ),
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
                State::Failed {
                    reason, at, pause, ..
                } => ("failed", Some(with_next_attempt(reason, *at, *pause)), None),
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
        self.call_reporting(server, tool, args, timeout, None).await
    }

    /// [`Upstreams::call`], asking the server for progress (a fresh progress token) and handing
    /// each notification it sends for this call to `on_progress`, when given.
    pub async fn call_reporting(
        &self,
        server: &str,
        tool: &str,
        args: serde_json::Map<String, serde_json::Value>,
        timeout: Duration,
        on_progress: Option<&(dyn Fn(&ProgressNotificationParam) + Send + Sync)>,
    ) -> Result<(CallToolResult, usize), UpstreamError> {
        self.call_traced(server, tool, args, timeout, on_progress, None)
            .await
            .map_err(|e| redact::error(&self.redactor, e))
    }

    /// [`Upstreams::call_reporting`], with the trace context the request carries in its
    /// `_meta` (and, to an HTTP server, in its headers).
    async fn call_traced(
        &self,
        server: &str,
        tool: &str,
        args: serde_json::Map<String, serde_json::Value>,
        timeout: Duration,
        on_progress: Option<&(dyn Fn(&ProgressNotificationParam) + Send + Sync)>,
        trace: Option<&crate::trace::TraceContext>,
    ) -> Result<(CallToolResult, usize), UpstreamError> {
        if let Some(reason) = self.hidden(server, tool) {
            return Err(UpstreamError::HiddenTool { reason });
        }
        let timeout = timeout.min(self.call_timeout(server));
        let conn = self.connection(server).await?;
        let redactor = &self.redactor;
        let progress = on_progress.map(|report| {
            move |p: &ProgressNotificationParam| report(&redact::progress(redactor, p.clone()))
        });
        let call = SourceCall {
            tool,
            args,
            on_progress: progress
                .as_ref()
                .map(|f| f as &(dyn Fn(&ProgressNotificationParam) + Send + Sync)),
            trace,
        };
        let result = self
            .call_on(&conn, server, tool, conn.source.call(call), timeout)
            .await;
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
                pause: Duration::ZERO,
                auth: true,
            };
        }
    }

    /// Runs `call` (one `tools/call` on `conn`) with a deadline and names its failure.
    async fn call_on(
        &self,
        conn: &Connection,
        server: &str,
        tool: &str,
        call: impl Future<Output = Result<CallToolResult, SourceError>>,
        timeout: Duration,
    ) -> Result<(CallToolResult, usize), UpstreamError> {
        match tokio::time::timeout(timeout, call).await {
            Ok(Ok(result)) => Ok(cap_result(
                redact::result(&self.redactor, result),
                self.settings.max_result_bytes,
            )),
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
        self.connection_within(server, None).await
    }

    /// The connection to `server`: the live one, or the outcome of a start (one at a time
    /// per server: concurrent callers wait for the same start), waiting at most `wait` for it.
    async fn connection_within(
        &self,
        server: &str,
        mut wait: Option<Duration>,
    ) -> Result<Arc<Connection>, UpstreamError> {
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
        let (mut done, since) = {
            let mut state = up.state.lock().await;
            if let State::Starting { done, since, .. } = &*state {
                (done.clone(), *since)
            } else {
                let attempts = match &*state {
                    State::Connected(c) if c.alive() => return Ok(c.clone()),
                    State::Connected(_) => {
                        tracing::warn!(server, "upstream server exited; restarting it");
                        0
                    }
                    State::Failed {
                        reason,
                        at,
                        pause,
                        auth: false,
                        ..
                    } if at.elapsed() < *pause => {
                        return Err(UpstreamError::Start {
                            server: server.to_string(),
                            reason: with_next_attempt(reason, *at, *pause),
                        });
                    }
                    State::Failed { attempts, .. } => *attempts,
                    State::Idle | State::Starting { .. } => 0,
                };
                if attempts > 0 {
                    // A server that failed before starts again in the background; a bounded
                    // waiter (a search) does not wait for it again.
                    wait = wait.map(|_| Duration::ZERO);
                }
                let (done, task) = self.start(up, attempts);
                let since = Instant::now();
                *state = State::Starting {
                    since,
                    done: done.clone(),
                    task,
                };
                (done, since)
            }
        };
        let finished = done.wait_for(Option::is_some);
        let outcome = match wait {
            None => finished.await.map(|v| v.clone()),
            Some(bound) => {
                match tokio::time::timeout(bound.saturating_sub(since.elapsed()), finished).await {
                    Ok(r) => r.map(|v| v.clone()),
                    Err(_) => {
                        return Err(UpstreamError::Starting {
                            server: server.to_string(),
                            waited: since.elapsed(),
                        });
                    }
                }
            }
        };
        match outcome {
            Ok(Some(result)) => result,
            // The start task was dropped (we are shutting down).
            Ok(None) | Err(_) => Err(UpstreamError::Start {
                server: server.to_string(),
                reason: "its start was abandoned".to_string(),
            }),
        }
    }

    /// Starts `up` in a task of its own, which records the outcome in its state and tells the
    /// waiters. `attempts`: failed starts before this one.
    fn start(
        &self,
        up: &Arc<Upstream>,
        attempts: u32,
    ) -> (
        tokio::sync::watch::Receiver<StartResult>,
        tokio::task::AbortHandle,
    ) {
        let (tx, rx) = tokio::sync::watch::channel(None);
        let up = up.clone();
        let settings = self.settings.clone();
        let token_dir = self.token_dir.clone();
        let callers = self.callers.clone();
        let redactor = self.redactor.clone();
        let changes = self.changes.clone();
        let definitions = self.definitions.clone();
        let task = tokio::spawn(async move {
            let server = up.spec.name.clone();
            let result = (connect(
                &up.spec,
                &settings,
                token_dir.as_deref(),
                &callers,
                &changes,
            )
            .await)
                .map_err(|e| redact::connect_error(&redactor, e));
            let mut state = up.state.lock().await;
            let (next, outcome) = match result {
                Ok(conn) => {
                    if let Ok(mut t) = conn.tools.lock() {
                        let tools = redact::tools(&redactor, t.as_ref().clone());
                        *t = Arc::new(definitions.observe(&server, tools));
                    }
                    let conn = Arc::new(conn);
                    let _ = changes.send(server.clone());
                    (State::Connected(conn.clone()), Ok(conn))
                }
                Err(ConnectError::NeedsLogin(reason)) => {
                    tracing::warn!(
                        server,
                        "upstream needs a login: {reason}; {}",
                        oauth::login_hint(&server)
                    );
                    (
                        State::Failed {
                            reason: reason.clone(),
                            at: Instant::now(),
                            attempts: attempts + 1,
                            pause: Duration::ZERO,
                            auth: true,
                        },
                        Err(UpstreamError::Unauthorized {
                            server: server.clone(),
                            reason,
                        }),
                    )
                }
                Err(e @ (ConnectError::Other(_) | ConnectError::TimedOut(_))) => {
                    // A start that hung may hang again: the longest pause at once.
                    let (reason, pause) = match e {
                        ConnectError::TimedOut(reason) => (reason, MAX_RETRY_PAUSE),
                        ConnectError::Other(reason) | ConnectError::NeedsLogin(reason) => {
                            (reason, retry_pause(attempts + 1))
                        }
                    };
                    tracing::warn!(server, "upstream failed to start: {reason}");
                    (
                        State::Failed {
                            reason: reason.clone(),
                            at: Instant::now(),
                            attempts: attempts + 1,
                            pause,
                            auth: false,
                        },
                        Err(UpstreamError::Start {
                            server: server.clone(),
                            reason: format!(
                                "{reason} (next attempt in {}s)",
                                pause.as_secs_f64().ceil()
                            ),
                        }),
                    )
                }
            };
            *state = next;
            tx.send_replace(Some(outcome));
        });
        (rx, task.abort_handle())
    }
}

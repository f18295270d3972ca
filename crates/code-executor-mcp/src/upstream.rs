//! The pool of MCP clients, one per configured upstream server.
//!
//! A server is started on first use (lazily) and its connection kept. A child process gets a
//! curated environment (its entry's `env` plus a few basics, never ours), its own process
//! group, dies with us, and its stderr goes to our log. A server that fails to start or
//! crashes gives an error naming it; the next use tries again; the others keep working.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResult, Tool};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde::Serialize;
use tokio::io::AsyncBufReadExt;
use tokio::sync::Mutex;

use crate::config::{Config, INHERITED_ENV, ServerSpec};
use crate::policy::UPSTREAM_CONNECT_TIMEOUT;

/// Why an upstream operation failed.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum UpstreamError {
    #[error("no MCP server named \"{0}\" is configured")]
    UnknownServer(String),
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
}

/// Connection state of one server, as `list_servers` shows it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ServerStatus {
    pub name: String,
    /// `connected`, `available` (configured, not started yet) or `failed`.
    pub status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_count: Option<usize>,
}

struct Connection {
    service: RunningService<RoleClient, ()>,
    tools: Arc<Vec<Tool>>,
}

impl Connection {
    /// False once the server process exited or its pipe closed.
    fn alive(&self) -> bool {
        !self.service.is_closed() && !self.service.peer().is_transport_closed()
    }
}

enum State {
    Idle,
    Connected(Arc<Connection>),
    Failed(String),
}

struct Upstream {
    spec: ServerSpec,
    state: Mutex<State>,
}

/// Every configured upstream server.
pub struct Upstreams {
    servers: BTreeMap<String, Arc<Upstream>>,
}

impl Upstreams {
    pub fn new(config: &Config) -> Self {
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
        Upstreams { servers }
    }

    /// Configured server names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> + Clone {
        self.servers.keys().map(String::as_str)
    }

    pub fn is_configured(&self, server: &str) -> bool {
        self.servers.contains_key(server)
    }

    /// The tools of `server`, connecting it first if needed.
    pub async fn tools(&self, server: &str) -> Result<Arc<Vec<Tool>>, UpstreamError> {
        Ok(self.connection(server).await?.tools.clone())
    }

    /// Tools of a server that is already connected, without starting it.
    pub async fn tools_if_connected(&self, server: &str) -> Option<Arc<Vec<Tool>>> {
        let up = self.servers.get(server)?;
        match &*up.state.lock().await {
            State::Connected(c) if c.alive() => Some(c.tools.clone()),
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
                State::Connected(c) if !c.alive() => (
                    "failed",
                    Some("the server process exited; it restarts on next use".to_string()),
                    None,
                ),
                State::Connected(c) => ("connected", None, Some(c.tools.len())),
                State::Failed(reason) => ("failed", Some(reason.clone()), None),
            };
            out.push(ServerStatus {
                name: name.clone(),
                status,
                reason,
                tool_count,
            });
        }
        out
    }

    /// Calls one tool with a deadline.
    pub async fn call(
        &self,
        server: &str,
        tool: &str,
        args: serde_json::Map<String, serde_json::Value>,
        timeout: Duration,
    ) -> Result<CallToolResult, UpstreamError> {
        let conn = self.connection(server).await?;
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(args);
        match tokio::time::timeout(timeout, conn.service.peer().call_tool(params)).await {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(e)) => Err(UpstreamError::Call {
                server: server.to_string(),
                tool: tool.to_string(),
                reason: if !conn.alive() {
                    format!("{e} (the server process exited; it restarts on next use)")
                } else {
                    e.to_string()
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
            .ok_or_else(|| UpstreamError::UnknownServer(server.to_string()))?;
        // One connect at a time per server: concurrent first calls wait for the same start.
        let mut state = up.state.lock().await;
        if let State::Connected(c) = &*state {
            if c.alive() {
                return Ok(c.clone());
            }
            tracing::warn!(server, "upstream server exited; restarting it");
        }
        match connect(&up.spec).await {
            Ok(conn) => {
                let conn = Arc::new(conn);
                *state = State::Connected(conn.clone());
                Ok(conn)
            }
            Err(reason) => {
                tracing::warn!(server, "upstream failed to start: {reason}");
                *state = State::Failed(reason.clone());
                Err(UpstreamError::Start {
                    server: server.to_string(),
                    reason,
                })
            }
        }
    }
}

/// The environment an upstream child gets: basics from ours, then its entry's `env`.
pub fn child_env(spec: &ServerSpec) -> Vec<(OsString, OsString)> {
    let mut env: BTreeMap<OsString, OsString> = INHERITED_ENV
        .iter()
        .filter_map(|k| std::env::var_os(k).map(|v| (OsString::from(k), v)))
        .collect();
    for (k, v) in &spec.env {
        env.insert(k.into(), v.into());
    }
    env.into_iter().collect()
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

async fn connect(spec: &ServerSpec) -> Result<Connection, String> {
    let env = child_env(spec);
    let target = sandbox::WorkerCommand {
        program: resolve_program(&spec.command, &env, spec.cwd.as_deref())?,
        args: spec.args.iter().map(OsString::from).collect(),
        env,
        cwd: spec.cwd.clone(),
    };
    // Upstreams are the user's own trusted servers: not confined, but isolated from our
    // environment, in their own process group, and killed when we die.
    let cmd = sandbox::command(
        &target,
        &sandbox::SandboxPolicy::new(sandbox::SandboxMode::Disabled, None),
    )
    .map_err(|e| e.to_string())?;
    let mut cmd = tokio::process::Command::from(cmd);
    cmd.kill_on_drop(true);
    let (transport, stderr) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run `{}`: {e}", spec.command))?;
    if let Some(stderr) = stderr {
        let name = spec.name.clone();
        tokio::spawn(async move {
            let mut lines = tokio::io::BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                tracing::info!(target: "upstream", server = %name, "{line}");
            }
        });
    }
    let start = async {
        let service = ().serve(transport).await.map_err(|e| e.to_string())?;
        let tools = service
            .peer()
            .list_all_tools()
            .await
            .map_err(|e| format!("tools/list failed: {e}"))?;
        Ok::<_, String>(Connection {
            service,
            tools: Arc::new(tools),
        })
    };
    match tokio::time::timeout(UPSTREAM_CONNECT_TIMEOUT, start).await {
        Ok(Ok(conn)) => {
            tracing::info!(server = %spec.name, tools = conn.tools.len(), "upstream connected");
            Ok(conn)
        }
        Ok(Err(e)) => Err(e),
        Err(_) => Err(format!(
            "no answer to initialize/tools/list within {}s",
            UPSTREAM_CONNECT_TIMEOUT.as_secs()
        )),
    }
}

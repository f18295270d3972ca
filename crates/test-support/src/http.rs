//! The built server over streamable HTTP (`serve --http`), and a small MCP client that speaks
//! both protocol generations with raw JSON-RPC, so tests see statuses and headers as a
//! client does.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};

use crate::temp::TempConfig;

/// The server, started with `serve --http 127.0.0.1:0`; killed on drop.
pub struct HttpServer {
    pub child: tokio::process::Child,
    /// `http://127.0.0.1:PORT`
    pub base: String,
    /// `http://127.0.0.1:PORT/mcp`
    pub url: String,
    pub port: u16,
    /// A bearer token [`HttpServer::get`] sends (`/metrics` requires one on a server that
    /// requires tokens).
    pub token: Option<String>,
    config: TempConfig,
}

impl HttpServer {
    /// Starts `exe` for `servers` with `extra_args` after `serve --http 127.0.0.1:0` and `env`
    /// added; waits until it listens.
    pub async fn start(
        exe: &Path,
        servers: Value,
        extra_args: &[&str],
        env: &[(&str, &str)],
    ) -> HttpServer {
        Self::start_on(exe, "127.0.0.1:0", servers, extra_args, env)
            .await
            .unwrap_or_else(|log| panic!("the server did not start:\n{log}"))
    }

    /// Like [`HttpServer::start`] on `addr`; `Err` holds the log when it exited instead.
    pub async fn start_on(
        exe: &Path,
        addr: &str,
        servers: Value,
        extra_args: &[&str],
        env: &[(&str, &str)],
    ) -> Result<HttpServer, String> {
        let (mut cmd, config, log) = command(exe, addr, servers, extra_args);
        cmd.env("RUST_LOG", "info,rmcp=warn");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("spawn server");
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            if let Some(i) = text.find("serving MCP on http://") {
                let rest = &text[i + "serving MCP on ".len()..];
                let url: String = rest
                    .chars()
                    .take_while(|c| !c.is_whitespace() && *c != '"')
                    .collect();
                let base = url.trim_end_matches("/mcp").to_string();
                let port = base
                    .rsplit(':')
                    .next()
                    .and_then(|p| p.parse().ok())
                    .unwrap_or(0);
                return Ok(HttpServer {
                    child,
                    base,
                    url,
                    port,
                    token: None,
                    config,
                });
            }
            if let Ok(Some(_)) = child.try_wait() {
                return Err(text);
            }
            if tokio::time::Instant::now() > deadline {
                return Err(format!("not listening after 30 s:\n{text}"));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Starts `exe` for `servers` with `serve --http` on a free loopback port, as users run
    /// it: `RUST_LOG` set to `rust_log`, or unset with `None` (the server's default), nothing
    /// else of the tests' own. Ready once `/readyz` answers 200, not by the log (at `warn` or
    /// `off` the server logs nothing). A port taken meanwhile by another test's server is
    /// tried again with another.
    pub async fn start_as_users_do(
        exe: &Path,
        servers: Value,
        rust_log: Option<&str>,
    ) -> HttpServer {
        let mut last = String::new();
        for _ in 0..3 {
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .expect("a free port")
                .port();
            let addr = format!("127.0.0.1:{port}");
            let (mut cmd, config, log) = command(exe, &addr, servers.clone(), &[]);
            match rust_log {
                Some(level) => cmd.env("RUST_LOG", level),
                None => cmd.env_remove("RUST_LOG"),
            };
            let mut child = cmd.spawn().expect("spawn server");
            let base = format!("http://{addr}");
            let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
            loop {
                if let Ok(r) = reqwest::get(format!("{base}/readyz")).await
                    && r.status().as_u16() == 200
                {
                    return HttpServer {
                        child,
                        url: format!("{base}/mcp"),
                        base,
                        port,
                        config,
                        token: None,
                    };
                }
                if let Ok(Some(status)) = child.try_wait() {
                    last = format!(
                        "exited ({status}):\n{}",
                        std::fs::read_to_string(&log).unwrap_or_default()
                    );
                    break;
                }
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "RUST_LOG={rust_log:?}: /readyz not 200 after 30 s:\n{}",
                    std::fs::read_to_string(&log).unwrap_or_default()
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        panic!("RUST_LOG={rust_log:?}: the server did not serve HTTP: {last}");
    }

    /// The server's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.config.dir.join("server.log")).unwrap_or_default()
    }

    /// The server's audit log (under its temporary XDG_STATE_HOME).
    pub fn audit_path(&self) -> PathBuf {
        self.config.dir.join("state/code-executor-mcp/audit.jsonl")
    }

    /// The audit log's lines, parsed.
    pub fn audit(&self) -> Vec<Value> {
        std::fs::read_to_string(self.audit_path())
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// Sends SIGTERM.
    pub fn sigterm(&self) {
        if let Some(pid) = self.child.id() {
            let _ = std::process::Command::new("kill")
                .args(["-TERM", &pid.to_string()])
                .status();
        }
    }

    /// GET `path` (with [`HttpServer::token`], if set); status and body.
    pub async fn get(&self, path: &str) -> (u16, String) {
        let mut req = reqwest::Client::new().get(format!("{}{path}", self.base));
        if let Some(t) = &self.token {
            req = req.bearer_auth(t);
        }
        let r = req.send().await.expect("GET");
        let status = r.status().as_u16();
        (status, r.text().await.unwrap_or_default())
    }

    /// The value of one sample line of `/metrics` (`name{labels}` exactly as written).
    pub async fn metric(&self, sample: &str) -> Option<f64> {
        let (_, text) = self.get("/metrics").await;
        text.lines().find_map(|l| {
            l.strip_prefix(sample)
                .and_then(|rest| rest.strip_prefix(' '))
                .and_then(|v| v.trim().parse().ok())
        })
    }
}

/// The command of a server for `servers` serving HTTP on `addr`, hermetic (its own config,
/// state and cache directories), its log in a file; the config and the log's path with it.
fn command(
    exe: &Path,
    addr: &str,
    servers: Value,
    extra_args: &[&str],
) -> (tokio::process::Command, TempConfig, PathBuf) {
    crate::tls::install_tls_provider();
    let config = TempConfig::new(servers);
    let log = config.dir.join("server.log");
    let mut cmd = tokio::process::Command::new(exe);
    cmd.arg("--config")
        .arg(&config.path)
        .arg("--no-discover")
        .args(["serve", "--http", addr])
        .args(extra_args)
        .env("XDG_STATE_HOME", config.dir.join("state"))
        .env("CODE_EXECUTOR_CACHE_DIR", config.dir.join("cache"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(std::fs::File::create(&log).expect("log file")))
        .kill_on_drop(true);
    (cmd, config, log)
}

/// Which protocol generation a client speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Generation {
    /// 2025-11-25: `initialize`, then requests carry `Mcp-Session-Id`.
    Sessions,
    /// 2026-07-28: no session; `server/discover`; every request carries its metadata.
    Stateless,
}

impl Generation {
    pub fn version(self) -> &'static str {
        match self {
            Generation::Sessions => "2025-11-25",
            Generation::Stateless => "2026-07-28",
        }
    }
}

/// An HTTP answer: status, headers, body, and the JSON-RPC messages in it (SSE or JSON).
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: String,
    pub messages: Vec<Value>,
}

impl Reply {
    /// The message answering request `id`.
    pub fn response(&self, id: u64) -> Option<&Value> {
        self.messages.iter().find(|m| m["id"] == json!(id))
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

fn messages_of(body: &str) -> Vec<Value> {
    if let Ok(v) = serde_json::from_str::<Value>(body) {
        return match v {
            Value::Array(a) => a,
            v => vec![v],
        };
    }
    body.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str(d.trim()).ok())
        .collect()
}

/// A client of one principal (its bearer token, if any) in one generation.
pub struct McpHttp {
    pub http: reqwest::Client,
    pub url: String,
    pub token: Option<String>,
    pub generation: Generation,
    /// The transport session (2025-11-25).
    pub session: Option<String>,
    pub name: String,
    /// Sent with every POST (e.g. a `traceparent`).
    pub extra_headers: Vec<(String, String)>,
    next: std::sync::atomic::AtomicU64,
}

impl McpHttp {
    /// A client that has not talked to the server yet.
    pub fn new(url: &str, token: Option<&str>, generation: Generation) -> McpHttp {
        crate::tls::install_tls_provider();
        McpHttp {
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(120))
                .build()
                .expect("client"),
            url: url.to_string(),
            token: token.map(str::to_string),
            generation,
            session: None,
            name: "http-test".into(),
            extra_headers: Vec::new(),
            next: std::sync::atomic::AtomicU64::new(1),
        }
    }

    /// Connects: `initialize` + `notifications/initialized` (2025-11-25), or
    /// `server/discover` (2026-07-28). Panics with the reply when it fails.
    pub async fn connect(url: &str, token: Option<&str>, generation: Generation) -> McpHttp {
        let mut c = McpHttp::new(url, token, generation);
        match generation {
            Generation::Sessions => {
                let r = c
                    .request(
                        "initialize",
                        json!({
                            "protocolVersion": generation.version(),
                            "capabilities": {},
                            "clientInfo": {"name": c.name, "version": "1"}
                        }),
                    )
                    .await;
                assert_eq!(r.status, 200, "initialize: {r:?}");
                c.session = r.header("mcp-session-id").map(str::to_string);
                assert!(c.session.is_some(), "no Mcp-Session-Id: {r:?}");
                let n = c.notify("notifications/initialized").await;
                assert_eq!(n.status, 202, "initialized: {n:?}");
            }
            Generation::Stateless => {
                let r = c.request("server/discover", json!({})).await;
                assert_eq!(r.status, 200, "server/discover: {r:?}");
            }
        }
        c
    }

    fn post(&self, body: &Value, method: &str, name: Option<&str>) -> reqwest::RequestBuilder {
        let mut b = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", self.generation.version())
            .json(body);
        if self.generation == Generation::Stateless {
            b = b.header("mcp-method", method);
            if let Some(n) = name {
                b = b.header("mcp-name", n);
            }
            // SEP-2243: the arguments our tools annotate with x-mcp-header, mirrored as a
            // client that listed them does (the server refuses a call without them).
            let args = &body["params"]["arguments"];
            for (tool, arg, header) in [
                ("execute_typescript", "session", "mcp-param-session"),
                ("execute_python", "session", "mcp-param-session"),
                ("wait", "handle", "mcp-param-handle"),
            ] {
                if method == "tools/call"
                    && name == Some(tool)
                    && let Some(v) = args[arg].as_str()
                {
                    b = b.header(header, v);
                }
            }
        }
        if let Some(t) = &self.token {
            b = b.bearer_auth(t);
        }
        if let Some(s) = &self.session {
            b = b.header("mcp-session-id", s);
        }
        for (k, v) in &self.extra_headers {
            b = b.header(k, v);
        }
        b
    }

    /// The request's params with the per-request metadata 2026-07-28 requires.
    fn params(&self, mut params: Value) -> Value {
        if self.generation == Generation::Stateless {
            let required = json!({
                "io.modelcontextprotocol/protocolVersion": self.generation.version(),
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": self.name, "version": "1"},
            });
            // Keys the caller put in `_meta` (a traceparent, say) stay.
            let mut meta = params["_meta"].as_object().cloned().unwrap_or_default();
            if let Value::Object(r) = required {
                meta.extend(r);
            }
            params["_meta"] = Value::Object(meta);
        }
        params
    }

    /// Sends a request; the whole reply.
    pub async fn request(&self, method: &str, params: Value) -> Reply {
        let id = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // `Mcp-Name`: a tool's name, or a resource's URI (SEP-2243).
        let name = params["name"]
            .as_str()
            .or_else(|| params["uri"].as_str())
            .map(str::to_string);
        let body =
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": self.params(params)});
        self.send(self.post(&body, method, name.as_deref())).await
    }

    /// Sends raw bytes as a POST body, with this client's headers.
    pub async fn post_raw(&self, body: Vec<u8>) -> Reply {
        let mut b = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", self.generation.version())
            .body(body);
        if let Some(t) = &self.token {
            b = b.bearer_auth(t);
        }
        if let Some(s) = &self.session {
            b = b.header("mcp-session-id", s);
        }
        self.send(b).await
    }

    pub async fn notify(&self, method: &str) -> Reply {
        let body = json!({"jsonrpc": "2.0", "method": method});
        self.send(self.post(&body, method, None)).await
    }

    async fn send(&self, b: reqwest::RequestBuilder) -> Reply {
        let r = b.send().await.expect("send");
        let status = r.status().as_u16();
        let headers = r.headers().clone();
        let body = r.text().await.unwrap_or_default();
        Reply {
            status,
            headers,
            messages: messages_of(&body),
            body,
        }
    }

    /// Calls a tool; the `result` of the JSON-RPC response (panics on anything else).
    pub async fn call(&self, tool: &str, args: Value) -> Value {
        let r = self
            .request("tools/call", json!({"name": tool, "arguments": args}))
            .await;
        assert_eq!(r.status, 200, "tools/call {tool}: {r:?}");
        let last = r
            .messages
            .iter()
            .rev()
            .find(|m| m.get("result").is_some() || m.get("error").is_some())
            .cloned()
            .unwrap_or_else(|| panic!("no response in {r:?}"));
        assert!(last.get("result").is_some(), "tools/call {tool}: {last}");
        last["result"].clone()
    }

    /// Runs TypeScript with `args` (`code` and the rest); the structured content and isError.
    pub async fn exec(&self, args: Value) -> (Value, bool) {
        let r = self.call("execute_typescript", args).await;
        (
            r["structuredContent"].clone(),
            r["isError"].as_bool().unwrap_or(false),
        )
    }

    /// Ends the transport session (DELETE); the status.
    pub async fn delete(&self) -> u16 {
        let mut b = self
            .http
            .delete(&self.url)
            .header("mcp-protocol-version", self.generation.version());
        if let Some(t) = &self.token {
            b = b.bearer_auth(t);
        }
        if let Some(s) = &self.session {
            b = b.header("mcp-session-id", s);
        }
        b.send().await.expect("DELETE").status().as_u16()
    }
}

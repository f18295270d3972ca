//! `serve`'s options and the HTTP server's options they make.

use std::path::PathBuf;

/// `serve` options; all but --http apply to HTTP only (see docs/http.md).
#[derive(Debug, Clone, clap::Args)]
pub(super) struct ServeArgs {
    /// Serve MCP over streamable HTTP on ADDR (path /mcp) instead of stdio; ADDR defaults to
    /// 127.0.0.1:3333.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = faces::http::DEFAULT_ADDR)]
    pub(super) http: Option<String>,
    /// Static bearer tokens: lines of NAME=TOKEN, each NAME a principal.
    #[arg(long, value_name = "PATH", env = "CODE_EXECUTOR_HTTP_TOKENS_FILE")]
    tokens_file: Option<PathBuf>,
    /// Accept OAuth access tokens (JWT) issued by this authorization server.
    #[arg(long, value_name = "URL", env = "CODE_EXECUTOR_OAUTH_ISSUER")]
    oauth_issuer: Option<String>,
    /// The issuer's JWKS (default: jwks_uri from its RFC 8414 metadata).
    #[arg(long, value_name = "URL", env = "CODE_EXECUTOR_OAUTH_JWKS_URL")]
    oauth_jwks_url: Option<String>,
    /// The audience tokens must name (default: our resource URL, PUBLIC_URL/mcp).
    #[arg(long, value_name = "URI", env = "CODE_EXECUTOR_OAUTH_AUDIENCE")]
    oauth_audience: Option<String>,
    /// A scope every token must carry (repeatable).
    #[arg(long = "oauth-scope", value_name = "SCOPE")]
    oauth_scopes: Vec<String>,
    /// Our base URL as clients reach it (default: http://ADDR).
    #[arg(long, value_name = "URL", env = "CODE_EXECUTOR_PUBLIC_URL")]
    public_url: Option<String>,
    /// A Host value to accept besides the loopback names, `name` or `name:port`
    /// (repeatable; `*`: any).
    #[arg(long = "allowed-host", value_name = "HOST")]
    allowed_hosts: Vec<String>,
    /// An Origin to accept, scheme://host[:port] (repeatable; default: origins on an
    /// allowed host).
    #[arg(long = "allowed-origin", value_name = "ORIGIN")]
    allowed_origins: Vec<String>,
    /// Also serve GET /metrics, without a token, on ADDR (a port that only the metrics
    /// scraper reaches); on --http's address /metrics requires the token as /mcp does.
    #[arg(long, value_name = "ADDR", env = "CODE_EXECUTOR_METRICS_ADDR")]
    metrics_addr: Option<String>,
    /// Largest request body in bytes (larger: 413).
    #[arg(long, value_name = "BYTES", default_value_t = faces::http::HttpLimits::default().max_body_bytes)]
    max_body_bytes: usize,
    /// Connections served at once (more: 503).
    #[arg(long, value_name = "N", default_value_t = faces::http::HttpLimits::default().max_connections)]
    max_connections: usize,
    /// MCP transport sessions open at once (more: 503).
    #[arg(long, value_name = "N", default_value_t = faces::http::HttpLimits::default().max_sessions)]
    max_sessions: usize,
    /// MCP transport sessions per principal.
    #[arg(long, value_name = "N", default_value_t = faces::http::HttpLimits::default().max_sessions_per_principal)]
    max_sessions_per_principal: usize,
    /// Seconds to send request headers; also the idle keep-alive time.
    #[arg(long, value_name = "SECS", default_value_t = faces::http::HttpLimits::default().header_timeout.as_secs())]
    header_timeout: u64,
    /// Seconds to send a request body.
    #[arg(long, value_name = "SECS", default_value_t = faces::http::HttpLimits::default().body_timeout.as_secs())]
    body_timeout: u64,
    /// Seconds an unused MCP transport session is kept.
    #[arg(long, value_name = "SECS", default_value_t = faces::http::HttpLimits::default().session_idle.as_secs())]
    session_idle: u64,
    /// On SIGTERM, seconds running executions get to finish before they are cancelled.
    #[arg(long, value_name = "SECS", default_value_t = faces::http::HttpLimits::default().shutdown_grace.as_secs())]
    shutdown_grace: u64,
    /// On SIGTERM, seconds the server still accepts connections (answering new requests 503,
    /// /readyz failing) before it stops listening, so that a load balancer's health check
    /// takes it out first (behind a proxy: more than twice its check interval; within the
    /// grace).
    #[arg(long, value_name = "SECS", default_value_t = 0)]
    drain_delay: u64,
    /// This server is one of several replicas named ID (`hostname`: the host name): handles
    /// of sessions, paused executions and tasks end in `@ID`, the affinity key a proxy routes
    /// on, and another replica's handle is refused naming its replica (docs/kubernetes.md).
    #[arg(long, value_name = "ID", env = "CODE_EXECUTOR_REPLICA_ID")]
    pub(super) replica_id: Option<String>,
}

impl ServeArgs {
    pub(super) fn http_options(&self, addr: String) -> faces::http::HttpOptions {
        use std::time::Duration;
        faces::http::HttpOptions {
            addr,
            public_url: self.public_url.clone(),
            tokens_file: self.tokens_file.clone(),
            tokens_env: std::env::var(faces::http::auth::TOKENS_ENV).ok(),
            oauth_issuer: self.oauth_issuer.clone(),
            oauth_jwks_url: self.oauth_jwks_url.clone(),
            oauth_audience: self.oauth_audience.clone(),
            oauth_scopes: self.oauth_scopes.clone(),
            allowed_hosts: self.allowed_hosts.clone(),
            allowed_origins: self.allowed_origins.clone(),
            metrics_addr: self.metrics_addr.clone(),
            limits: faces::http::HttpLimits {
                max_body_bytes: self.max_body_bytes,
                max_connections: self.max_connections,
                max_sessions: self.max_sessions,
                max_sessions_per_principal: self.max_sessions_per_principal,
                header_timeout: Duration::from_secs(self.header_timeout.max(1)),
                body_timeout: Duration::from_secs(self.body_timeout.max(1)),
                session_idle: Duration::from_secs(self.session_idle.max(1)),
                shutdown_grace: Duration::from_secs(self.shutdown_grace),
                drain_delay: Duration::from_secs(self.drain_delay),
            },
        }
    }
}

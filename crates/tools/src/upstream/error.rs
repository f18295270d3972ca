//! The upstreams' errors: why an operation on a server failed ([`UpstreamError`], what
//! callers see) and why a transport could not be opened ([`TransportError`], worded into a
//! start failure), and why a connection could not be made ([`ConnectError`]).

use std::time::Duration;

use crate::oauth;

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
    /// A skill's file (SEP-2640) the server does not list, or whose read failed.
    #[error("MCP server \"{server}\" cannot give {uri}: {reason}")]
    SkillFile {
        server: String,
        uri: String,
        reason: String,
    },
    #[error("MCP server \"{server}\" failed calling {tool}: {reason}")]
    Call {
        server: String,
        tool: String,
        reason: String,
    },
    /// A discovery request stopped waiting for a start that is still under way.
    #[error(
        "MCP server \"{server}\" is still starting ({}s so far); it was skipped so that this \
         answer does not wait for it; search again shortly",
        waited.as_secs()
    )]
    Starting { server: String, waited: Duration },
    /// The server wants a (new) OAuth login.
    #[error(
        "MCP server \"{server}\" needs a login: {reason}; {}",
        oauth::login_hint(server)
    )]
    Unauthorized { server: String, reason: String },
}

/// Why the transport to a server could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    #[error("header name {name:?}: {error}")]
    HeaderName {
        name: String,
        error: reqwest::header::InvalidHeaderName,
    },
    #[error("header {name}: {error}")]
    HeaderValue {
        name: String,
        error: reqwest::header::InvalidHeaderValue,
    },
    #[error("HTTP client: {0}")]
    Client(reqwest::Error),
    #[error("GET {url}: {error}")]
    Get {
        url: String,
        error: Box<crate::oauth::SendError>,
    },
    /// The event stream broke before its `endpoint` event (the reason as the reader gives it).
    #[error("event stream: {0}")]
    EventStream(String),
    #[error("the event stream ended before its `endpoint` event")]
    NoEndpoint,
    #[error("endpoint {endpoint:?}: {error}")]
    Endpoint {
        endpoint: String,
        error: url::ParseError,
    },
    #[error("the server named a message endpoint on another origin ({0}); refused")]
    OtherOrigin(String),
    #[error("{0}")]
    CurrentDir(std::io::Error),
    #[error("`{command}` was not found on PATH ({path})")]
    NotOnPath { command: String, path: String },
    #[error(transparent)]
    Sandbox(#[from] sandbox::SandboxError),
    #[error("cannot run `{command}`: {error}")]
    Run {
        command: String,
        error: std::io::Error,
    },
    #[error("`{0}` started without its pipes")]
    NoPipes(String),
}

/// Why a connection could not be made.
pub(super) enum ConnectError {
    /// The server refused our authorization (or the stored login cannot be used).
    NeedsLogin(String),
    /// No answer within the connect timeout.
    TimedOut(String),
    Other(String),
}

impl From<String> for ConnectError {
    fn from(s: String) -> Self {
        ConnectError::Other(s)
    }
}

impl From<TransportError> for ConnectError {
    fn from(e: TransportError) -> Self {
        ConnectError::Other(e.to_string())
    }
}

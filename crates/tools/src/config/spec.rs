//! What the loader produces: the upstream servers ([`ServerSpec`], [`Transport`]), the ones
//! held back ([`HeldBack`]), and the whole [`Config`]; with how secrets in them are shown
//! ([`mask`], `mask_url`) and the environment every upstream child inherits.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use policy::filter::ToolFilter;

/// Environment variables every upstream child gets from ours (when set), besides the
/// entry's own `env`. Nothing else of our environment reaches an upstream.
pub const INHERITED_ENV: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "TZ",
    "TMPDIR", "TERM",
];

/// How to reach a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// A child process speaking MCP on stdio.
    Stdio {
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
        cwd: Option<PathBuf>,
    },
    /// Streamable HTTP.
    Http {
        url: String,
        headers: BTreeMap<String, String>,
    },
    /// The legacy HTTP+SSE transport.
    Sse {
        url: String,
        headers: BTreeMap<String, String>,
    },
}

/// One upstream server, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSpec {
    pub name: String,
    pub transport: Transport,
    /// Marked disabled by its client; still available here, since every server starts lazily.
    pub disabled: bool,
    /// The file this entry came from, and the client that owns that file.
    pub source: PathBuf,
    pub client: &'static str,
    /// OAuth client settings (`"oauth": {...}`), for HTTP and SSE servers; `None` means
    /// defaults (dynamic client registration, the scopes the server asks for).
    pub oauth: Option<OAuthConfig>,
    /// The tools its client config hides (`includeTools`, `disabled_tools`, ...).
    pub tool_filter: Option<ToolFilter>,
    /// Time to start and list its tools (Codex `startup_timeout_sec`); `None`: the
    /// `connectTimeoutMs` setting.
    pub startup_timeout: Option<Duration>,
    /// Time one tool call may take (Codex `tool_timeout_sec`, Gemini `timeout`); `None`: the
    /// `upstreamCallTimeoutMs` setting.
    pub tool_timeout: Option<Duration>,
    /// Keys of the entry understood but without effect here, each with why.
    pub not_applied: Vec<String>,
    /// The values of the environment variables the entry references (`${VAR}`, `env:VAR`,
    /// `bearer_token_env_var`, `env_http_headers`, `env_vars`), but the harmless ones: a
    /// value written by reference is a credential more often than not (`config::secrets`).
    pub referenced: Vec<String>,
}

/// An entry its client would not start, so neither do we.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldBack {
    pub name: String,
    pub source: PathBuf,
    pub client: &'static str,
    /// Why, and how to allow it.
    pub reason: String,
}

/// An entry's `oauth` object: how `code-executor-mcp login` presents itself to the server's
/// authorization server. Every field is optional; without a client id the client registers
/// itself (RFC 7591). The secret is a credential: write it as `${VAR}`.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct OAuthConfig {
    pub client_id: Option<String>,
    pub client_secret: Option<String>,
    /// Scopes to ask for; empty means those the server advertises.
    pub scopes: Vec<String>,
    /// A fixed port for the loopback redirect (`http://127.0.0.1:PORT/callback`), for
    /// pre-registered clients whose authorization server does not accept any loopback port.
    pub callback_port: Option<u16>,
}

impl std::fmt::Debug for OAuthConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthConfig")
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "[masked]"),
            )
            .field("scopes", &self.scopes)
            .field("callback_port", &self.callback_port)
            .finish()
    }
}

/// Everything the server needs to know about its upstreams.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {
    /// By name, in a stable order.
    pub servers: BTreeMap<String, ServerSpec>,
    /// Entries their clients would not start, by name (only names no other file serves).
    pub held_back: BTreeMap<String, HeldBack>,
    /// Problems found while loading (skipped files and entries, keys not understood), for
    /// `list_servers`/`doctor`.
    pub warnings: Vec<String>,
    /// Files that could not be read at all (also among the warnings): `doctor` fails on them.
    pub unreadable: Vec<String>,
    /// The files read, in precedence order (lowest first).
    pub sources: Vec<PathBuf>,
    /// Where OAuth tokens live (`<user config dir>/code-executor-mcp/oauth`); `None` when
    /// there is no user config dir (then no stored login is used).
    pub token_dir: Option<PathBuf>,
    /// The working directory, whose project may bring skills.
    pub project_dir: Option<PathBuf>,
    /// Whether that project is trusted (see `trust::Trust::project`), else why not.
    pub project_trust: Option<Result<(), super::trust::UntrustedProject>>,
    /// Claude Code's settings files whose hooks run here (`trust::Trust::claude_hooks`):
    /// `(file, its "hooks" object)`, lowest precedence first; none unless discovering.
    pub client_hooks: Vec<(PathBuf, Value)>,
}

/// Shows a value only when its name says it cannot be a secret; otherwise keeps its length
/// and at most its first two characters.
pub fn mask(key: &str, value: &str) -> String {
    const HARMLESS: &[&str] = &[
        "PATH",
        "HOME",
        "LANG",
        "TZ",
        "NODE_ENV",
        "DEBUG",
        "LOG_LEVEL",
    ];
    if HARMLESS.contains(&key) || value.len() <= 2 {
        return value.to_string();
    }
    let head: String = value.chars().take(2).collect();
    format!("{head}…({} chars, masked)", value.chars().count())
}

/// Masks credentials in a URL's userinfo and query values.
pub fn mask_url(url: &str) -> String {
    let (base, query) = url
        .split_once('?')
        .map_or((url, None), |(b, q)| (b, Some(q)));
    let base = match base.split_once("://") {
        Some((scheme, rest)) => match rest.split_once('@') {
            Some((_, host)) if !host.contains('/') || rest.find('@') < rest.find('/') => {
                format!("{scheme}://***@{host}")
            }
            _ => base.to_string(),
        },
        None => base.to_string(),
    };
    match query {
        None => base,
        Some(q) => {
            let masked: Vec<String> = q
                .split('&')
                .map(|kv| match kv.split_once('=') {
                    Some((k, _)) => format!("{k}=***"),
                    None => kv.to_string(),
                })
                .collect();
            format!("{base}?{}", masked.join("&"))
        }
    }
}

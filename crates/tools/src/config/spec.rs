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
    /// An OpenAPI document whose operations are the tools, called over HTTP by the host
    /// (`"type": "openapi"`; `crate::upstream::openapi`).
    OpenApi(Box<OpenApiSpec>),
}

/// An OpenAPI entry, validated: where its document is, where requests go, which credential
/// the host attaches, and which special addresses it may reach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenApiSpec {
    pub document: DocumentLocation,
    /// Overrides the document's `servers` (an absolute http(s) URL).
    pub base_url: Option<String>,
    /// Values of the document's server variables (`{region}` in a server URL).
    pub server_variables: BTreeMap<String, String>,
    pub auth: Option<OpenApiAuth>,
    /// Special addresses (loopback, private ranges, ...) requests of this entry may go to, as
    /// addresses or ranges (`127.0.0.1`, `10.0.0.0/8`); none by default: the fetch guard's rules.
    pub allow_addresses: Vec<String>,
    /// A directory the document's `$ref`s to files may read from (none by default).
    pub refs_directory: Option<PathBuf>,
}

/// Where an OpenAPI document is read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DocumentLocation {
    /// A file (relative paths were resolved against the config file's directory).
    File(PathBuf),
    /// An http(s) URL the host fetches (with size caps, timeouts and the fetch guard).
    Url(String),
}

/// The credential the host attaches to every request of an OpenAPI entry. Values come from
/// the environment (`${VAR}`) and are secrets: masked in `Debug` and `config show`, and known
/// to the redactor.
#[derive(Clone, PartialEq, Eq)]
pub enum OpenApiAuth {
    /// `Authorization: Bearer <token>`.
    Bearer(String),
    /// An API key; where it goes defaults to the document's `apiKey` scheme.
    ApiKey {
        name: Option<String>,
        location: Option<ApiKeyIn>,
        value: String,
    },
    /// `Authorization: Basic base64(user:password)`.
    Basic { username: String, password: String },
    /// An OAuth 2 client-credentials token, fetched from `token_url` (defaulting to the
    /// document's flow) and kept until it expires.
    ClientCredentials {
        token_url: Option<String>,
        client_id: String,
        client_secret: String,
        scopes: Vec<String>,
    },
}

/// Where an API key goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiKeyIn {
    Header,
    Query,
    Cookie,
}

impl OpenApiAuth {
    /// The credential values (for the redactor).
    pub fn secrets(&self) -> Vec<String> {
        match self {
            OpenApiAuth::Bearer(t) => vec![t.clone()],
            OpenApiAuth::ApiKey { value, .. } => vec![value.clone()],
            OpenApiAuth::Basic { username, password } => {
                use base64::Engine;
                let pair = format!("{username}:{password}");
                let b64 = base64::engine::general_purpose::STANDARD.encode(&pair);
                vec![password.clone(), pair, b64]
            }
            OpenApiAuth::ClientCredentials { client_secret, .. } => vec![client_secret.clone()],
        }
    }

    /// What `config show` prints: the kind and where it goes, values masked.
    pub fn describe(&self) -> Value {
        match self {
            OpenApiAuth::Bearer(t) => serde_json::json!({"bearer": mask("token", t)}),
            OpenApiAuth::ApiKey {
                name,
                location,
                value,
            } => serde_json::json!({"apiKey": {
                "name": name,
                "in": location.map(|l| format!("{l:?}").to_ascii_lowercase()),
                "value": mask("apiKey", value),
            }}),
            OpenApiAuth::Basic { username, password } => serde_json::json!({"basic": {
                "username": username,
                "password": mask("password", password),
            }}),
            OpenApiAuth::ClientCredentials {
                token_url,
                client_id,
                client_secret,
                scopes,
            } => serde_json::json!({"oauth2ClientCredentials": {
                "tokenUrl": token_url.as_deref().map(mask_url),
                "clientId": client_id,
                "clientSecret": mask("clientSecret", client_secret),
                "scopes": scopes,
            }}),
        }
    }
}

impl std::fmt::Debug for OpenApiAuth {
    /// Only the kind: the values are credentials (this `Debug` also feeds the tool cache's key,
    /// which therefore does not change with a rotated token).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OpenApiAuth::Bearer(_) => f.write_str("Bearer([masked])"),
            OpenApiAuth::ApiKey { name, location, .. } => f
                .debug_struct("ApiKey")
                .field("name", name)
                .field("location", location)
                .finish_non_exhaustive(),
            OpenApiAuth::Basic { username, .. } => f
                .debug_struct("Basic")
                .field("username", username)
                .finish_non_exhaustive(),
            OpenApiAuth::ClientCredentials {
                token_url,
                client_id,
                scopes,
                ..
            } => f
                .debug_struct("ClientCredentials")
                .field("token_url", token_url)
                .field("client_id", client_id)
                .field("scopes", scopes)
                .finish_non_exhaustive(),
        }
    }
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

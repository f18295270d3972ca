//! Configuration: the upstream MCP servers and our own settings.
//!
//! Servers come from the files every MCP client keeps ([`sources`]), merged by precedence
//! (explicit file, then project files, then global files); each entry is parsed raw (any
//! client's dialect) and
//! validated into a typed [`ServerSpec`], with `${VAR}` references expanded ([`expand`]). A
//! broken file or entry is skipped with a warning that names the file and the key; the rest
//! loads. An entry that would launch this server itself is skipped too.

pub mod expand;
pub mod settings;
pub mod sources;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Value, json};

pub use settings::Settings;
use sources::{Format, Places, Scope, Source};

/// Environment variable naming the upstream config file when `--config` is not given.
pub const CONFIG_PATH_ENV: &str = "MCP_CONFIG_PATH";

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
    /// Problems found while loading (skipped files and entries), for `list_servers`/`doctor`.
    pub warnings: Vec<String>,
    /// The files read, in precedence order (lowest first).
    pub sources: Vec<PathBuf>,
    /// Where OAuth tokens live (`<user config dir>/code-executor-mcp/oauth`); `None` when
    /// there is no user config dir (then no stored login is used).
    pub token_dir: Option<PathBuf>,
}

/// Where and how to load from.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// `--config` (else `MCP_CONFIG_PATH`).
    pub explicit: Option<PathBuf>,
    /// Read other clients' files too.
    pub discover: bool,
    pub places: Places,
    /// Our own binary, to skip entries that would launch it.
    pub self_exe: Option<PathBuf>,
}

/// One entry as any client writes it. Fields a client adds that we do not use (autoApprove,
/// timeout, ...) are ignored.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawServer {
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cwd: Option<PathBuf>,
    /// `stdio`, `http`, `streamable-http`, `streamableHttp`, `sse`.
    #[serde(rename = "type", alias = "transport")]
    kind: Option<String>,
    url: Option<String>,
    /// Gemini CLI: streamable HTTP.
    http_url: Option<String>,
    /// Windsurf.
    server_url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    /// Codex.
    #[serde(default, rename = "http_headers")]
    http_headers: BTreeMap<String, String>,
    /// Codex: the env var holding a bearer token.
    #[serde(rename = "bearer_token_env_var")]
    bearer_token_env_var: Option<String>,
    #[serde(default)]
    disabled: bool,
    /// Codex writes `enabled = false`.
    enabled: Option<bool>,
    /// OAuth client settings (ours; Claude Code and Gemini CLI write a similar object).
    oauth: Option<RawOAuth>,
}

/// The `oauth` object as written; unknown keys (Gemini's `enabled`, `redirectUri`, ...) are
/// ignored.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawOAuth {
    #[serde(alias = "client_id")]
    client_id: Option<String>,
    #[serde(alias = "client_secret")]
    client_secret: Option<String>,
    /// A list, or one space-separated string.
    #[serde(alias = "scope")]
    scopes: Option<Value>,
    #[serde(alias = "callback_port")]
    callback_port: Option<u16>,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {reason}")]
    Read { path: PathBuf, reason: String },
}

impl Config {
    /// Loads and merges every source. Only a broken explicit file is an error; problems with
    /// discovered files become warnings.
    pub fn load(opts: &LoadOptions) -> Result<Config, ConfigError> {
        let mut list: Vec<Source> = if opts.discover {
            sources::discover(&opts.places)
        } else {
            Vec::new()
        };
        let explicit = opts
            .explicit
            .clone()
            .or_else(|| std::env::var_os(CONFIG_PATH_ENV).map(PathBuf::from));
        if let Some(path) = explicit {
            let path = std::path::absolute(&path).unwrap_or(path);
            if !path.is_file() {
                return Err(ConfigError::Read {
                    path,
                    reason: "no such file".into(),
                });
            }
            list.push(Source {
                client: "explicit",
                format: if path.extension().is_some_and(|e| e == "toml") {
                    Format::CodexToml
                } else {
                    Format::McpServers
                },
                path,
                scope: Scope::Explicit,
            });
        }
        let lookup = |k: &str| std::env::var(k).ok();
        let mut config = Config {
            token_dir: opts.places.config_dir.as_ref().map(|d| token_dir_in(d)),
            ..Config::default()
        };
        for source in &list {
            match sources::read_entries(source) {
                Ok(entries) => config.merge(source, entries, opts.self_exe.as_deref(), &lookup),
                Err(reason) if source.scope == Scope::Explicit => {
                    return Err(ConfigError::Read {
                        path: source.path.clone(),
                        reason,
                    });
                }
                Err(reason) => config.warn(format!(
                    "{} ({}) skipped: {reason}",
                    source.path.display(),
                    source.client
                )),
            }
            config.sources.push(source.path.clone());
        }
        Ok(config)
    }

    /// Parses one `{"mcpServers": ...}` text as an explicit file (tests, the demo).
    pub fn parse(text: &str, path: &Path, self_exe: Option<&Path>) -> Result<Config, ConfigError> {
        let source = Source {
            client: "explicit",
            path: path.to_path_buf(),
            format: Format::McpServers,
            scope: Scope::Explicit,
        };
        let entries =
            sources::parse_entries(text, &source.format).map_err(|reason| ConfigError::Read {
                path: path.to_path_buf(),
                reason,
            })?;
        let mut config = Config::default();
        config.merge(&source, entries, self_exe, &|k| std::env::var(k).ok());
        config.sources.push(path.to_path_buf());
        Ok(config)
    }

    fn warn(&mut self, msg: String) {
        tracing::warn!("{msg}");
        self.warnings.push(msg);
    }

    fn merge(
        &mut self,
        source: &Source,
        entries: BTreeMap<String, Value>,
        self_exe: Option<&Path>,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) {
        for (name, value) in entries {
            match validate(&name, value, source, self_exe, lookup) {
                Ok(Some(spec)) => {
                    if let Some(old) = self.servers.get(&name) {
                        tracing::debug!(
                            server = name,
                            "{} overrides {}",
                            source.path.display(),
                            old.source.display()
                        );
                    }
                    self.servers.insert(name, spec);
                }
                Ok(None) => {}
                Err(reason) => self.warn(format!(
                    "{}: {}.{name} skipped: {reason}",
                    source.path.display(),
                    match source.format {
                        Format::VsCode => "servers",
                        Format::CodexToml => "mcp_servers",
                        _ => "mcpServers",
                    }
                )),
            }
        }
    }

    /// `config show`: every server with its source, secrets masked.
    pub fn describe(&self) -> Value {
        let servers: Vec<Value> = self
            .servers
            .values()
            .map(|s| {
                let mut v = match &s.transport {
                    Transport::Stdio {
                        command,
                        args,
                        env,
                        cwd,
                    } => json!({
                        "transport": "stdio", "command": command, "args": args,
                        "env": env.iter().map(|(k, v)| (k.clone(), Value::String(mask(k, v)))).collect::<serde_json::Map<_, _>>(),
                        "cwd": cwd,
                    }),
                    Transport::Http { url, headers } | Transport::Sse { url, headers } => json!({
                        "transport": if matches!(s.transport, Transport::Sse { .. }) { "sse" } else { "http" },
                        "url": mask_url(url),
                        "headers": headers.iter().map(|(k, v)| (k.clone(), Value::String(mask(k, v)))).collect::<serde_json::Map<_, _>>(),
                    }),
                };
                if let Some(o) = &s.oauth {
                    v["oauth"] = json!({
                        "clientId": o.client_id,
                        "clientSecret": o.client_secret.as_ref().map(|c| mask("clientSecret", c)),
                        "scopes": o.scopes,
                        "callbackPort": o.callback_port,
                    });
                }
                v["name"] = json!(s.name);
                v["source"] = json!(s.source);
                v["client"] = json!(s.client);
                if s.disabled {
                    v["disabled"] = json!(true);
                }
                v
            })
            .collect();
        json!({ "servers": servers, "sources": self.sources, "warnings": self.warnings })
    }
}

/// The token directory under a user config dir.
pub fn token_dir_in(config_dir: &Path) -> PathBuf {
    config_dir.join("code-executor-mcp").join("oauth")
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
fn mask_url(url: &str) -> String {
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

fn validate(
    name: &str,
    value: Value,
    source: &Source,
    self_exe: Option<&Path>,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<ServerSpec>, String> {
    if name.is_empty() || name.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(
            "a server name must be non-empty and contain no spaces or control characters".into(),
        );
    }
    let raw: RawServer = serde_json::from_value(value).map_err(|e| e.to_string())?;
    let ex = |s: &str| expand::expand(s, lookup);
    let ex_map = |m: &BTreeMap<String, String>| -> Result<BTreeMap<String, String>, String> {
        m.iter()
            .map(|(k, v)| Ok((k.clone(), ex(v).map_err(|e| format!("{k}: {e}"))?)))
            .collect()
    };
    let kind = raw.kind.as_deref().map(str::to_ascii_lowercase);
    let url = raw
        .http_url
        .clone()
        .or(raw.url.clone())
        .or(raw.server_url.clone());
    let transport = match (kind.as_deref(), &raw.command, url) {
        (Some("stdio") | None, Some(command), _) if !command.trim().is_empty() => {
            let command = ex(command)?;
            let args = raw
                .args
                .iter()
                .map(|a| ex(a))
                .collect::<Result<Vec<_>, _>>()?;
            if launches_self(&command, &args, self_exe) {
                tracing::info!(
                    server = name,
                    "skipped: this entry launches code-executor-mcp itself"
                );
                return Ok(None);
            }
            let cwd = raw.cwd.map(|c| {
                if c.is_relative() {
                    source.path.parent().unwrap_or(Path::new("/")).join(c)
                } else {
                    c
                }
            });
            Transport::Stdio {
                command,
                args,
                env: ex_map(&raw.env)?,
                cwd,
            }
        }
        (Some("stdio"), _, _) | (None, _, None) => return Err("\"command\" is missing".into()),
        (kind, _, Some(url)) => {
            let url = ex(&url)?;
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(format!("url \"{}\" is not an http(s) URL", mask_url(&url)));
            }
            let mut headers = ex_map(&raw.headers)?;
            headers.extend(ex_map(&raw.http_headers)?);
            if let Some(var) = &raw.bearer_token_env_var {
                let token =
                    lookup(var).ok_or_else(|| format!("environment variable {var} is not set"))?;
                headers.insert("Authorization".into(), format!("Bearer {token}"));
            }
            // Gemini's `url` (without `httpUrl`) means SSE; so does an explicit type.
            let sse = matches!(kind, Some("sse"))
                || (raw.http_url.is_none() && source.client == "gemini" && raw.url.is_some());
            match kind {
                Some("sse")
                | None
                | Some("http" | "streamable-http" | "streamablehttp" | "streamable_http") => {}
                Some(other) => return Err(format!("unknown transport type \"{other}\"")),
            }
            if sse {
                Transport::Sse { url, headers }
            } else {
                Transport::Http { url, headers }
            }
        }
        (Some(other), _, None) => {
            return Err(format!("transport type \"{other}\" needs a \"url\""));
        }
    };
    let oauth = match (&transport, raw.oauth) {
        (Transport::Http { .. } | Transport::Sse { .. }, Some(o)) => {
            Some(validate_oauth(o, &ex).map_err(|e| format!("oauth: {e}"))?)
        }
        // A stdio server authenticates however its command does; the object means nothing.
        _ => None,
    };
    Ok(Some(ServerSpec {
        name: name.to_string(),
        transport,
        disabled: raw.disabled || raw.enabled == Some(false),
        source: source.path.clone(),
        client: source.client,
        oauth,
    }))
}

fn validate_oauth(
    raw: RawOAuth,
    ex: &dyn Fn(&str) -> Result<String, String>,
) -> Result<OAuthConfig, String> {
    let non_empty = |v: Option<String>, key: &str| -> Result<Option<String>, String> {
        match v {
            None => Ok(None),
            Some(v) => {
                let v = ex(&v).map_err(|e| format!("{key}: {e}"))?;
                Ok((!v.trim().is_empty()).then_some(v))
            }
        }
    };
    let scopes = match raw.scopes {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(s)) => s.split_whitespace().map(str::to_string).collect(),
        Some(Value::Array(items)) => items
            .into_iter()
            .map(|v| match v {
                Value::String(s) if !s.trim().is_empty() && !s.contains(' ') => Ok(s),
                other => Err(format!("scopes: {other} is not a scope name")),
            })
            .collect::<Result<_, _>>()?,
        Some(other) => return Err(format!("scopes: expected a list of strings, got {other}")),
    };
    Ok(OAuthConfig {
        client_id: non_empty(raw.client_id, "clientId")?,
        client_secret: non_empty(raw.client_secret, "clientSecret")?,
        scopes,
        callback_port: raw.callback_port,
    })
}

/// Whether an entry would start this very server (which would recurse).
fn launches_self(command: &str, args: &[String], self_exe: Option<&Path>) -> bool {
    const OUR_NAME: &str = "code-executor-mcp";
    let file_name = |s: &str| {
        Path::new(s)
            .file_name()
            .and_then(|f| f.to_str())
            .map(str::to_string)
            .unwrap_or_default()
    };
    if file_name(command) == OUR_NAME {
        return true;
    }
    if let Some(exe) = self_exe {
        let canon = |p: &Path| std::fs::canonicalize(p).ok();
        if let (Some(a), Some(b)) = (canon(Path::new(command)), canon(exe))
            && a == b
        {
            return true;
        }
    }
    // npx code-executor-mcp, uvx code-executor-mcp, cargo run --bin code-executor-mcp ...
    args.iter().any(|a| {
        let base = file_name(a);
        base == OUR_NAME || base.starts_with("code-executor-mcp@")
    })
}

#[cfg(test)]
mod tests;

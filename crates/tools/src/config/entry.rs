//! One server entry as any client writes it, validated into a [`ServerSpec`].
//!
//! Every key of an entry is accounted for: the keys we read (`USED`), the keys we understand
//! but that change nothing here (`NOT_APPLIED`, listed by `config show` under `notApplied`),
//! and every other key, which becomes a warning naming the file and the key.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use super::error::{EntryError, ExpandError, OAuthEntryError};
use super::expand;
use super::sources::{Format, Source};
use super::spec::{INHERITED_ENV, OAuthConfig, ServerSpec, Transport, mask_url};
use policy::filter::ToolFilter;

/// Keys of an entry that we read, in any client's dialect.
const USED: &[&str] = &[
    "command",
    "args",
    "env",
    "cwd",
    "type",
    "transport",
    "url",
    "httpUrl",
    "serverUrl",
    "headers",
    "http_headers",
    "bearer_token_env_var",
    "env_http_headers",
    "env_vars",
    "disabled",
    "enabled",
    "oauth",
    "scopes",
    "includeTools",
    "excludeTools",
    "enabled_tools",
    "disabled_tools",
    "disabledTools",
    "startup_timeout_sec",
    "startup_timeout_ms",
    "tool_timeout_sec",
];

/// Keys only an OpenAPI entry reads (`super::openapi_entry`); on other entries they are
/// keys not understood.
const OPENAPI_USED: &[&str] = &[
    "spec",
    "baseUrl",
    "serverVariables",
    "auth",
    "allowAddresses",
    "refsDirectory",
];

/// Keys we understand that change nothing here, with why.
const NOT_APPLIED: &[(&str, &str)] = &[
    ("description", "a note for people"),
    ("name", "the entry's key is its name"),
    (
        "trust",
        "Gemini CLI skips its call confirmations; code-executor-mcp asks for none",
    ),
    (
        "autoApprove",
        "a client's call approval; code-executor-mcp asks for none",
    ),
    (
        "alwaysAllow",
        "a client's call approval; code-executor-mcp asks for none",
    ),
    ("tools", "Codex's per-tool approval settings"),
    (
        "default_tools_approval_mode",
        "Codex's call approval; code-executor-mcp asks for none",
    ),
    (
        "supports_parallel_tool_calls",
        "a Codex scheduling hint; code may call tools in parallel anyway",
    ),
    (
        "required",
        "Codex fails its start without this server; servers start lazily here",
    ),
    ("dev", "VS Code's development mode for server authors"),
    ("gallery", "VS Code's gallery metadata"),
    ("version", "VS Code's gallery metadata"),
];

/// Keys of the `oauth` object that we read, and those that change nothing here.
const OAUTH_USED: &[&str] = &[
    "clientId",
    "client_id",
    "clientSecret",
    "client_secret",
    "scopes",
    "scope",
    "callbackPort",
    "callback_port",
];
const OAUTH_NOT_APPLIED: &[(&str, &str)] = &[(
    "enabled",
    "Gemini CLI's OAuth switch; `code-executor-mcp login` logs in when a server asks",
)];

/// The key under which a format lists its servers.
pub fn section(format: &Format) -> &'static str {
    match format {
        Format::VsCode => "servers",
        Format::CodexToml => "mcp_servers",
        _ => "mcpServers",
    }
}

/// One entry as any client writes it.
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
    /// Codex: header name -> the env var holding its value (left out when unset).
    #[serde(default, rename = "env_http_headers")]
    env_http_headers: BTreeMap<String, String>,
    /// Codex: env vars passed on from ours: `"NAME"` or `{name = "NAME", source = "local"}`.
    #[serde(default, rename = "env_vars")]
    env_vars: Vec<Value>,
    #[serde(default)]
    disabled: bool,
    /// Codex writes `enabled = false`.
    enabled: Option<bool>,
    /// OAuth client settings (ours; Claude Code and Gemini CLI write a similar object).
    oauth: Option<RawOAuth>,
    /// Codex: OAuth scopes.
    scopes: Option<Value>,
    /// Gemini CLI tool filter.
    include_tools: Option<Vec<String>>,
    exclude_tools: Option<Vec<String>>,
    /// Codex tool filter.
    #[serde(rename = "enabled_tools")]
    enabled_tools: Option<Vec<String>>,
    #[serde(rename = "disabled_tools")]
    disabled_tools: Option<Vec<String>>,
    /// Windsurf tool filter.
    #[serde(rename = "disabledTools")]
    windsurf_disabled_tools: Option<Vec<String>>,
    /// Codex timeouts.
    #[serde(rename = "startup_timeout_sec")]
    startup_timeout_sec: Option<f64>,
    #[serde(rename = "startup_timeout_ms")]
    startup_timeout_ms: Option<u64>,
    #[serde(rename = "tool_timeout_sec")]
    tool_timeout_sec: Option<f64>,
    /// Gemini CLI: request timeout in milliseconds.
    timeout: Option<Value>,
    /// OpenAPI: the document (a path or an http(s) URL).
    spec: Option<String>,
    /// OpenAPI: overrides the document's servers.
    base_url: Option<String>,
    #[serde(default)]
    server_variables: BTreeMap<String, String>,
    /// OpenAPI: the credential the host attaches.
    auth: Option<Value>,
    /// OpenAPI: special addresses requests may reach.
    #[serde(default)]
    allow_addresses: Vec<String>,
    /// OpenAPI: where `$ref`s to files may lead.
    refs_directory: Option<PathBuf>,
}

/// The `oauth` object as written.
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

/// Sorts an entry's keys: returns the keys not understood (as `key` or `oauth.key`) and
/// fills `not_applied` with `key (why)`.
fn account_keys(value: &Value, client: &str, not_applied: &mut Vec<String>) -> Vec<String> {
    let mut unknown = Vec::new();
    let Some(map) = value.as_object() else {
        return unknown;
    };
    let openapi = map
        .get("type")
        .or_else(|| map.get("transport"))
        .and_then(Value::as_str)
        .is_some_and(|t| t.eq_ignore_ascii_case("openapi"));
    for key in map.keys() {
        if openapi && OPENAPI_USED.contains(&key.as_str()) {
            continue;
        }
        if key == "timeout" && client != "gemini" {
            not_applied.push(
                "timeout (a client's request timeout; upstreamCallTimeoutMs applies here)".into(),
            );
        } else if USED.contains(&key.as_str()) || key == "timeout" {
        } else if let Some((_, why)) = NOT_APPLIED.iter().find(|(k, _)| k == key) {
            not_applied.push(format!("{key} ({why})"));
        } else {
            unknown.push(key.clone());
        }
    }
    if let Some(oauth) = map.get("oauth").and_then(Value::as_object) {
        for key in oauth.keys() {
            if OAUTH_USED.contains(&key.as_str()) {
            } else if let Some((_, why)) = OAUTH_NOT_APPLIED.iter().find(|(k, _)| k == key) {
                not_applied.push(format!("oauth.{key} ({why})"));
            } else {
                unknown.push(format!("oauth.{key}"));
            }
        }
    }
    unknown
}

/// A positive, finite number of seconds, at most a day.
fn seconds(v: f64, key: &'static str) -> Result<Duration, EntryError> {
    if !(v.is_finite() && v > 0.0 && v <= 86_400.0) {
        return Err(EntryError::Seconds(key));
    }
    Ok(Duration::from_secs_f64(v))
}

/// Validates one entry; keys it does not understand are added to `unknown_keys`.
pub(super) fn validate(
    name: &str,
    value: Value,
    source: &Source,
    self_exe: Option<&Path>,
    lookup: &dyn Fn(&str) -> Option<String>,
    unknown_keys: &mut Vec<String>,
) -> Result<Option<ServerSpec>, EntryError> {
    if name.is_empty() || name.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(EntryError::Name);
    }
    if !value.is_object() {
        return Err(EntryError::NotObject(value));
    }
    // Every variable the entry references, as it is looked up.
    let referenced = std::cell::RefCell::new(Vec::new());
    let recording = |k: &str| {
        let v = lookup(k);
        if let Some(v) = &v
            && !INHERITED_ENV.contains(&k)
            && super::secrets::env_value_is_secret(k, v)
        {
            referenced.borrow_mut().push(v.clone());
        }
        v
    };
    let lookup: &dyn Fn(&str) -> Option<String> = &recording;
    let mut not_applied = Vec::new();
    *unknown_keys = account_keys(&value, source.client, &mut not_applied);
    let raw: RawServer = serde_json::from_value(value)?;
    let ex = |s: &str| expand::expand(s, lookup);
    let ex_map = |m: &BTreeMap<String, String>| -> Result<BTreeMap<_, _>, EntryError> {
        m.iter()
            .map(|(k, v)| {
                let v = ex(v).map_err(|error| EntryError::ExpandAt {
                    key: k.clone(),
                    error,
                })?;
                Ok((k.clone(), v))
            })
            .collect()
    };
    let kind = raw.kind.as_deref().map(str::to_ascii_lowercase);
    let url = raw
        .http_url
        .clone()
        .or(raw.url.clone())
        .or(raw.server_url.clone());
    let config_dir = source.path.parent().unwrap_or(Path::new("/"));
    let openapi = super::openapi_entry::RawOpenApi {
        spec: raw.spec.as_deref(),
        base_url: raw.base_url.as_deref(),
        server_variables: &raw.server_variables,
        auth: raw.auth.as_ref(),
        allow_addresses: &raw.allow_addresses,
        refs_directory: raw.refs_directory.as_deref(),
    };
    let transport = match (kind.as_deref(), &raw.command, url) {
        (Some("openapi"), _, _) => super::openapi_entry::validate(openapi, config_dir, &ex)?,
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
            if !raw.env_http_headers.is_empty() {
                return Err(EntryError::HeadersOnStdio);
            }
            let cwd = raw.cwd.clone().map(|c| {
                if c.is_relative() {
                    config_dir.join(c)
                } else {
                    c
                }
            });
            let mut env = ex_map(&raw.env)?;
            for var in &raw.env_vars {
                let var = env_var_name(var)?;
                if !env.contains_key(&var)
                    && let Some(v) = lookup(&var)
                {
                    env.insert(var, v);
                }
            }
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            }
        }
        (Some("stdio"), _, _) | (None, _, None) => return Err(EntryError::NoCommand),
        (kind, _, Some(url)) => {
            let url = ex(&url)?;
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(EntryError::NotHttp(mask_url(&url)));
            }
            let mut headers = ex_map(&raw.headers)?;
            headers.extend(ex_map(&raw.http_headers)?);
            for (header, var) in &raw.env_http_headers {
                if !headers.contains_key(header)
                    && let Some(v) = lookup(var)
                {
                    headers.insert(header.clone(), v);
                }
            }
            if let Some(var) = &raw.bearer_token_env_var {
                let token = lookup(var).ok_or_else(|| ExpandError::Unset(var.clone()))?;
                headers.insert("Authorization".into(), format!("Bearer {token}"));
            }
            // Gemini CLI's untyped `url` (without `httpUrl`) is SSE; an explicit type says.
            let sse = matches!(kind, Some("sse"))
                || (kind.is_none()
                    && raw.http_url.is_none()
                    && source.client == "gemini"
                    && raw.url.is_some());
            match kind {
                Some("sse")
                | None
                | Some("http" | "streamable-http" | "streamablehttp" | "streamable_http") => {}
                Some(other) => return Err(EntryError::UnknownTransport(other.to_string())),
            }
            if sse {
                Transport::Sse { url, headers }
            } else {
                Transport::Http { url, headers }
            }
        }
        (Some(other), _, None) => {
            return Err(EntryError::NoUrl(other.to_string()));
        }
    };
    let raw_oauth = match (raw.oauth, &raw.scopes) {
        (Some(o), _) => Some(o),
        (None, Some(scopes)) => Some(RawOAuth {
            scopes: Some(scopes.clone()),
            ..RawOAuth::default()
        }),
        (None, None) => None,
    };
    let oauth = match (&transport, raw_oauth) {
        (Transport::Http { .. } | Transport::Sse { .. }, Some(o)) => Some(validate_oauth(o, &ex)?),
        // A stdio server authenticates however its command does; the object means nothing.
        _ => None,
    };
    let startup_timeout = match (raw.startup_timeout_sec, raw.startup_timeout_ms) {
        (Some(s), _) => Some(seconds(s, "startup_timeout_sec")?),
        (None, Some(ms)) => Some(seconds(ms as f64 / 1000.0, "startup_timeout_ms")?),
        (None, None) => None,
    };
    let tool_timeout = match (raw.tool_timeout_sec, &raw.timeout) {
        (Some(s), _) => Some(seconds(s, "tool_timeout_sec")?),
        (None, Some(ms)) if source.client == "gemini" => {
            let ms = ms
                .as_f64()
                .ok_or_else(|| EntryError::TimeoutMs(ms.clone()))?;
            Some(seconds(ms / 1000.0, "timeout")?)
        }
        _ => None,
    };
    let origin = format!(
        "{}: {}.{name}",
        source.path.display(),
        section(&source.format)
    );
    let tool_filter = tool_filter(
        [
            ("includeTools", raw.include_tools),
            ("enabled_tools", raw.enabled_tools),
        ],
        [
            ("excludeTools", raw.exclude_tools),
            ("disabled_tools", raw.disabled_tools),
            ("disabledTools", raw.windsurf_disabled_tools),
        ],
        origin,
    );
    Ok(Some(ServerSpec {
        name: name.to_string(),
        transport,
        disabled: raw.disabled || raw.enabled == Some(false),
        source: source.path.clone(),
        client: source.client,
        oauth,
        tool_filter,
        startup_timeout,
        tool_timeout,
        not_applied,
        referenced: referenced.take(),
    }))
}

/// An `env_vars` item: `"NAME"` or `{name = "NAME", source = "local" | "remote"}` (we run
/// where the variables are, so both read our environment).
fn env_var_name(v: &Value) -> Result<String, EntryError> {
    let (name, source) = match v {
        Value::String(s) => (Some(s.as_str()), None),
        Value::Object(m) => (m.get("name").and_then(Value::as_str), m.get("source")),
        _ => (None, None),
    };
    match (name, source.map(|s| s.as_str())) {
        (Some(n), None | Some(Some("local" | "remote"))) if !n.is_empty() => Ok(n.to_string()),
        _ => Err(EntryError::EnvVar(v.clone())),
    }
}

/// The filter of include and exclude lists (the first of each given wins; two include lists
/// intersect, exclude lists add up); `None` when no list is given.
fn tool_filter<const I: usize, const E: usize>(
    include: [(&'static str, Option<Vec<String>>); I],
    exclude: [(&'static str, Option<Vec<String>>); E],
    origin: String,
) -> Option<ToolFilter> {
    let mut f = ToolFilter {
        origin,
        ..ToolFilter::default()
    };
    let mut given = false;
    for (key, list) in include {
        let Some(list) = list else { continue };
        given = true;
        f.include_key = key;
        f.include = Some(match f.include.take() {
            None => list,
            Some(acc) => acc.into_iter().filter(|t| list.contains(t)).collect(),
        });
    }
    let mut keys = Vec::new();
    for (key, list) in exclude {
        let Some(list) = list else { continue };
        given = true;
        keys.push(key);
        f.exclude.extend(list);
    }
    f.exclude_key = match keys.as_slice() {
        [] | [_, _, ..] => "the exclude lists",
        [one] => one,
    };
    given.then_some(f)
}

fn validate_oauth(
    raw: RawOAuth,
    ex: &dyn Fn(&str) -> Result<String, ExpandError>,
) -> Result<OAuthConfig, OAuthEntryError> {
    let non_empty =
        |v: Option<String>, key: &'static str| -> Result<Option<String>, OAuthEntryError> {
            match v {
                None => Ok(None),
                Some(v) => {
                    let v = ex(&v).map_err(|error| OAuthEntryError::Expand { key, error })?;
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
                other => Err(OAuthEntryError::Scope(other)),
            })
            .collect::<Result<_, _>>()?,
        Some(other) => return Err(OAuthEntryError::Scopes(other)),
    };
    Ok(OAuthConfig {
        client_id: non_empty(raw.client_id, "clientId")?,
        client_secret: non_empty(raw.client_secret, "clientSecret")?,
        scopes,
        callback_port: raw.callback_port,
    })
}

/// Whether an entry would start this very server (which would recurse).
pub fn launches_self(command: &str, args: &[String], self_exe: Option<&Path>) -> bool {
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

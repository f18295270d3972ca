//! Configuration: the upstream MCP servers and our own settings.
//!
//! The `{"mcpServers": {...}}` file that Claude Code and Cursor use is parsed raw
//! ([`RawConfigFile`], everything optional) and validated into a typed [`Config`]. A broken
//! entry is skipped with a warning that names the file and the key; the rest loads. An entry
//! that would launch this server itself is skipped too.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// Environment variable naming the upstream config file when `--config` is not given.
pub const CONFIG_PATH_ENV: &str = "MCP_CONFIG_PATH";

/// Environment variables every upstream child gets from ours (when set), besides the
/// entry's own `env`. Nothing else of our environment reaches an upstream.
pub const INHERITED_ENV: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "TZ",
    "TMPDIR", "TERM",
];

/// One upstream server, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSpec {
    pub name: String,
    pub command: String,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub cwd: Option<PathBuf>,
    /// The file this entry came from.
    pub source: PathBuf,
}

/// Everything the server needs to know about its upstreams.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {
    /// By name, in a stable order.
    pub servers: BTreeMap<String, ServerSpec>,
    /// Problems found while loading (skipped entries), for `list_servers` and `doctor`.
    pub warnings: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct RawConfigFile {
    #[serde(default, rename = "mcpServers")]
    mcp_servers: BTreeMap<String, serde_json::Value>,
}

/// One entry as written. Fields other clients add (autoApprove, timeout, ...) are ignored;
/// `disabled: true` entries stay available, since every server connects lazily anyway.
#[derive(Debug, Deserialize)]
struct RawServer {
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cwd: Option<PathBuf>,
    #[serde(rename = "type")]
    kind: Option<String>,
    url: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "config file {path} is not valid JSON of the form {{\"mcpServers\": {{...}}}}: {source}"
    )]
    Parse {
        path: PathBuf,
        source: serde_json::Error,
    },
}

impl Config {
    /// Loads the file named by `explicit`, else by `MCP_CONFIG_PATH`, else no upstreams.
    pub fn load(explicit: Option<&Path>, self_exe: Option<&Path>) -> Result<Config, ConfigError> {
        let path = explicit
            .map(Path::to_path_buf)
            .or_else(|| std::env::var_os(CONFIG_PATH_ENV).map(PathBuf::from));
        match path {
            Some(path) => {
                let path = std::path::absolute(&path).unwrap_or(path);
                let text = std::fs::read_to_string(&path).map_err(|source| ConfigError::Read {
                    path: path.clone(),
                    source,
                })?;
                Config::parse(&text, &path, self_exe)
            }
            None => Ok(Config::default()),
        }
    }

    /// Parses one config file's text; `path` is used in messages and relative `cwd`s.
    pub fn parse(text: &str, path: &Path, self_exe: Option<&Path>) -> Result<Config, ConfigError> {
        let raw: RawConfigFile =
            serde_json::from_str(text).map_err(|source| ConfigError::Parse {
                path: path.to_path_buf(),
                source,
            })?;
        let mut config = Config::default();
        for (name, value) in raw.mcp_servers {
            match validate(&name, value, path, self_exe) {
                Ok(Some(spec)) => {
                    config.servers.insert(name, spec);
                }
                Ok(None) => {}
                Err(reason) => {
                    let msg = format!("{}: mcpServers.{name} skipped: {reason}", path.display());
                    tracing::warn!("{msg}");
                    config.warnings.push(msg);
                }
            }
        }
        Ok(config)
    }
}

fn validate(
    name: &str,
    value: serde_json::Value,
    path: &Path,
    self_exe: Option<&Path>,
) -> Result<Option<ServerSpec>, String> {
    if name.is_empty() || name.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(
            "a server name must be non-empty and contain no spaces or control characters".into(),
        );
    }
    let raw: RawServer = serde_json::from_value(value).map_err(|e| e.to_string())?;
    if let Some(kind) = raw.kind.as_deref()
        && kind != "stdio"
    {
        return Err(format!(
            "transport type \"{kind}\" is not supported yet; only stdio servers (command + args) are"
        ));
    }
    let command = match (raw.command, raw.url) {
        (Some(c), _) if !c.trim().is_empty() => c,
        (_, Some(_)) => {
            return Err(
                "remote (url) servers are not supported yet; only stdio servers are".into(),
            );
        }
        _ => return Err("\"command\" is missing".into()),
    };
    if launches_self(&command, &raw.args, self_exe) {
        tracing::info!(
            server = name,
            "skipped: this entry launches code-executor-mcp itself"
        );
        return Ok(None);
    }
    let cwd = raw.cwd.map(|c| {
        if c.is_relative() {
            path.parent().unwrap_or(Path::new(".")).join(c)
        } else {
            c
        }
    });
    Ok(Some(ServerSpec {
        name: name.to_string(),
        command,
        args: raw.args,
        env: raw.env,
        cwd,
        source: path.to_path_buf(),
    }))
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
mod tests {
    use super::*;

    fn parse(text: &str) -> Config {
        Config::parse(text, Path::new("/cfg/mcp.json"), None).unwrap()
    }

    #[test]
    fn reads_stdio_entries_and_resolves_relative_cwd() {
        let c = parse(
            r#"{"mcpServers": {"fs": {"command": "node", "args": ["a.js"], "env": {"K": "V"}, "cwd": "sub"}}}"#,
        );
        assert_eq!(
            c.servers["fs"],
            ServerSpec {
                name: "fs".into(),
                command: "node".into(),
                args: vec!["a.js".into()],
                env: BTreeMap::from([("K".into(), "V".into())]),
                cwd: Some(PathBuf::from("/cfg/sub")),
                source: PathBuf::from("/cfg/mcp.json"),
            }
        );
        assert!(c.warnings.is_empty());
    }

    #[test]
    fn broken_entry_is_skipped_with_file_and_key_and_the_rest_loads() {
        let c =
            parse(r#"{"mcpServers": {"bad": {"args": 3}, "nocmd": {}, "ok": {"command": "x"}}}"#);
        assert_eq!(c.servers.keys().collect::<Vec<_>>(), ["ok"]);
        assert_eq!(c.warnings.len(), 2);
        assert!(
            c.warnings[0].contains("/cfg/mcp.json: mcpServers.bad skipped"),
            "{:?}",
            c.warnings
        );
        assert!(
            c.warnings[1].contains("\"command\" is missing"),
            "{:?}",
            c.warnings
        );
    }

    #[test]
    fn entries_that_launch_this_server_are_skipped() {
        let c = parse(
            r#"{"mcpServers": {
                "me": {"command": "/usr/local/bin/code-executor-mcp"},
                "npx": {"command": "npx", "args": ["-y", "code-executor-mcp@latest"]},
                "other": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]}
            }}"#,
        );
        assert_eq!(c.servers.keys().collect::<Vec<_>>(), ["other"]);
    }

    #[test]
    fn invalid_json_names_the_file() {
        let err = Config::parse("{", Path::new("/x.json"), None).unwrap_err();
        assert!(err.to_string().contains("/x.json"), "{err}");
    }
}

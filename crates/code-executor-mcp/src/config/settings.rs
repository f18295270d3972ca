//! Our own settings: pool size, which servers connect eagerly, discovery, upstream limits,
//! the tool policy, admission limits and the audit log.
//!
//! Read from the first of `$CODE_EXECUTOR_CONFIG_PATH`, `./.code-executor.json` and
//! `$XDG_CONFIG_HOME/code-executor-mcp/config.json` that exists, then overridden by environment
//! variables, then by command-line flags. Parsed raw, validated into [`Settings`]; an unknown
//! key is an error that names the file and the key, since a typo would silently do nothing.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::policy::admission::AdmissionSettings;
use crate::policy::audit::AuditSettings;
use crate::policy::{ExecutionLimits, ToolPolicy, UPSTREAM_CALL_TIMEOUT, UPSTREAM_CONNECT_TIMEOUT};

/// Names the settings file explicitly.
pub const SETTINGS_PATH_ENV: &str = "CODE_EXECUTOR_CONFIG_PATH";
/// Comma-separated servers to connect at start, in the background.
pub const CONNECTED_SERVERS_ENV: &str = "CONNECTED_SERVERS";
pub const POOL_SIZE_ENV: &str = "CODE_EXECUTOR_POOL_SIZE";
pub const DISCOVER_ENV: &str = "CODE_EXECUTOR_DISCOVER";
/// The settings key listing projects whose own server files are trusted (see
/// [`super::trust`]); read only from a user settings file, never from a project's.
pub const TRUST_SETTING: &str = "trustedProjects";

/// Largest upstream result we keep, in bytes: a result beyond it is cut off and reported
/// rather than handed whole to the sandbox (16 MiB matches the worker frame limit).
pub const DEFAULT_MAX_RESULT_BYTES: usize = 16 * 1024 * 1024;

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawSettings {
    pool_size: Option<usize>,
    connected_servers: Option<Vec<String>>,
    discover: Option<bool>,
    upstream_call_timeout_ms: Option<u64>,
    connect_timeout_ms: Option<u64>,
    max_result_bytes: Option<usize>,
    policy: Option<ToolPolicy>,
    limits: Option<AdmissionSettings>,
    execution_limits: Option<ExecutionLimits>,
    audit: Option<AuditSettings>,
    trusted_projects: Option<Vec<PathBuf>>,
    #[serde(rename = "$schema")]
    _schema: Option<String>,
}

/// Validated settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// Pre-started workers per language.
    pub pool_size: usize,
    /// Servers connected at start, in the background (never delaying `initialize`).
    pub connected_servers: Vec<String>,
    /// Whether other clients' config files are read.
    pub discover: bool,
    pub upstream_call_timeout: Duration,
    /// Time a server gets to start and answer `initialize` and `tools/list`.
    pub connect_timeout: Duration,
    pub max_result_bytes: usize,
    /// Which upstream tools code may call.
    pub policy: ToolPolicy,
    /// Concurrency, queue and rates.
    pub limits: AdmissionSettings,
    /// Per-execution limits (deadline, memory, output, tool calls, code size).
    pub execution_limits: ExecutionLimits,
    pub audit: AuditSettings,
    /// Projects (and the directories under them) whose project files (`.mcp.json`,
    /// `.gemini/settings.json`, `.codex/config.toml`, `.vscode/mcp.json`, `.cursor/mcp.json`)
    /// are trusted although their clients have not approved them.
    pub trusted_projects: Vec<PathBuf>,
    /// The file the settings came from, if any.
    pub source: Option<PathBuf>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            pool_size: crate::DEFAULT_POOL_SIZE,
            connected_servers: Vec::new(),
            discover: true,
            upstream_call_timeout: UPSTREAM_CALL_TIMEOUT,
            connect_timeout: UPSTREAM_CONNECT_TIMEOUT,
            max_result_bytes: DEFAULT_MAX_RESULT_BYTES,
            policy: ToolPolicy::default(),
            limits: AdmissionSettings::default(),
            execution_limits: ExecutionLimits::default(),
            audit: AuditSettings::default(),
            trusted_projects: Vec::new(),
            source: None,
        }
    }
}

impl Settings {
    /// Loads settings from the usual places and the environment.
    pub fn load(cwd: &Path, config_dir: Option<&Path>) -> Result<Settings, String> {
        let candidates = [
            std::env::var_os(SETTINGS_PATH_ENV).map(PathBuf::from),
            Some(cwd.join(".code-executor.json")),
            config_dir.map(|d| d.join("code-executor-mcp/config.json")),
        ];
        let explicit = candidates[0].is_some();
        let mut settings = Settings::default();
        for (i, path) in candidates.into_iter().flatten().enumerate() {
            if i == 0 && explicit && !path.is_file() {
                return Err(format!(
                    "{SETTINGS_PATH_ENV} names {}, which is not a file",
                    path.display()
                ));
            }
            if path.is_file() {
                let text = std::fs::read_to_string(&path)
                    .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
                settings = Settings::parse(&text)
                    .map_err(|e| format!("settings file {}: {e}", path.display()))?;
                // The working directory's file may come with a repository: it cannot vouch
                // for that repository's servers.
                if !(i == 0 && explicit)
                    && path == cwd.join(".code-executor.json")
                    && !settings.trusted_projects.is_empty()
                {
                    return Err(format!(
                        "settings file {}: \"{TRUST_SETTING}\" is read only from the user settings file ({}) or ${SETTINGS_PATH_ENV}, never from a project's .code-executor.json; move it there",
                        path.display(),
                        config_dir.map_or(
                            "~/.config/code-executor-mcp/config.json".to_string(),
                            |d| d
                                .join("code-executor-mcp/config.json")
                                .display()
                                .to_string()
                        )
                    ));
                }
                settings.source = Some(path);
                break;
            }
        }
        settings.apply_env(&|k| std::env::var(k).ok())?;
        Ok(settings)
    }

    /// Parses a settings file's text.
    pub fn parse(text: &str) -> Result<Settings, String> {
        let raw: RawSettings = serde_json::from_str(text).map_err(|e| e.to_string())?;
        let d = Settings::default();
        let pool_size = raw.pool_size.unwrap_or(d.pool_size);
        if pool_size > 64 {
            return Err(format!("poolSize {pool_size} is above the maximum of 64"));
        }
        Ok(Settings {
            pool_size,
            connected_servers: raw.connected_servers.unwrap_or_default(),
            discover: raw.discover.unwrap_or(d.discover),
            upstream_call_timeout: raw
                .upstream_call_timeout_ms
                .map_or(d.upstream_call_timeout, Duration::from_millis),
            connect_timeout: raw
                .connect_timeout_ms
                .map_or(d.connect_timeout, Duration::from_millis),
            max_result_bytes: raw.max_result_bytes.unwrap_or(d.max_result_bytes),
            policy: raw.policy.unwrap_or_default(),
            limits: raw.limits.unwrap_or_default(),
            execution_limits: raw.execution_limits.unwrap_or_default().validate()?,
            audit: raw.audit.unwrap_or_default(),
            trusted_projects: validate_trusted(raw.trusted_projects.unwrap_or_default())?,
            source: None,
        })
    }

    fn apply_env(&mut self, get: &dyn Fn(&str) -> Option<String>) -> Result<(), String> {
        if let Some(v) = get(POOL_SIZE_ENV) {
            self.pool_size = v
                .trim()
                .parse()
                .map_err(|_| format!("{POOL_SIZE_ENV}={v:?} is not a number"))?;
        }
        if let Some(v) = get(CONNECTED_SERVERS_ENV) {
            self.connected_servers = v
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect();
        }
        if let Some(v) = get(DISCOVER_ENV) {
            self.discover = match v.trim() {
                "1" | "true" | "yes" => true,
                "0" | "false" | "no" => false,
                _ => {
                    return Err(format!(
                        "{DISCOVER_ENV}={v:?} must be 1/0, true/false or yes/no"
                    ));
                }
            };
        }
        Ok(())
    }
}

fn validate_trusted(list: Vec<PathBuf>) -> Result<Vec<PathBuf>, String> {
    match list.iter().find(|p| !p.is_absolute()) {
        Some(p) => Err(format!(
            "{TRUST_SETTING}: \"{}\" is not an absolute path",
            p.display()
        )),
        None => Ok(list),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_validates() {
        let s =
            Settings::parse(r#"{"poolSize": 4, "connectedServers": ["git"], "discover": false}"#)
                .unwrap();
        assert_eq!(
            (s.pool_size, s.connected_servers.as_slice(), s.discover),
            (4, &["git".to_string()][..], false)
        );
        let err = Settings::parse(r#"{"poolsize": 4}"#).unwrap_err();
        assert!(err.contains("unknown field `poolsize`"), "{err}");
        assert!(Settings::parse(r#"{"poolSize": 1000}"#).is_err());
    }

    #[test]
    fn environment_overrides_the_file() {
        let mut s = Settings::parse(r#"{"poolSize": 4}"#).unwrap();
        s.apply_env(&|k| match k {
            POOL_SIZE_ENV => Some("1".into()),
            CONNECTED_SERVERS_ENV => Some("a, b,,".into()),
            DISCOVER_ENV => Some("0".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(s.pool_size, 1);
        assert_eq!(s.connected_servers, ["a", "b"]);
        assert!(!s.discover);
        assert!(
            s.apply_env(&|k| (k == DISCOVER_ENV).then(|| "maybe".into()))
                .is_err()
        );
    }
}

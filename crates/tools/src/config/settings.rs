//! Our own settings: pool size, which servers connect eagerly, discovery, upstream limits,
//! the tool policy, admission limits and the audit log.
//!
//! The user's file is `$CODE_EXECUTOR_CONFIG_PATH`, else
//! `$XDG_CONFIG_HOME/code-executor-mcp/config.json`. The working directory's
//! `.code-executor.json` may have come with a cloned repository, so it is applied only when
//! the user's `trustedProjects` covers the working directory: then it is merged over the
//! user's file (objects key by key, any other value replaced), else it is not even opened
//! and [`ProjectSettings::Ignored`] says how to allow it. Environment variables override the
//! files, command-line flags override both. Each file is parsed raw and validated into
//! [`Settings`]; an unknown key is an error that names the file and the key, since a typo
//! would silently do nothing.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use super::error::SettingsError;
use super::read::{MAX_CONFIG_BYTES, ReadError, read_text};
use super::trust::TRUST_SETTING;

use policy::admission::AdmissionSettings;
use policy::audit::AuditSettings;
use policy::long_runs::LongRunLimits;
use policy::session_limits::SessionLimits;
use policy::{ExecutionLimits, ToolPolicy, UPSTREAM_CALL_TIMEOUT, UPSTREAM_CONNECT_TIMEOUT};

/// Names the settings file explicitly.
pub const SETTINGS_PATH_ENV: &str = "CODE_EXECUTOR_CONFIG_PATH";
/// Comma-separated servers to connect at start, in the background.
pub const CONNECTED_SERVERS_ENV: &str = "CONNECTED_SERVERS";
pub const POOL_SIZE_ENV: &str = "CODE_EXECUTOR_POOL_SIZE";
pub const DISCOVER_ENV: &str = "CODE_EXECUTOR_DISCOVER";
/// The working directory's settings file.
pub const PROJECT_SETTINGS_FILE: &str = ".code-executor.json";

/// Largest upstream result we keep, in bytes: a result beyond it is cut off and reported
/// rather than handed whole to the sandbox (16 MiB matches the worker frame limit).
pub const DEFAULT_MAX_RESULT_BYTES: usize = 16 * 1024 * 1024;

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawSettings {
    pool_size: Option<usize>,
    pool_max: Option<usize>,
    pool_memory_mb: Option<u64>,
    pool_shrink_after_ms: Option<u64>,
    connected_servers: Option<Vec<String>>,
    direct_tools: Option<Vec<String>>,
    discover: Option<bool>,
    upstream_call_timeout_ms: Option<u64>,
    connect_timeout_ms: Option<u64>,
    max_result_bytes: Option<usize>,
    policy: Option<ToolPolicy>,
    limits: Option<AdmissionSettings>,
    execution_limits: Option<ExecutionLimits>,
    audit: Option<AuditSettings>,
    sessions: Option<SessionLimits>,
    long_runs: Option<LongRunLimits>,
    approvals: Option<policy::approval::ApprovalSettings>,
    llm: Option<policy::llm::LlmSettings>,
    forward_requests: Option<policy::forward::ForwardSettings>,
    trusted_projects: Option<Vec<PathBuf>>,
    permissions: Option<policy::access::RawCeiling>,
    pii: Option<policy::pii::PiiSettings>,
    skills: Option<crate::skills::store::SkillSettings>,
    check: Option<CheckSettings>,
    hooks: Option<policy::hooks::HookSettings>,
    tool_changes: Option<policy::approval::ChangedTools>,
    store: Option<StoreSettings>,
    #[serde(rename = "$schema")]
    _schema: Option<String>,
}

/// Validated settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// Pre-started workers per language.
    pub pool_size: usize,
    /// Whether `poolSize` was set (file or environment): a set size pins the pool unless
    /// `poolMax` is set too.
    pub pool_size_set: bool,
    /// Most workers a pool grows to under demand (`poolMax`; default: 8, or `poolSize` if
    /// larger; 0 when `poolSize` is 0).
    pub pool_max: Option<usize>,
    /// Memory all pools' ready workers may hold together (`poolMemoryMb`, default 256).
    pub pool_memory_bytes: u64,
    /// Idle time after which a grown pool stops one surplus worker (`poolShrinkAfterMs`).
    pub pool_shrink_after: Duration,
    /// Servers connected at start, in the background (never delaying `initialize`).
    pub connected_servers: Vec<String>,
    /// Upstream tools also listed as our own MCP tools (`directTools`: `allowedTools`
    /// patterns), called through the same path as calls from code.
    pub direct_tools: Vec<String>,
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
    /// Sessions: how many, how long idle, what each may keep.
    pub sessions: SessionLimits,
    /// Tasks, early return (`yieldAfterMs` + `wait`) and progress.
    pub long_runs: LongRunLimits,
    /// Calls a person approves first (`approvals`).
    pub approvals: policy::approval::ApprovalSettings,
    /// Model calls from code (`llm`).
    pub llm: policy::llm::LlmSettings,
    /// Upstreams whose requests are routed to the client (`forwardRequests`).
    pub forward_requests: policy::forward::ForwardSettings,
    /// Projects (and the directories under them) whose project files (`.mcp.json`,
    /// `.gemini/settings.json`, `.codex/config.toml`, `.vscode/mcp.json`, `.cursor/mcp.json`)
    /// are trusted although their clients have not approved them.
    pub trusted_projects: Vec<PathBuf>,
    /// What file and network access code may be granted (`permissions`); nothing by default.
    pub permissions: policy::access::Ceiling,
    /// Personal data tokenised at the bridge (`pii`); off by default.
    pub pii: policy::pii::PiiSettings,
    /// Where skills are kept and served from (`skills`).
    pub skills: crate::skills::store::SkillSettings,
    /// Type-checking code before it runs (`check`); off unless a call asks.
    pub check: CheckSettings,
    /// Commands that judge tool calls and runs (`hooks`, Claude Code's format).
    pub hooks: policy::hooks::HookSettings,
    /// What a call of a tool whose definition changed since it was accepted gets
    /// (`toolChanges`: `refuse`, the default, or `ask`).
    pub tool_changes: policy::approval::ChangedTools,
    /// Where what outlives the process is kept (`store`; docs/store.md).
    pub store: StoreSettings,
    /// The user's settings file, if there is one.
    pub source: Option<PathBuf>,
    /// What became of the working directory's `.code-executor.json`, if there is one.
    pub project: Option<ProjectSettings>,
}

/// The working directory's `.code-executor.json`: applied, or ignored and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProjectSettings {
    /// Merged over the user's file: `trusted_by` (an entry of `trustedProjects`) covers it.
    Applied { path: PathBuf, trusted_by: PathBuf },
    /// Not read at all; `reason` says why and how to allow it.
    Ignored { path: PathBuf, reason: String },
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            pool_size: crate::defaults::DEFAULT_POOL_SIZE,
            pool_size_set: false,
            pool_max: None,
            pool_memory_bytes: crate::defaults::DEFAULT_POOL_MEMORY_BYTES,
            pool_shrink_after: crate::defaults::DEFAULT_POOL_SHRINK_AFTER,
            connected_servers: Vec::new(),
            direct_tools: Vec::new(),
            discover: true,
            upstream_call_timeout: UPSTREAM_CALL_TIMEOUT,
            connect_timeout: UPSTREAM_CONNECT_TIMEOUT,
            max_result_bytes: DEFAULT_MAX_RESULT_BYTES,
            policy: ToolPolicy::default(),
            limits: AdmissionSettings::default(),
            execution_limits: ExecutionLimits::default(),
            audit: AuditSettings::default(),
            sessions: SessionLimits::default(),
            long_runs: LongRunLimits::default(),
            approvals: Default::default(),
            llm: Default::default(),
            forward_requests: Default::default(),
            trusted_projects: Vec::new(),
            permissions: policy::access::Ceiling::default(),
            pii: Default::default(),
            skills: Default::default(),
            check: Default::default(),
            hooks: Default::default(),
            tool_changes: Default::default(),
            store: Default::default(),
            source: None,
            project: None,
        }
    }
}

impl Settings {
    /// Loads settings from the usual places and the environment.
    pub fn load(cwd: &Path, config_dir: Option<&Path>) -> Result<Settings, SettingsError> {
        let explicit = std::env::var_os(SETTINGS_PATH_ENV).map(PathBuf::from);
        let mut settings = Settings::load_files(explicit.as_deref(), cwd, config_dir)?;
        settings.apply_env(&|k| std::env::var(k).ok())?;
        Ok(settings)
    }

    /// The user's file (`explicit`, else the one under `config_dir`), with the working
    /// directory's file merged over it when the user trusts the working directory.
    pub fn load_files(
        explicit: Option<&Path>,
        cwd: &Path,
        config_dir: Option<&Path>,
    ) -> Result<Settings, SettingsError> {
        let user_file = explicit
            .map(Path::to_path_buf)
            .or_else(|| config_dir.map(|d| d.join("code-executor-mcp/config.json")));
        let mut user = (Settings::default(), Value::Object(serde_json::Map::new()));
        let mut source = None;
        if let Some(path) = &user_file {
            match read_text(path, MAX_CONFIG_BYTES) {
                Ok(text) => {
                    user = Settings::parse_file(&text).map_err(|e| SettingsError::In {
                        path: path.clone(),
                        error: Box::new(e),
                    })?;
                    source = Some(path.clone());
                }
                Err(ReadError::NotFound) if explicit.is_none() => {}
                Err(ReadError::NotFound) => {
                    return Err(SettingsError::NotAFile {
                        var: SETTINGS_PATH_ENV,
                        path: path.clone(),
                    });
                }
                Err(error) => {
                    return Err(SettingsError::Read {
                        path: path.clone(),
                        error,
                    });
                }
            }
        }
        let (mut settings, user_value) = user;
        settings.source = source;
        let project_file = cwd.join(PROJECT_SETTINGS_FILE);
        let is_user_file = user_file.as_ref().is_some_and(|u| {
            u == &project_file
                || matches!(
                    (std::fs::canonicalize(u), std::fs::canonicalize(&project_file)),
                    (Ok(a), Ok(b)) if a == b
                )
        });
        if is_user_file || std::fs::symlink_metadata(&project_file).is_err() {
            return Ok(settings);
        }
        let user_display = user_file.as_ref().map_or_else(
            || "~/.config/code-executor-mcp/config.json".to_string(),
            |p| p.display().to_string(),
        );
        let Some(trusted_by) = super::trust::trusted_by(&settings.trusted_projects, cwd) else {
            let dir = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
            let reason = format!(
                "not applied: this project is not trusted, and a project's {PROJECT_SETTINGS_FILE} may come with a cloned repository; to apply it, add \"{}\" to \"{TRUST_SETTING}\" in the user settings file ({user_display})",
                dir.display()
            );
            tracing::warn!("{}: {reason}", project_file.display());
            settings.project = Some(ProjectSettings::Ignored {
                path: project_file,
                reason,
            });
            return Ok(settings);
        };
        let in_project = |e: SettingsError| SettingsError::In {
            path: project_file.clone(),
            error: Box::new(e),
        };
        let text =
            read_text(&project_file, MAX_CONFIG_BYTES).map_err(|error| SettingsError::Read {
                path: project_file.clone(),
                error,
            })?;
        let (project, project_value) = Settings::parse_file(&text).map_err(in_project)?;
        if !project.trusted_projects.is_empty() {
            return Err(in_project(SettingsError::TrustInProject {
                setting: TRUST_SETTING,
                user: user_display,
                var: SETTINGS_PATH_ENV,
                file: PROJECT_SETTINGS_FILE,
            }));
        }
        let mut merged = user_value;
        merge_over(&mut merged, project_value);
        let merged_error = |e: SettingsError| SettingsError::Merged {
            user: user_display.clone(),
            project: project_file.clone(),
            error: Box::new(e),
        };
        let raw: RawSettings =
            serde_json::from_value(merged).map_err(|e| merged_error(e.into()))?;
        let mut out = Settings::validate(raw).map_err(merged_error)?;
        out.source = settings.source;
        out.project = Some(ProjectSettings::Applied {
            path: project_file,
            trusted_by,
        });
        Ok(out)
    }

    /// Parses a settings file's text.
    pub fn parse(text: &str) -> Result<Settings, SettingsError> {
        Settings::parse_file(text).map(|(s, _)| s)
    }

    /// Parses and validates a file's text, also keeping it as JSON for merging.
    fn parse_file(text: &str) -> Result<(Settings, Value), SettingsError> {
        let raw: RawSettings = serde_json::from_str(text)?;
        let value: Value = serde_json::from_str(text)?;
        Ok((Settings::validate(raw)?, value))
    }

    fn validate(raw: RawSettings) -> Result<Settings, SettingsError> {
        let d = Settings::default();
        let pool_size = raw.pool_size.unwrap_or(d.pool_size);
        if pool_size > 64 {
            return Err(SettingsError::PoolSize(pool_size));
        }
        if let Some(max) = raw.pool_max
            && max > crate::defaults::MAX_POOL_SIZE
        {
            return Err(SettingsError::PoolMax(max));
        }
        let pool_memory_mb = raw
            .pool_memory_mb
            .unwrap_or(d.pool_memory_bytes / (1024 * 1024));
        if !(16..=1_048_576).contains(&pool_memory_mb) {
            return Err(SettingsError::PoolMemory(pool_memory_mb));
        }
        let pool_shrink_after = raw
            .pool_shrink_after_ms
            .map_or(d.pool_shrink_after, Duration::from_millis);
        if pool_shrink_after < Duration::from_millis(100)
            || pool_shrink_after > Duration::from_secs(3600)
        {
            return Err(SettingsError::PoolShrinkAfter);
        }
        Ok(Settings {
            pool_size,
            pool_size_set: raw.pool_size.is_some(),
            pool_max: raw.pool_max,
            pool_memory_bytes: pool_memory_mb * 1024 * 1024,
            pool_shrink_after,
            connected_servers: raw.connected_servers.unwrap_or_default(),
            direct_tools: validate_direct(raw.direct_tools.unwrap_or_default())?,
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
            sessions: raw.sessions.unwrap_or_default().validate()?,
            long_runs: raw.long_runs.unwrap_or_default().validate()?,
            approvals: raw.approvals.unwrap_or_default().validate()?,
            hooks: raw.hooks.unwrap_or_default().validate()?,
            tool_changes: raw.tool_changes.unwrap_or_default(),
            store: {
                let store = raw.store.unwrap_or_default();
                if !(1024..=1 << 40).contains(&store.max_bytes_per_client) {
                    return Err(SettingsError::StoreBytes(store.max_bytes_per_client));
                }
                store
            },
            llm: raw.llm.unwrap_or_default().validate()?,
            forward_requests: raw.forward_requests.unwrap_or_default().validate()?,
            trusted_projects: validate_trusted(raw.trusted_projects.unwrap_or_default())?,
            permissions: raw.permissions.unwrap_or_default().validate()?,
            pii: raw.pii.unwrap_or_default().validate()?,
            skills: raw.skills.unwrap_or_default(),
            check: {
                let check = raw.check.unwrap_or_default();
                if let Some(mb) = check.memory_mb
                    && !(64..=1_048_576).contains(&mb)
                {
                    return Err(SettingsError::CheckMemory(mb));
                }
                check
            },
            source: None,
            project: None,
        })
    }

    fn apply_env(&mut self, get: &dyn Fn(&str) -> Option<String>) -> Result<(), SettingsError> {
        if let Some(v) = get(POOL_SIZE_ENV) {
            self.pool_size_set = true;
            self.pool_size = v.trim().parse().map_err(|_| SettingsError::EnvNumber {
                var: POOL_SIZE_ENV,
                value: v.clone(),
            })?;
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
                    return Err(SettingsError::EnvSwitch {
                        var: DISCOVER_ENV,
                        value: v,
                    });
                }
            };
        }
        Ok(())
    }
}

/// A trusted project's file over the user's: objects merge key by key (recursively), any
/// other value the project sets (a list, a number, a string) replaces the user's.
fn merge_over(base: &mut Value, over: Value) {
    match (base, over) {
        (Value::Object(base), Value::Object(over)) => {
            for (k, v) in over {
                match base.get_mut(&k) {
                    Some(slot) => merge_over(slot, v),
                    None => {
                        base.insert(k, v);
                    }
                }
            }
        }
        (slot, v) => *slot = v,
    }
}

/// `directTools`: each entry an `allowedTools` pattern naming at least a server (a pattern
/// that matches nothing yet is fine: servers start lazily, and `doctor` names it).
fn validate_direct(list: Vec<String>) -> Result<Vec<String>, SettingsError> {
    for p in &list {
        if !p.is_empty() && p.chars().all(|c| c == '*') {
            return Err(SettingsError::DirectTool(format!(
                "\"{p}\" would list every upstream tool as one of ours, which is what this \
                 server exists to avoid; name the few you call most: mcp__<server>__<tool> \
                 (mcp__github__list_*, mcp__fx__echo)"
            )));
        }
        if let Some(problem) = policy::pattern::problem(p) {
            return Err(SettingsError::DirectTool(problem));
        }
    }
    Ok(list)
}

fn validate_trusted(list: Vec<PathBuf>) -> Result<Vec<PathBuf>, SettingsError> {
    match list.iter().find(|p| !p.is_absolute()) {
        Some(p) => Err(SettingsError::NotAbsolute {
            setting: TRUST_SETTING,
            path: p.clone(),
        }),
        None => Ok(list),
    }
}

/// `check` in the settings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CheckSettings {
    /// Check every execution's code before it runs; a call's own `check` overrides it.
    #[serde(default)]
    pub enabled: bool,
    /// The TypeScript checker: a path, or a name on PATH (`tsgo`, `tsc`).
    pub typescript: Option<String>,
    /// The Python checker: a path, or a name on PATH (`ty`, `pyright`, `mypy`).
    pub python: Option<String>,
    /// The longest a check may take (default 20 s; never past the execution's deadline).
    pub timeout_ms: Option<u64>,
    /// The address space of a checker process, in MiB (default 1024; a Node or Go checker gets
    /// its heap this large and 1 GiB more for the runtime's reservations).
    pub memory_mb: Option<u64>,
}

/// `store` in the settings: where what outlives the process is kept (`url`: `none`,
/// `sqlite:PATH` or `postgres://...`; `--store` overrides it) and how much of it one client
/// may have (docs/store.md).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct StoreSettings {
    /// `none`/`memory`, `sqlite:PATH`, or a PostgreSQL URL (default: SQLite under the data
    /// directory).
    pub url: Option<String>,
    /// Bytes one client's records may take in the store.
    pub max_bytes_per_client: u64,
}

/// Bytes one client's records may take in the store by default.
pub const DEFAULT_STORE_BYTES_PER_CLIENT: u64 = 64 << 20;

impl Default for StoreSettings {
    fn default() -> Self {
        StoreSettings {
            url: None,
            max_bytes_per_client: DEFAULT_STORE_BYTES_PER_CLIENT,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_store_is_read_and_checked() {
        let s = Settings::parse(r#"{"store": {"url": "postgres://db/x"}}"#).unwrap();
        assert_eq!(s.store.url.as_deref(), Some("postgres://db/x"));
        let s =
            Settings::parse(r#"{"store": {"url": "none", "maxBytesPerClient": 4096}}"#).unwrap();
        assert_eq!(
            (s.store.url.as_deref(), s.store.max_bytes_per_client),
            (Some("none"), 4096)
        );
        let err = Settings::parse(r#"{"store": {"maxBytesPerClient": 1}}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("store.maxBytesPerClient 1"), "{err}");
        assert_eq!(Settings::default().store.url, None);
    }

    #[test]
    fn parses_and_validates() {
        let s =
            Settings::parse(r#"{"poolSize": 4, "connectedServers": ["git"], "discover": false}"#)
                .unwrap();
        assert_eq!(
            (s.pool_size, s.connected_servers.as_slice(), s.discover),
            (4, &["git".to_string()][..], false)
        );
        let err = Settings::parse(r#"{"poolsize": 4}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown field `poolsize`"), "{err}");
        let s =
            Settings::parse(r#"{"directTools": ["mcp__fx__echo", "mcp__gh__list_*"]}"#).unwrap();
        assert_eq!(s.direct_tools, ["mcp__fx__echo", "mcp__gh__list_*"]);
        for (bad, says) in [
            ("fx.echo", "write mcp__<server>__<tool>"),
            ("mcp__fx", "names no tool: write mcp__fx__<tool>"),
            ("*", "would list every upstream tool"),
        ] {
            let err = Settings::parse(&format!(r#"{{"directTools": ["{bad}"]}}"#))
                .unwrap_err()
                .to_string();
            assert!(
                err.starts_with("directTools: ") && err.contains(says),
                "{bad}: {err}"
            );
        }
        let err = Settings::parse(r#"{"poolSize": 1000}"#)
            .unwrap_err()
            .to_string();
        assert_eq!(err, "poolSize 1000 is above the maximum of 64");
    }

    #[test]
    fn a_checkers_memory_bound_is_read_and_checked() {
        let s = Settings::parse(r#"{"check": {"memoryMb": 512}}"#).unwrap();
        assert_eq!(s.check.memory_mb, Some(512));
        let err = Settings::parse(r#"{"check": {"memoryMb": 8}}"#)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("check.memoryMb 8") && err.contains("64"),
            "{err}"
        );
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
        let err = s
            .apply_env(&|k| (k == DISCOVER_ENV).then(|| "maybe".into()))
            .unwrap_err()
            .to_string();
        assert!(err.contains("must be 1/0, true/false or yes/no"), "{err}");
    }
}

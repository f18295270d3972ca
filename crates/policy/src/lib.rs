//! What an execution may do: limits, which upstream tools it may call ([`rules`]), which tools
//! a server's own client config hides ([`filter`]), whether its
//! arguments fit the tool's schema ([`validate`]), whether the server takes it now
//! ([`admission`]), and the audit trail of every decision ([`audit`]).
//!
//! Everything here is decided in the host on values received from the worker; nothing relies
//! on code inside the sandbox behaving. Every limit is a named constant with its reason.

pub mod access;
pub mod admission;
pub mod approval;
pub mod audit;
pub mod decode;
pub mod error;
mod event;
pub mod filter;
pub mod forward;
pub mod hooks;
pub mod invisible;
pub mod llm;
pub mod long_runs;
pub mod metrics;
pub mod pattern;
pub mod pii;
pub mod principal;
pub mod redact;
pub mod replica;
pub mod rules;
pub mod session_limits;
pub mod validate;

pub use pattern::qualified_name;
pub use rules::{Decision, ToolAllowlist, ToolPolicy};

use std::sync::Arc;
use std::time::Duration;

use error::{LimitsError, SettingError};

/// Everything the server enforces on every execution, built once from the settings.
pub struct Policy {
    pub rules: Arc<ToolPolicy>,
    pub execution: ExecutionLimits,
    pub validators: validate::Validators,
    pub audit: audit::AuditLog,
    pub admission: admission::Admission,
    /// Root of the executions' scratch directories (overflowing output); `None`: none kept.
    pub scratch: Option<std::path::PathBuf>,
    /// The configured server names, which `allowedTools` patterns resolve against.
    pub servers: Arc<[String]>,
    /// Executions that outlive their request (tasks, `yieldAfterMs`), and progress.
    pub long_runs: long_runs::LongRunLimits,
    /// Which calls a person approves first, and what happens when nobody can be asked.
    pub approvals: approval::ApprovalSettings,
    /// Model calls from code.
    pub llm: llm::LlmSettings,
    /// The configured credentials, kept out of prompts, questions and everything else that
    /// leaves ([`redact`]).
    pub redactor: Arc<redact::Redactor>,
    /// What file and network access an execution may be granted (`permissions`).
    pub access: access::Ceiling,
    /// Personal data tokenised at the bridge (`pii`).
    pub pii: Arc<pii::Pii>,
    /// Commands that judge tool calls and runs (`hooks`, Claude Code's settings files).
    pub hooks: Arc<hooks::Hooks>,
}

impl Policy {
    /// From the settings' parts (the composition root, `lib.rs`, takes them from
    /// `config::Settings`); an audit log that cannot be opened is reported, here and by
    /// [`audit::AuditLog::problem`] to `/readyz`, `health` and `doctor`.
    pub fn new(
        rules: ToolPolicy,
        execution: ExecutionLimits,
        audit: &audit::AuditSettings,
        admission: admission::AdmissionSettings,
        scratch: Option<std::path::PathBuf>,
    ) -> Policy {
        // Serving on without the log is a choice made visible, not a silent one: `/readyz`
        // fails, `health` and `doctor` report it (docs/container.md); `audit.enabled:
        // false` turns it off on purpose.
        let audit = audit::AuditLog::open(audit).unwrap_or_else(|e| {
            tracing::error!(
                "audit log NOT written: {e}; give it a writable place (audit.path, XDG_STATE_HOME, a volume) or set audit.enabled to false"
            );
            audit::AuditLog::unavailable(e.to_string())
        });
        Policy {
            rules: Arc::new(rules),
            execution,
            validators: validate::Validators::default(),
            audit,
            admission: admission::Admission::new(admission),
            scratch,
            servers: Arc::from([]),
            long_runs: long_runs::LongRunLimits::default(),
            approvals: approval::ApprovalSettings::default(),
            llm: llm::LlmSettings::default(),
            redactor: Arc::default(),
            access: access::Ceiling::default(),
            pii: Arc::default(),
            hooks: Arc::default(),
        }
    }

    /// The same policy, running these hooks.
    pub fn with_hooks(mut self, hooks: hooks::Hooks) -> Policy {
        self.hooks = Arc::new(hooks);
        self
    }

    /// The same policy with these long-run limits.
    pub fn with_long_runs(mut self, limits: long_runs::LongRunLimits) -> Policy {
        self.long_runs = limits;
        self
    }

    /// The same policy, with approvals and model calls configured.
    pub fn with_pauses(
        mut self,
        approvals: approval::ApprovalSettings,
        llm: llm::LlmSettings,
        redactor: Arc<redact::Redactor>,
    ) -> Policy {
        self.approvals = approvals;
        self.llm = llm;
        self.audit.set_redactor(redactor.clone());
        self.redactor = redactor;
        self
    }

    /// `text` with every configured secret value replaced by `[redacted]`.
    pub fn redact(&self, text: &str) -> String {
        self.redactor.str(text).into_owned()
    }

    /// The same policy, with the configured ceiling of file and network access.
    pub fn with_access(mut self, ceiling: access::Ceiling) -> Policy {
        self.access = ceiling;
        self
    }

    /// The same policy, tokenising personal data as `settings` say.
    pub fn with_pii(mut self, settings: pii::PiiSettings) -> Policy {
        self.pii = Arc::new(pii::Pii::new(settings));
        self
    }

    /// The same policy, knowing the configured server names (see [`pattern`]).
    pub fn with_servers<'a>(mut self, names: impl IntoIterator<Item = &'a String>) -> Policy {
        self.servers = names.into_iter().cloned().collect();
        self
    }

    /// No rules, no audit file, default admission: for tests and one-off commands.
    pub fn permissive() -> Policy {
        Policy {
            rules: Arc::default(),
            execution: ExecutionLimits::default(),
            validators: validate::Validators::default(),
            audit: audit::AuditLog::disabled(),
            admission: admission::Admission::new(admission::AdmissionSettings::default()),
            scratch: None,
            servers: Arc::from([]),
            long_runs: long_runs::LongRunLimits::default(),
            approvals: approval::ApprovalSettings::default(),
            llm: llm::LlmSettings::default(),
            redactor: Arc::default(),
            access: access::Ceiling::default(),
            pii: Arc::default(),
            hooks: Arc::default(),
        }
    }

    /// The allowlist of one execution: the configured rules plus its own patterns.
    pub fn allowlist(&self, patterns: Option<Vec<String>>) -> ToolAllowlist {
        ToolAllowlist::with_rules(patterns, self.rules.clone()).among(self.servers.clone())
    }
}

/// Default wall-clock deadline of an execution: long enough for a chain of slow upstream
/// calls, short enough that a stuck script does not hold a worker for minutes.
pub const DEFAULT_TIMEOUT_MS: u64 = 30_000;
/// Largest deadline a caller may ask for (five minutes), so no execution can pin a worker.
pub const MAX_TIMEOUT_MS: u64 = 300_000;
/// Largest accepted source, in bytes: far beyond hand-written glue code, small enough that
/// parsing and shipping it stays in the microseconds.
pub const MAX_CODE_BYTES: usize = 512 * 1024;
/// Engine heap limit of the JS worker: plenty for filtering large tool results.
pub const JS_MEMORY_BYTES: u64 = 256 * 1024 * 1024;
/// Engine stack limit: deep recursion ends with a RangeError instead of a crash.
pub const JS_STACK_BYTES: u64 = 1024 * 1024;
/// Captured console output per execution; beyond it output is dropped and a marker says so.
pub const MAX_LOG_BYTES: u64 = 1024 * 1024;
/// Output kept in the scratch file when the answer's cap cuts it (see `runtime::output`).
pub const MAX_OUTPUT_FILE_BYTES: u64 = 8 * 1024 * 1024;
/// Largest configurable output file: it crosses the worker pipe and lands on disk.
const MAX_OUTPUT_FILE_LIMIT: u64 = 256 * 1024 * 1024;
/// Tool calls of one execution in flight at once: `Promise.all` over a thousand items must not
/// open a thousand upstream requests; the rest wait their turn.
pub const MAX_CONCURRENT_TOOL_CALLS: usize = 32;
/// Tool calls one execution may make, so a runaway loop cannot hammer an upstream.
pub const MAX_TOOL_CALLS: u32 = 1_000;
/// Discovery requests (`searchTools`, `listServers`, `getToolSchema`, `discoverMCPTools`, a
/// tool's `.signature`) one execution may make: each answer is built and held by the host, so
/// a loop of them that never reads its answers must end, not grow the server's memory.
pub const MAX_DISCOVERY_CALLS: u32 = 2_000;
/// Largest configurable number of discovery requests per execution.
const MAX_DISCOVERY_CALLS_LIMIT: u32 = 100_000;
/// Largest configurable number of skills one request runs at once (`poolMax`'s maximum).
const MAX_CONCURRENT_SKILLS_LIMIT: usize = 64;
/// Deadline of one upstream call when the execution's own deadline is longer.
pub const UPSTREAM_CALL_TIMEOUT: Duration = Duration::from_secs(60);
/// Time an upstream server gets to start and answer `initialize` and `tools/list`.
pub const UPSTREAM_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// Per-execution limits, resolved from defaults and the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub timeout: Duration,
    pub memory_bytes: u64,
    pub stack_bytes: u64,
    pub max_log_bytes: u64,
    /// Output kept on disk when `max_log_bytes` cuts the answer's (0: none).
    pub max_output_file_bytes: u64,
    pub max_tool_calls: u32,
    pub max_concurrent_tool_calls: usize,
    pub max_discovery_calls: u32,
}

/// Per-execution limits in the settings (`executionLimits`), each bounded by the constant
/// above it: a configuration can tighten a limit, or loosen it up to what the sandbox holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct ExecutionLimits {
    pub default_timeout_ms: u64,
    pub max_timeout_ms: u64,
    /// Engine heap (JavaScript), or the address space a Python execution may add to what the
    /// interpreter already uses (a soft limit the shim sets below the sandbox's hard one, so
    /// the code gets a MemoryError instead of a killed worker), in MiB.
    pub memory_mb: u64,
    pub max_log_bytes: u64,
    /// Output kept in the execution's scratch directory when `maxLogBytes` cuts the answer's;
    /// 0 keeps none.
    pub max_output_file_bytes: u64,
    pub max_tool_calls: u32,
    pub max_concurrent_tool_calls: usize,
    pub max_discovery_calls: u32,
    pub max_code_bytes: usize,
    /// Skills one request's code runs at once (0: as many as `poolMax`); each level of
    /// skills calling skills may run one more, so one request holds at most this plus 4
    /// workers (`runtime::run::ledger::SkillSlots`).
    pub max_concurrent_skills: usize,
}

/// The sandbox's address-space limit is 1 GiB; an engine heap must stay below it.
const MAX_MEMORY_MB: u64 = 768;

impl Default for ExecutionLimits {
    fn default() -> Self {
        ExecutionLimits {
            default_timeout_ms: DEFAULT_TIMEOUT_MS,
            max_timeout_ms: MAX_TIMEOUT_MS,
            memory_mb: JS_MEMORY_BYTES / (1024 * 1024),
            max_log_bytes: MAX_LOG_BYTES,
            max_output_file_bytes: MAX_OUTPUT_FILE_BYTES,
            max_tool_calls: MAX_TOOL_CALLS,
            max_concurrent_tool_calls: MAX_CONCURRENT_TOOL_CALLS,
            max_discovery_calls: MAX_DISCOVERY_CALLS,
            max_code_bytes: MAX_CODE_BYTES,
            max_concurrent_skills: 0,
        }
    }
}

impl ExecutionLimits {
    /// Checks the bounds; the error names the setting. A default deadline above a lowered
    /// maximum is lowered to it.
    pub fn validate(mut self) -> Result<Self, SettingError> {
        let e = |what: &str| Err(SettingError::ExecutionLimits(what.to_string()));
        if self.max_timeout_ms == 0 || self.max_timeout_ms > MAX_TIMEOUT_MS {
            return e(&format!(
                "maxTimeoutMs must be between 1 and {MAX_TIMEOUT_MS}"
            ));
        }
        self.default_timeout_ms = self.default_timeout_ms.min(self.max_timeout_ms);
        if self.default_timeout_ms == 0 {
            return e("defaultTimeoutMs must be at least 1");
        }
        if self.memory_mb < 16 || self.memory_mb > MAX_MEMORY_MB {
            return e(&format!("memoryMb must be between 16 and {MAX_MEMORY_MB}"));
        }
        if self.max_tool_calls == 0 || self.max_concurrent_tool_calls == 0 {
            return e("maxToolCalls and maxConcurrentToolCalls must be at least 1");
        }
        if self.max_discovery_calls == 0 || self.max_discovery_calls > MAX_DISCOVERY_CALLS_LIMIT {
            return e(&format!(
                "maxDiscoveryCalls must be between 1 and {MAX_DISCOVERY_CALLS_LIMIT}"
            ));
        }
        if self.max_output_file_bytes > MAX_OUTPUT_FILE_LIMIT {
            return e(&format!(
                "maxOutputFileBytes must be at most {MAX_OUTPUT_FILE_LIMIT} (0 keeps no file)"
            ));
        }
        if self.max_concurrent_skills > MAX_CONCURRENT_SKILLS_LIMIT {
            return e(&format!(
                "maxConcurrentSkills must be between 1 and {MAX_CONCURRENT_SKILLS_LIMIT} (0: as many as poolMax)"
            ));
        }
        if self.max_code_bytes == 0 || self.max_code_bytes > 16 * 1024 * 1024 {
            return e("maxCodeBytes must be between 1 and 16 MiB (the frame limit)");
        }
        Ok(self)
    }
}

/// Limits a request sets for itself (`limits` of `execute_*`): each may tighten the
/// configured one, never loosen it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RequestLimits {
    pub max_tool_calls: Option<u32>,
    pub max_concurrent_tool_calls: Option<usize>,
    pub max_discovery_calls: Option<u32>,
    pub max_log_bytes: Option<u64>,
    pub memory_mb: Option<u64>,
}

impl Limits {
    /// These limits tightened by a request's own; a value outside `[minimum, configured]` is
    /// an error naming the field and its bounds.
    pub fn narrowed(mut self, req: &RequestLimits) -> Result<Limits, LimitsError> {
        fn within<T: PartialOrd + std::fmt::Display + Copy>(
            name: &'static str,
            asked: Option<T>,
            min: T,
            max: T,
        ) -> Result<Option<T>, LimitsError> {
            match asked {
                Some(v) if v < min || v > max => Err(LimitsError::Limit {
                    name,
                    min: min.to_string(),
                    max: max.to_string(),
                    got: v.to_string(),
                }),
                other => Ok(other),
            }
        }
        if let Some(v) = within("maxToolCalls", req.max_tool_calls, 1, self.max_tool_calls)? {
            self.max_tool_calls = v;
        }
        if let Some(v) = within(
            "maxConcurrentToolCalls",
            req.max_concurrent_tool_calls,
            1,
            self.max_concurrent_tool_calls,
        )? {
            self.max_concurrent_tool_calls = v;
        }
        if let Some(v) = within(
            "maxDiscoveryCalls",
            req.max_discovery_calls,
            1,
            self.max_discovery_calls,
        )? {
            self.max_discovery_calls = v;
        }
        if let Some(v) = within("maxLogBytes", req.max_log_bytes, 1, self.max_log_bytes)? {
            self.max_log_bytes = v;
        }
        let memory_mb = self.memory_bytes / (1024 * 1024);
        if let Some(v) = within("memoryMb", req.memory_mb, 16.min(memory_mb), memory_mb)? {
            self.memory_bytes = v * 1024 * 1024;
        }
        Ok(self)
    }

    /// Limits from the configured ones for a request that asked for `timeout_ms`.
    pub fn configured(
        cfg: &ExecutionLimits,
        timeout_ms: Option<u64>,
    ) -> Result<Limits, LimitsError> {
        Limits::within(
            cfg,
            timeout_ms,
            cfg.default_timeout_ms,
            cfg.max_timeout_ms,
            "",
        )
    }

    /// Limits of a long run (a task, or a run that may yield): its deadline defaults to
    /// `longRuns.defaultDurationMs` and may go up to `longRuns.maxDurationMs`.
    pub fn configured_long(
        cfg: &ExecutionLimits,
        long: &long_runs::LongRunLimits,
        timeout_ms: Option<u64>,
    ) -> Result<Limits, LimitsError> {
        Limits::within(
            cfg,
            timeout_ms,
            long.default_duration_ms,
            long.max_duration_ms,
            " for a task or a run with yieldAfterMs (longRuns.maxDurationMs)",
        )
    }

    fn within(
        cfg: &ExecutionLimits,
        timeout_ms: Option<u64>,
        default_ms: u64,
        max_ms: u64,
        which: &'static str,
    ) -> Result<Limits, LimitsError> {
        let ms = timeout_ms.unwrap_or(default_ms);
        if ms == 0 || ms > max_ms {
            return Err(LimitsError::Timeout { ms, max_ms, which });
        }
        Ok(Limits {
            timeout: Duration::from_millis(ms),
            memory_bytes: cfg.memory_mb * 1024 * 1024,
            stack_bytes: JS_STACK_BYTES,
            max_log_bytes: cfg.max_log_bytes,
            max_output_file_bytes: cfg.max_output_file_bytes,
            max_tool_calls: cfg.max_tool_calls,
            max_concurrent_tool_calls: cfg.max_concurrent_tool_calls,
            max_discovery_calls: cfg.max_discovery_calls,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::pattern::glob_match;
    use super::*;

    #[test]
    fn max_concurrent_skills_is_read_and_bounded() {
        let l: ExecutionLimits = serde_json::from_str(r#"{"maxConcurrentSkills": 3}"#).unwrap();
        assert_eq!(l.validate().unwrap().max_concurrent_skills, 3);
        assert_eq!(ExecutionLimits::default().max_concurrent_skills, 0);
        let e = ExecutionLimits {
            max_concurrent_skills: 65,
            ..ExecutionLimits::default()
        }
        .validate()
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("maxConcurrentSkills must be between 1 and 64"),
            "{e}"
        );
    }

    #[test]
    fn glob_table() {
        let cases = [
            ("mcp__github__*", "mcp__github__create_issue", true),
            ("mcp__github__*", "mcp__github2__create_issue", false),
            ("mcp__github__*", "mcp__GitHub__create_issue", false),
            ("mcp__*__read*", "mcp__fs__read_file", true),
            ("mcp__fs__read_file", "mcp__fs__read_file", true),
            ("mcp__fs__read_file", "mcp__fs__read_file ", false),
            ("mcp__fs__read_file", " mcp__fs__read_file", false),
            ("mcp__fs__read_file", "mcp__fs__read_filex", false),
            ("mcp__fs__rеad_file", "mcp__fs__read_file", false), // Cyrillic е
            ("*", "anything", true),
            ("", "", true),
            ("", "x", false),
            ("a*b*c", "abc", true),
            ("a*b*c", "acb", false),
            ("mcp__fs__[ab]", "mcp__fs__a", false),
            ("mcp__fs__?", "mcp__fs__a", false),
        ];
        for (pattern, text, want) in cases {
            assert_eq!(glob_match(pattern, text), want, "{pattern:?} vs {text:?}");
        }
    }

    #[test]
    fn timeout_bounds() {
        assert_eq!(
            Limits::configured(&ExecutionLimits::default(), None)
                .unwrap()
                .timeout,
            Duration::from_millis(DEFAULT_TIMEOUT_MS)
        );
        for ms in [0, MAX_TIMEOUT_MS + 1] {
            let err = Limits::configured(&ExecutionLimits::default(), Some(ms)).unwrap_err();
            assert_eq!(
                err.to_string(),
                format!("timeoutMs must be between 1 and {MAX_TIMEOUT_MS} (got {ms})")
            );
        }
        assert!(Limits::configured(&ExecutionLimits::default(), Some(MAX_TIMEOUT_MS)).is_ok());
    }
}

#[cfg(test)]
mod hooks_tests;

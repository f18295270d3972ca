//! The policy's errors: a setting it refuses ([`SettingError`], named by its section), a
//! destination rule it cannot read ([`NetRuleError`]), a model call over the execution's
//! budget ([`LlmBudgetError`]), and the audit file it cannot write ([`AuditError`]). A leaf: the
//! policy's modules all fail with these, and it depends on none of them.

use std::path::PathBuf;

use serde_json::Value;

/// A setting the policy refuses: the section it belongs to, and what it must be.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingError {
    #[error("executionLimits.{0}")]
    ExecutionLimits(String),
    #[error("longRuns.{0}")]
    LongRuns(String),
    #[error("sessions.{0}")]
    Sessions(String),
    #[error("permissions: {0}")]
    Permissions(String),
    #[error("permissions: net: {0}")]
    PermissionsNet(NetRuleError),
    #[error("forwardRequests.roots: \"{0}\" is not a file:// URI")]
    ForwardRoot(String),
    #[error("llm.provider.baseUrl \"{0}\" is not an http(s) URL")]
    LlmBaseUrl(String),
    #[error("llm.provider.model is empty")]
    LlmModelEmpty,
    #[error("llm.provider.apiKeyEnv \"{0}\" is not an environment variable name")]
    LlmKeyEnv(String),
    #[error("approvals.approve: {0}")]
    ApprovalPattern(String),
    #[error("approvals.timeoutMs {ms} is outside 1..={max}")]
    ApprovalTimeout { ms: u64, max: u64 },
    #[error("pii: {0}")]
    Pii(String),
    #[error("hooks: {0}")]
    Hooks(String),
}

/// A destination of `permissions.net` that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NetRuleError {
    #[error("\"{0}\": not an address range")]
    NotRange(String),
    #[error("\"{pattern}\": the prefix length must be 0..={max}")]
    PrefixLength { pattern: String, max: u8 },
    #[error("\"{0}\": not a host name")]
    NotHostName(String),
    #[error("unknown key \"{0}\" in a destination (host, ports, methods)")]
    UnknownKey(String),
    #[error("a destination object needs \"host\"")]
    NoHost,
    #[error("ports: {0} is not a port")]
    PortValue(Value),
    #[error("ports is a list of ports, not {0}")]
    PortsNotList(Value),
    #[error("methods: {0} is not a method")]
    MethodValue(Value),
    #[error("methods is a list of methods, not {0}")]
    MethodsNotList(Value),
    #[error("a destination is \"host[:port]\" or {{host, ports, methods}}, not {0}")]
    NotDestination(Value),
    #[error("\"{0}\": unclosed [")]
    UnclosedBracket(String),
    #[error("\"{0}\": name the ports, not *")]
    AnyPort(String),
    #[error("\"{rule}\": {port} is not a port")]
    NotPort { rule: String, port: String },
    #[error("\"{name}\" is not a method ({known})")]
    NotMethod { name: String, known: String },
}

/// A model call the execution's `llm` budget does not allow.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LlmBudgetError {
    #[error("this execution reached its limit of {0} model calls (llm.maxCalls)")]
    Calls(u32),
    #[error(
        "this call would send about {asked} tokens; the execution has {left} of its {max} input tokens left (llm.maxInputTokens)"
    )]
    InputTokens { asked: u64, left: u64, max: u64 },
    #[error("this execution used all of its {0} output tokens (llm.maxOutputTokens)")]
    OutputTokens(u64),
}

/// The audit file cannot be opened, written or rotated.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    #[error("no audit path: set audit.path or HOME")]
    NoPath,
    #[error("cannot create {}: {error}", dir.display())]
    CreateDir { dir: PathBuf, error: std::io::Error },
    #[error("cannot open audit log {}: {error}", path.display())]
    Open {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("cannot write {}: {error}", path.display())]
    Write {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{0}")]
    Rotate(std::io::Error),
}

/// The layers above that still carry a message (the runtime's and the server's) take these
/// as their text.
macro_rules! into_message {
    ($($t:ty),*) => {$(
        impl From<$t> for String {
            fn from(e: $t) -> String {
                e.to_string()
            }
        }
    )*};
}
into_message!(SettingError, LlmBudgetError);

/// A limit or deadline a request asked for outside what the server allows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LimitsError {
    /// One of the request's `limits`, outside `[min, max]` (`max` is the configured limit).
    #[error("limits.{name} must be between {min} and {max} (the configured limit); got {got}")]
    Limit {
        name: &'static str,
        min: String,
        max: String,
        got: String,
    },
    /// `timeoutMs` outside `1..=max_ms`; `which` names the setting that bounds it, if not the
    /// plain execution limit.
    #[error("timeoutMs must be between 1 and {max_ms}{which} (got {ms})")]
    Timeout {
        ms: u64,
        max_ms: u64,
        which: &'static str,
    },
}

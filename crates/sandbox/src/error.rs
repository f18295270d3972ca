//! The crate's errors: [`SandboxError`], what the host is told when a worker cannot be
//! confined, and [`SetupError`], the layer the helper could not apply (every layer's module
//! fails with it).

#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("sandbox layer `{layer}` is unavailable: {reason}; {remedy}")]
    Unavailable {
        layer: &'static str,
        reason: String,
        remedy: &'static str,
    },
    #[error("invalid sandbox request: {0}")]
    Invalid(String),
    #[error("cannot prepare the sandbox helper: {0}")]
    Io(#[from] std::io::Error),
}

/// A layer that could not be applied, and why.
#[derive(Debug)]
pub(crate) struct SetupError {
    pub layer: &'static str,
    pub reason: String,
}

impl SetupError {
    pub fn new(layer: &'static str, reason: String) -> Self {
        Self { layer, reason }
    }
}

/// A helper configuration (the bytes the host passes in the environment) that cannot be
/// read: a bug in the host, not the payload.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum DecodeError {
    #[error("no configuration in the environment ({0}0)")]
    Missing(&'static str),
    #[error("malformed configuration in the environment")]
    Malformed,
    #[error("configuration does not end with NUL")]
    NoNul,
    /// A key (as text) without a value.
    #[error("key {0:?} has no value")]
    NoValue(String),
    #[error("bad number for {0:?}")]
    BadNumber(String),
    #[error("unknown key {0:?}")]
    UnknownKey(String),
    #[error("plan symlink {} has no target", .0.display())]
    NoTarget(std::path::PathBuf),
    #[error("plan target without a symlink")]
    TargetWithoutLink,
    #[error("malformed plan bind")]
    MalformedBind,
    #[error("unknown access in a plan bind")]
    UnknownAccess,
    #[error("a shared plan may not bind at another path")]
    SharedBindAt,
    #[error("plan of {expected} steps holds {held}")]
    PlanLength { expected: u64, held: usize },
    #[error("plan steps without a plan")]
    StepsWithoutPlan,
}

/// The helper was started wrongly, or cannot take charge of itself: it exits with
/// `EXIT_BAD_INVOCATION` and says this on stderr.
#[derive(Debug, thiserror::Error)]
pub(crate) enum InvocationError {
    #[error("expected `{0}` as first argument")]
    FirstArgument(&'static str),
    #[error("expected {0}N as second argument")]
    HostPid(&'static str),
    #[error("unexpected argument {0:?}")]
    Unexpected(std::ffi::OsString),
    #[error("unexpected arguments after the mode")]
    TooMany,
    #[error("cannot lead a new session: {0}")]
    Session(nix::errno::Errno),
    #[error("cannot set the parent-death signal: {0}")]
    ParentDeath(nix::errno::Errno),
    #[error(
        "the parent is not the host (pid {0}): the host exited, or the helper was not started through sandbox::command"
    )]
    NotTheHost(i32),
    #[error("close_range: {0}")]
    CloseRange(std::io::Error),
    #[error(transparent)]
    Config(#[from] DecodeError),
    #[error("chdir {}: {error}", path.display())]
    Chdir {
        path: std::path::PathBuf,
        error: nix::errno::Errno,
    },
}

/// Why a granted data path is not id-mapped (it is then attached with its own ids).
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum IdMapError {
    /// The user namespace that maps the owner could not be made.
    #[error("{0}")]
    Namespace(std::sync::Arc<std::io::Error>),
    #[error("id-mapping {}: {error}", path.display())]
    Attr {
        path: std::path::PathBuf,
        error: std::sync::Arc<std::io::Error>,
    },
}

/// Why workers cannot be forked from a template here (today's path, a helper per worker, is
/// used then; `doctor` and `health` say why).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TemplateUnsupported {
    #[error(
        "Landlock ABI {0}: scoping signals and abstract Unix sockets to each worker needs ABI 6 (Linux 6.12)"
    )]
    Landlock(i64),
    #[error(
        "Linux {0}: the host reads a template's worker's exit status from its pidfd, which needs Linux 6.15"
    )]
    Kernel(String),
    #[error("not available on this operating system")]
    Platform,
}

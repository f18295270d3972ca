//! Why Python executions are unavailable (`PythonError`) and why one candidate interpreter
//! cannot be used (`ProbeError`), with the two facts their messages name: the variable that
//! names an interpreter and the oldest version the shim runs on. `python.rs` re-exports them.

use std::path::PathBuf;

/// Environment variable naming the interpreter (same as `--python`).
pub const PYTHON_ENV: &str = "CODE_EXECUTOR_PYTHON";

/// Why Python executions are unavailable: no candidate interpreter was usable (each with why),
/// or the server failed while preparing them. Cloned to every request that asks, so it holds
/// text where the cause (a thread's panic, an I/O error) cannot be cloned.
#[derive(Debug, Clone, thiserror::Error)]
pub enum PythonError {
    #[error(
        "no usable Python interpreter ({}); install python3 or pass --python PATH (or set {PYTHON_ENV})",
        .0.iter().map(|(path, why)| format!("{}: {why}", path.display())).collect::<Vec<_>>().join("; ")
    )]
    NoInterpreter(Vec<(PathBuf, ProbeError)>),
    #[error("interpreter lookup failed: {0}")]
    Lookup(String),
    #[error("preparing the Python view failed: {0}")]
    View(String),
}

/// Why one candidate interpreter cannot be used.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ProbeError {
    #[error("cannot run it: {0}")]
    Run(String),
    #[error("no answer within {0}s")]
    NoAnswer(u64),
    #[error("{0}")]
    Wait(String),
    /// It exited unsuccessfully: its status and what it wrote to stderr.
    #[error("{status}: {stderr}")]
    Failed { status: String, stderr: String },
    #[error("unexpected answer to the path probe: {0}")]
    Answer(String),
    #[error("Python {0}.{1} is too old; {min_major}.{min_minor} or newer is needed", min_major = MIN_VERSION.0, min_minor = MIN_VERSION.1)]
    TooOld(u32, u32),
    #[error("the interpreter cannot tell its own executable (sys.executable is empty)")]
    NoExecutable,
    #[error("unexpected compiled shim in the path probe's answer: {0}")]
    Shim(String),
    /// A path it named cannot be read.
    #[error("{path}: {error}")]
    Path { path: String, error: String },
    #[error(
        "{} is not searchable by other users, and the sandbox runs code as an \
         unprivileged user (the server runs as root); use an interpreter outside it, \
         e.g. --python /usr/bin/python3",
        .0.display()
    )]
    NotSearchable(PathBuf),
    #[error(
        "{} is not readable by other users, and the sandbox runs code as an \
         unprivileged user",
        .0.display()
    )]
    NotReadable(PathBuf),
}

/// Oldest CPython the shim supports (positional-only parameters, top-level await flag).
pub const MIN_VERSION: (u32, u32) = (3, 8);

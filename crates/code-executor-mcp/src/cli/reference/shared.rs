//! What the generators share: the command that regenerates their documents, and the error.

use std::path::PathBuf;

/// The command that regenerates the documents, as a person types it at the checkout's root.
pub(super) const REGENERATE: &str = "cargo run -p code-executor-mcp -- __reference";

/// What stops the reference from being written or checked.
#[derive(Debug, thiserror::Error)]
pub(in crate::cli) enum ReferenceError {
    #[error("cannot read {path}: {error}")]
    Read {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("cannot write {path}: {error}")]
    Write {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{root} holds no crates/ directory: give the checkout's root")]
    NoCrates { root: PathBuf },
}

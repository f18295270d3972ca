//! What can stop `eval` as a whole. A task that fails (a step's error, code that throws, a
//! missed expectation) is not an error here: it is a row of the report that says what failed.

/// Why `eval` cannot run.
#[derive(Debug, thiserror::Error)]
pub(crate) enum EvalError {
    #[error(
        "cannot read the task file {path}: {reason} (or use a built-in one: --tasks reference, --tasks synthetic)"
    )]
    Read { path: String, reason: String },
    #[error("{origin} is not a valid task file: {reason} (docs/eval.md describes the format)")]
    Parse { origin: String, reason: String },
    #[error("{origin}: task {task:?}: {reason}")]
    Invalid {
        origin: String,
        task: String,
        reason: String,
    },
    #[error(
        "no MCP server is configured: pass --config PATH (a {{\"mcpServers\": ...}} file), or try --tasks synthetic"
    )]
    NoServers,
    #[error("--fixture {dir}: {reason}")]
    Fixture { dir: String, reason: String },
    #[error("--model: {0}")]
    Model(String),
    #[error("cannot start our own MCP server in-process: {0}")]
    OurServer(String),
    #[error("cannot write {path}: {reason}")]
    Write { path: String, reason: String },
    #[error(transparent)]
    Tokens(#[from] crate::tokens::TokenizerError),
}

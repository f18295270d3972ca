//! What can stop `eval` as a whole. A task that fails (a step's error, code that throws, a
//! missed expectation) is not an error here: it is a row of the report that says what failed.

/// Why `eval` cannot run.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
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
    Tokens(#[from] faces::tokens::TokenizerError),
}

/// What is wrong with a direct step's arguments: a `$from` reference that is malformed or
/// cannot be resolved against the earlier steps' results, or a `${NAME}` that is not set.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StepError {
    #[error("\"$from\" must be the number of an earlier step (0 is the first)")]
    FromNotANumber,
    #[error("unknown key {0:?} in a $from reference (allowed: $from, pointer, match, format)")]
    UnknownKey(String),
    #[error("\"pointer\" must be a JSON pointer such as \"/a/0\"")]
    BadPointer,
    #[error("\"match\" is not a regex: {0}")]
    BadPattern(#[from] regex::Error),
    #[error("\"match\" must be a regular expression")]
    PatternNotText,
    #[error("\"format\" must be a text with {{}} for the value")]
    BadFormat,
    #[error("$from {from} must name an earlier step (this is step {step})")]
    NotEarlier { from: usize, step: usize },
    #[error("$from {0} names a step that has not run")]
    NotRun(usize),
    #[error(
        "step {from}'s result has no structuredContent and its text is not JSON, so pointer \
         {pointer:?} cannot apply; use \"match\" on the text"
    )]
    NotJson { from: usize, pointer: String },
    #[error("step {from}'s result has nothing at {pointer:?}")]
    NothingAt { from: usize, pointer: String },
    #[error("step {from}'s result does not match {pattern:?}")]
    NoMatch { from: usize, pattern: String },
    #[error(
        "step {step}: no server named {server:?} is configured (configured: {configured}); fix \
         the task or --config"
    )]
    NoServer {
        step: usize,
        server: String,
        configured: String,
    },
    #[error("step {step}: server {server:?} did not list its tools: {reason}")]
    NotListed {
        step: usize,
        server: String,
        reason: String,
    },
    #[error("step {step}: server {server:?} has no tool {tool:?} (it has: {near}); fix the task")]
    NoTool {
        step: usize,
        server: String,
        tool: String,
        near: String,
    },
    #[error("${{{name}}} is not set: pass --var {name}=VALUE or add it to \"vars\"{why}")]
    Unset {
        name: String,
        /// Why a variable taken from a configured server is unset, as ` (...)`, or empty.
        why: String,
    },
}

//! The JavaScript side of code-executor-mcp.
//!
//! - [`strip`]: TypeScript to JavaScript with oxc, run in the host before a worker is involved.
//! - [`modules`]: `import`/`export` statements rewritten for code that is a function body.
//! - [`nesting`]: a bound on how deeply code nests, checked before it is parsed.
//! - [`engine`]: the worker process itself (`code-executor-mcp __worker js`): a QuickJS-NG
//!   runtime with the in-sandbox API and Web API shims (`prelude.js`, compiled to QuickJS
//!   bytecode at build time by `build.rs`), speaking `worker-protocol` frames over
//!   stdin/stdout.
//! - `outgoing`: what the worker sends, kept within what the host takes (large string
//!   arguments quoted by the engine, oversized calls and errors turned into the code's errors).
//! - `host`: the functions the prelude gets as `host` (tool calls, logs, timers, files).
//! - `link`: the worker's end of its pipes to the host, and the state its host functions share.
//! - `settle`: how a run ends, as the outcome the host is sent.
//! - [`repl`]: top-level declarations of session code kept as globals for the next run.
//! - [`tools`]: the run's upstream tools, indexed for the `tools.server.tool` proxies.

pub mod engine;
mod error;
mod fs;
mod host;
mod link;
pub mod modules;
pub mod nesting;
mod outgoing;
pub mod repl;
mod settle;
pub mod strip;
pub mod tools;

pub use engine::worker_main;
pub use repl::globalize;
pub use strip::{SOURCE_NAME, STRIP_STACK_BYTES, Stripped, SyntaxError, strip_types};

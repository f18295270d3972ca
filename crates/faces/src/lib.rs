//! The faces of code-executor-mcp over its composition root: the MCP server ([`server`]: one
//! handler per tool, one place that chooses how an answer is delivered), streamable HTTP with
//! authentication ([`http`]), the built-in demo shop ([`demo`]), and [`Core`], which builds
//! the policy, the pools, the store and the runtime from the settings ([`CoreOptions`]).
//!
//! The binary (`code-executor-mcp`: its command line, client set-up and the version line
//! naming the commit it was built from) and the commands
//! `bench` and `eval` (crates of their own) sit above it; the `runtime`, `tools`, `policy`
//! and `store` crates below it.

pub mod composition;
pub mod demo;
pub mod http;
mod options;
pub mod server;
pub mod shutdown;
pub mod tokens;

pub use composition::Core;
pub use options::CoreOptions;

//! code-executor-mcp: an MCP server through which an agent reaches every other MCP server by
//! writing code that runs in a sandbox.
//!
//! The parts, in the order a request meets them (see docs/ and ../shared/DESIGN.md):
//! [`server`] (rmcp handler) -> the `policy` crate (limits, allowlists) -> the `runtime` crate
//! (strip, pool, worker, bridge) -> the `tools` crate (upstream MCP clients, the catalog of
//! names, search and schemas over them, the settings). This crate holds the faces: [`server`],
//! `http`, [`cli`] (the command line), [`demo`] (the built-in demo server and program), and
//! the commands `bench` and `eval`, over the composition root ([`Core`]).

pub(crate) mod bench;
pub mod cli;
mod composition;
pub mod demo;
pub(crate) mod eval;
pub(crate) mod http;
mod options;
pub(crate) mod server;
pub(crate) mod setup;
mod shutdown;
mod tokens;
mod version;

pub use composition::Core;
pub use eval::serve_synthetic_main;
pub use options::CoreOptions;
pub use tools::catalog;
pub use tools::defaults::{DEMO_SERVER_ARG, SYNTHETIC_SERVER_ARG, WORKER_ARG};

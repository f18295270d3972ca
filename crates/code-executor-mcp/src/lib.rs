//! code-executor-mcp: an MCP server through which an agent reaches every other MCP server by
//! writing code that runs in a sandbox.
//!
//! The parts, in the order a request meets them (see docs/ and ../shared/DESIGN.md):
//! [`server`] (rmcp handler) -> [`policy`] (limits, allowlists) -> [`runtime`] (strip, pool,
//! worker, bridge) -> [`upstream`] (MCP clients) with [`catalog`] (names, search, schemas)
//! over them, configured by [`config`]. [`cli`] is the command line; [`demo`] the built-in
//! demo server and program.

pub(crate) mod bench;
pub mod catalog;
pub(crate) mod check;
mod child;
pub mod cli;
mod composition;
mod config;
mod confinement;
mod console;
mod defaults;
pub mod demo;
pub(crate) mod eval;
pub(crate) mod http;
mod lines;
pub(crate) mod oauth;
mod options;
pub(crate) mod own_tools;
mod pipes;
pub(crate) mod policy;
mod principal;
mod replica;
pub(crate) mod runtime;
pub(crate) mod server;
pub(crate) mod setup;
mod shutdown;
pub(crate) mod skills;
mod tls;
mod tokens;
pub(crate) mod trace;
pub(crate) mod upstream;

pub use composition::Core;
pub use defaults::{DEMO_SERVER_ARG, SYNTHETIC_SERVER_ARG, WORKER_ARG};
pub use eval::serve_synthetic_main;
pub use options::CoreOptions;

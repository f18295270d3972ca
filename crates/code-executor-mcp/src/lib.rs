//! code-executor-mcp: an MCP server through which an agent reaches every other MCP server by
//! writing code that runs in a sandbox.
//!
//! The parts, in the order a request meets them (see docs/ and ../shared/DESIGN.md): the
//! `faces` crate (the MCP server, HTTP, the demo, the composition root) -> the `policy` crate
//! (limits, allowlists) -> the `runtime` crate (strip, pool, worker, bridge) -> the `tools`
//! crate (upstream sources, the catalog, the settings). This crate is the binary: the command
//! line ([`cli`]) and client set-up (`setup`), dispatching to the faces and to the `bench`
//! and `eval` crates.

pub mod cli;
pub(crate) mod setup;
mod version;

pub use eval::serve_synthetic_main;
pub use faces::{Core, CoreOptions, demo};
pub use tools::catalog;
pub use tools::defaults::{DEMO_SERVER_ARG, SYNTHETIC_SERVER_ARG, WORKER_ARG};

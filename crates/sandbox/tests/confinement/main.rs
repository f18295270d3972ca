//! The sandbox against attacks and for what it must hold, one binary: each attack must fail
//! under Enforce (where cheap, the same payload succeeds under Disabled, which shows the test
//! can fail). The stress test (`tests/stress.rs`) stays a binary of its own: it starts a
//! thousand sandboxes four at a time and is meant to run alone.
//!
//! - [`filesystem`]: the filesystem view and /proc;
//! - [`network`]: network attacks against canary listeners on loopback;
//! - [`processes`]: the process tree and resources;
//! - [`plan`]: the view's plan, resolved by the host and checked by the helper;
//! - [`view`]: the view holds exactly what was asked for;
//! - [`template`]: workers forked from one template cannot reach each other.
//!
//! One module's tests: `cargo test -p code-executor-mcp-sandbox --test confinement -- network::`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

#[path = "../common/mod.rs"]
mod common;

mod filesystem;
mod network;
mod plan;
mod processes;
mod template;
mod view;

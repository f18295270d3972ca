//! The server's faces other than stdio, and clients nobody here wrote.
//!
//! - [`figures`]: the README's figures about our tools and their tokens, against the program;
//! - [`http`]: `serve --http` in both protocol generations (and its operations endpoints);
//! - [`http_oauth`]: `serve --http` as an OAuth 2.1 resource server;
//! - [`oauth`]: `login` against a mock authorization server, then the protected upstream;
//! - [`otel`]: trace context to upstreams, and the spans exported over OTLP;
//! - [`replicas`]: replicas behind HAProxy (the shipped configuration): pinned handles, a
//!   rolling update and a replica killed under load;
//! - [`interop`]: the official SDKs, the reference servers, the conformance suite and the
//!   settings matrix (`tests/interop/matrix.py` at the repository's root);
//! - [`seeds`]: every example of the product line's documents (`tests/seeds/`) run unchanged,
//!   as `docs/seeds.md` lists them.
//!
//! One module's tests: `cargo test -p code-executor-mcp --test server -- http::`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stderr,
    clippy::print_stdout,
    reason = "tests fail loudly and say why"
)]

#[path = "../common/mod.rs"]
mod common;

mod figures;
mod http;
mod http_oauth;
mod interop;
mod oauth;
mod otel;
mod replicas;
mod seeds;

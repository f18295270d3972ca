//! The escape suites, one binary: attacks on the sandbox through the built server, one per
//! test, each asserting that it fails and that the server still answers. `scripts/test.sh`
//! runs this binary a second time with `CODE_EXECUTOR_TEST_IN_SESSION=1`
//! (`test_support::IN_SESSION`): every execution then runs in a session worker of its own,
//! which must be as confined as a pooled one. Only escape suites belong here.
//!
//! - [`escape_js`]: from JavaScript (`execute_typescript`);
//! - [`escape_python`]: from Python (`execute_python`), in-language restrictions included;
//! - [`escape_site_packages`]: the site-packages gate of `execute_python`.
//!
//! One module's tests: `cargo test -p code-executor-mcp --test escape -- escape_python::`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stderr,
    clippy::print_stdout,
    reason = "tests fail loudly and say why"
)]

#[path = "../common/mod.rs"]
mod common;

mod escape_js;
mod escape_python;
mod escape_site_packages;

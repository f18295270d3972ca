//! The harness every suite of this crate shares: each suite's `main.rs` includes it as
//! `crate::common` (`#[path = "../common/mod.rs"] mod common;`). What the test files used to
//! repeat as their prologue is here once ([`harness`]: the binary under test, both
//! languages, a server with the fixture upstream), with the scratch machine of the `setup`
//! and `install` tests ([`setup`]). Driving the server (the rmcp client, the fixture servers,
//! mock OAuth, OTLP and HTTP) is the `test-support` crate's.

#![allow(dead_code, unused_imports, reason = "each suite uses a part")]

pub mod harness;
pub mod interop;
pub mod openapi;
pub mod setup;

pub use harness::{BOTH, EXE, server};

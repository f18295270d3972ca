//! Helpers shared by some test files (each includes what it uses with `mod common;`).

#![allow(dead_code, reason = "each test file uses a part")]

pub mod setup;

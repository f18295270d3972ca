//! The binary's commands and the files around it: `setup`, client configs and their trust
//! rules, our own settings, hostile config files, installing, and the deployment artifacts.
//!
//! - [`setup`]: `setup` against a scratch home (diff, backups, `--undo`, prompts in tmux);
//! - [`setup_clients`]: `setup` against the real clients' `mcp add` and `mcp list`;
//! - [`client_config`]: client config semantics (tool filters, held-back servers, `doctor`);
//! - [`client_trust`]: our trust rules against the real clients;
//! - [`settings_trust`]: a cloned repository's `.code-executor.json` and project trust;
//! - [`hostile_config`]: hostile files in place of every config-like file we read;
//! - [`install`]: the wheel, npm and `cargo install` artifacts, installed and run;
//! - [`deploy`]: the Kubernetes manifests, checked offline;
//! - [`eval`]: `eval` over the reference servers and the synthetic catalog, hostile task
//!   files, and the model mode against a scripted mock provider;
//! - [`bench`]: the `bench` sections of issue #44's targets (worker start, granted access,
//!   back to back from the official Python SDK);
//! - [`container`]: the container image with Podman (built once per process);
//! - [`openapi`]: `tools search`, `tools show` and `config show` on an OpenAPI source;
//! - [`output`]: errors as `error:` lines with hints, and commands writing to a closed pipe;
//! - [`reference`]: the documents generated from the code (`docs/cli.md`, `docs/settings.md`,
//!   `docs/test-files.md`) are current.
//!
//! One module's tests: `cargo test -p code-executor-mcp --test cli -- setup::`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stderr,
    clippy::print_stdout,
    reason = "tests fail loudly and say why"
)]

#[path = "../common/mod.rs"]
mod common;

mod bench;
mod client_config;
mod client_trust;
mod container;
mod deploy;
mod eval;
mod hostile_config;
mod install;
mod openapi;
mod output;
mod reference;
mod settings_trust;
mod setup;
mod setup_clients;

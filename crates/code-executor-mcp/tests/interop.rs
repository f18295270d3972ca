//! Interop with software nobody here wrote: the official Python MCP SDK as the client, the
//! reference MCP servers (npm and PyPI) as upstreams, and the MCP conformance suite.
//!
//! Needs `scripts/setup-interop.sh` (npm + PyPI); `.ci/run` runs it. Without it these tests
//! print a loud SKIP, unless `CODE_EXECUTOR_REQUIRE_INTEROP=1` (set in CI) makes that a failure.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stderr,
    reason = "tests fail loudly and say why"
)]

use std::path::PathBuf;
use std::process::Command;

const EXE: &str = env!("CARGO_BIN_EXE_code-executor-mcp");

fn prefix() -> Option<PathBuf> {
    let prefix = std::env::var_os("CODE_EXECUTOR_INTEROP")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp/code-executor-interop"));
    if prefix.join(".ready").exists() {
        return Some(prefix);
    }
    let msg = format!(
        "interop harness not installed at {}; run scripts/setup-interop.sh",
        prefix.display()
    );
    if std::env::var_os("CODE_EXECUTOR_REQUIRE_INTEROP").is_some() {
        panic!("{msg} (CODE_EXECUTOR_REQUIRE_INTEROP is set)");
    }
    eprintln!("\n==================== SKIP: {msg} ====================\n");
    None
}

fn scripts() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/interop")
}

fn run(cmd: &mut Command) {
    let out = cmd.output().expect("run interop script");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{text}");
    assert!(out.status.success(), "interop script failed:\n{text}");
}

#[test]
fn python_sdk_drives_us_with_the_five_reference_servers_upstream() {
    let Some(p) = prefix() else { return };
    run(Command::new(p.join("venv/bin/python"))
        .arg(scripts().join("sdk_e2e.py"))
        .args(["--exe", EXE, "--config"])
        .arg(p.join("upstreams.json"))
        .arg("--git-repo")
        .arg(p.join("data/git-repo"))
        .arg("--fs-root")
        .arg(p.join("data/fs-root")));
}

#[test]
fn mcp_conformance_server_scenarios_pass() {
    let Some(p) = prefix() else { return };
    run(Command::new("bash")
        .arg(scripts().join("conformance.sh"))
        .arg(&p)
        .arg(EXE)
        .arg(p.join("upstreams.json")));
}

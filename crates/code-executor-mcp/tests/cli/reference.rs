//! The reference documents generated from the code (`docs/cli.md` from the command tree,
//! `docs/settings.md` from the settings table, `docs/test-files.md` from the test files'
//! `//!` docs) are current: the hidden `__reference --check` of the built binary, run on this
//! checkout, finds nothing to regenerate; and on a checkout whose documents are stale it
//! fails, naming each stale file and the command that regenerates them.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common::EXE;

/// The checkout's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn check(root: &Path) -> Output {
    std::process::Command::new(EXE)
        .args(["__reference", "--check"])
        .arg(root)
        .output()
        .unwrap()
}

#[test]
fn the_generated_reference_documents_are_current() {
    let out = check(&root());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_stale_document_fails_the_check_and_names_the_command_that_regenerates_it() {
    let temp = test_support::TempConfig::new(serde_json::json!({}));
    let fake = temp.dir.join("checkout");
    std::fs::create_dir_all(fake.join("docs")).unwrap();
    for dir in ["crates", "tests"] {
        std::os::unix::fs::symlink(root().join(dir), fake.join(dir)).unwrap();
    }
    for name in ["cli.md", "settings.md", "test-files.md"] {
        std::fs::copy(root().join("docs").join(name), fake.join("docs").join(name)).unwrap();
    }
    let out = check(&fake);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::write(
        fake.join("docs/settings.md"),
        "# Settings\n\nwritten by hand\n",
    )
    .unwrap();
    let out = check(&fake);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("docs/settings.md")
            && !stderr.contains("docs/cli.md")
            && stderr.contains("cargo run -p code-executor-mcp -- __reference"),
        "{stderr}"
    );
    // Without --check the same command brings it back.
    let out = std::process::Command::new(EXE)
        .arg("__reference")
        .arg(&fake)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(check(&fake).status.success());
}

#[test]
fn the_hidden_command_is_in_no_help_or_completion_script() {
    let out = std::process::Command::new(EXE)
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(
        help.contains("completions") && !help.contains("__reference"),
        "{help}"
    );
    for shell in ["bash", "zsh", "fish"] {
        let out = std::process::Command::new(EXE)
            .args(["completions", shell])
            .output()
            .unwrap();
        let script = String::from_utf8_lossy(&out.stdout);
        assert!(
            script.contains("completions") && !script.contains("__reference"),
            "{shell}"
        );
    }
    // Its own help and a usage error, as clap gives them.
    let out = std::process::Command::new(EXE)
        .args(["__reference", "--help"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("--check"));
    let out = std::process::Command::new(EXE)
        .args(["__reference", "--bogus"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

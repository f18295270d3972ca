//! Names the commit the binary was built from, for `--version`: `$CODE_EXECUTOR_COMMIT` when
//! a release build sets it, else the `.cargo_vcs_info.json` that `cargo package` writes into
//! a packaged crate (so `cargo install` of the published crate knows it), else `git`.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=CODE_EXECUTOR_COMMIT");
    let dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let commit = std::env::var("CODE_EXECUTOR_COMMIT")
        .ok()
        .filter(|c| !c.trim().is_empty())
        .or_else(|| vcs_info(&dir))
        .or_else(|| git(&dir))
        .unwrap_or_else(|| "unknown commit".to_string());
    println!("cargo:rustc-env=CODE_EXECUTOR_COMMIT={commit}");
}

/// `{"git": {"sha1": "...", "dirty": true}}` of a packaged crate.
fn vcs_info(dir: &Path) -> Option<String> {
    let path = dir.join(".cargo_vcs_info.json");
    println!("cargo:rerun-if-changed={}", path.display());
    let text = std::fs::read_to_string(path).ok()?;
    let at = text.find("\"sha1\"")?;
    let rest = &text[at + 6..];
    let start = rest.find('"')? + 1;
    let end = start + rest[start..].find('"')?;
    let sha = &rest[start..end];
    let dirty = text.contains("\"dirty\": true") || text.contains("\"dirty\":true");
    Some(format!(
        "{}{}",
        &sha[..sha.len().min(12)],
        if dirty { "-dirty" } else { "" }
    ))
}

fn git(dir: &Path) -> Option<String> {
    let run = |args: &[&str]| -> Option<String> {
        let out = Command::new("git")
            .args(args)
            .current_dir(dir)
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    let sha = run(&["rev-parse", "--short=12", "HEAD"])?;
    // Rebuild when HEAD moves: the HEAD file and the branch it names.
    if let Some(head) = run(&["rev-parse", "--path-format=absolute", "--git-path", "HEAD"]) {
        println!("cargo:rerun-if-changed={head}");
    }
    if let Some(name) = run(&["symbolic-ref", "-q", "HEAD"])
        && let Some(file) = run(&["rev-parse", "--path-format=absolute", "--git-path", &name])
    {
        println!("cargo:rerun-if-changed={file}");
    }
    if let Some(packed) = run(&[
        "rev-parse",
        "--path-format=absolute",
        "--git-path",
        "packed-refs",
    ]) {
        println!("cargo:rerun-if-changed={packed}");
    }
    Some(sha)
}

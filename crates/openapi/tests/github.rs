//! GitHub's real OpenAPI document (`@octokit/openapi`, ~1,100 operations, ~13 MB), from the
//! interop prefix: `$CODE_EXECUTOR_INTEROP` (default `/tmp/code-executor-interop`), installed
//! with `npm install @octokit/openapi` in its `openapi/` directory. Missing, the test prints
//! a loud SKIP, or fails when `CODE_EXECUTOR_REQUIRE_INTEROP` is set.
#![allow(clippy::unwrap_used, reason = "tests")]
#![allow(
    clippy::print_stderr,
    reason = "the SKIP line and the timings are for whoever runs the tests"
)]

use std::path::PathBuf;
use std::time::Instant;

use openapi::{Format, Spec, build_request};
use serde_json::json;

const PACKAGE: &str = "openapi/node_modules/@octokit/openapi";

fn github_spec() -> Option<PathBuf> {
    let prefix = std::env::var_os("CODE_EXECUTOR_INTEROP").map_or_else(
        || PathBuf::from("/tmp/code-executor-interop"),
        PathBuf::from,
    );
    let package = prefix.join(PACKAGE);
    if package.is_dir() {
        // Installed: the file must be there (a moved file is a failure, not a skip).
        return Some(package.join("generated/api.github.com.json"));
    }
    let dir = prefix.join("openapi");
    let msg = format!(
        "@octokit/openapi is not installed at {} (install it: mkdir -p {} && cd {} && npm install --no-audit --no-fund @octokit/openapi)",
        package.display(),
        dir.display(),
        dir.display()
    );
    assert!(
        std::env::var_os("CODE_EXECUTOR_REQUIRE_INTEROP").is_none(),
        "{msg} (CODE_EXECUTOR_REQUIRE_INTEROP is set)"
    );
    eprintln!("\n==================== SKIP: {msg} ====================\n");
    None
}

#[test]
fn githubs_document_lists_builds_and_requests() {
    let Some(file) = github_spec() else { return };
    let bytes = std::fs::read(&file).unwrap();
    let start = Instant::now();
    let spec = Spec::parse(&bytes, Format::Sniff).unwrap();
    let parsed = start.elapsed();
    let ops = spec.operations();
    assert!(ops.len() > 1_000, "{} operations", ops.len());
    eprintln!(
        "GitHub: {} bytes, {} operations, parsed and listed in {parsed:?}",
        bytes.len(),
        ops.len()
    );
    // Release builds take well under a second; unoptimised ones get room.
    assert!(parsed.as_secs() < 30, "{parsed:?}");

    let get = spec.operation("repos/get").unwrap();
    assert_eq!(get.name, "repos_get");
    assert_eq!(get.path, "/repos/{owner}/{repo}");
    let required = get.input_schema["required"].as_array().unwrap();
    assert!(
        required.contains(&json!("owner")) && required.contains(&json!("repo")),
        "{required:?}"
    );
    assert_eq!(get.input_schema["properties"]["owner"]["type"], "string");
    assert!(get.annotations.read_only);
    let out = get.output_schema.as_ref().unwrap();
    assert!(out.to_string().contains("full_name"));

    let base = spec.server_url(&Default::default()).unwrap();
    assert_eq!(base.as_str(), "https://api.github.com/");
    let req = build_request(
        &get,
        &base,
        &json!({"owner": "octo cat", "repo": "../hello"}),
    )
    .unwrap();
    assert_eq!(
        req.url.as_str(),
        "https://api.github.com/repos/octo%20cat/..%2Fhello"
    );

    let content = spec.operation("repos/get-content").unwrap();
    let req = build_request(
        &content,
        &base,
        &json!({"owner": "o", "repo": "r", "path": "docs/README.md", "ref": "main"}),
    )
    .unwrap();
    assert_eq!(
        req.url.as_str(),
        "https://api.github.com/repos/o/r/contents/docs%2FREADME.md?ref=main"
    );

    let create = spec.operation("issues/create").unwrap();
    assert!(!create.annotations.read_only);
    let req = build_request(
        &create,
        &base,
        &json!({"owner": "o", "repo": "r", "body": {"title": "t"}}),
    )
    .unwrap();
    assert_eq!(req.body.as_deref(), Some(br#"{"title":"t"}"#.as_slice()));
    assert_eq!(req.content_type.as_deref(), Some("application/json"));

    // Every operation becomes a tool, or fails alone with a reason.
    let start = Instant::now();
    let mut failures = Vec::new();
    for op in ops {
        if let Err(e) = spec.operation(&op.name) {
            failures.push(format!("{}: {e}", op.name));
        }
    }
    eprintln!(
        "GitHub: built {} tools in {:?}; {} failed",
        ops.len(),
        start.elapsed(),
        failures.len()
    );
    assert!(failures.is_empty(), "{failures:#?}");
}

//! What the OpenAPI tests share: the interop prefix with Prism and GitHub's document, the
//! shared mocks (`test_support::prism`, one per document per test binary), and entries.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
pub use test_support::prism::Mocks;

/// The credentials the tests plant (long, unlike anything a mock answers).
pub const BEARER: &str = "ghp_PLANTEDbearer7Qx93KdLw0ZrVb5N";
pub const API_KEY: &str = "invkey-PLANTED-4hT8pQ2mXc9Ls1Wd";
/// The environment variables that hold them (the config says `${VAR}`).
pub const BEARER_VAR: &str = "OPENAPI_TEST_BEARER";
pub const API_KEY_VAR: &str = "OPENAPI_TEST_API_KEY";

/// The interop prefix and the running mocks, or `None` (a loud SKIP, or a failure under
/// `CODE_EXECUTOR_REQUIRE_INTEROP`).
pub fn mocks() -> Option<(PathBuf, &'static Mocks)> {
    let prefix = super::interop::prefix(&[
        "openapi/node_modules/.bin/prism",
        "openapi/node_modules/@octokit/openapi/generated/api.github.com.json",
    ])?;
    let mocks = test_support::prism::mocks(&prefix);
    Some((prefix, mocks))
}

/// GitHub's document served by its mock, the bearer token from the environment.
pub fn github_entry(mocks: &Mocks) -> Value {
    json!({
        "type": "openapi",
        "spec": mocks.github.spec,
        "baseUrl": mocks.github.base_url(),
        "allowAddresses": ["127.0.0.1"],
        "auth": {"bearer": format!("${{{BEARER_VAR}}}")},
    })
}

/// The inventory document (YAML, an API key the mock requires, form bodies) served by its
/// mock; the key's header and place come from the document.
pub fn inventory_entry(mocks: &Mocks) -> Value {
    json!({
        "type": "openapi",
        "spec": mocks.inventory.spec,
        "baseUrl": format!("{}/", mocks.inventory.base_url()),
        "allowAddresses": ["127.0.0.1"],
        "auth": {"apiKey": {"value": format!("${{{API_KEY_VAR}}}")}},
    })
}

/// The environment holding the planted credentials.
pub fn credentials_env() -> [(&'static str, &'static str); 2] {
    [(BEARER_VAR, BEARER), (API_KEY_VAR, API_KEY)]
}

/// Every file under `dir` (recursively) that holds `needle`, but `except`.
pub fn files_holding(dir: &Path, needle: &str, except: &[&Path]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files_holding(&p, needle, except));
        } else if !except.contains(&p.as_path())
            && std::fs::read(&p)
                .map(|b| b.windows(needle.len()).any(|w| w == needle.as_bytes()))
                .unwrap_or(false)
        {
            out.push(p);
        }
    }
    out
}

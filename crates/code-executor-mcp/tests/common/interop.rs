//! The interop harness's prefix (`scripts/setup-interop.sh`: reference servers, SDKs,
//! clients, checkers), for the suites that need software nobody here wrote.

use std::path::PathBuf;

/// `$CODE_EXECUTOR_INTEROP` (default `/tmp/code-executor-interop`) when it holds `needed`
/// (paths under it; `.ready` when empty). Otherwise a loud SKIP, or a failure when
/// `CODE_EXECUTOR_REQUIRE_INTEROP` is set (CI): an interop test never passes by not running.
pub fn prefix(needed: &[&str]) -> Option<PathBuf> {
    let prefix = std::env::var_os("CODE_EXECUTOR_INTEROP").map_or_else(
        || PathBuf::from("/tmp/code-executor-interop"),
        PathBuf::from,
    );
    let needed: &[&str] = if needed.is_empty() {
        &[".ready"]
    } else {
        needed
    };
    let missing: Vec<&str> = needed
        .iter()
        .copied()
        .filter(|f| !prefix.join(f).exists())
        .collect();
    if missing.is_empty() {
        return Some(prefix);
    }
    let msg = format!(
        "the interop harness is not installed at {} (missing {}); run scripts/setup-interop.sh",
        prefix.display(),
        missing.join(", ")
    );
    if std::env::var_os("CODE_EXECUTOR_REQUIRE_INTEROP").is_some() {
        panic!("{msg} (CODE_EXECUTOR_REQUIRE_INTEROP is set)");
    }
    eprintln!("\n==================== SKIP: {msg} ====================\n");
    None
}

//! The prologue the test files shared: the built binary, both languages, and a server with
//! the fixture upstream and a settings file.

use serde_json::{Value, json};
use test_support::{Harness, Lang, TempConfig, fixture_entry};

/// The server binary under test (cargo builds it for this package's tests).
pub const EXE: &str = env!("CARGO_BIN_EXE_code-executor-mcp");

/// Both languages, for the cases run in each.
pub const BOTH: [Lang; 2] = [Lang::Ts, Lang::Py];

/// A server with `settings` in its settings file and the fixture server upstream as `fx`.
pub async fn server(settings: Value) -> (Harness, TempConfig) {
    Harness::with_settings(
        EXE.as_ref(),
        json!({ "fx": fixture_entry("fx") }),
        &settings,
        &[],
    )
    .await
}

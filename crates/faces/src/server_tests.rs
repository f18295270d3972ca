//! Tests of `server`.

use super::*;

/// Clients decide from annotations what to run without asking, or in parallel: the two
/// discovery tools are read-only. Running code carries no annotation, which by the spec's
/// defaults says what it is (not read-only, possibly destructive, open world) in no tokens.
#[test]
fn our_tools_are_annotated() {
    let read_only: Vec<(String, Option<bool>)> = tool_definitions()
        .into_iter()
        .map(|t| {
            let hint = t.annotations.as_ref().and_then(|a| a.read_only_hint);
            (t.name.to_string(), hint)
        })
        .collect();
    assert_eq!(
        read_only,
        [
            ("execute_typescript".to_string(), None),
            ("execute_python".to_string(), None),
            ("search_tools".to_string(), Some(true)),
            ("get_tool_schema".to_string(), Some(true)),
            ("list_servers".to_string(), None),
            ("wait".to_string(), None),
            ("health".to_string(), None),
        ]
    );
    for t in tool_definitions() {
        let a = t.annotations.unwrap_or_default();
        assert_ne!(a.destructive_hint, Some(false), "{}", t.name);
        assert_ne!(a.open_world_hint, Some(false), "{}", t.name);
    }
}

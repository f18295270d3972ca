//! Tests of `bridge`.

use super::super::shape::MAX_JSON_DEPTH;
use super::*;
use serde_json::json;

fn result(v: Value) -> CallToolResult {
    serde_json::from_value(v).unwrap()
}

#[test]
fn unwrap_table() {
    let cases = [
        (
            json!({"content": [{"type": "text", "text": "x"}], "structuredContent": {"a": 1}}),
            ok(json!({"a": 1})),
        ),
        (
            json!({"content": [{"type": "text", "text": "{\"b\": [1,2]}"}]}),
            ok(json!({"b": [1, 2]})),
        ),
        (
            json!({"content": [{"type": "text", "text": "Echo: hi"}]}),
            ok(json!("Echo: hi")),
        ),
        (
            json!({"content": [{"type": "text", "text": "42"}]}),
            ok(json!(42)),
        ),
        (json!({"content": []}), ok(Value::Null)),
        (
            json!({"content": [{"type": "text", "text": "a"}, {"type": "image", "data": "AAA=", "mimeType": "image/png"}]}),
            ok(json!(["a", {"type": "image", "data": "AAA=", "mimeType": "image/png"}])),
        ),
        (
            json!({"content": [{"type": "text", "text": "boom"}], "isError": true}),
            err(CallError::Tool, "boom"),
        ),
    ];
    for (input, want) in cases {
        assert_eq!(unwrap_result(result(input.clone())), want, "{input}");
    }
    // Pretty-printed JSON reaches the worker on one line (a raw newline early in a frame
    // would end its JSON), as the same value.
    let pretty = "{\n  \"HOME\": \"/root\",\r\n  \"a\": [1,\n 2]\n}\n";
    let got = unwrap_result(result(
        json!({"content": [{"type": "text", "text": pretty}]}),
    ));
    let CallOutcome::Ok { value } = &got else {
        panic!("{got:?}")
    };
    assert!(!value.get().contains(['\n', '\r']), "{}", value.get());
    assert_eq!(
        serde_json::from_str::<Value>(value.get()).unwrap(),
        json!({"HOME": "/root", "a": [1, 2]})
    );
    // JSON nested past the bound is text (a worker's decoder would give up on it).
    let deep = format!(
        "{}{}",
        "[".repeat(MAX_JSON_DEPTH + 1),
        "]".repeat(MAX_JSON_DEPTH + 1)
    );
    let got = unwrap_result(result(json!({"content": [{"type": "text", "text": deep}]})));
    assert!(
        matches!(&got, CallOutcome::Text { text } if *text == deep),
        "{got:.80?}"
    );
    let ok_deep = format!(
        "{}{}",
        "[".repeat(MAX_JSON_DEPTH),
        "]".repeat(MAX_JSON_DEPTH)
    );
    let got = unwrap_result(result(
        json!({"content": [{"type": "text", "text": ok_deep}]}),
    ));
    assert!(matches!(&got, CallOutcome::Ok { .. }), "{got:.80?}");
    // One text that is not JSON goes as it is (a lone surrogate escape is not JSON).
    for text in ["Echo: hi", "\"\\ud800\"", "[1,", " "] {
        let got = unwrap_result(result(json!({"content": [{"type": "text", "text": text}]})));
        assert!(
            matches!(&got, CallOutcome::Text { text: t } if t == text),
            "{text}: {got:?}"
        );
    }
}

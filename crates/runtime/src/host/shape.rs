//! The `text` result shape ([`ResultShape::Text`]): what the product line's own functions,
//! `callMCPTool` (TypeScript) and `call_mcp_tool` (Python), return for an upstream result.
//! The typed proxies `tools.server.tool(...)` keep the structured shape
//! ([`unwrap_result`]).
//!
//! The answer's text, its text blocks joined with line breaks:
//! - with `structuredContent` and a text that is JSON equal to it: the structured value (the
//!   text *is* the data);
//! - with `structuredContent` and any other text (the filesystem server's `read_file`:
//!   `{content}` beside the file itself): the text, a string, so `JSON.parse` /
//!   `json.loads` of a JSON file works;
//! - without `structuredContent`: a text that is a JSON object or array, parsed (a server
//!   that answers JSON in its text); any other text (a JSON scalar too), the string;
//! - no content blocks at all: the structured value, else `null`.
//!
//! A result with non-text blocks (images, audio, resources) arrives as its content blocks
//! (as the structured shape gives them without `structuredContent`), and an `isError`
//! result throws, as in the structured shape.
//!
//! Efficient on the way: a text is compared with the structured value by one streaming pass
//! that builds no tree and stops at the first difference ([`same_json`]), and a JSON text
//! goes on as its text, checked, never decoded and encoded again.
//!
//! [`ResultShape::Text`]: worker_protocol::ResultShape::Text

use std::collections::HashSet;
use std::fmt;

use rmcp::model::{CallToolResult, ContentBlock};
use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;
use worker_protocol::{CallError, CallOutcome};

use super::scope::{err, ok};

/// The value code sees for `result` in the `text` shape (see the module's docs).
pub fn text(mut result: CallToolResult) -> CallOutcome {
    let all_text = result
        .content
        .iter()
        .all(|c| matches!(c, ContentBlock::Text(_)));
    if result.is_error == Some(true) || !all_text {
        if result.is_error != Some(true) {
            // Content blocks, as the structured shape gives them without structured content.
            result.structured_content = None;
        }
        return unwrap_result(result);
    }
    let structured = result.structured_content.take();
    let mut texts = result.content.into_iter().filter_map(|c| match c {
        ContentBlock::Text(t) => Some(t.text),
        _ => None,
    });
    let Some(mut text) = texts.next() else {
        return ok(structured.unwrap_or(Value::Null));
    };
    for more in texts {
        text.push('\n');
        text.push_str(&more);
    }
    match structured {
        Some(s) if same_json(&text, &s) => ok(s),
        Some(_) => CallOutcome::Text { text },
        None => match json_text(&text) {
            Some(raw) if raw.get().starts_with(['{', '[']) => CallOutcome::Ok {
                value: one_line(raw),
            },
            _ => CallOutcome::Text { text },
        },
    }
}

/// Whether `text` is JSON (whitespace around it allowed) whose value equals `value`: the
/// same kinds, strings, array items in order, object members in any order, numbers equal as
/// numbers (`1.0` is `1`). By one pass over the text that builds no tree and stops at the
/// first difference; a text that is not JSON, has anything after its value (trailing
/// garbage, a second value), starts with a byte-order mark, nests deeper than the parser's
/// bound, or holds a lone surrogate escape is not equal to anything.
pub fn same_json(text: &str, value: &Value) -> bool {
    // Cheap refusals first: the first character says the kind.
    let Some(first) = text
        .trim_start_matches([' ', '\t', '\n', '\r'])
        .chars()
        .next()
    else {
        return false;
    };
    let kind_fits = match value {
        Value::Object(_) => first == '{',
        Value::Array(_) => first == '[',
        Value::String(_) => first == '"',
        Value::Null => first == 'n',
        Value::Bool(_) => first == 't' || first == 'f',
        Value::Number(_) => first == '-' || first.is_ascii_digit(),
    };
    if !kind_fits {
        return false;
    }
    let mut de = serde_json::Deserializer::from_str(text);
    Same(value).deserialize(&mut de).is_ok() && de.end().is_ok()
}

/// Compares what it reads with the value it holds; any difference is an error, which ends
/// the pass.
struct Same<'v>(&'v Value);

fn differs<E: serde::de::Error>() -> E {
    E::custom("differs")
}

impl<'de> DeserializeSeed<'de> for Same<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

fn number_is<E: serde::de::Error>(value: &Value, n: f64, exact: Option<i128>) -> Result<(), E> {
    let Value::Number(v) = value else {
        return Err(differs());
    };
    let same = match (exact, v.as_i64(), v.as_u64()) {
        (Some(e), Some(i), _) => e == i128::from(i),
        (Some(e), None, Some(u)) => e == i128::from(u),
        _ => v.as_f64() == Some(n),
    };
    if same { Ok(()) } else { Err(differs()) }
}

impl<'de> Visitor<'de> for Same<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("JSON equal to the structured content")
    }

    fn visit_bool<E: serde::de::Error>(self, b: bool) -> Result<(), E> {
        if self.0 == &Value::Bool(b) {
            Ok(())
        } else {
            Err(differs())
        }
    }

    fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<(), E> {
        number_is(self.0, n as f64, Some(i128::from(n)))
    }

    fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<(), E> {
        number_is(self.0, n as f64, Some(i128::from(n)))
    }

    fn visit_f64<E: serde::de::Error>(self, n: f64) -> Result<(), E> {
        number_is(self.0, n, None)
    }

    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<(), E> {
        match self.0 {
            Value::String(v) if v == s => Ok(()),
            _ => Err(differs()),
        }
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<(), E> {
        if self.0.is_null() {
            Ok(())
        } else {
            Err(differs())
        }
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let Value::Array(items) = self.0 else {
            return Err(differs());
        };
        for item in items {
            if seq.next_element_seed(Same(item))?.is_none() {
                return Err(differs());
            }
        }
        match seq.next_element::<serde::de::IgnoredAny>()? {
            None => Ok(()),
            Some(_) => Err(differs()),
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let Value::Object(members) = self.0 else {
            return Err(differs());
        };
        // Each member once: a key the text repeats is a difference (the value it would
        // decode to depends on the reader). Small objects (most) mark members in a bit set
        // by position, found by a short scan that starts where the last key was (texts
        // usually list them in the same order); larger ones in a set.
        let small = members.len() <= 64;
        let mut bits = 0u64;
        let mut seen: HashSet<&str> = HashSet::new();
        let mut next = 0usize;
        let mut count = 0usize;
        while let Some(found) = map.next_key_seed(Key {
            members,
            from: next,
        })? {
            let (at, name, value) = found.ok_or_else(differs)?;
            let fresh = if small {
                let bit = 1u64 << at;
                let fresh = bits & bit == 0;
                bits |= bit;
                fresh
            } else {
                seen.insert(name)
            };
            if !fresh {
                return Err(differs());
            }
            next = at + 1;
            count += 1;
            map.next_value_seed(Same(value))?;
        }
        if count == members.len() {
            Ok(())
        } else {
            Err(differs())
        }
    }
}

/// A member's key, looked up in the object it should be in (from position `from` on, then
/// from the start), without keeping the key read.
struct Key<'v> {
    members: &'v serde_json::Map<String, Value>,
    from: usize,
}

impl<'de, 'v> DeserializeSeed<'de> for Key<'v> {
    type Value = Option<(usize, &'v str, &'v Value)>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de, 'v> Visitor<'de> for Key<'v> {
    type Value = Option<(usize, &'v str, &'v Value)>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a member's key")
    }

    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Self::Value, E> {
        let n = self.members.len();
        let from = self.from.min(n);
        let found = self
            .members
            .iter()
            .enumerate()
            .skip(from)
            .chain(self.members.iter().enumerate().take(from))
            .take(if n <= 64 { n } else { 0 })
            .find(|(_, (k, _))| k.as_str() == s)
            .map(|(i, (k, v))| (i, k.as_str(), v));
        if n <= 64 {
            return Ok(found);
        }
        Ok(self
            .members
            .get_key_value(s)
            .map(|(k, v)| (0, k.as_str(), v)))
    }
}

/// The value code sees for an upstream result in the structured shape (the typed proxies;
/// `callMCPTool` asks for the text shape, [`text`]): `structuredContent` when
/// present; else one
/// text block parsed as JSON when it parses, else the text; several blocks as an array of
/// those; non-text blocks (images, audio, resources) as their MCP objects. An `isError`
/// result becomes a `ToolError` carrying the upstream's message.
///
/// A text block that is JSON is passed on as its text (checked to be JSON, never decoded
/// into a tree and encoded again): the worker parses it once, in the engine. One text that
/// is not JSON goes as it is ([`CallOutcome::Text`]); among several blocks, it is encoded
/// here as a JSON string.
pub fn unwrap_result(result: CallToolResult) -> CallOutcome {
    if result.is_error == Some(true) {
        let text: Vec<String> = result
            .content
            .iter()
            .filter_map(|c| c.as_text().map(|t| t.text.clone()))
            .collect();
        let message = if !text.is_empty() {
            text.join("\n")
        } else if let Some(s) = &result.structured_content {
            s.to_string()
        } else {
            "the tool reported an error without a message".to_string()
        };
        return err(CallError::Tool, message);
    }
    if let Some(s) = result.structured_content {
        return ok(s);
    }
    let mut content = result.content;
    if let [ContentBlock::Text(t)] = content.as_mut_slice()
        && json_text(&t.text).is_none()
    {
        return CallOutcome::Text {
            text: std::mem::take(&mut t.text),
        };
    }
    let mut values: Vec<Box<RawValue>> = content.into_iter().map(raw_block).collect();
    let value = match values.len() {
        0 => RawValue::NULL.to_owned(),
        1 => values.pop().unwrap_or_else(|| RawValue::NULL.to_owned()),
        _ => {
            // An array of the blocks, written from their texts.
            let len = values.iter().map(|v| v.get().len() + 1).sum::<usize>() + 1;
            let mut s = String::with_capacity(len);
            s.push('[');
            for (i, v) in values.iter().enumerate() {
                if i > 0 {
                    s.push(',');
                }
                s.push_str(v.get());
            }
            s.push(']');
            RawValue::from_string(s).unwrap_or_else(|_| RawValue::NULL.to_owned())
        }
    };
    CallOutcome::Ok { value }
}

/// One content block as the JSON code sees: a text's JSON as it is (leading and trailing
/// whitespace dropped), or the text as a JSON string; any other block as its MCP object.
fn raw_block(c: ContentBlock) -> Box<RawValue> {
    let encoded = match c {
        ContentBlock::Text(t) => match json_text(&t.text) {
            Some(raw) => return one_line(raw),
            None => serde_json::value::to_raw_value(&t.text),
        },
        other => serde_json::value::to_raw_value(&other),
    };
    encoded.unwrap_or_else(|_| RawValue::NULL.to_owned())
}

/// `raw` without raw line breaks: a frame to the worker holds none in its JSON (a newline
/// early in a frame starts the text after its JSON: `worker_protocol::framing`). In valid
/// JSON a raw line break can only be whitespace (a string holds them escaped), so each is
/// written as a space: the same JSON, the same value.
fn one_line(raw: &RawValue) -> Box<RawValue> {
    let text = raw.get();
    if memchr::memchr2(b'\n', b'\r', text.as_bytes()).is_none() {
        return raw.to_owned();
    }
    let flat = text.replace(['\n', '\r'], " ");
    RawValue::from_string(flat).unwrap_or_else(|_| RawValue::NULL.to_owned())
}

/// A text that is JSON, as that JSON (whitespace around it dropped), by one scan. A lone
/// surrogate escape has no UTF-8 form: such a text is not taken as JSON (a decoder refuses
/// it), and reaches code as the text it is; so does JSON nested deeper than
/// [`MAX_JSON_DEPTH`] (the scan for raw JSON has no bound, a worker's decoder has one).
fn json_text(text: &str) -> Option<&RawValue> {
    serde_json::from_str::<&RawValue>(text).ok().filter(|raw| {
        !worker_protocol::has_lone_surrogate_escape(raw.get()) && !too_deep(raw.get())
    })
}

/// Levels of nesting a JSON text may have to be taken as data, as the host's own parser
/// reads it (serde_json's bound, which learned types follow too): deeper, no reader on the way
/// is sure to take it (Python's decoder gives up near 1,000 levels and took its worker down
/// with it), and it arrives as the text it is.
pub(super) const MAX_JSON_DEPTH: usize = 128;

/// Whether the JSON text `raw` (valid) nests deeper than [`MAX_JSON_DEPTH`]: one pass over
/// its bytes, skipping strings by a vectorised search (a 6 MB document of records: about one
/// RawValue scan; a 6 MB string: a thirtieth of one).
pub(super) fn too_deep(raw: &str) -> bool {
    let bytes = raw.as_bytes();
    let mut depth = 0usize;
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'"' => {
                // A string: to its closing quote, by a vectorised search past escapes.
                i += 1;
                loop {
                    match memchr::memchr2(b'"', b'\\', bytes.get(i..).unwrap_or_default()) {
                        Some(j) if bytes.get(i + j) == Some(&b'\\') => i += j + 2,
                        Some(j) => {
                            i += j + 1;
                            break;
                        }
                        None => return false,
                    }
                }
                continue;
            }
            b'{' | b'[' => {
                depth += 1;
                if depth > MAX_JSON_DEPTH {
                    return true;
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::scope::err;
    use serde_json::json;
    use worker_protocol::CallError;

    fn result(v: Value) -> CallToolResult {
        serde_json::from_value(v).unwrap()
    }

    /// What code receives, as JSON (a `Text` outcome as the JSON string it stands for).
    fn value(o: &CallOutcome) -> Value {
        o.value().unwrap_or_else(|| panic!("not a success: {o:?}"))
    }

    fn text_blocks(texts: &[&str]) -> Value {
        Value::Array(
            texts
                .iter()
                .map(|t| json!({"type": "text", "text": t}))
                .collect(),
        )
    }

    /// Every case the decision names, and their neighbours.
    #[test]
    fn the_text_shape_table() {
        let image = json!({"type": "image", "data": "AAA=", "mimeType": "image/png"});
        let resource = json!({"type": "resource", "resource": {"uri": "file:///a", "text": "hi"}});
        let cases: Vec<(&str, Value, Value)> = vec![
            (
                "structured, its text the same JSON (other spacing and key order)",
                json!({"content": text_blocks(&["{ \"b\": [1, 2.0], \"a\": \"x\" }"]),
                       "structuredContent": {"a": "x", "b": [1, 2]}}),
                json!({"a": "x", "b": [1, 2]}),
            ),
            (
                "structured, and a text that is something else (a file's contents)",
                json!({"content": text_blocks(&["line 1\nline 2"]),
                       "structuredContent": {"content": "line 1\nline 2"}}),
                json!("line 1\nline 2"),
            ),
            (
                "structured, and a text that is JSON of something else",
                json!({"content": text_blocks(&["{\"content\": \"other\"}"]),
                       "structuredContent": {"content": "{\"a\":1}"}}),
                json!("{\"content\": \"other\"}"),
            ),
            (
                "structured, and a text that is a JSON file (json.loads of it works)",
                json!({"content": text_blocks(&["{\"numbers\": [1, 2]}"]),
                       "structuredContent": {"content": "{\"numbers\": [1, 2]}"}}),
                json!("{\"numbers\": [1, 2]}"),
            ),
            (
                "no structured, a JSON object",
                json!({"content": text_blocks(&["{\"suggestions\": \"fix it\"}"])}),
                json!({"suggestions": "fix it"}),
            ),
            (
                "no structured, a JSON array",
                json!({"content": text_blocks(&[" [1, {\"a\": null}]\n"])}),
                json!([1, {"a": null}]),
            ),
            (
                "no structured, a JSON number stays text",
                json!({"content": text_blocks(&["42"])}),
                json!("42"),
            ),
            (
                "no structured, a JSON string stays its text",
                json!({"content": text_blocks(&["\"quoted\""])}),
                json!("\"quoted\""),
            ),
            (
                "no structured, true and null stay text",
                json!({"content": text_blocks(&["null"])}),
                json!("null"),
            ),
            (
                "no structured, plain text",
                json!({"content": text_blocks(&["Echo: hi"])}),
                json!("Echo: hi"),
            ),
            (
                "several text blocks, joined",
                json!({"content": text_blocks(&["first", "second"])}),
                json!("first\nsecond"),
            ),
            (
                "several text blocks whose join is a JSON array",
                json!({"content": text_blocks(&["[1,", "2]"])}),
                json!([1, 2]),
            ),
            (
                "several text blocks whose join is the structured content",
                json!({"content": text_blocks(&["{\"a\":", "1}"]), "structuredContent": {"a": 1}}),
                json!({"a": 1}),
            ),
            (
                "an image beside text: the content blocks, as today",
                json!({"content": [{"type": "text", "text": "a"}, image.clone()],
                       "structuredContent": {"ignored": true}}),
                json!(["a", image]),
            ),
            (
                "one resource: its block",
                json!({"content": [resource.clone()]}),
                resource.clone(),
            ),
            (
                "empty content, no structured",
                json!({"content": []}),
                Value::Null,
            ),
            (
                "empty content with structured",
                json!({"content": [], "structuredContent": {"a": 1}}),
                json!({"a": 1}),
            ),
            (
                "a BOM before JSON: text",
                json!({"content": text_blocks(&["\u{feff}{\"a\":1}"])}),
                json!("\u{feff}{\"a\":1}"),
            ),
            (
                "a BOM before the structured content's JSON: text",
                json!({"content": text_blocks(&["\u{feff}{\"a\":1}"]), "structuredContent": {"a": 1}}),
                json!("\u{feff}{\"a\":1}"),
            ),
            (
                "trailing garbage after JSON: text",
                json!({"content": text_blocks(&["{\"a\":1} trailing"])}),
                json!("{\"a\":1} trailing"),
            ),
            (
                "trailing garbage after the structured content's JSON: text",
                json!({"content": text_blocks(&["{\"a\":1}}"]), "structuredContent": {"a": 1}}),
                json!("{\"a\":1}}"),
            ),
            (
                "a repeated key is not the structured content",
                json!({"content": text_blocks(&["{\"a\":1,\"a\":1}"]), "structuredContent": {"a": 1, "b": 1}}),
                json!("{\"a\":1,\"a\":1}"),
            ),
            (
                "a member more is not the structured content",
                json!({"content": text_blocks(&["{\"a\":1,\"b\":2}"]), "structuredContent": {"a": 1}}),
                json!("{\"a\":1,\"b\":2}"),
            ),
            (
                "an item fewer is not the structured content",
                json!({"content": text_blocks(&["{\"a\":[1]}"]), "structuredContent": {"a": [1, 2]}}),
                json!("{\"a\":[1]}"),
            ),
        ];
        for (name, input, want) in cases {
            let got = text(result(input.clone()));
            assert_eq!(value(&got), want, "{name}: {input}");
        }
        // isError throws with the upstream's message, structured or not.
        let e = text(result(json!({"content": text_blocks(&["boom"]),
            "structuredContent": {"error": "boom"}, "isError": true})));
        assert_eq!(e, err(CallError::Tool, "boom"));
    }

    /// A text that is not JSON reaches the worker as it is (no JSON escaping on the host),
    /// and a JSON text as its own text on one line, never re-encoded.
    #[test]
    fn texts_go_as_they_are() {
        let got = text(result(
            json!({"content": text_blocks(&["{\n  \"a\": \"x\"\n}\n"])}),
        ));
        let CallOutcome::Ok { value } = &got else {
            panic!("{got:?}")
        };
        assert_eq!(value.get(), "{   \"a\": \"x\" }");
        let got = text(result(json!({"content": text_blocks(&["plain"]),
            "structuredContent": {"content": "plain"}})));
        assert!(
            matches!(&got, CallOutcome::Text { text } if text == "plain"),
            "{got:?}"
        );
    }

    /// Deeply nested JSON text: past the parser's bound it is not JSON, and arrives as text
    /// (with or without structured content); below it, it is compared and parsed as usual.
    #[test]
    fn deep_json_text() {
        let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        let got = text(result(json!({"content": text_blocks(&[&deep(100_000)])})));
        assert!(matches!(&got, CallOutcome::Text { .. }), "{:.80?}", got);
        let structured: Value = serde_json::from_str(&deep(100)).unwrap();
        let got = text(result(json!({"content": text_blocks(&[&deep(100)]),
            "structuredContent": structured.clone()})));
        assert_eq!(value(&got), structured);
        let got = text(result(json!({"content": text_blocks(&[&deep(100_000)]),
            "structuredContent": structured})));
        assert!(matches!(&got, CallOutcome::Text { .. }), "{:.80?}", got);
        // The bound, exactly; brackets inside strings do not count.
        assert!(!too_deep(&deep(MAX_JSON_DEPTH)));
        assert!(too_deep(&deep(MAX_JSON_DEPTH + 1)));
        let quoted = format!("[\"{}\\\"{}\"]", "[".repeat(500), "{".repeat(500));
        assert!(!too_deep(&quoted), "{quoted}");
        let got = text(result(json!({"content": text_blocks(&[&quoted])})));
        assert!(matches!(&got, CallOutcome::Ok { .. }), "{:.80?}", got);
    }

    #[test]
    fn same_json_compares_values_not_texts() {
        let yes = [
            ("1.0", json!(1)),
            ("1e2", json!(100)),
            ("-0", json!(0)),
            ("18446744073709551615", json!(u64::MAX)),
            ("\"\\u00e9\"", json!("é")),
            (
                "{\"a\":{\"b\":[true,null]}}",
                json!({"a": {"b": [true, null]}}),
            ),
            ("  []  ", json!([])),
            ("{}", json!({})),
        ];
        for (t, v) in yes {
            assert!(same_json(t, &v), "{t} {v}");
        }
        let no = [
            ("1", json!("1")),
            ("\"1\"", json!(1)),
            ("9007199254740993", json!(9007199254740992_u64)),
            ("[1,2]", json!([2, 1])),
            ("{\"a\":1}", json!({"a": 1.5})),
            ("{\"a\":1}", json!({"A": 1})),
            ("", json!(null)),
            ("nul", json!(null)),
            ("\"\\ud800\"", json!("\u{fffd}")),
            ("{\"a\":1}{\"a\":1}", json!({"a": 1})),
        ];
        for (t, v) in no {
            assert!(!same_json(t, &v), "{t} {v}");
        }
        // Objects of more members than the bit set holds: any order, each member once.
        for n in [3usize, 64, 65, 200] {
            let members: serde_json::Map<String, Value> =
                (0..n).map(|i| (format!("k{i}"), json!(i))).collect();
            let value = Value::Object(members);
            let reversed: Vec<String> = (0..n).rev().map(|i| format!("\"k{i}\":{i}")).collect();
            assert!(
                same_json(&format!("{{{}}}", reversed.join(",")), &value),
                "{n}"
            );
            let mut twice = reversed.clone();
            twice[0] = twice[1].clone();
            assert!(
                !same_json(&format!("{{{}}}", twice.join(",")), &value),
                "{n}"
            );
            assert!(
                !same_json(&format!("{{{}}}", reversed[1..].join(",")), &value),
                "{n}"
            );
        }
    }
}

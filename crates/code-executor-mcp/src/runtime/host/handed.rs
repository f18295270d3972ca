//! What this run's tool calls handed code, remembered as digests, so that a wrong use of a
//! result can be named: an object or array passed where a tool's argument wants a string
//! is, when it equals the value an earlier call of the run returned, reported with that call
//! and the field to take (`code` wants a string but got the object `filesystem.read_file`
//! returned; take its `.content`).
//!
//! Bounded: the last [`KEPT`] results that were objects or arrays, each a 64-bit digest, the
//! call's name and at most [`HINT_KEYS`] of its string members' names (each cut to
//! [`KEY_BYTES`]): never a copy of a result, whatever its size. A digest is of the value,
//! not of its text: members in any order, numbers as numbers (what a worker decodes and
//! encodes again), read from the JSON text by one pass that builds no tree.

use std::collections::VecDeque;
use std::fmt;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Mutex;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use worker_protocol::CallOutcome;

/// Results remembered per run.
pub(crate) const KEPT: usize = 32;
/// String members named per result.
const HINT_KEYS: usize = 4;
/// Bytes of a member's name kept.
const KEY_BYTES: usize = 64;

/// The results one run's calls handed code, newest last.
#[derive(Default)]
pub(crate) struct Handed {
    recent: Mutex<Recent>,
}

#[derive(Default)]
struct Recent {
    entries: VecDeque<Entry>,
    /// Calls recorded so far, for their ordinal.
    calls: u32,
}

struct Entry {
    digest: u64,
    /// `server.tool`.
    call: String,
    /// Which call of the run it was (1-based).
    ordinal: u32,
    kind: Kind,
}

/// What a remembered result was, for the hint.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    /// An object, with (some of) its members whose values are strings.
    Object { strings: Vec<String> },
    /// An array of `len` items.
    Array { len: usize },
}

impl Handed {
    /// Counts a call of code that failed or was refused (calls are named by their ordinal).
    pub(crate) fn count(&self) {
        if let Ok(mut recent) = self.recent.lock() {
            recent.calls = recent.calls.saturating_add(1);
        }
    }

    /// Counts a call of `server`'s `tool` and remembers what it handed code, when it is an
    /// object or an array (a string, a number, an error: nothing to remember).
    pub(crate) fn record(&self, server: &str, tool: &str, outcome: &CallOutcome) {
        let digest = match outcome {
            CallOutcome::Ok { value } if value.get().starts_with(['{', '[']) => {
                digest_text(value.get())
            }
            _ => None,
        };
        let Ok(mut recent) = self.recent.lock() else {
            return;
        };
        recent.calls = recent.calls.saturating_add(1);
        let ordinal = recent.calls;
        let Some((digest, kind)) = digest else {
            return;
        };
        if recent.entries.len() == KEPT {
            recent.entries.pop_front();
        }
        recent.entries.push_back(Entry {
            digest,
            call: format!("{server}.{tool}"),
            ordinal,
            kind,
        });
    }

    /// Results remembered now (at most [`KEPT`]).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.recent.lock().map_or(0, |r| r.entries.len())
    }

    /// What to say of `value`, an object or array given for argument `name` whose schema
    /// wants a string: the call that returned it, when one of the run's recent calls did,
    /// and what to take instead.
    pub(crate) fn explain(&self, name: &str, value: &Value) -> String {
        let what = match value {
            Value::Array(_) => "an array",
            _ => "an object",
        };
        let found = match (value, digest_value(value)) {
            (Value::Object(_) | Value::Array(_), Some(digest)) => {
                self.recent.lock().ok().and_then(|r| {
                    r.entries
                        .iter()
                        .rev()
                        .find(|e| e.digest == digest)
                        .map(|e| (e.call.clone(), e.ordinal, e.kind.clone()))
                })
            }
            _ => None,
        };
        let Some((call, ordinal, kind)) = found else {
            return format!(
                "`{name}` wants a string but got {what}; pass the text itself (one of its \
                 fields, or the value encoded as JSON text)"
            );
        };
        let take = match &kind {
            Kind::Object { strings } => match strings.as_slice() {
                [one] => format!("take its `.{one}`"),
                [] => "pass the field you need, or the value encoded as JSON text".to_string(),
                many => format!(
                    "take the string field you need ({})",
                    many.iter()
                        .map(|k| format!("`.{k}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            },
            Kind::Array { len } => format!(
                "it has {len} item(s): pass the one you need (or a field of it), or join them"
            ),
        };
        let what = match kind {
            Kind::Object { .. } => "the object",
            Kind::Array { .. } => "the array",
        };
        format!(
            "`{name}` wants a string but got {what} {call} returned (call {ordinal} of this \
             run); {take}"
        )
    }
}

/// The digest of a JSON text (an object or array), with what its hint needs; `None` when it
/// is not JSON (or nests past the parser's bound).
fn digest_text(text: &str) -> Option<(u64, Kind)> {
    let mut de = serde_json::Deserializer::from_str(text);
    let node = Digest { top: true }.deserialize(&mut de).ok()?;
    de.end().ok()?;
    Some((node.digest, node.kind?))
}

/// The digest of a value, the same as of its JSON text.
fn digest_value(value: &Value) -> Option<u64> {
    Digest { top: true }
        .deserialize(value)
        .ok()
        .map(|n| n.digest)
}

/// Hashes what it reads; at the top, also notes the kind and string members.
struct Digest {
    top: bool,
}

/// One value read: its digest, whether it is a string, and at the top its [`Kind`].
struct Node {
    digest: u64,
    string: bool,
    kind: Option<Kind>,
}

fn leaf(tag: u8, f: impl FnOnce(&mut DefaultHasher)) -> Node {
    let mut h = DefaultHasher::new();
    tag.hash(&mut h);
    f(&mut h);
    Node {
        digest: h.finish(),
        string: tag == STRING,
        kind: None,
    }
}

const STRING: u8 = 3;

/// Numbers as the one number type a JavaScript worker has (and `-0` as `0`).
fn number(n: f64) -> Node {
    let n = if n == 0.0 { 0.0 } else { n };
    leaf(2, |h| n.to_bits().hash(h))
}

impl<'de> DeserializeSeed<'de> for Digest {
    type Value = Node;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Node, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Digest {
    type Value = Node;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("JSON")
    }

    fn visit_unit<E>(self) -> Result<Node, E> {
        Ok(leaf(0, |_| {}))
    }

    fn visit_bool<E>(self, b: bool) -> Result<Node, E> {
        Ok(leaf(1, |h| b.hash(h)))
    }

    fn visit_i64<E>(self, n: i64) -> Result<Node, E> {
        Ok(number(n as f64))
    }

    fn visit_u64<E>(self, n: u64) -> Result<Node, E> {
        Ok(number(n as f64))
    }

    fn visit_f64<E>(self, n: f64) -> Result<Node, E> {
        Ok(number(n))
    }

    fn visit_str<E>(self, s: &str) -> Result<Node, E> {
        Ok(leaf(STRING, |h| s.hash(h)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut h = DefaultHasher::new();
        4u8.hash(&mut h);
        let mut len = 0usize;
        while let Some(item) = seq.next_element_seed(Digest { top: false })? {
            item.digest.hash(&mut h);
            len += 1;
        }
        len.hash(&mut h);
        Ok(Node {
            digest: h.finish(),
            string: false,
            kind: self.top.then_some(Kind::Array { len }),
        })
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        // Members in any order: each member's hash, summed.
        let mut sum = 0u64;
        let mut len = 0usize;
        let mut strings = Vec::new();
        loop {
            let want = self.top && strings.len() < HINT_KEYS;
            let Some((key, name)) = map.next_key_seed(KeyDigest { top: want })? else {
                break;
            };
            let value = map.next_value_seed(Digest { top: false })?;
            if value.string
                && strings.len() < HINT_KEYS
                && let Some(name) = name
            {
                strings.push(name);
            }
            let mut h = DefaultHasher::new();
            key.hash(&mut h);
            value.digest.hash(&mut h);
            sum = sum.wrapping_add(h.finish());
            len += 1;
        }
        let mut h = DefaultHasher::new();
        5u8.hash(&mut h);
        sum.hash(&mut h);
        len.hash(&mut h);
        Ok(Node {
            digest: h.finish(),
            string: false,
            kind: self.top.then_some(Kind::Object { strings }),
        })
    }
}

/// A member's key: its hash, and its name (cut to [`KEY_BYTES`]) when a hint may still
/// need it.
struct KeyDigest {
    top: bool,
}

impl<'de> DeserializeSeed<'de> for KeyDigest {
    type Value = (u64, Option<String>);

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeyDigest {
    type Value = (u64, Option<String>);

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a member's key")
    }

    fn visit_str<E>(self, s: &str) -> Result<Self::Value, E> {
        let mut h = DefaultHasher::new();
        s.hash(&mut h);
        Ok((h.finish(), self.top.then(|| cut(s))))
    }
}

fn cut(key: &str) -> String {
    let mut end = key.len().min(KEY_BYTES);
    while !key.is_char_boundary(end) {
        end -= 1;
    }
    key[..end].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::host::scope::ok;
    use serde_json::json;

    fn raw(text: &str) -> CallOutcome {
        CallOutcome::Ok {
            value: serde_json::value::RawValue::from_string(text.into()).unwrap(),
        }
    }

    /// A result is found by its value, however its text was written (member order,
    /// spacing, `1.0` for `1`, escapes), and named with its call and field.
    #[test]
    fn a_result_passed_back_is_named_with_the_field_to_take() {
        let h = Handed::default();
        h.record("fx", "echo", &ok(json!("a string is not remembered")));
        h.record("fx", "list", &raw("[1, 2, 3]"));
        h.record(
            "filesystem",
            "read_file",
            &raw("{\"content\": \"caf\\u00e9\", \"size\": 4.0}"),
        );
        assert_eq!(h.len(), 2);
        let got = json!({"size": 4, "content": "café"});
        let said = h.explain("code", &got);
        assert_eq!(
            said,
            "`code` wants a string but got the object filesystem.read_file returned (call 3 \
             of this run); take its `.content`"
        );
        let said = h.explain("items", &json!([1.0, 2, 3]));
        assert!(
            said.contains("the array fx.list returned (call 2"),
            "{said}"
        );
        assert!(said.contains("3 item(s)"), "{said}");
        // Not a result of this run: said plainly.
        let said = h.explain("code", &json!({"content": "other"}));
        assert_eq!(
            said,
            "`code` wants a string but got an object; pass the text itself (one of its \
             fields, or the value encoded as JSON text)"
        );
        // Several string fields: each named (at most a few).
        h.record("s", "t", &ok(json!({"a": "1", "b": "2", "n": 3})));
        let said = h.explain("x", &json!({"n": 3, "b": "2", "a": "1"}));
        assert!(
            said.ends_with("take the string field you need (`.a`, `.b`)"),
            "{said}"
        );
    }

    /// However many and however large the results, what is kept is the last [`KEPT`]
    /// digests with short names: the oldest are forgotten.
    #[test]
    fn bounded_whatever_the_results() {
        let h = Handed::default();
        let huge = format!(
            "{{\"content\": \"{}\", \"{}\": \"long key\"}}",
            "x".repeat(4 << 20),
            "k".repeat(10_000)
        );
        h.record("fs", "read", &raw(&huge));
        let said = h.explain("code", &serde_json::from_str::<Value>(&huge).unwrap());
        assert!(said.contains("fs.read returned (call 1"), "{said}");
        assert!(said.len() < 400, "{} bytes", said.len());
        for i in 0..(KEPT * 10) {
            h.record("fx", "n", &ok(json!({ "i": i })));
        }
        assert_eq!(h.len(), KEPT);
        let said = h.explain("code", &json!({"i": 0}));
        assert!(!said.contains("returned"), "forgotten: {said}");
        let said = h.explain("code", &json!({ "i": KEPT * 10 - 1 }));
        assert!(
            said.contains(&format!("(call {} of", KEPT * 10 + 1)),
            "{said}"
        );
        // Text, a scalar or an error: nothing recorded, nothing breaks.
        let before = h.len();
        h.record(
            "fx",
            "s",
            &CallOutcome::Text {
                text: "{not json".into(),
            },
        );
        h.record("fx", "n", &ok(json!(1)));
        h.record(
            "fx",
            "e",
            &crate::runtime::host::scope::err(worker_protocol::CallError::Tool, "x"),
        );
        assert_eq!(h.len(), before);
    }
}

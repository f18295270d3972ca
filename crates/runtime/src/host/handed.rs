//! What this run's tool calls handed code, remembered as digests, so that a wrong use of a
//! result can be named: an object or array passed where a tool's argument wants a string
//! is, when it equals the value an earlier call of the run returned, reported with that call
//! and the field to take (`code` wants a string but got the object `filesystem.read_file`
//! returned; take its `.content`).
//!
//! Bounded: the last [`KEPT`] results that were objects or arrays, each a 64-bit digest, the
//! call's name and at most [`HINT_KEYS`] of its string members' names (each cut to
//! [`KEY_BYTES`]): never a copy kept of a result, whatever its size. A digest is of the
//! value, not of its text: members in any order, numbers as numbers (what a worker decodes
//! and encodes again), read from the JSON text by one pass that builds no tree, with a fast
//! multiply-rotate hash; a result of [`HASH_BESIDE_BYTES`] or more is hashed on a blocking
//! thread from a transient copy while the original goes to code, and an explanation waits
//! for digests still being made. (A 6 MB document of records: about 3 RawValue scans.)

use std::collections::VecDeque;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use worker_protocol::CallOutcome;

/// Results remembered per run.
pub const KEPT: usize = 32;
/// String members named per result.
const HINT_KEYS: usize = 4;
/// Bytes of a member's name kept.
const KEY_BYTES: usize = 64;

/// Results of this many bytes or more are hashed on a blocking thread, from a copy, while the
/// original goes to code (as the audit line's argument hash is: `policy::audit::ArgsDigest`).
const HASH_BESIDE_BYTES: usize = 256 * 1024;
/// Longest an explanation waits for digests still being made.
const WAIT_FOR_DIGESTS: Duration = Duration::from_secs(2);

/// The results one run's calls handed code.
#[derive(Default)]
pub struct Handed {
    shared: Arc<Shared>,
}

#[derive(Default)]
struct Shared {
    recent: Mutex<Recent>,
    /// Signalled when a digest made beside the call is in.
    done: Condvar,
}

#[derive(Default)]
struct Recent {
    entries: VecDeque<Entry>,
    /// Calls recorded so far, for their ordinal.
    calls: u32,
    /// Digests being made beside their calls.
    pending: usize,
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

impl Shared {
    fn insert(&self, entry: Option<Entry>, was_pending: bool) {
        let Ok(mut recent) = self.recent.lock() else {
            return;
        };
        if was_pending {
            recent.pending = recent.pending.saturating_sub(1);
            self.done.notify_all();
        }
        let Some(entry) = entry else {
            return;
        };
        if recent.entries.len() == KEPT {
            recent.entries.pop_front();
        }
        recent.entries.push_back(entry);
    }
}

impl Handed {
    /// Counts a call of code that failed or was refused (calls are named by their ordinal).
    pub fn count(&self) {
        if let Ok(mut recent) = self.shared.recent.lock() {
            recent.calls = recent.calls.saturating_add(1);
        }
    }

    /// Counts a call of `server`'s `tool` and remembers what it handed code, when it is an
    /// object or an array (a string, a number, an error: nothing to remember). A large
    /// result is hashed beside the call, from a copy, so the reply does not wait for it.
    pub fn record(&self, server: &str, tool: &str, outcome: &CallOutcome) {
        let text = match outcome {
            CallOutcome::Ok { value } if value.get().starts_with(['{', '[']) => Some(value.get()),
            _ => None,
        };
        let beside = text
            .filter(|t| t.len() >= HASH_BESIDE_BYTES)
            .and_then(|_| tokio::runtime::Handle::try_current().ok());
        let ordinal = {
            let Ok(mut recent) = self.shared.recent.lock() else {
                return;
            };
            recent.calls = recent.calls.saturating_add(1);
            if beside.is_some() {
                recent.pending += 1;
            }
            recent.calls
        };
        let Some(text) = text else {
            return;
        };
        let call = format!("{server}.{tool}");
        let entry = move |text: &str| {
            digest_text(text).map(|(digest, kind)| Entry {
                digest,
                call,
                ordinal,
                kind,
            })
        };
        match beside {
            Some(runtime) => {
                let copy = text.to_string();
                let shared = self.shared.clone();
                runtime.spawn_blocking(move || shared.insert(entry(&copy), true));
            }
            None => self.shared.insert(entry(text), false),
        }
    }

    /// Results remembered now (at most [`KEPT`]).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.shared.recent.lock().map_or(0, |r| r.entries.len())
    }

    /// The newest remembered result with `digest`, once the digests being made are in (at
    /// most [`WAIT_FOR_DIGESTS`]: a refused call waits, no other).
    fn find(&self, digest: u64) -> Option<(String, u32, Kind)> {
        let recent = self.shared.recent.lock().ok()?;
        let (recent, _) = self
            .shared
            .done
            .wait_timeout_while(recent, WAIT_FOR_DIGESTS, |r| r.pending > 0)
            .ok()?;
        recent
            .entries
            .iter()
            .filter(|e| e.digest == digest)
            .max_by_key(|e| e.ordinal)
            .map(|e| (e.call.clone(), e.ordinal, e.kind.clone()))
    }

    /// What to say of `value`, an object or array given for argument `name` whose schema
    /// wants a string: the call that returned it, when one of the run's recent calls did,
    /// and what to take instead.
    pub fn explain(&self, name: &str, value: &Value) -> String {
        let what = match value {
            Value::Array(_) => "an array",
            _ => "an object",
        };
        let found = match (value, digest_value(value)) {
            (Value::Object(_) | Value::Array(_), Some(digest)) => self.find(digest),
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

/// A fast, fixed hash (a multiply-rotate over 8-byte words, as rustc's `FxHasher`): the
/// digests name a result in an error message, nothing trusts them, and a result of
/// megabytes is hashed on the way to code, so speed is what counts.
#[derive(Default)]
struct Fx(u64);

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl Fx {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for Fx {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.add(u64::from_le_bytes(w));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(w));
        }
        self.add(bytes.len() as u64);
    }

    fn write_u8(&mut self, n: u8) {
        self.add(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }

    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }

    fn finish(&self) -> u64 {
        // A last mix, so that nearby inputs spread over the whole word.
        let mut x = self.0;
        x ^= x >> 33;
        x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
        x ^= x >> 33;
        x
    }
}

fn leaf(tag: u8, f: impl FnOnce(&mut Fx)) -> Node {
    let mut h = Fx::default();
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
        let mut h = Fx::default();
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
            let mut h = Fx::default();
            key.hash(&mut h);
            value.digest.hash(&mut h);
            sum = sum.wrapping_add(h.finish());
            len += 1;
        }
        let mut h = Fx::default();
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
        let mut h = Fx::default();
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
    use crate::host::scope::ok;
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
            &crate::host::scope::err(worker_protocol::CallError::Tool, "x"),
        );
        assert_eq!(h.len(), before);
    }

    /// A large result is hashed beside its call; a wrong use right after it still finds it
    /// (the explanation waits for the digest).
    #[tokio::test]
    async fn a_large_result_is_hashed_beside_and_still_found() {
        let h = Handed::default();
        let big = format!("{{\"content\": \"{}\"}}", "y".repeat(HASH_BESIDE_BYTES));
        h.record("fs", "read", &raw(&big));
        let said = h.explain("code", &serde_json::from_str::<Value>(&big).unwrap());
        assert!(
            said.contains("fs.read returned (call 1 of this run); take its `.content`"),
            "{said}"
        );
        assert_eq!(h.len(), 1);
    }
}

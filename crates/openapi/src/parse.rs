//! Bounded reading of a JSON or YAML document into a `serde_json::Value`: the bytes, the
//! nesting depth, the number of values and the bytes of strings after YAML aliases expand
//! (the "billion laughs"), all capped before memory or the stack run out.

use std::cell::{Cell, RefCell};
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

use crate::error::SpecError;

/// The document's syntax.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    Json,
    Yaml,
    /// JSON when the first non-blank character is `{` or `[`, YAML otherwise.
    #[default]
    Sniff,
}

/// Caps on what a document may cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The document's size in bytes.
    pub max_bytes: usize,
    /// Nesting of arrays and objects (below serde_json's and serde_yaml_ng's own 128).
    pub max_depth: usize,
    /// Values (objects, arrays, scalars) after YAML aliases expand.
    pub max_nodes: usize,
    /// Bytes of keys and strings after YAML aliases expand.
    pub max_string_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_bytes: 64 << 20,
            max_depth: 100,
            max_nodes: 8_000_000,
            max_string_bytes: 128 << 20,
        }
    }
}

/// Reads `bytes` as `format` within `limits`.
pub(crate) fn parse_value(
    bytes: &[u8],
    format: Format,
    limits: &Limits,
) -> Result<Value, SpecError> {
    if bytes.len() > limits.max_bytes {
        return Err(SpecError::TooLarge {
            len: bytes.len(),
            max: limits.max_bytes,
        });
    }
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let format = match format {
        Format::Sniff => match bytes.iter().find(|b| !b.is_ascii_whitespace()) {
            Some(b'{' | b'[') => Format::Json,
            _ => Format::Yaml,
        },
        f => f,
    };
    let budget = Budget {
        limits: *limits,
        nodes: Cell::new(0),
        string_bytes: Cell::new(0),
        path: RefCell::new(Vec::new()),
        failure: RefCell::new(None),
    };
    let seed = Node {
        budget: &budget,
        depth: 0,
    };
    let result = match format {
        Format::Json => {
            let mut de = serde_json::Deserializer::from_slice(bytes);
            seed.deserialize(&mut de)
                .and_then(|v| de.end().map(|()| v))
                .map_err(|e| SpecError::Json(e.to_string()))
        }
        _ => {
            let de = serde_yaml_ng::Deserializer::from_slice(bytes);
            seed.deserialize(de)
                .map_err(|e| SpecError::Yaml(e.to_string()))
        }
    };
    // A budget failure surfaces from serde as a custom error; report the typed one.
    if let Some(failure) = budget.failure.into_inner() {
        return Err(failure);
    }
    result.map_err(|e| match e {
        SpecError::Json(m) | SpecError::Yaml(m) if m.contains("recursion limit exceeded") => {
            SpecError::TooDeep {
                max: limits.max_depth,
                pointer: "(the parser's own limit)".to_owned(),
            }
        }
        other => other,
    })
}

struct Budget {
    limits: Limits,
    nodes: Cell<usize>,
    string_bytes: Cell<usize>,
    path: RefCell<Vec<String>>,
    failure: RefCell<Option<SpecError>>,
}

impl Budget {
    fn pointer(&self) -> String {
        let path = self.path.borrow();
        if path.is_empty() {
            return "/".to_owned();
        }
        path.iter()
            .map(|p| format!("/{}", p.replace('~', "~0").replace('/', "~1")))
            .collect()
    }

    fn fail<E: de::Error>(&self, error: SpecError) -> E {
        let msg = error.to_string();
        *self.failure.borrow_mut() = Some(error);
        E::custom(msg)
    }

    fn node<E: de::Error>(&self) -> Result<(), E> {
        let n = self.nodes.get() + 1;
        self.nodes.set(n);
        if n > self.limits.max_nodes {
            return Err(self.fail(SpecError::TooManyNodes {
                max: self.limits.max_nodes,
                pointer: self.pointer(),
            }));
        }
        Ok(())
    }

    fn string<E: de::Error>(&self, len: usize) -> Result<(), E> {
        let n = self.string_bytes.get().saturating_add(len);
        self.string_bytes.set(n);
        if n > self.limits.max_string_bytes {
            return Err(self.fail(SpecError::TooManyBytes {
                max: self.limits.max_string_bytes,
                pointer: self.pointer(),
            }));
        }
        Ok(())
    }
}

#[derive(Clone, Copy)]
struct Node<'b> {
    budget: &'b Budget,
    depth: usize,
}

impl<'de> DeserializeSeed<'de> for Node<'_> {
    type Value = Value;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Node<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-compatible value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        self.budget.node()?;
        Ok(Value::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        self.budget.node()?;
        Ok(Value::Number(v.into()))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        self.budget.node()?;
        Ok(Value::Number(v.into()))
    }
    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Value, E> {
        // Beyond 64 bits: JSON numbers are doubles to most readers anyway.
        #[allow(clippy::cast_precision_loss, reason = "documented rounding")]
        self.visit_f64(v as f64)
    }
    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Value, E> {
        #[allow(clippy::cast_precision_loss, reason = "documented rounding")]
        self.visit_f64(v as f64)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        self.budget.node()?;
        // YAML's `.nan` and `.inf` have no JSON spelling.
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        self.budget.node()?;
        self.budget.string(v.len())?;
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        self.budget.node()?;
        self.budget.string(v.len())?;
        Ok(Value::String(v))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        self.budget.node()?;
        Ok(Value::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        self.visit_unit()
    }
    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }

    /// A YAML value with a custom tag (`!tag value`): the value, the tag dropped.
    fn visit_enum<A: de::EnumAccess<'de>>(self, data: A) -> Result<Value, A::Error> {
        let (_tag, variant): (String, _) = data.variant()?;
        de::VariantAccess::newtype_variant_seed(variant, self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        self.budget.node()?;
        let child = self.child()?;
        let mut out = Vec::new();
        loop {
            self.budget.path.borrow_mut().push(out.len().to_string());
            let next = seq.next_element_seed(child);
            self.budget.path.borrow_mut().pop();
            match next? {
                Some(v) => out.push(v),
                None => break,
            }
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        self.budget.node()?;
        let child = self.child()?;
        let mut out = Map::new();
        while let Some(key) = map.next_key_seed(Key(self.budget))? {
            self.budget.path.borrow_mut().push(key.clone());
            let value = map.next_value_seed(child);
            self.budget.path.borrow_mut().pop();
            out.insert(key, value?);
        }
        Ok(Value::Object(out))
    }
}

impl Node<'_> {
    fn child<E: de::Error>(self) -> Result<Self, E> {
        if self.depth >= self.budget.limits.max_depth {
            return Err(self.budget.fail(SpecError::TooDeep {
                max: self.budget.limits.max_depth,
                pointer: self.budget.pointer(),
            }));
        }
        Ok(Node {
            budget: self.budget,
            depth: self.depth + 1,
        })
    }
}

/// A mapping key: YAML allows any scalar (`200:` is an integer), JSON only strings.
struct Key<'b>(&'b Budget);

impl<'de> DeserializeSeed<'de> for Key<'_> {
    type Value = String;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<String, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Key<'_> {
    type Value = String;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a scalar mapping key")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<String, E> {
        self.0.string(v.len())?;
        Ok(v.to_owned())
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<String, E> {
        self.0.string(v.len())?;
        Ok(v)
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_unit<E: de::Error>(self) -> Result<String, E> {
        Ok("null".to_owned())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]
    use super::*;

    #[test]
    fn yaml_integer_keys_become_strings() {
        let v = parse_value(
            b"responses:\n  200:\n    description: ok\n",
            Format::Yaml,
            &Limits::default(),
        )
        .unwrap();
        assert_eq!(v["responses"]["200"]["description"], "ok");
    }

    #[test]
    fn yaml_scalars_beyond_json() {
        let v = parse_value(
            b"big: 123456789012345678901234567890\nneg: -99999999999999999999\nnan: .nan\ninf: .inf\nnull_key: {null: 1, true: 2, 1.5: 3}\n",
            Format::Yaml,
            &Limits::default(),
        )
        .unwrap();
        assert!(v["big"].as_f64().is_some_and(|f| f > 1e29));
        assert!(v["neg"].as_f64().is_some_and(|f| f < -1e19));
        assert_eq!(v["nan"], Value::Null);
        assert_eq!(v["inf"], Value::Null);
        assert_eq!(v["null_key"]["null"], 1);
        assert_eq!(v["null_key"]["true"], 2);
        assert_eq!(v["null_key"]["1.5"], 3);
        let tagged = parse_value(b"a: !custom 1\n", Format::Yaml, &Limits::default());
        assert_eq!(
            tagged.unwrap()["a"],
            1,
            "a custom tag is dropped, its value kept"
        );
        assert!(parse_value(b"a: 1\n---\nb: 2\n", Format::Yaml, &Limits::default()).is_err());
    }

    #[test]
    fn depth_is_capped_with_a_pointer() {
        let doc = format!("{{\"a\":{}1{}}}", "[".repeat(20), "]".repeat(20));
        let limits = Limits {
            max_depth: 10,
            ..Limits::default()
        };
        let err = parse_value(doc.as_bytes(), Format::Json, &limits).unwrap_err();
        match err {
            SpecError::TooDeep { max: 10, pointer } => {
                assert!(pointer.starts_with("/a/0/0"), "{pointer}")
            }
            other => panic!("{other}"),
        }
    }

    #[test]
    fn sniffing_picks_json_or_yaml() {
        let limits = Limits::default();
        assert_eq!(
            parse_value(b"  {\"a\": 1}", Format::Sniff, &limits).unwrap()["a"],
            1
        );
        assert_eq!(
            parse_value(b"a: 1", Format::Sniff, &limits).unwrap()["a"],
            1
        );
        assert_eq!(
            parse_value(b"\xEF\xBB\xBF{\"a\": 1}", Format::Sniff, &limits).unwrap()["a"],
            1
        );
    }

    #[test]
    fn size_is_capped_before_parsing() {
        let limits = Limits {
            max_bytes: 4,
            ..Limits::default()
        };
        assert!(matches!(
            parse_value(b"{\"a\": 1}", Format::Json, &limits),
            Err(SpecError::TooLarge { len: 8, max: 4 })
        ));
    }
}

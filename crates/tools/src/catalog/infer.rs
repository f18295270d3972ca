//! Output types learned from results: the shape of what code receives from a tool that
//! declares no `outputSchema`, merged over every result that came back.
//!
//! A [`Shape`] is a union of the JSON kinds a position held: `null`, boolean, integer,
//! number, string, an array (with the merged shape of its elements) and an object (its
//! fields, each counted, so a field missing from some objects is optional). It is read
//! straight from the result's JSON text ([`Shape::of_json`]), never through a value tree,
//! and it holds no value: no string, number, length or format of the data, only kinds and
//! field names. A key that does not look like a field name (too long, token-like, with many
//! digits, spaces or punctuation: `alice@example.com`, `2024-01-01`, a UUID, an API key)
//! makes its object a map (`Record<string, T>`), whose keys are not kept; so does an object
//! with more than [`MAX_FIELDS`] fields.
//!
//! Bounded: past [`MAX_DEPTH`] levels a position is `any`, and a shape of more than
//! [`MAX_NODES`] positions is cut to fewer levels until it fits. Merging only widens, so a
//! result that contradicts what was seen widens the type; nothing is ever refused because
//! of an inferred type.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// Levels below the result's root that are typed; deeper ones are `any`.
pub const MAX_DEPTH: usize = 8;
/// Distinct fields an object may have before it is taken as a map.
pub const MAX_FIELDS: usize = 64;
/// Positions a shape may have; a larger one is cut to fewer levels.
pub const MAX_NODES: usize = 1024;
/// Longest key kept as a field name.
const MAX_KEY_CHARS: usize = 40;

/// The kinds one position of a result held, over every result merged into it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Shape {
    #[serde(default, skip_serializing_if = "is_false")]
    any: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    null: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    boolean: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    integer: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    number: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    string: bool,
    /// The merged shape of every element of every array seen here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    array: Option<Box<Shape>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    object: Option<Obj>,
}

/// The objects seen at one position.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Obj {
    /// How many objects were merged here.
    seen: u64,
    /// Field name -> in how many of them it was, and its shape.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    fields: BTreeMap<String, Field>,
    /// Set when the keys are data, not field names: the shape of every value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    map: Option<Box<Shape>>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Field {
    seen: u64,
    shape: Shape,
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl Shape {
    /// `any`: what a position past the depth bound is.
    fn any() -> Shape {
        Shape {
            any: true,
            ..Shape::default()
        }
    }

    /// The shape of a string: what code receives from a text that is not JSON.
    pub fn string() -> Shape {
        Shape {
            string: true,
            ..Shape::default()
        }
    }

    /// The shape of `json`, read as it is parsed; `None` when it is not JSON.
    #[cfg(test)]
    pub fn of_json(json: &str) -> Option<Shape> {
        Shape::of_json_with(json, &|_| false)
    }

    /// The shape of `json`; a key that `data` says is data (personal data a detector finds:
    /// `policy::pii`) is not kept as a field name, like any other key that reads as
    /// data: its object becomes a map.
    pub fn of_json_with(json: &str, data: DataKey<'_>) -> Option<Shape> {
        let mut de = serde_json::Deserializer::from_str(json);
        let shape = Seed { depth: 0, data }.deserialize(&mut de).ok()?;
        de.end().ok()?;
        Some(shape.bounded())
    }

    /// The shape of a value already decoded (structured content, a content block's object);
    /// `data` as in [`Shape::of_json_with`].
    pub fn of_value_with(v: &Value, data: DataKey<'_>) -> Shape {
        Seed { depth: 0, data }
            .deserialize(v)
            .unwrap_or_else(|_| Shape::any())
            .bounded()
    }

    #[cfg(test)]
    pub fn of_value(v: &Value) -> Shape {
        Shape::of_value_with(v, &|_| false)
    }

    /// An array whose elements have `items`' shapes (a result of several content blocks).
    pub fn array_of(items: impl IntoIterator<Item = Shape>) -> Shape {
        let mut elem = Shape::default();
        for s in items {
            elem.merge(s);
        }
        Shape {
            array: Some(Box::new(elem)),
            ..Shape::default()
        }
        .bounded()
    }

    /// Widens `self` to also describe what `other` describes.
    pub fn merge(&mut self, other: Shape) {
        if self.any || other.any {
            *self = Shape::any();
            return;
        }
        self.null |= other.null;
        self.boolean |= other.boolean;
        self.integer |= other.integer;
        self.number |= other.number;
        self.string |= other.string;
        if let Some(a) = other.array {
            match &mut self.array {
                Some(mine) => mine.merge(*a),
                None => self.array = Some(a),
            }
        }
        if let Some(o) = other.object {
            match &mut self.object {
                Some(mine) => mine.merge(o),
                None => self.object = Some(o),
            }
        }
    }

    /// `self` merged with `other`, cut to the bounds.
    pub fn merged(mut self, other: Shape) -> Shape {
        self.merge(other);
        self.bounded()
    }

    /// Positions in this shape.
    fn nodes(&self) -> usize {
        1 + self.array.as_ref().map_or(0, |a| a.nodes())
            + self.object.as_ref().map_or(0, |o| {
                o.fields.values().map(|f| f.shape.nodes()).sum::<usize>()
                    + o.map.as_ref().map_or(0, |m| m.nodes())
            })
    }

    /// Cut to at most [`MAX_NODES`] positions, by typing fewer levels.
    fn bounded(mut self) -> Shape {
        let mut depth = MAX_DEPTH;
        while self.nodes() > MAX_NODES && depth > 0 {
            depth -= 1;
            self.cut(depth);
        }
        self
    }

    /// Positions deeper than `levels` below this one become `any`.
    fn cut(&mut self, levels: usize) {
        if levels == 0 {
            if self.array.is_some() || self.object.is_some() {
                *self = Shape::any();
            }
            return;
        }
        if let Some(a) = &mut self.array {
            a.cut(levels - 1);
        }
        if let Some(o) = &mut self.object {
            for f in o.fields.values_mut() {
                f.shape.cut(levels - 1);
            }
            if let Some(m) = &mut o.map {
                m.cut(levels - 1);
            }
        }
    }

    /// Whether nothing was ever seen here (the elements of arrays that were always empty).
    fn is_empty(&self) -> bool {
        *self == Shape::default()
    }

    /// This shape as a JSON Schema: `{}` for `any` or nothing seen; a field in every object
    /// is required; a map is `additionalProperties`.
    pub fn to_schema(&self) -> Value {
        if self.any || self.is_empty() {
            return json!({});
        }
        let mut simple: Vec<&str> = Vec::new();
        let mut complex: Vec<Value> = Vec::new();
        if self.string {
            simple.push("string");
        }
        if self.number {
            simple.push("number");
        } else if self.integer {
            simple.push("integer");
        }
        if self.boolean {
            simple.push("boolean");
        }
        if let Some(items) = &self.array {
            complex.push(json!({"type": "array", "items": items.to_schema()}));
        }
        if let Some(o) = &self.object {
            complex.push(o.to_schema());
        }
        if self.null {
            simple.push("null");
        }
        match (simple.len(), complex.len()) {
            (0, 1) => complex.remove(0),
            (1, 0) => json!({"type": simple[0]}),
            (_, 0) => json!({"type": simple}),
            _ => {
                let mut all = complex;
                all.extend(simple.iter().map(|t| json!({"type": t})));
                json!({"anyOf": all})
            }
        }
    }
}

impl Obj {
    fn merge(&mut self, other: Obj) {
        self.seen += other.seen;
        if let Some(m) = other.map {
            self.fold_into_map();
            if let Some(mine) = &mut self.map {
                mine.merge(*m);
            }
        }
        for (k, f) in other.fields {
            self.add(k, f);
        }
    }

    /// Adds a field seen in `f.seen` objects; past [`MAX_FIELDS`], or a key that is data,
    /// the object becomes a map.
    fn add(&mut self, key: String, f: Field) {
        if let Some(m) = &mut self.map {
            m.merge(f.shape);
            return;
        }
        if !is_field_name(&key)
            || (self.fields.len() >= MAX_FIELDS && !self.fields.contains_key(&key))
        {
            self.fold_into_map();
            if let Some(m) = &mut self.map {
                m.merge(f.shape);
            }
            return;
        }
        match self.fields.get_mut(&key) {
            Some(mine) => {
                mine.seen += f.seen;
                mine.shape.merge(f.shape);
            }
            None => {
                self.fields.insert(key, f);
            }
        }
    }

    /// Folds every field into one value shape; the keys are dropped.
    fn fold_into_map(&mut self) {
        if self.map.is_some() {
            return;
        }
        let mut values = Shape::default();
        for (_, f) in std::mem::take(&mut self.fields) {
            values.merge(f.shape);
        }
        self.map = Some(Box::new(values));
    }

    fn to_schema(&self) -> Value {
        if let Some(m) = &self.map {
            return json!({"type": "object", "additionalProperties": m.to_schema()});
        }
        let mut props = Map::new();
        let mut required = Vec::new();
        for (k, f) in &self.fields {
            props.insert(k.clone(), f.shape.to_schema());
            if f.seen >= self.seen {
                required.push(Value::String(k.clone()));
            }
        }
        let mut v = json!({"type": "object", "properties": props});
        if !required.is_empty() {
            v["required"] = Value::Array(required);
        }
        v
    }
}

/// Whether `key` reads as a field name rather than data: an identifier-like word
/// (`user_id`, `createdAt`, `@type`, `content-type`) of at most 40 characters, with at most
/// three digits and not shaped like a token (long with many capitals).
pub fn is_field_name(key: &str) -> bool {
    let body = key.strip_prefix(['@', '$']).unwrap_or(key);
    let chars = body.chars().count();
    if chars == 0 || chars > MAX_KEY_CHARS {
        return false;
    }
    let mut it = body.chars();
    if !it
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
    {
        return false;
    }
    if !body
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return false;
    }
    let digits = body.chars().filter(char::is_ascii_digit).count();
    let upper = body.chars().filter(char::is_ascii_uppercase).count();
    digits <= 3 && !(chars > 12 && upper * 10 > chars * 3)
}

/// Whether an object key is data that must not be kept (asked only of keys that read as
/// field names).
pub type DataKey<'k> = &'k dyn Fn(&str) -> bool;

/// Builds a [`Shape`] while the JSON is parsed.
struct Seed<'k> {
    depth: usize,
    data: DataKey<'k>,
}

impl<'de> DeserializeSeed<'de> for Seed<'_> {
    type Value = Shape;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Shape, D::Error> {
        if self.depth > MAX_DEPTH {
            d.deserialize_ignored_any(IgnoredAny)?;
            return Ok(Shape::any());
        }
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Seed<'_> {
    type Value = Shape;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("JSON")
    }

    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<Shape, E> {
        Ok(Shape {
            boolean: true,
            ..Shape::default()
        })
    }

    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<Shape, E> {
        Ok(Shape {
            integer: true,
            ..Shape::default()
        })
    }

    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<Shape, E> {
        self.visit_i64(0)
    }

    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<Shape, E> {
        Ok(Shape {
            number: true,
            ..Shape::default()
        })
    }

    fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<Shape, E> {
        Ok(Shape::string())
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Shape, E> {
        Ok(Shape {
            null: true,
            ..Shape::default()
        })
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<Shape, E> {
        self.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Shape, D::Error> {
        self.deserialize(d)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Shape, A::Error> {
        let mut elem = Shape::default();
        while let Some(s) = seq.next_element_seed(Seed {
            depth: self.depth + 1,
            data: self.data,
        })? {
            elem.merge(s);
        }
        Ok(Shape {
            array: Some(Box::new(elem)),
            ..Shape::default()
        })
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Shape, A::Error> {
        let mut obj = Obj {
            seen: 1,
            ..Obj::default()
        };
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            let shape = map.next_value_seed(Seed {
                depth: self.depth + 1,
                data: self.data,
            })?;
            // A key that is data is kept as no name at all (which makes its object a map).
            let key = if is_field_name(&key) && (self.data)(&key) {
                String::new()
            } else {
                key.into_owned()
            };
            obj.add(key, Field { seen: 1, shape });
        }
        Ok(Shape {
            object: Some(obj),
            ..Shape::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(v: Value) -> Shape {
        Shape::of_json(&v.to_string()).unwrap()
    }

    fn merged(vs: &[Value]) -> Value {
        let mut s = Shape::default();
        for v in vs {
            s.merge(of(v.clone()));
        }
        s.bounded().to_schema()
    }

    #[test]
    fn records_merge_with_optional_fields_and_unions() {
        let got = merged(&[
            json!([{"id": 1, "name": "a", "tags": ["x"]}, {"id": 2, "name": null}]),
            json!([{"id": 3.5, "name": "c", "extra": true}]),
        ]);
        assert_eq!(
            got,
            json!({"type": "array", "items": {"type": "object", "properties": {
                "extra": {"type": "boolean"},
                "id": {"type": "number"},
                "name": {"type": ["string", "null"]},
                "tags": {"type": "array", "items": {"type": "string"}},
            }, "required": ["id", "name"]}})
        );
    }

    #[test]
    fn mixed_kinds_become_any_of() {
        let got = merged(&[json!({"a": 1}), json!("text"), json!(null)]);
        assert_eq!(
            got,
            json!({"anyOf": [
                {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
                {"type": "string"}, {"type": "null"}]})
        );
        assert_eq!(merged(&[json!([])]), json!({"type": "array", "items": {}}));
    }

    #[test]
    fn data_keys_make_a_map_and_are_not_kept() {
        for key in [
            "alice@example.com",
            "2024-01-01",
            "550e8400-e29b-41d4-a716-446655440000",
            "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
            "ghp_AbCdEfGhIjKlMnOpQrStUv",
            "a key with spaces",
            "[redacted]",
            &"x".repeat(41),
        ] {
            let got = merged(&[json!({"total": 2, "byUser": {key: {"n": 1}, "bob": {"n": 2}}})]);
            assert!(!got.to_string().contains(key), "{key}: {got}");
            assert_eq!(
                got["properties"]["byUser"]["additionalProperties"]["properties"]["n"],
                json!({"type": "integer"}),
                "{key}: {got}"
            );
        }
        for key in [
            "user_id",
            "createdAt",
            "@type",
            "content-type",
            "isExternalCollaboratorEnabled",
            "sha256",
        ] {
            assert!(is_field_name(key), "{key}");
        }
    }

    #[test]
    fn wide_deep_and_huge_inputs_stay_bounded() {
        let wide: Map<String, Value> = (0..500).map(|i| (format!("f{i}"), json!(i))).collect();
        let got = merged(&[Value::Object(wide)]);
        assert_eq!(
            got,
            json!({"type": "object", "additionalProperties": {"type": "integer"}})
        );
        let mut deep = json!(1);
        for _ in 0..500 {
            deep = json!({ "a": deep });
        }
        // serde_json's own recursion limit refuses this text; built as a value, it is cut.
        let s = Shape::of_value(&deep);
        assert!(s.nodes() <= MAX_DEPTH + 2, "{}", s.nodes());
        let mut v = Map::new();
        for i in 0..60 {
            let inner: Map<String, Value> = (0..60)
                .map(|j| (format!("g{j}"), json!({"x": [{"y": i}]})))
                .collect();
            v.insert(format!("k{i}"), Value::Object(inner));
        }
        let s = of(Value::Object(v));
        assert!(s.nodes() <= MAX_NODES, "{}", s.nodes());
        // Widening: a contradicting result never narrows.
        let mut a = of(json!({"n": 1}));
        a.merge(of(json!({"n": "one"})));
        assert_eq!(
            a.to_schema()["properties"]["n"],
            json!({"type": ["string", "integer"]})
        );
    }

    #[test]
    fn no_value_is_kept() {
        let secret = "s3cr3t-Value-do-not-keep";
        let s = of(json!({"token": secret, "n": 123456789, "list": [secret, 1.25e300]}));
        let stored = serde_json::to_string(&s).unwrap();
        let schema = s.to_schema().to_string();
        for text in [stored, schema] {
            assert!(
                !text.contains(secret) && !text.contains("123456789") && !text.contains("1.25"),
                "{text}"
            );
        }
        assert!(Shape::of_json("{not json").is_none());
        assert!(Shape::of_json("1 2").is_none());
    }
}

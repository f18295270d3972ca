//! A JSON object edited as text: every value setup does not own keeps its exact bytes.
//!
//! Parsing a client's file into `serde_json::Value` and printing it again changes what setup
//! does not own: integers beyond 64 bits become floats (`1.2345678901234568e+29`), `1e400`
//! does not parse at all, `1.0`, `-0`, `"\u00e9"` and the spacing are rewritten. So the file
//! is read as a tree of objects whose members keep their source text: the whitespace before
//! the key, the key as written, the separator, the value, and the whitespace after it.
//! Only objects are opened; every other value stays source text until setup replaces it.
//! Rendering joins the pieces again, so an untouched object renders to its exact source and
//! an edited one changes only the members setup set, removed or added (a new member copies
//! the layout of its last sibling). Duplicate keys are kept; lookups see the last one, as
//! JavaScript's `JSON.parse` does.
//!
//! Numbers are scanned, never converted (no `arbitrary_precision` needed); the text is
//! checked to be JSON first with `serde::de::IgnoredAny`, which accepts any number.

use serde_json::Value;

use super::error::EditError;

/// How new text is laid out: the file's indentation unit, and whether it is pretty-printed
/// at all (a one-line file gets one-line additions).
#[derive(Debug, Clone)]
pub struct Style {
    pub indent: String,
    pub pretty: bool,
}

impl Style {
    fn pad(&self, depth: usize) -> String {
        if self.pretty {
            format!("\n{}", self.indent.repeat(depth))
        } else {
            String::new()
        }
    }
}

/// A member's value.
#[derive(Debug, Clone)]
enum Node {
    /// JSON text kept as it is (from the file, or a value setup wrote).
    Text(String),
    /// A new value, laid out when rendered (its depth is known then).
    New(Value),
    /// A list setup extended: its elements' text, one per line when `multiline`.
    List {
        items: Vec<String>,
        multiline: bool,
    },
    Obj(Obj),
}

#[derive(Debug, Clone)]
struct Member {
    /// Whitespace before the key.
    lead: String,
    key: String,
    /// The key as written (quotes and escapes included).
    key_text: String,
    /// Between the key and the value (`": "`).
    sep: String,
    value: Node,
    /// Whitespace after the value, before the `,` (not after the last member: see `close`).
    trail: String,
}

/// One JSON object.
#[derive(Debug, Clone)]
pub struct Obj {
    members: Vec<Member>,
    /// Whitespace before the closing brace.
    close: String,
    /// Nesting depth of its braces (the file's object is 0).
    depth: usize,
    /// Whether it came from the file (a new one is laid out in the file's style).
    from_file: bool,
    /// It was `{}` in the file: members added get the file's layout, not `close`.
    was_empty: bool,
}

impl Default for Obj {
    fn default() -> Obj {
        Obj::new(0)
    }
}

impl Obj {
    fn new(depth: usize) -> Obj {
        Obj {
            members: Vec::new(),
            close: String::new(),
            depth,
            from_file: false,
            was_empty: true,
        }
    }

    fn last(&self, key: &str) -> Option<&Member> {
        self.members.iter().rev().find(|m| m.key == key)
    }

    fn last_mut(&mut self, key: &str) -> Option<&mut Member> {
        self.members.iter_mut().rev().find(|m| m.key == key)
    }

    /// The value under `key`, parsed; `None` when missing or not representable as a
    /// `Value` (a number beyond `f64`, which setup never owns).
    pub fn get(&self, key: &str) -> Option<Value> {
        self.last(key).and_then(|m| m.value.to_value())
    }

    /// The object under `key`, when it is one.
    pub fn child(&self, key: &str) -> Option<&Obj> {
        match self.last(key).map(|m| &m.value) {
            Some(Node::Obj(o)) => Some(o),
            _ => None,
        }
    }

    /// The object under `key`, when it is one.
    pub fn child_mut(&mut self, key: &str) -> Option<&mut Obj> {
        match self.last_mut(key).map(|m| &mut m.value) {
            Some(Node::Obj(o)) => Some(o),
            _ => None,
        }
    }

    /// Every member (the last of duplicates), its value parsed as in [`Obj::get`].
    pub fn entries(&self) -> Vec<(String, Option<Value>)> {
        let mut out: Vec<(String, Option<Value>)> = Vec::new();
        for m in &self.members {
            out.retain(|(k, _)| *k != m.key);
            out.push((m.key.clone(), m.value.to_value()));
        }
        out
    }

    /// The object under `key`, created when missing; an error when it is something else.
    pub fn object(&mut self, key: &str) -> Result<&mut Obj, EditError> {
        if self.last(key).is_none() {
            let depth = self.depth + 1;
            self.push(key, Node::Obj(Obj::new(depth)));
        }
        self.child_mut(key)
            .ok_or_else(|| EditError::NotAnObject(key.to_string()))
    }

    /// Sets `key` to `value` (the last of duplicates), or adds it at the end.
    pub fn set(&mut self, key: &str, value: Value) {
        let node = Node::from_value(value, self.depth + 1);
        match self.last_mut(key) {
            Some(m) => m.value = node,
            None => self.push(key, node),
        }
    }

    /// Removes every member named `key`.
    pub fn remove(&mut self, key: &str) {
        self.members.retain(|m| m.key != key);
    }

    /// Adds the names missing from the string list under `key` (created when missing);
    /// the list's other elements keep their text. Returns the names added.
    pub fn add_to_list(&mut self, key: &str, names: &[String]) -> Result<Vec<String>, EditError> {
        let not_a_list = || EditError::NotAnObject(key.to_string());
        let (mut items, multiline) = match self.last(key).map(|m| &m.value) {
            None => (Vec::new(), true),
            Some(Node::Text(t)) => {
                let raw: Vec<Box<serde_json::value::RawValue>> =
                    serde_json::from_str(t).map_err(|_| not_a_list())?;
                let items: Vec<String> = raw.iter().map(|r| r.get().to_string()).collect();
                (items, t.contains('\n') || raw.is_empty())
            }
            Some(Node::List { items, multiline }) => (items.clone(), *multiline),
            Some(Node::New(Value::Array(a))) => (a.iter().map(Value::to_string).collect(), true),
            Some(_) => return Err(not_a_list()),
        };
        let have: Vec<Option<String>> = items
            .iter()
            .map(|t| serde_json::from_str::<String>(t).ok())
            .collect();
        let mut added = Vec::new();
        for n in names {
            if !have.iter().any(|h| h.as_deref() == Some(n.as_str())) && !added.contains(n) {
                items.push(Value::from(n.as_str()).to_string());
                added.push(n.clone());
            }
        }
        if !added.is_empty() || self.last(key).is_none() {
            let node = Node::List { items, multiline };
            match self.last_mut(key) {
                Some(m) => m.value = node,
                None => self.push(key, node),
            }
        }
        Ok(added)
    }

    fn push(&mut self, key: &str, value: Node) {
        let key_text = Value::from(key).to_string();
        // A new member copies its last sibling's layout; else the file's style.
        let (lead, sep) = match self.members.last() {
            Some(m) => (m.lead.clone(), m.sep.clone()),
            None => (String::new(), String::new()),
        };
        self.members.push(Member {
            lead,
            key: key.to_string(),
            key_text,
            sep,
            value,
            trail: String::new(),
        });
    }

    /// The object's text.
    pub fn render(&self, style: &Style) -> String {
        if self.members.is_empty() {
            return if self.from_file {
                format!("{{{}}}", self.close)
            } else {
                "{}".to_string()
            };
        }
        let inner = style.pad(self.depth + 1);
        let sep = if style.pretty { ": " } else { ":" };
        let mut out = String::from("{");
        let last = self.members.len() - 1;
        for (i, m) in self.members.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            // Members without a layout of their own (the first in a new object).
            out.push_str(if m.lead.is_empty() && m.sep.is_empty() {
                &inner
            } else {
                &m.lead
            });
            out.push_str(&m.key_text);
            out.push_str(if m.sep.is_empty() { sep } else { &m.sep });
            out.push_str(&m.value.render(style, self.depth + 1));
            if i < last {
                out.push_str(&m.trail);
            }
        }
        // An object from the file keeps its closing layout, unless it was empty before
        // (`{}`) and now has members.
        if self.from_file && !(self.was_empty && style.pretty) {
            out.push_str(&self.close);
        } else {
            out.push_str(&style.pad(self.depth));
        }
        out.push('}');
        out
    }

    fn to_value(&self) -> Option<Value> {
        let mut map = serde_json::Map::new();
        for m in &self.members {
            map.insert(m.key.clone(), m.value.to_value()?);
        }
        Some(Value::Object(map))
    }
}

impl Node {
    fn from_value(v: Value, depth: usize) -> Node {
        match v {
            Value::Object(map) => {
                let mut o = Obj::new(depth);
                for (k, v) in map {
                    let node = Node::from_value(v, depth + 1);
                    o.push(&k, node);
                }
                Node::Obj(o)
            }
            other => Node::New(other),
        }
    }

    fn to_value(&self) -> Option<Value> {
        match self {
            Node::Text(t) => serde_json::from_str(t).ok(),
            Node::New(v) => Some(v.clone()),
            Node::List { items, .. } => items
                .iter()
                .map(|t| serde_json::from_str(t).ok())
                .collect::<Option<Vec<Value>>>()
                .map(Value::Array),
            Node::Obj(o) => o.to_value(),
        }
    }

    fn render(&self, style: &Style, depth: usize) -> String {
        match self {
            Node::Text(t) => t.clone(),
            Node::Obj(o) => o.render(style),
            Node::New(v) => {
                if !style.pretty {
                    return v.to_string();
                }
                use serde::Serialize;
                let mut out = Vec::new();
                let fmt = serde_json::ser::PrettyFormatter::with_indent(style.indent.as_bytes());
                let mut ser = serde_json::Serializer::with_formatter(&mut out, fmt);
                // Serializing a JSON value into a Vec cannot fail.
                let _ = v.serialize(&mut ser);
                // A JSON text holds no raw newline except the layout's own.
                String::from_utf8_lossy(&out).replace('\n', &style.pad(depth))
            }
            Node::List { items, multiline } => {
                if items.is_empty() {
                    "[]".to_string()
                } else if *multiline && style.pretty {
                    let inner = style.pad(depth + 1);
                    let body: Vec<String> = items.iter().map(|t| format!("{inner}{t}")).collect();
                    format!("[{}{}]", body.join(","), style.pad(depth))
                } else {
                    format!("[{}]", items.join(", "))
                }
            }
        }
    }
}

/// Parses a JSON text whose top value is an object: the whitespace before and after it, and
/// the object. `None` when the top value is not an object.
pub fn parse(text: &str) -> Result<Option<(String, Obj, String)>, EditError> {
    serde_json::from_str::<serde::de::IgnoredAny>(text)
        .map_err(|e| EditError::Json(e.to_string()))?;
    let mut s = Scan {
        b: text.as_bytes(),
        t: text,
        i: 0,
    };
    s.ws();
    let before = text[..s.i].to_string();
    if s.peek() != Some(b'{') {
        return Ok(None);
    }
    let obj = s.object(0)?;
    let after = text[s.i..].to_string();
    Ok(Some((before, obj, after)))
}

/// A scanner over text already checked to be JSON.
struct Scan<'a> {
    b: &'a [u8],
    t: &'a str,
    i: usize,
}

impl Scan<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn bad(&self) -> EditError {
        EditError::Json(format!("unexpected text at byte {}", self.i))
    }

    fn ws(&mut self) -> &str {
        let start = self.i;
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
        self.t.get(start..self.i).unwrap_or("")
    }

    fn eat(&mut self, c: u8) -> Result<(), EditError> {
        if self.peek() == Some(c) {
            self.i += 1;
            Ok(())
        } else {
            Err(self.bad())
        }
    }

    fn slice(&self, start: usize) -> Result<&str, EditError> {
        self.t.get(start..self.i).ok_or_else(|| self.bad())
    }

    fn object(&mut self, depth: usize) -> Result<Obj, EditError> {
        self.eat(b'{')?;
        let mut obj = Obj::new(depth);
        obj.from_file = true;
        loop {
            let lead = self.ws().to_string();
            if self.peek() == Some(b'}') {
                self.i += 1;
                obj.close = lead;
                obj.was_empty = obj.members.is_empty();
                return Ok(obj);
            }
            let start = self.i;
            self.string()?;
            let key_text = self.slice(start)?.to_string();
            let key: String =
                serde_json::from_str(&key_text).map_err(|e| EditError::Json(e.to_string()))?;
            let sep_start = self.i;
            self.ws();
            self.eat(b':')?;
            self.ws();
            let sep = self.slice(sep_start)?.to_string();
            let value = if self.peek() == Some(b'{') {
                Node::Obj(self.object(depth + 1)?)
            } else {
                let start = self.i;
                self.skip_value()?;
                Node::Text(self.slice(start)?.to_string())
            };
            let trail = self.ws().to_string();
            obj.members.push(Member {
                lead,
                key,
                key_text,
                sep,
                value,
                trail: String::new(),
            });
            match self.peek() {
                Some(b',') => {
                    self.i += 1;
                    if let Some(m) = obj.members.last_mut() {
                        m.trail = trail;
                    }
                }
                Some(b'}') => {
                    self.i += 1;
                    obj.close = trail;
                    obj.was_empty = false;
                    return Ok(obj);
                }
                _ => return Err(self.bad()),
            }
        }
    }

    fn string(&mut self) -> Result<(), EditError> {
        self.eat(b'"')?;
        loop {
            match self.peek() {
                Some(b'\\') => self.i += 2,
                Some(b'"') => {
                    self.i += 1;
                    return Ok(());
                }
                Some(_) => self.i += 1,
                None => return Err(self.bad()),
            }
        }
    }

    fn skip_value(&mut self) -> Result<(), EditError> {
        match self.peek() {
            Some(b'"') => self.string(),
            Some(b'{') => self.object(0).map(|_| ()),
            Some(b'[') => {
                self.i += 1;
                loop {
                    self.ws();
                    match self.peek() {
                        Some(b']') => {
                            self.i += 1;
                            return Ok(());
                        }
                        Some(b',') => self.i += 1,
                        Some(_) => self.skip_value()?,
                        None => return Err(self.bad()),
                    }
                }
            }
            Some(_) => {
                let start = self.i;
                while !matches!(
                    self.peek(),
                    None | Some(b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
                ) {
                    self.i += 1;
                }
                if self.i == start {
                    Err(self.bad())
                } else {
                    Ok(())
                }
            }
            None => Err(self.bad()),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    /// Values a `Value` round trip would change or refuse.
    const ODD: &[&str] = &[
        "123456789012345678901234567890",
        "-98765432109876543210987654321",
        "1e400",
        "-0",
        "1.0",
        "0.1000000000000000055511151231257827",
        "1E+2",
        "\"\\u00e9\"",
        "\"caf\u{e9} \\\"q\\\" \\/ \\ud83d\\ude00\"",
        "true",
        "null",
        "[]",
        "{}",
        "[1.50, {\"x\": 2e-7}]",
    ];

    /// A small deterministic generator (xorshift), so a failure names its seed.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self, n: usize) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 % n as u64) as usize
        }
    }

    /// A random object text in one of several layouts, with odd values and duplicates.
    fn object(r: &mut Rng, depth: usize, indent: &str, pretty: bool, keys: &[&str]) -> String {
        let n = r.next(4) + usize::from(depth == 0);
        let mut parts = Vec::new();
        for _ in 0..n {
            let key = keys[r.next(keys.len())];
            let value = if key == "mcpServers" || (depth < 2 && r.next(3) == 0) {
                object(r, depth + 1, indent, pretty, &["a", "b", "\\u0041"])
            } else {
                ODD[r.next(ODD.len())].to_string()
            };
            let sep = [": ", ":", " : "][r.next(3)];
            parts.push(format!("\"{key}\"{sep}{value}"));
        }
        if parts.is_empty() {
            return "{}".into();
        }
        if pretty {
            let pad = format!("\n{}", indent.repeat(depth + 1));
            let items: Vec<String> = parts.iter().map(|p| format!("{pad}{p}")).collect();
            format!("{{{}\n{}}}", items.join(","), indent.repeat(depth))
        } else {
            format!("{{{}}}", parts.join(", "))
        }
    }

    fn doc(seed: u64) -> String {
        let mut r = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let (indent, pretty) = [("  ", true), ("    ", true), ("\t", true), ("", false)][r.next(4)];
        let mut text = object(
            &mut r,
            0,
            indent,
            pretty,
            &["z", "n", "dup", "dup", "é", "mcpServers"],
        );
        if r.next(2) == 0 {
            text.push('\n');
        }
        text
    }

    fn edited(text: &str) -> String {
        let mut d = super::super::edit::JsonDoc::parse(Some(text), false, "").unwrap();
        let servers = d.object("mcpServers").unwrap();
        servers.set("ce", json!({"command": "/bin/ce", "args": []}));
        d.render()
    }

    #[test]
    fn untouched_text_renders_byte_identical() {
        for seed in 0..500 {
            let text = doc(seed);
            let d = super::super::edit::JsonDoc::parse(Some(&text), false, "").unwrap();
            assert_eq!(d.render(), text, "seed {seed}");
        }
    }

    #[test]
    fn adding_an_entry_only_inserts_text_and_keeps_every_other_byte() {
        for seed in 0..500 {
            let text = doc(seed);
            let out = edited(&text);
            // One insertion: the common prefix and suffix cover the whole input.
            let prefix = text
                .bytes()
                .zip(out.bytes())
                .take_while(|(a, b)| a == b)
                .count();
            let suffix = text
                .bytes()
                .rev()
                .zip(out.bytes().rev())
                .take_while(|(a, b)| a == b)
                .count();
            assert!(
                prefix + suffix >= text.len(),
                "seed {seed}: not a pure insertion\n{text}\n---\n{out}"
            );
            serde_json::from_str::<serde::de::IgnoredAny>(&out)
                .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{out}"));
            let again = super::super::edit::JsonDoc::parse(Some(&out), false, "").unwrap();
            assert_eq!(
                again.root.child("mcpServers").and_then(|s| s.get("ce")),
                Some(json!({"command": "/bin/ce", "args": []})),
                "seed {seed}\n{out}"
            );
            // A second edit with the same entry renders the same text.
            assert_eq!(edited(&out), out, "seed {seed}");
        }
    }

    #[test]
    fn setting_a_member_changes_only_that_member() {
        let text = "{\n  \"mcpServers\": {\n    \"fs\": {\"command\": \"npx\", \"n\": 123456789012345678901234567890},\n    \"big\": 1e400\n  },\n  \"id\": -0\n}\n";
        let mut d = super::super::edit::JsonDoc::parse(Some(text), false, "").unwrap();
        let servers = d.object("mcpServers").unwrap();
        assert_eq!(
            super::super::edit::disable_json_entries(servers, &["fs".into()]),
            ["fs"]
        );
        assert_eq!(
            d.render(),
            "{\n  \"mcpServers\": {\n    \"fs\": {\"command\": \"npx\", \"n\": 123456789012345678901234567890, \"disabled\": true},\n    \"big\": 1e400\n  },\n  \"id\": -0\n}\n"
        );
    }

    #[test]
    fn lists_keep_their_elements_and_duplicates_the_last_key_wins() {
        let text = "{\"p\": {\"off\": [\"a\", 1e400]}, \"k\": 1, \"k\": {\"x\": 2}}";
        let mut d = super::super::edit::JsonDoc::parse(Some(text), false, "").unwrap();
        assert_eq!(d.root.get("k"), Some(json!({"x": 2})));
        let p = d.object("p").unwrap();
        assert_eq!(
            p.add_to_list("off", &["a".into(), "b".into()]).unwrap(),
            ["b"]
        );
        assert_eq!(
            d.render(),
            "{\"p\": {\"off\": [\"a\", 1e400, \"b\"]}, \"k\": 1, \"k\": {\"x\": 2}}"
        );
        let mut d = super::super::edit::JsonDoc::parse(Some("{\"p\": 3}"), false, "").unwrap();
        assert!(d.object("p").is_err());
        assert!(d.root.add_to_list("p", &["a".into()]).is_err());
    }
}

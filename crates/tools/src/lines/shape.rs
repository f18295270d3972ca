//! What a line holds, learnt without decoding it: how many items and how deeply nested
//! ([`check`], before a large line is decoded), and, for a line cut off the stream because it
//! is too long, its top-level `id` and whether it has a `method` ([`Scanner`], fed the bytes as
//! they are read and thrown away).
//!
//! Decoding is what makes a message large in memory: each JSON item (a container, or a member
//! or element after a comma) becomes a tree node or a block of about 100 bytes in rmcp's
//! decoding, against 2 or 3 bytes of text for `[0,0,...]` or `{},{},...`. A 2 MB line of a
//! million zeros grew the server by 241 MiB. So a line over [`SHAPE_CHECKED_BYTES`] is counted
//! first (strings are skipped with a vectorised search, so a large text result costs a pass
//! over its escapes), and one with more than [`MAX_ITEMS`] items or nested deeper than
//! [`MAX_DEPTH`] is refused, not decoded.

/// Lines at least this long are counted before they are decoded; a shorter line holds at
/// most about 32,000 items, a few MB decoded.
pub const SHAPE_CHECKED_BYTES: usize = 64 << 10;
/// Most items one message may hold: about 25 MB decoded at the 100 bytes an item costs
/// (measured: a million content blocks, three items each, took 282 MiB). 65,000 content
/// blocks, or a table of 25,000 rows of 10 fields, fit.
pub const MAX_ITEMS: usize = 200_000;
/// Deepest nesting of one message: JSON-RPC's own takes 4 levels, a tool result's
/// structured content the rest; serde_json refuses past 128.
pub const MAX_DEPTH: usize = 64;
/// Longest id kept (ids are small numbers or short strings).
const MAX_ID_BYTES: usize = 128;

/// Why a line was not decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ShapeError {
    #[error("holds more than {MAX_ITEMS} JSON items (array elements, object members)")]
    TooManyItems,
    #[error("is nested more than {MAX_DEPTH} levels deep")]
    TooDeep,
}

/// Counts the items and the depth of `text` (JSON, or not: what is not JSON is left for the
/// decoder to refuse) and refuses a line past [`MAX_ITEMS`] or [`MAX_DEPTH`].
pub fn check(text: &[u8]) -> Result<(), ShapeError> {
    let mut items = 0usize;
    let mut depth = 0usize;
    let mut i = 0;
    while let Some(&b) = text.get(i) {
        match b {
            b'"' => {
                // To the string's closing quote, over escapes.
                i += 1;
                loop {
                    let Some(rest) = text.get(i..) else {
                        return Ok(());
                    };
                    match memchr::memchr2(b'"', b'\\', rest) {
                        None => return Ok(()),
                        Some(j) if rest[j] == b'\\' => i += j + 2,
                        Some(j) => {
                            i += j + 1;
                            break;
                        }
                    }
                }
                continue;
            }
            b'{' | b'[' => {
                depth += 1;
                items += 1;
                if depth > MAX_DEPTH {
                    return Err(ShapeError::TooDeep);
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            b',' => items += 1,
            _ => {}
        }
        if items > MAX_ITEMS {
            return Err(ShapeError::TooManyItems);
        }
        i += 1;
    }
    Ok(())
}

/// Watches one line, a byte at a time, for its top-level `"id"` value and whether it has a
/// `"method"`.
#[derive(Default)]
pub struct Scanner {
    depth: u32,
    in_string: bool,
    escaped: bool,
    /// At depth 1, a string here is a member name.
    expect_key: bool,
    /// The member name being read (only the first few bytes matter).
    key: Vec<u8>,
    reading_key: bool,
    /// The last member name read at depth 1.
    last_key: Vec<u8>,
    /// Reading the value of the top-level `id`.
    in_id: bool,
    id: Vec<u8>,
    id_done: bool,
    has_method: bool,
}

impl Scanner {
    pub fn feed_all(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.feed(b);
        }
    }

    fn feed(&mut self, b: u8) {
        if self.in_id && !self.id_done {
            let ends = !self.in_string && self.depth == 1 && (b == b',' || b == b'}');
            if ends {
                self.id_done = true;
            } else if self.id.len() < MAX_ID_BYTES
                && !(self.id.is_empty() && b.is_ascii_whitespace())
            {
                self.id.push(b);
            }
        }
        if self.in_string {
            if self.reading_key && (self.escaped || b != b'"') && self.key.len() < 16 {
                self.key.push(b);
            }
            if self.escaped {
                self.escaped = false;
            } else if b == b'\\' {
                self.escaped = true;
            } else if b == b'"' {
                self.in_string = false;
                if self.reading_key {
                    self.reading_key = false;
                    self.last_key = std::mem::take(&mut self.key);
                    if self.last_key == b"method" {
                        self.has_method = true;
                    }
                }
            }
            return;
        }
        match b {
            b'"' => {
                self.in_string = true;
                if self.depth == 1 && self.expect_key {
                    self.reading_key = true;
                    self.expect_key = false;
                    self.key.clear();
                }
            }
            b'{' | b'[' => {
                self.depth += 1;
                if self.depth == 1 {
                    self.expect_key = true;
                }
            }
            b'}' | b']' => self.depth = self.depth.saturating_sub(1),
            b',' if self.depth == 1 => {
                self.expect_key = true;
                if self.in_id {
                    self.in_id = false;
                }
            }
            b':' if self.depth == 1 && self.last_key == b"id" && !self.id_done => {
                self.in_id = true;
                self.id.clear();
            }
            _ => {}
        }
    }

    /// The top-level id, if the line had a complete one that is a valid JSON-RPC id (a
    /// number or a string).
    pub fn id(&self) -> Option<serde_json::Value> {
        let id = self.id.trim_ascii_end();
        let shaped = !id.is_empty()
            && id.len() < MAX_ID_BYTES
            && (id.iter().all(|b| b.is_ascii_digit() || *b == b'-')
                || (id.len() >= 2 && id.starts_with(b"\"") && id.ends_with(b"\"")));
        if !(self.id_done && shaped) {
            return None;
        }
        serde_json::from_slice(id).ok()
    }

    pub fn has_method(&self) -> bool {
        self.has_method
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn items_and_depth_are_counted_outside_strings() {
        assert_eq!(check(b"{}"), Ok(()));
        let zeros = format!("[{}0]", "0,".repeat(MAX_ITEMS));
        assert_eq!(check(zeros.as_bytes()), Err(ShapeError::TooManyItems));
        let blocks = format!(
            r#"{{"content":[{}]}}"#,
            r#"{"type":"text","text":""},"#.repeat(MAX_ITEMS / 2)
        );
        assert_eq!(check(blocks.as_bytes()), Err(ShapeError::TooManyItems));
        // Commas and brackets inside strings, escaped quotes among them, are text.
        let text = json!({"text": "[{,\"}]\\".repeat(MAX_ITEMS)}).to_string();
        assert_eq!(check(text.as_bytes()), Ok(()));
        let deep = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
        assert_eq!(check(deep.as_bytes()), Err(ShapeError::TooDeep));
        let fits = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert_eq!(check(fits.as_bytes()), Ok(()));
        // Not JSON, or cut short: left for the decoder.
        assert_eq!(check(b"\"unterminated \\"), Ok(()));
        assert_eq!(check(b"not json"), Ok(()));
    }

    #[test]
    fn the_scanner_finds_the_top_level_id_wherever_it_is() {
        let cases = [
            (
                r#"{"jsonrpc":"2.0","id":7,"result":{"id":1}}"#,
                Some(json!(7)),
                false,
            ),
            (
                r#"{"result":{"id":99},"jsonrpc":"2.0","id":"a,}b"}"#,
                Some(json!("a,}b")),
                false,
            ),
            (
                r#"{"jsonrpc":"2.0","id": -3 ,"method":"x"}"#,
                Some(json!(-3)),
                true,
            ),
            (
                r#"{"jsonrpc":"2.0","method":"notifications/x","params":{"id":1}}"#,
                None,
                true,
            ),
            (r#"{"id":{"a":1},"method":"x"}"#, None, true),
            (r#"{"id":null}"#, None, false),
        ];
        for (line, id, method) in cases {
            let mut s = Scanner::default();
            s.feed_all(line.as_bytes());
            assert_eq!(s.id(), id, "{line}");
            assert_eq!(s.has_method(), method, "{line}");
        }
    }
}

//! A text as a reader would decode it, for the detectors of personal data and the secret
//! redactor: `judy%40example.com`, `judy\u0040example.com`, `judy&#64;example.com` and
//! `?phone=%2B1+555+010+0199` all hold a value that the plain text does not show.
//!
//! [`View::of`] decodes, in one pass per round, the encodings a result commonly carries:
//! - percent-encoding (`%40`, `%2b`; a UTF-8 sequence `%C3%A9` as its character);
//! - `+` for a space in a query string or form body (after a `?` or `=` in a run without
//!   whitespace), where that is what it means (in the text as it came only: a `+` that a
//!   decoding produced is a plus);
//! - HTML character references: decimal (`&#64;`), hexadecimal (`&#x40;`) and the named
//!   ones of the characters personal data and keys are written with (`&commat;`, `&period;`,
//!   `&plus;`, `&amp;`...), with or without the `;` for the numeric ones;
//! - JSON `\uXXXX` escapes (surrogate pairs included) in any text; in a JSON text every
//!   JSON escape (`\"`, `\\`, `\n`...), so that no span found starts inside one.
//!
//! A decoded text can hold another encoding (`%2540`, `&amp;#64;`, a JSON string whose
//! content is `\u0040`): up to [`MAX_ROUNDS`] rounds run, each over the last one's text.
//! The view keeps, per round, where each decoded sequence came from, so a span found in the
//! view maps back to the span of the original text that encodes it ([`View::source`]),
//! which always starts and ends on a whole sequence: a token or marker that replaces it
//! keeps a JSON text valid, and replaces the encoded value in its own encoding.
//!
//! Nothing is allocated for a text without any such sequence (the common case: a scan).

/// Rounds of decoding at most (a value encoded three times over is read; a fourth layer is
/// not: each round costs a pass over the text).
pub const MAX_ROUNDS: usize = 3;

/// One decoded sequence: `out_len` bytes at `at` in a round's output came from `src_len`
/// bytes at `src` of its input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Edit {
    at: usize,
    out_len: usize,
    src: usize,
    src_len: usize,
}

/// A text decoded, with the way back to the original's offsets.
#[derive(Debug, Clone)]
pub struct View {
    text: String,
    /// The edits of each round, first round first.
    rounds: Vec<Vec<Edit>>,
}

impl View {
    /// The decoded view of the whole of `text` (`json`: `text` is a JSON document, whose
    /// escapes are all decoded in the first round); `None` when nothing in it decodes.
    #[cfg(test)]
    pub fn of(text: &str, json: bool) -> Option<View> {
        if spots(text).is_empty() {
            return None;
        }
        View::decode(text, json)
    }

    fn decode(text: &str, json: bool) -> Option<View> {
        let mut rounds = Vec::new();
        let mut current: Option<String> = None;
        for round in 0..MAX_ROUNDS {
            let input = current.as_deref().unwrap_or(text);
            let Some((out, edits)) = decode_round(input, json && round == 0, round == 0) else {
                break;
            };
            rounds.push(edits);
            current = Some(out);
        }
        Some(View {
            text: current?,
            rounds,
        })
    }

    /// The decoded text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The span of the original text that `start..end` of the decoded text came from,
    /// widened to whole encoded sequences.
    pub fn source(&self, start: usize, end: usize) -> (usize, usize) {
        let (mut s, mut e) = (start, end);
        for edits in self.rounds.iter().rev() {
            s = map_start(edits, s);
            e = map_end(edits, e);
        }
        (s, e.max(s))
    }
}

fn map_start(edits: &[Edit], pos: usize) -> usize {
    let i = edits.partition_point(|e| e.at <= pos);
    let Some(e) = i.checked_sub(1).and_then(|i| edits.get(i)) else {
        return pos;
    };
    if pos < e.at + e.out_len {
        e.src
    } else {
        pos - (e.at + e.out_len) + e.src + e.src_len
    }
}

fn map_end(edits: &[Edit], pos: usize) -> usize {
    let i = edits.partition_point(|e| e.at < pos);
    let Some(e) = i.checked_sub(1).and_then(|i| edits.get(i)) else {
        return pos;
    };
    if pos <= e.at + e.out_len {
        e.src + e.src_len
    } else {
        pos - (e.at + e.out_len) + e.src + e.src_len
    }
}

/// Bytes of the original text decoded on each side of an encoded sequence: more than the
/// longest value a detector reports ([`crate::pii::detect::MAX_MATCH_BYTES`]) or a
/// long configured secret, written with every character encoded.
pub const WINDOW: usize = 16 * 1024;

/// The decoded views of the parts of `text` around its encoded sequences (each with its
/// offset in `text`): [`WINDOW`] bytes on each side of each, overlapping ones joined; empty
/// when `text` holds none (one `memchr` scan, no allocation). A value that holds an encoded
/// sequence lies within one window; the rest of the text is searched as it is.
pub fn views(text: &str, json: bool) -> Vec<(usize, View)> {
    let spots = spots(text);
    let b = text.as_bytes();
    let mut windows: Vec<(usize, usize)> = Vec::new();
    for p in spots {
        let (s, e) = (p.saturating_sub(WINDOW), (p + WINDOW).min(b.len()));
        match windows.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => windows.push((s, e)),
        }
    }
    let mut out = Vec::new();
    for (mut s, mut e) in windows {
        // Not inside an escape at either end, and on character boundaries.
        while s > 0 && (b[s - 1] == b'\\' || !text.is_char_boundary(s)) {
            s -= 1;
        }
        e = (e + 12).min(b.len());
        while e < b.len() && !text.is_char_boundary(e) {
            e += 1;
        }
        if let Some(v) = View::decode(&text[s..e], json && s == 0) {
            out.push((s, v));
        }
    }
    out
}

/// Where `text` holds a sequence worth decoding: a percent-encoded byte, a character
/// reference, a `\uXXXX` escape (also one whose backslash is itself escaped), or a `+` in a
/// query. A JSON text's other escapes alone (`\n`, `\"`) are not: the detectors step
/// around those on their own.
fn spots(text: &str) -> Vec<usize> {
    let b = text.as_bytes();
    let mut out: Vec<usize> = memchr::memchr3_iter(b'%', b'\\', b'&', b)
        .filter(|&i| match b[i] {
            b'%' => percent(b, i).is_some(),
            b'&' => entity(text, i).is_some(),
            _ => b.get(i + 1) == Some(&b'u') && hex4(b, i + 2).is_some(),
        })
        .collect();
    if memchr::memchr2(b'?', b'=', b).is_some() {
        let before = out.len();
        out.extend(memchr::memchr_iter(b'+', b).filter(|&i| in_query(b, i)));
        if out.len() != before {
            out.sort_unstable();
        }
    }
    out
}

/// Whether the `+` at `i` is in a query string or form body: a `?` or `=` before it in the
/// same run without whitespace (looked for up to 2 KiB back).
fn in_query(b: &[u8], i: usize) -> bool {
    for &c in b[i.saturating_sub(2048)..i].iter().rev() {
        match c {
            b'?' | b'=' => return true,
            c if ends_query(c) => return false,
            _ => {}
        }
    }
    false
}

fn ends_query(c: u8) -> bool {
    c.is_ascii_whitespace() || matches!(c, b'"' | b'\'' | b'<' | b'>' | b'#')
}

/// HTML's named character references for what personal data and keys are written with.
const NAMED: &[(&str, char)] = &[
    ("commat", '@'),
    ("period", '.'),
    ("plus", '+'),
    ("amp", '&'),
    ("num", '#'),
    ("percnt", '%'),
    ("colon", ':'),
    ("lowbar", '_'),
    ("UnderBar", '_'),
    ("hyphen", '-'),
    ("dash", '-'),
    ("minus", '-'),
    ("lpar", '('),
    ("rpar", ')'),
    ("sol", '/'),
    ("bsol", '\\'),
    ("equals", '='),
    ("quest", '?'),
    ("excl", '!'),
    ("comma", ','),
    ("semi", ';'),
    ("dollar", '$'),
    ("ast", '*'),
    ("midast", '*'),
    ("nbsp", ' '),
    ("NonBreakingSpace", ' '),
    ("quot", '"'),
    ("QUOT", '"'),
    ("apos", '\''),
    ("lt", '<'),
    ("LT", '<'),
    ("gt", '>'),
    ("GT", '>'),
    ("AMP", '&'),
    ("lsqb", '['),
    ("lbrack", '['),
    ("rsqb", ']'),
    ("rbrack", ']'),
    ("lcub", '{'),
    ("lbrace", '{'),
    ("rcub", '}'),
    ("rbrace", '}'),
    ("verbar", '|'),
    ("vert", '|'),
    ("tilde", '~'),
    ("Hat", '^'),
    ("grave", '`'),
    ("DiacriticalGrave", '`'),
    ("Tab", '\t'),
    ("NewLine", '\n'),
];

fn hex(c: u8) -> Option<u32> {
    (c as char).to_digit(16)
}

/// Four hex digits at `b[i..]`.
fn hex4(b: &[u8], i: usize) -> Option<u32> {
    let d = b.get(i..i + 4)?;
    d.iter().try_fold(0u32, |acc, &c| Some(acc * 16 + hex(c)?))
}

/// One round: the decoded text and its edits; `None` when nothing decodes. `plus`: a `+` in
/// a query is a space (the first round only: a `+` that an encoding produced is a plus).
fn decode_round(text: &str, json: bool, plus: bool) -> Option<(String, Vec<Edit>)> {
    let b = text.as_bytes();
    let mut out: Option<String> = None;
    let mut edits = Vec::new();
    // The byte up to which `text` was copied to `out`.
    let mut copied = 0;
    // Inside a query string or form body: `+` is a space.
    let mut query = false;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let decoded: Option<(char, usize)> = match c {
            b'%' => percent(b, i),
            b'+' if query && plus => Some((' ', 1)),
            b'&' => entity(text, i),
            b'\\' => escape(b, i, json),
            b'?' | b'=' => {
                query = true;
                None
            }
            c if ends_query(c) => {
                query = false;
                None
            }
            _ => None,
        };
        match decoded {
            Some((ch, len)) => {
                let o = out.get_or_insert_with(|| String::with_capacity(text.len()));
                o.push_str(&text[copied..i]);
                let at = o.len();
                o.push(ch);
                edits.push(Edit {
                    at,
                    out_len: ch.len_utf8(),
                    src: i,
                    src_len: len,
                });
                i += len;
                copied = i;
            }
            None => {
                // A JSON escape that stays as it is (not decoded) is skipped whole, so that
                // `\\u0040` is not read as a backslash and `\u0040`.
                if c == b'\\' && json {
                    i += 2;
                } else {
                    i += 1;
                }
            }
        }
    }
    let mut o = out?;
    o.push_str(&text[copied.min(text.len())..]);
    Some((o, edits))
}

/// `%XX` (or a UTF-8 character as `%XX%XX...`) at `i`: the character and the bytes read.
fn percent(b: &[u8], i: usize) -> Option<(char, usize)> {
    let byte = |j: usize| -> Option<u8> {
        if b.get(j) != Some(&b'%') {
            return None;
        }
        Some((hex(*b.get(j + 1)?)? * 16 + hex(*b.get(j + 2)?)?) as u8)
    };
    let first = byte(i)?;
    let n = match first {
        0x00..=0x7f => 1,
        0xc2..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf4 => 4,
        _ => return None,
    };
    let mut bytes = [first, 0, 0, 0];
    for (k, slot) in bytes.iter_mut().enumerate().take(n).skip(1) {
        *slot = byte(i + 3 * k)?;
    }
    let ch = std::str::from_utf8(&bytes[..n]).ok()?.chars().next()?;
    Some((ch, 3 * n))
}

/// An HTML character reference at `i` (`&#64;`, `&#x40;`, `&commat;`).
fn entity(text: &str, i: usize) -> Option<(char, usize)> {
    let b = text.as_bytes();
    if b.get(i + 1) == Some(&b'#') {
        let (radix, from) = match b.get(i + 2) {
            Some(b'x' | b'X') => (16, i + 3),
            _ => (10, i + 2),
        };
        let digits = b[from..]
            .iter()
            .take(8)
            .take_while(|c| (**c as char).is_digit(radix))
            .count();
        if digits == 0 {
            return None;
        }
        let n = u32::from_str_radix(&text[from..from + digits], radix).ok()?;
        let ch = char::from_u32(n).filter(|c| *c != '\0')?;
        let end = from + digits;
        let len = if b.get(end) == Some(&b';') {
            end + 1
        } else {
            end
        } - i;
        return Some((ch, len));
    }
    let name_len = b[i + 1..]
        .iter()
        .take(20)
        .take_while(|c| c.is_ascii_alphanumeric())
        .count();
    if name_len == 0 || b.get(i + 1 + name_len) != Some(&b';') {
        return None;
    }
    let name = &text[i + 1..i + 1 + name_len];
    let (_, ch) = NAMED.iter().find(|(n, _)| *n == name)?;
    Some((*ch, name_len + 2))
}

/// A backslash escape at `i`: `\uXXXX` (a surrogate pair as one character) anywhere; in a
/// JSON text also `\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`.
fn escape(b: &[u8], i: usize, json: bool) -> Option<(char, usize)> {
    match b.get(i + 1)? {
        b'u' => {
            let u = hex4(b, i + 2)?;
            if (0xd800..0xdc00).contains(&u) {
                if b.get(i + 6) == Some(&b'\\') && b.get(i + 7) == Some(&b'u') {
                    let low = hex4(b, i + 8)?;
                    if (0xdc00..0xe000).contains(&low) {
                        let c = 0x10000 + ((u - 0xd800) << 10) + (low - 0xdc00);
                        return char::from_u32(c).map(|c| (c, 12));
                    }
                }
                return None;
            }
            char::from_u32(u).filter(|c| *c != '\0').map(|c| (c, 6))
        }
        // An escaped backslash before a `\u` escape (`\\u0040`, as a JSON string or a
        // debug line writes the text `\u0040`): a backslash, for the next round.
        b'\\' if !json => {
            (b.get(i + 2) == Some(&b'u') && hex4(b, i + 3).is_some()).then_some(('\\', 2))
        }
        _ if !json => None,
        b'"' => Some(('"', 2)),
        b'\\' => Some(('\\', 2)),
        b'/' => Some(('/', 2)),
        b'b' => Some(('\u{8}', 2)),
        b'f' => Some(('\u{c}', 2)),
        b'n' => Some(('\n', 2)),
        b'r' => Some(('\r', 2)),
        b't' => Some(('\t', 2)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(text: &str, json: bool) -> Option<String> {
        View::of(text, json).map(|v| v.text)
    }

    #[test]
    fn each_encoding_decodes_and_maps_back_to_whole_sequences() {
        let cases: &[(&str, bool, &str)] = &[
            (
                "?email=judy%40example.com",
                false,
                "?email=judy@example.com",
            ),
            ("judy%40Example%2ecom", false, "judy@Example.com"),
            ("caf%C3%A9", false, "café"),
            (
                "q?p=%2B1+555+010+0199&x=1",
                false,
                "q?p=+1 555 010 0199&x=1",
            ),
            ("a+b@example.com", false, ""),
            ("judy&#64;example&#46;com", false, "judy@example.com"),
            ("judy&#x40;example&period;com", false, "judy@example.com"),
            ("judy&commat;example.com", false, "judy@example.com"),
            ("judy&#64example.com", false, "judy@example.com"),
            ("judy\\u0040example.com", false, "judy@example.com"),
            ("\\ud83d\\ude00!", false, "\u{1f600}!"),
            ("%2540", false, "@"),
            ("&amp;#64;", false, "@"),
            (r#"{"a":"x\\u0040y\n"}"#, true, "{\"a\":\"x@y\n\"}"),
            ("&bogus; %zz \\u12", false, ""),
            ("judy\\\\u0040example.com", false, "judy@example.com"),
        ];
        for (text, json, want) in cases {
            let got = decoded(text, *json);
            if want.is_empty() {
                assert_eq!(got, None, "{text}");
            } else {
                assert_eq!(got.as_deref(), Some(*want), "{text}");
            }
        }
        // A span of the view maps back to the whole encoded span.
        let text = "mail judy%40example%2Ecom now";
        let v = View::of(text, false).unwrap();
        let s = v.text().find("judy").unwrap();
        let e = s + "judy@example.com".len();
        assert_eq!(v.source(s, e), (5, 5 + "judy%40example%2Ecom".len()));
        // Two rounds: the span covers the doubly encoded sequence.
        let text = "x a%2540b.io y";
        let v = View::of(text, false).unwrap();
        assert_eq!(v.text(), "x a@b.io y");
        assert_eq!(v.source(2, 8), (2, 12));
        assert_eq!(&text[2..12], "a%2540b.io");
        // Only the parts around encoded sequences are decoded, each at its offset.
        let far = format!(
            "{}judy%40example.com{}a&#64;b",
            "x ".repeat(WINDOW),
            "y ".repeat(WINDOW)
        );
        let parts = views(&far, false);
        assert_eq!(parts.len(), 2, "two windows");
        let (off, v) = &parts[0];
        let at = v.text().find("judy@").unwrap();
        let (s, e) = v.source(at, at + "judy@example.com".len());
        assert_eq!(&far[off + s..off + e], "judy%40example.com");
        assert!(views("no sequence here + 1", false).is_empty());
        // A span ending on a decoded character's last byte covers its whole sequence.
        let text = "caf%C3%A9!";
        let v = View::of(text, false).unwrap();
        assert_eq!(v.source(0, 5), (0, 9));
    }
}

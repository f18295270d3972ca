//! Configured secret values kept out of everything that leaves the server.
//!
//! The server knows every credential it was configured with (the upstreams' `env` values,
//! their HTTP headers and bearer tokens, the userinfo of their URLs, OAuth client secrets, a
//! model provider's key: `config::secrets` collects them). An upstream may echo any of them
//! back (its own token in an error message, the `Authorization` header we sent it), and
//! whatever reaches code can reach the client in any form code computes. So one [`Redactor`],
//! built once from those values and the encodings an upstream is likely to echo them in, is
//! applied where things enter (an upstream's results, errors, progress and tool lists, before
//! code sees them) and where they leave (every message to the client, the server's own log
//! lines, the audit log).
//!
//! One search finds every pattern at once (Aho-Corasick), in one pass over the text, and
//! nothing is allocated unless a secret is found: a 5 MB result without one costs a scan.

use std::borrow::Cow;

use aho_corasick::{AhoCorasick, MatchKind};
use base64::Engine;
use serde_json::Value;

/// Shortest value treated as a secret, in characters: shorter configured values (`true`,
/// a port, a user name like `admin`) occur everywhere in ordinary text, and replacing them
/// would mangle results without protecting anything that is a credential.
pub const MIN_SECRET_CHARS: usize = 8;

/// What stands in for a secret, everywhere (the same marker `llm.ask` prompts and approval
/// questions have always had). It names no source, so that even which credential an
/// upstream echoed is not told.
pub const REDACTED: &str = "[redacted]";

/// Configured values long enough to pass [`MIN_SECRET_CHARS`] that are ordinary words of a
/// configuration, never credentials (compared without case).
const NOT_SECRETS: &[&str] = &[
    "production",
    "development",
    "localhost",
    "127.0.0.1",
    "0.0.0.0",
    "disabled",
    "enabled",
    "staging",
    "testing",
    "verbose",
    "info,debug",
];

/// Whether a configured value is worth keeping out of what leaves: long enough, not a
/// common word, not a plain path or a URL without credentials (those are shown in
/// messages on purpose; a URL's credentials are collected on their own).
pub fn is_secret_like(value: &str) -> bool {
    let v = value.trim();
    let plain_url = (v.starts_with("http://") || v.starts_with("https://"))
        && !v.contains('@')
        && !v.contains('?');
    v.chars().count() >= MIN_SECRET_CHARS
        && !NOT_SECRETS.iter().any(|w| w.eq_ignore_ascii_case(v))
        && !v.starts_with('/')
        && !v.starts_with("~/")
        && !plain_url
}

/// The secret values and their echoed forms, searched all at once. One is shared by
/// everything that redacts; a value learned later (a refreshed OAuth token: [`Redactor::learn`])
/// joins it in place.
#[derive(Default)]
pub struct Redactor {
    /// `None`: nothing to redact (no secret known); every call returns at once.
    search: std::sync::RwLock<Option<std::sync::Arc<AhoCorasick>>>,
    /// The patterns the search was built from, to build it again with a learned value.
    patterns: std::sync::Mutex<Vec<String>>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.search().map_or(0, |s| s.patterns_len());
        write!(f, "Redactor({n} patterns)")
    }
}

impl Redactor {
    /// A redactor for these values (those not [`is_secret_like`] are left out), each also in
    /// the forms an upstream may echo it in: JSON-escaped (quotes, backslashes, control
    /// characters; and `\uXXXX` for non-ASCII, as Python's `json.dumps` writes it) and
    /// percent-encoded (RFC 3986 and form encoding); each of those also as it appears inside
    /// a JSON string, so that a serialized message can be searched as it is.
    pub fn new<I, S>(values: I) -> Redactor
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut patterns = Vec::new();
        for v in values {
            add_forms(&mut patterns, v.as_ref());
        }
        Redactor {
            search: std::sync::RwLock::new(build(&patterns)),
            patterns: std::sync::Mutex::new(patterns),
        }
    }

    /// Adds a value found after the start (a refreshed token); known or unlike a secret: no
    /// change. The search is built again under the lock, so two values learned at once are
    /// both kept.
    pub fn learn(&self, value: &str) {
        let Ok(mut patterns) = self.patterns.lock() else {
            return;
        };
        let before = patterns.len();
        add_forms(&mut patterns, value);
        if patterns.len() != before {
            let search = build(&patterns);
            if let Ok(mut s) = self.search.write() {
                *s = search;
            }
        }
    }

    /// The current search (a cheap handle: a scan does not hold the lock).
    fn search(&self) -> Option<std::sync::Arc<AhoCorasick>> {
        self.search.read().ok().and_then(|s| s.clone())
    }

    /// Whether no secret is known (then nothing is ever changed).
    pub fn is_empty(&self) -> bool {
        self.search().is_none()
    }

    /// Whether `text` holds a secret in any of its forms (also where it is encoded in a
    /// way [`crate::decode`] reads).
    pub fn finds(&self, text: &[u8]) -> bool {
        let Some(search) = self.search() else {
            return false;
        };
        search.is_match(text) || !decoded_spans(&search, text).is_empty()
    }

    /// Where the secrets are in `text`: each form as it is, and each secret (or form) in
    /// the text decoded (`%73ecret`, `\u0073ecret`, `&#115;ecret`, mixed or layered
    /// encodings), sorted, overlapping spans joined.
    fn spans(&self, search: &AhoCorasick, text: &[u8]) -> Vec<(usize, usize)> {
        let plain: Vec<(usize, usize)> = search
            .find_iter(text)
            .map(|m| (m.start(), m.end()))
            .collect();
        let decoded = decoded_spans(search, text);
        if decoded.is_empty() {
            return plain;
        }
        let mut all = plain;
        all.extend(decoded);
        all.sort_unstable();
        let mut joined: Vec<(usize, usize)> = Vec::with_capacity(all.len());
        for (s, e) in all {
            match joined.last_mut() {
                Some(last) if s < last.1 => last.1 = last.1.max(e),
                _ => joined.push((s, e)),
            }
        }
        joined
    }

    /// Redacts a secret split across `parts`, read one after the other (the text blocks of
    /// one result, the strings of one array): every piece of a secret found in their
    /// concatenation that crosses from one part into the next is replaced, each piece in its
    /// part, by [`REDACTED`] (a secret within one part is that part's own business:
    /// [`Redactor::string`]).
    pub fn across(&self, parts: &mut [&mut String]) {
        if parts.len() < 2 {
            return;
        }
        let Some(search) = self.search() else {
            return;
        };
        let mut whole = String::with_capacity(parts.iter().map(|p| p.len()).sum());
        let mut starts = Vec::with_capacity(parts.len());
        for p in parts.iter() {
            starts.push(whole.len());
            whole.push_str(p);
        }
        // Per part: the ranges to replace, in the part's own offsets.
        let mut cuts: Vec<Vec<(usize, usize)>> = vec![Vec::new(); parts.len()];
        for (s, e) in self.spans(&search, whole.as_bytes()) {
            let first = starts.partition_point(|&x| x <= s).saturating_sub(1);
            let last = starts.partition_point(|&x| x < e).saturating_sub(1);
            if first == last {
                continue;
            }
            for (i, cut) in cuts.iter_mut().enumerate().take(last + 1).skip(first) {
                let from = s.max(starts[i]) - starts[i];
                let to = e.min(starts[i] + parts[i].len()) - starts[i];
                if from < to {
                    cut.push((from, to));
                }
            }
        }
        for (part, cut) in parts.iter_mut().zip(cuts) {
            if cut.is_empty() {
                continue;
            }
            let bytes = part.as_bytes();
            let mut out = Vec::with_capacity(bytes.len());
            let mut at = 0;
            for (s, e) in cut {
                if s < at {
                    continue;
                }
                out.extend_from_slice(&bytes[at..s]);
                out.extend_from_slice(REDACTED.as_bytes());
                at = e;
            }
            out.extend_from_slice(&bytes[at..]);
            **part = String::from_utf8(out)
                .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
        }
    }

    /// `text` with every secret replaced by [`REDACTED`]; borrowed when there is none.
    pub fn str<'a>(&self, text: &'a str) -> Cow<'a, str> {
        match self.bytes(text.as_bytes()) {
            Cow::Borrowed(_) => Cow::Borrowed(text),
            // Patterns and the marker are whole UTF-8 strings, so every cut is at a
            // character boundary.
            Cow::Owned(b) => Cow::Owned(
                String::from_utf8(b)
                    .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
            ),
        }
    }

    /// Redacts `s` in place (no allocation without a secret).
    pub fn string(&self, s: &mut String) {
        if let Cow::Owned(new) = self.str(s) {
            *s = new;
        }
    }

    /// `bytes` with every secret replaced by [`REDACTED`]; borrowed when there is none.
    pub fn bytes<'a>(&self, bytes: &'a [u8]) -> Cow<'a, [u8]> {
        let Some(search) = self.search() else {
            return Cow::Borrowed(bytes);
        };
        let found = self.spans(&search, bytes);
        if found.is_empty() {
            return Cow::Borrowed(bytes);
        }
        let mut out = Vec::with_capacity(bytes.len());
        let mut last = 0;
        for (start, end) in found {
            out.extend_from_slice(&bytes[last..start]);
            out.extend_from_slice(REDACTED.as_bytes());
            last = end;
        }
        out.extend_from_slice(&bytes[last..]);
        Cow::Owned(out)
    }

    /// Redacts every string of `value` (keys included) in place, and a secret split across
    /// the strings of an array ([`Redactor::across`]).
    pub fn value(&self, value: &mut Value) {
        if self.is_empty() {
            return;
        }
        match value {
            Value::String(s) => self.string(s),
            Value::Array(items) => {
                items.iter_mut().for_each(|v| self.value(v));
                // Each run of strings side by side, read as one text.
                let mut run: Vec<&mut String> = Vec::new();
                for item in items.iter_mut() {
                    match item {
                        Value::String(s) => run.push(s),
                        _ => self.across(&mut std::mem::take(&mut run)),
                    }
                }
                self.across(&mut run);
            }
            Value::Object(map) => {
                if map.keys().any(|k| self.finds(k.as_bytes())) {
                    let old = std::mem::take(map);
                    for (k, v) in old {
                        map.insert(self.str(&k).into_owned(), v);
                    }
                }
                map.values_mut().for_each(|v| self.value(v));
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }

    /// A serialized JSON message with every secret redacted; `None` when it holds none (the
    /// common case: one scan, no allocation). A message that does is decoded, its strings
    /// redacted and encoded again, so that no replacement can cut an escape sequence in
    /// half; what is not JSON is redacted as bytes.
    pub fn json_message(&self, message: &[u8]) -> Option<Vec<u8>> {
        if !self.finds(message) {
            return None;
        }
        match serde_json::from_slice::<Value>(message) {
            Ok(mut v) => {
                self.value(&mut v);
                let out = serde_json::to_vec(&v).ok()?;
                // A form seen only in the encoding (an escape the decoder folded) is cut
                // out of the bytes as well.
                Some(self.bytes(&out).into_owned())
            }
            Err(_) => Some(self.bytes(message).into_owned()),
        }
    }

    /// A message on its way out after a rewrite (the task shim's) that gave `rewritten` or
    /// nothing: the message as it leaves, redacted; `None` when neither changed it.
    pub fn after_rewrite(&self, original: &[u8], rewritten: Option<Vec<u8>>) -> Option<Vec<u8>> {
        let message = rewritten.as_deref().unwrap_or(original);
        self.json_message(message).or(rewritten)
    }
}

/// The running core's redactor (one per process): the log writer's, and the one a token the
/// OAuth store saves later joins ([`learn_secret`]).
static FOR_LOGS: std::sync::RwLock<Option<std::sync::Arc<Redactor>>> = std::sync::RwLock::new(None);

/// What else a log line passes after the redactor, if anything (personal data: `pii`).
pub type LogFilter = std::sync::Arc<dyn Fn(&[u8]) -> Option<Vec<u8>> + Send + Sync>;

static LOG_FILTER: std::sync::RwLock<Option<LogFilter>> = std::sync::RwLock::new(None);

/// Makes [`LogWriter`] pass every line through `filter` too (`Core::start` calls it when
/// `pii` is on: a library's own debug line may quote an upstream's message).
pub fn install_log_filter(filter: LogFilter) {
    if let Ok(mut f) = LOG_FILTER.write() {
        *f = Some(filter);
    }
}

/// Makes [`LogWriter`] redact with `redactor` from now on (`Core::start` calls it).
pub fn install_for_logs(redactor: std::sync::Arc<Redactor>) {
    if let Ok(mut r) = FOR_LOGS.write() {
        *r = Some(redactor);
    }
}

/// The running core's redactor learns `value` (a token the OAuth store just saved), so that
/// every exit and entry, which share it, redact it from now on.
pub fn learn_secret(value: &str) {
    if let Some(r) = FOR_LOGS.read().ok().and_then(|r| r.clone()) {
        r.learn(value);
    }
}

/// Standard error with the secrets taken out, for `tracing`: each formatted event arrives in
/// one write, so a secret is never split across two.
pub struct LogWriter;

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for LogWriter {
    type Writer = LogWriter;
    fn make_writer(&'a self) -> LogWriter {
        LogWriter
    }
}

impl std::io::Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let redactor = FOR_LOGS.read().ok().and_then(|r| r.clone());
        let mut line: Cow<'_, [u8]> = match redactor {
            // A JSON line (`--log-format json`) stays JSON.
            Some(r) if buf.starts_with(b"{") => match r.json_message(buf) {
                Some(mut clean) => {
                    if buf.ends_with(b"\n") {
                        clean.push(b'\n');
                    }
                    Cow::Owned(clean)
                }
                None => Cow::Borrowed(buf),
            },
            Some(r) => r.bytes(buf),
            None => Cow::Borrowed(buf),
        };
        if let Some(filter) = LOG_FILTER.read().ok().and_then(|f| f.clone())
            && let Some(filtered) = filter(&line)
        {
            line = Cow::Owned(filtered);
        }
        std::io::stderr().lock().write_all(&line)?;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

/// The search over `patterns`; `None` when there are none.
fn build(patterns: &[String]) -> Option<std::sync::Arc<AhoCorasick>> {
    if patterns.is_empty() {
        return None;
    }
    // Longest first at each position: `user:password` wins over `password`.
    match AhoCorasick::builder()
        .match_kind(MatchKind::LeftmostLongest)
        .build(patterns)
    {
        Ok(search) => Some(std::sync::Arc::new(search)),
        Err(e) => {
            // Only a pattern set beyond the automaton's size limit fails.
            tracing::error!("secret redaction is off: {e}");
            None
        }
    }
}

/// Adds `value`'s forms to `patterns` (each once), when it is like a secret: the value,
/// JSON-escaped (quotes, backslashes, control characters; and `\\uXXXX` for non-ASCII, as
/// Python's `json.dumps` writes it), percent-encoded (RFC 3986 and form encoding), and each
/// of those as it appears inside a JSON string, so that a serialized message can be searched
/// as it is; and its bytes in base64 ([`base64_forms`]) and in hex, lower and upper case.
/// (Mixed and layered percent, `\\u` and HTML encodings are read by decoding the text:
/// [`Redactor::bytes`].)
fn add_forms(patterns: &mut Vec<String>, value: &str) {
    let v = value.trim();
    if !is_secret_like(v) {
        return;
    }
    let mut forms = vec![
        v.to_string(),
        json_escaped(v, false),
        json_escaped(v, true),
        percent_encoded(v, false),
        percent_encoded(v, true),
    ];
    for form in forms.clone() {
        forms.push(json_escaped(&form, false));
    }
    forms.extend(base64_forms(v.as_bytes()));
    let lower: String = v.bytes().map(|b| format!("{b:02x}")).collect();
    forms.push(lower.to_ascii_uppercase());
    forms.push(lower);
    for p in forms {
        if !patterns.contains(&p) {
            patterns.push(p);
        }
    }
}

/// The base64 characters that encode `v` alone wherever it sits in a longer encoded string:
/// for each of the three alignments (`v` preceded by 0, 1 or 2 bytes), the characters
/// whose six bits all come from `v`, in the standard and the URL-safe alphabet. Padding
/// and the characters shared with the bytes around are left out, so that the form is found
/// with or without padding, at the start, the end or the middle of a longer string.
fn base64_forms(v: &[u8]) -> Vec<String> {
    use base64::engine::general_purpose::STANDARD_NO_PAD;
    let mut out = Vec::new();
    for k in 0..3usize {
        let mut buf = vec![0u8; k];
        buf.extend_from_slice(v);
        let encoded = STANDARD_NO_PAD.encode(&buf);
        let from = (8 * k).div_ceil(6);
        let to = (8 * (k + v.len())) / 6;
        let Some(core) = encoded.get(from..to) else {
            continue;
        };
        let url: String = core
            .chars()
            .map(|c| match c {
                '+' => '-',
                '/' => '_',
                c => c,
            })
            .collect();
        out.push(core.to_string());
        if url != core {
            out.push(url);
        }
    }
    out
}

/// Where `search` finds a secret in `text` decoded (`crate::decode`), as spans of
/// `text`; empty when nothing in it decodes (the common case: one scan, no allocation).
fn decoded_spans(search: &AhoCorasick, text: &[u8]) -> Vec<(usize, usize)> {
    let Ok(s) = std::str::from_utf8(text) else {
        return Vec::new();
    };
    let json = matches!(s.trim_start().as_bytes().first(), Some(b'{' | b'[' | b'"'));
    let mut out = Vec::new();
    for (off, view) in crate::decode::views(s, json) {
        out.extend(search.find_iter(view.text()).map(|m| {
            let (a, b) = view.source(m.start(), m.end());
            (off + a, off + b)
        }));
    }
    out
}

/// `v` as it appears between the quotes of a JSON string; with `ascii`, every character
/// beyond ASCII as `\uXXXX` (surrogate pairs above the BMP), as Python's `json.dumps` does.
fn json_escaped(v: &str, ascii: bool) -> String {
    let mut out = String::with_capacity(v.len() + 2);
    for c in v.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || (ascii && !c.is_ascii()) => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{u:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out
}

/// `v` percent-encoded: every byte but RFC 3986's unreserved characters; with `form`, as
/// `application/x-www-form-urlencoded` writes it (a space as `+`, `*` kept).
fn percent_encoded(v: &str, form: bool) -> String {
    let mut out = String::with_capacity(v.len() * 3);
    for &b in v.as_bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' => out.push(b as char),
            b'~' if !form => out.push('~'),
            b'*' if form => out.push('*'),
            b' ' if form => out.push('+'),
            b => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// `text` with the userinfo of every URL in it (`scheme://user:password@host`) replaced by
/// [`REDACTED`], for the server's own messages (a failed start, a connect error): whatever
/// its length, a URL's userinfo is a credential. Borrowed when there is none.
pub fn strip_userinfo(text: &str) -> Cow<'_, str> {
    /// Characters that end a URL's authority (or the URL) in a message.
    const AUTHORITY_END: &[char] = &['/', '?', '#', ' ', '"', '\'', '<', '>', '\n', ')'];
    let mut out = String::new();
    let mut rest = text;
    let mut changed = false;
    while let Some(at) = rest.find("://") {
        let start = at + 3;
        let authority = &rest[start..];
        let end = authority.find(AUTHORITY_END).unwrap_or(authority.len());
        match authority[..end].rfind('@') {
            Some(userinfo_end) if !authority[..userinfo_end].starts_with(REDACTED) => {
                out.push_str(&rest[..start]);
                out.push_str(REDACTED);
                rest = &authority[userinfo_end..];
                changed = true;
            }
            _ => {
                out.push_str(&rest[..start]);
                rest = authority;
            }
        }
    }
    if !changed {
        return Cow::Borrowed(text);
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// The base64 of `user:password`, as an `Authorization: Basic` header carries it.
pub fn basic_credentials(user: &str, password: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
}

#[cfg(test)]
mod tests;

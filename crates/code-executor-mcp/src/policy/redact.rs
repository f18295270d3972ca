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

    /// Whether `text` holds a secret in any of its forms.
    pub fn finds(&self, text: &[u8]) -> bool {
        self.search().is_some_and(|s| s.is_match(text))
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
        let mut found = search.find_iter(bytes).peekable();
        if found.peek().is_none() {
            return Cow::Borrowed(bytes);
        }
        let mut out = Vec::with_capacity(bytes.len());
        let mut last = 0;
        for m in found {
            out.extend_from_slice(&bytes[last..m.start()]);
            out.extend_from_slice(REDACTED.as_bytes());
            last = m.end();
        }
        out.extend_from_slice(&bytes[last..]);
        Cow::Owned(out)
    }

    /// Redacts every string of `value` (keys included) in place.
    pub fn value(&self, value: &mut Value) {
        if self.is_empty() {
            return;
        }
        match value {
            Value::String(s) => self.string(s),
            Value::Array(items) => items.iter_mut().for_each(|v| self.value(v)),
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
/// as it is.
fn add_forms(patterns: &mut Vec<String>, value: &str) {
    let v = value.trim();
    if !is_secret_like(v) {
        return;
    }
    for form in [
        v.to_string(),
        json_escaped(v, false),
        json_escaped(v, true),
        percent_encoded(v, false),
        percent_encoded(v, true),
    ] {
        let inside_json = json_escaped(&form, false);
        for p in [form, inside_json] {
            if !patterns.contains(&p) {
                patterns.push(p);
            }
        }
    }
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

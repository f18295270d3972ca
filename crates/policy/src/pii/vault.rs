//! The token map of one execution, or of one session: the real value behind each token,
//! kept in the host's memory only (never logged, audited, traced, stored or cached).
//!
//! The same value gets the same token for the map's life (`[EMAIL_1_3fa9c2]`, then
//! `[EMAIL_2_3fa9c2]` for the next address). The suffix is random per map, so tokens
//! differ across sessions and executions: a token the model remembers from another
//! session is not one this map knows, and is never restored to another person's value.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use aho_corasick::{AhoCorasick, MatchKind};
use regex::Regex;
use serde_json::Value;

use super::detect::Detectors;

/// Most distinct values one map holds: past it, further values are still replaced (by a
/// token that cannot be restored, `[EMAIL_X_...]`), and nothing grows.
pub const MAX_VALUES: usize = 100_000;

/// A token's shape, to find tokens in arguments.
const TOKEN_SHAPE: &str = r"\[[A-Z][A-Z0-9_]{0,31}_[0-9]{1,9}_[0-9a-f]{6}\]";

static SHAPE: std::sync::LazyLock<Option<Regex>> =
    std::sync::LazyLock::new(|| Regex::new(TOKEN_SHAPE).ok());

/// The token map. Its `Debug` tells the number of values only.
pub struct Vault {
    salt: String,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    by_value: HashMap<String, String>,
    by_token: HashMap<String, String>,
    /// The last number given per label.
    numbers: HashMap<String, u32>,
    /// The search over every value held ([`Vault::echoes`]), as of the last
    /// [`Vault::refresh`].
    known: Option<Arc<Known>>,
    /// Values were added since `known` was built.
    stale: bool,
}

/// Every value the map holds, searched at once, and the token of each.
struct Known {
    search: AhoCorasick,
    tokens: Vec<String>,
    values: Vec<String>,
}

/// A span of a text to replace by a token: where, and the token.
struct Span {
    start: usize,
    end: usize,
    token: String,
}

impl std::fmt::Debug for Vault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.inner.lock().map_or(0, |i| i.by_value.len());
        write!(f, "Vault({n} values)")
    }
}

impl Default for Vault {
    fn default() -> Self {
        Vault::new()
    }
}

impl Vault {
    /// An empty map with a fresh random suffix.
    pub fn new() -> Vault {
        let mut bytes = [0u8; 3];
        // Without randomness the suffix is still per map (its address and the time).
        if getrandom::fill(&mut bytes).is_err() {
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos());
            bytes = [(t >> 16) as u8, (t >> 8) as u8, t as u8];
        }
        Vault {
            salt: bytes.iter().map(|b| format!("{b:02x}")).collect(),
            inner: Mutex::new(Inner::default()),
        }
    }

    /// The map's suffix (tests).
    #[cfg(test)]
    pub fn salt(&self) -> &str {
        &self.salt
    }

    /// The token of `value` under `label`, made if new; `made` counts new tokens by label.
    pub fn token(&self, label: &str, value: &str, made: &mut BTreeMap<String, u32>) -> String {
        let Ok(mut inner) = self.inner.lock() else {
            return format!("[{label}_X_{}]", self.salt);
        };
        if let Some(t) = inner.by_value.get(value) {
            return t.clone();
        }
        if inner.by_value.len() >= MAX_VALUES {
            return format!("[{label}_X_{}]", self.salt);
        }
        let n = inner.numbers.entry(label.to_string()).or_insert(0);
        *n += 1;
        let token = format!("[{label}_{n}_{}]", self.salt);
        inner.by_value.insert(value.to_string(), token.clone());
        inner.by_token.insert(token.clone(), value.to_string());
        inner.stale = true;
        *made.entry(label.to_string()).or_insert(0) += 1;
        token
    }

    /// `text` with each span the detectors find, and each value this map holds (an echo:
    /// [`Vault::echoes`]), replaced by its token; borrowed when none.
    pub fn tokenise<'a>(
        &self,
        detectors: &Detectors,
        text: &'a str,
        made: &mut BTreeMap<String, u32>,
    ) -> Cow<'a, str> {
        let json = looks_json(text);
        let mut work = 0;
        let found = detectors.find(text, json, &mut work);
        let echoes = self.echo_spans(text, json);
        if found.is_empty() && echoes.is_empty() {
            return Cow::Borrowed(text);
        }
        let mut spans: Vec<Span> = found
            .iter()
            .map(|f| Span {
                start: f.start,
                end: f.end,
                token: self.token(detectors.label_name(f.label), f.value(text), made),
            })
            .collect();
        if !echoes.is_empty() {
            spans = merge(spans, echoes);
        }
        Cow::Owned(replace(text, &spans))
    }

    /// `text` with every value this map holds replaced by its token, also where it is
    /// encoded (`crate::decode`); borrowed when none. In tokens mode the results of
    /// every tool pass here: a `restoreTo` tool that echoes the value it received, or any
    /// other tool that returns a value the map knows, gives code the token again.
    pub fn echoes<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let spans = self.echo_spans(text, looks_json(text));
        if spans.is_empty() {
            return Cow::Borrowed(text);
        }
        Cow::Owned(replace(text, &spans))
    }

    /// Applies [`Vault::echoes`] to every string (and object key) of `v` in place.
    pub fn echoes_value(&self, v: &mut Value) {
        if self.is_empty() {
            return;
        }
        match v {
            Value::String(s) => {
                if let Cow::Owned(new) = self.echoes(s) {
                    *s = new;
                }
            }
            Value::Array(a) => a.iter_mut().for_each(|x| self.echoes_value(x)),
            Value::Object(m) => {
                let old = std::mem::take(m);
                for (k, mut x) in old {
                    self.echoes_value(&mut x);
                    m.insert(self.echoes(&k).into_owned(), x);
                }
            }
            _ => {}
        }
    }

    /// Whether the map holds no value.
    pub fn is_empty(&self) -> bool {
        self.inner.lock().map_or(true, |i| i.by_value.is_empty())
    }

    /// The search over the values held, as of the last [`Vault::refresh`] (so that the
    /// strings of one result, which add values one by one, do not build it again each).
    fn known(&self) -> Option<Arc<Known>> {
        self.inner.lock().ok()?.known.clone()
    }

    /// Builds the search over the values held again, when values were added since it was
    /// built: once per result, before it is searched (values added while the result is
    /// tokenised are found in it by the detectors that found them).
    pub fn refresh(&self) {
        let Ok(mut inner) = self.inner.lock() else {
            return;
        };
        if !inner.stale {
            return;
        }
        inner.stale = false;
        let (values, tokens): (Vec<String>, Vec<String>) = inner
            .by_value
            .iter()
            .map(|(v, t)| (v.clone(), t.clone()))
            .unzip();
        inner.known = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .build(&values)
            .ok()
            .map(|search| {
                Arc::new(Known {
                    search,
                    tokens,
                    values,
                })
            });
    }

    /// Where the values this map holds are in `text`, as it is and decoded, with their
    /// tokens: sorted, not overlapping. A value that starts or ends with a letter or digit
    /// is found only where it is not part of a longer word or number (`10.0.0.1` is not in
    /// `10.0.0.15`).
    fn echo_spans(&self, text: &str, json: bool) -> Vec<Span> {
        let Some(known) = self.known() else {
            return Vec::new();
        };
        let spans_in = |t: &str| -> Vec<(usize, usize, usize)> {
            known
                .search
                .find_iter(t)
                .filter(|m| whole(t, m.start(), m.end(), &known.values[m.pattern().as_usize()]))
                .map(|m| (m.start(), m.end(), m.pattern().as_usize()))
                .collect()
        };
        let plain: Vec<Span> = spans_in(text)
            .into_iter()
            .map(|(start, end, p)| Span {
                start,
                end,
                token: known.tokens[p].clone(),
            })
            .collect();
        let views = crate::decode::views(text, json);
        if views.is_empty() {
            return plain;
        }
        let mut decoded: Vec<Span> = Vec::new();
        for (off, view) in &views {
            for (s, e, p) in spans_in(view.text()) {
                let (s, e) = view.source(s, e);
                let (start, end) = (off + s, off + e);
                if decoded.last().is_some_and(|l| l.end > start) || text.get(start..end).is_none() {
                    continue;
                }
                decoded.push(Span {
                    start,
                    end,
                    token: known.tokens[p].clone(),
                });
            }
        }
        merge(decoded, plain)
    }

    /// Tokenises `s` in place.
    pub fn tokenise_string(
        &self,
        detectors: &Detectors,
        s: &mut String,
        made: &mut BTreeMap<String, u32>,
    ) {
        if let Cow::Owned(new) = self.tokenise(detectors, s, made) {
            *s = new;
        }
    }

    /// Tokenises every string (and object key) of `v` in place.
    pub fn tokenise_value(
        &self,
        detectors: &Detectors,
        v: &mut Value,
        made: &mut BTreeMap<String, u32>,
    ) {
        match v {
            Value::String(s) => self.tokenise_string(detectors, s, made),
            Value::Array(a) => {
                for x in a {
                    self.tokenise_value(detectors, x, made);
                }
            }
            Value::Object(m) => {
                let old = std::mem::take(m);
                for (mut k, mut x) in old {
                    self.tokenise_string(detectors, &mut k, made);
                    self.tokenise_value(detectors, &mut x, made);
                    m.insert(k, x);
                }
            }
            _ => {}
        }
    }

    /// `text` with every token of this map replaced by its value; borrowed when none.
    /// `restored` counts the tokens put back.
    pub fn restore<'a>(&self, text: &'a str, restored: &mut usize) -> Cow<'a, str> {
        let Some(shape) = &*SHAPE else {
            return Cow::Borrowed(text);
        };
        if !text.contains(&self.salt) {
            return Cow::Borrowed(text);
        }
        let Ok(inner) = self.inner.lock() else {
            return Cow::Borrowed(text);
        };
        let mut n = 0;
        let out = shape.replace_all(text, |c: &regex::Captures<'_>| {
            let t = &c[0];
            match inner.by_token.get(t) {
                Some(v) => {
                    n += 1;
                    v.clone()
                }
                None => t.to_string(),
            }
        });
        *restored += n;
        out
    }

    /// Restores the tokens in every string (and object key) of `v`; `restored` counts them.
    pub fn restore_value(&self, v: &mut Value, restored: &mut usize) {
        match v {
            Value::String(s) => {
                if let Cow::Owned(new) = self.restore(s, restored) {
                    *s = new;
                }
            }
            Value::Array(a) => {
                for x in a {
                    self.restore_value(x, restored);
                }
            }
            Value::Object(m) => {
                let old = std::mem::take(m);
                for (k, mut x) in old {
                    let k = self.restore(&k, restored).into_owned();
                    self.restore_value(&mut x, restored);
                    m.insert(k, x);
                }
            }
            _ => {}
        }
    }
}

/// `a` and `b` (each sorted, not overlapping) as one sorted list; `b`'s spans that overlap
/// one of `a` are dropped.
fn merge(a: Vec<Span>, b: Vec<Span>) -> Vec<Span> {
    let mut out: Vec<Span> = Vec::with_capacity(a.len() + b.len());
    let mut ai = a.into_iter().peekable();
    for f in b {
        while let Some(x) = ai.next_if(|x| x.end <= f.start) {
            out.push(x);
        }
        let overlaps = ai.peek().is_some_and(|x| x.start < f.end)
            || out.last().is_some_and(|x| x.end > f.start);
        if !overlaps {
            out.push(f);
        }
    }
    out.extend(ai);
    out
}

/// `text` with each span replaced by its token.
fn replace(text: &str, spans: &[Span]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for s in spans {
        out.push_str(&text[at..s.start]);
        out.push_str(&s.token);
        at = s.end;
    }
    out.push_str(&text[at..]);
    out
}

/// Whether `value`, found at `start..end` of `t`, is not part of a longer word or number.
fn whole(t: &str, start: usize, end: usize, value: &str) -> bool {
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric());
    let first = value.chars().next();
    let last = value.chars().next_back();
    let before = t[..start].chars().next_back();
    let after = t[end..].chars().next();
    let glued_before = word(first) && word(before);
    let glued_after = word(last) && word(after);
    !glued_before && !glued_after
}

/// Whether a text is (probably) JSON, so that spans keep out of its escapes.
pub fn looks_json(text: &str) -> bool {
    matches!(
        text.trim_start().as_bytes().first(),
        Some(b'{' | b'[' | b'"')
    )
}

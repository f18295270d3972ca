//! The token map of one execution, or of one session: the real value behind each token,
//! kept in the host's memory only (never logged, audited, traced, stored or cached).
//!
//! The same value gets the same token for the map's life (`[EMAIL_1_3fa9c2]`, then
//! `[EMAIL_2_3fa9c2]` for the next address). The suffix is random per map, so tokens
//! differ across sessions and executions: a token the model remembers from another
//! session is not one this map knows, and is never restored to another person's value.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use regex::Regex;
use serde_json::Value;

use super::detect::{Detectors, Found};

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
        *made.entry(label.to_string()).or_insert(0) += 1;
        token
    }

    /// `text` with each span the detectors find replaced by its token; borrowed when none.
    pub fn tokenise<'a>(
        &self,
        detectors: &Detectors,
        text: &'a str,
        made: &mut BTreeMap<String, u32>,
    ) -> Cow<'a, str> {
        let json = looks_json(text);
        let mut work = 0;
        let found = detectors.find(text, json, &mut work);
        if found.is_empty() {
            return Cow::Borrowed(text);
        }
        Cow::Owned(self.replace(detectors, text, &found, made))
    }

    fn replace(
        &self,
        detectors: &Detectors,
        text: &str,
        found: &[Found],
        made: &mut BTreeMap<String, u32>,
    ) -> String {
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        for f in found {
            out.push_str(&text[at..f.start]);
            out.push_str(&self.token(detectors.label_name(f.label), &text[f.start..f.end], made));
            at = f.end;
        }
        out.push_str(&text[at..]);
        out
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

/// Whether a text is (probably) JSON, so that spans keep out of its escapes.
pub fn looks_json(text: &str) -> bool {
    matches!(
        text.trim_start().as_bytes().first(),
        Some(b'{' | b'[' | b'"')
    )
}

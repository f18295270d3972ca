//! A record's address ([`Key`]) and what is checked of it, the store's limits and
//! description, and the arithmetic of sizes and expiry every backend shares.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::error::StoreError;

/// The longest principal, kind or key, in bytes.
pub const MAX_KEY_BYTES: usize = 1024;

/// One record's address: whose it is, of what kind, under which key.
#[derive(Debug, Clone, Copy)]
pub struct Key<'a> {
    pub principal: &'a str,
    pub kind: &'a str,
    pub key: &'a str,
}

impl<'a> Key<'a> {
    pub fn new(principal: &'a str, kind: &'a str, key: &'a str) -> Key<'a> {
        Key {
            principal,
            kind,
            key,
        }
    }

    /// Refuses what no backend can hold the same way: NUL, empty principals or kinds, and
    /// parts past [`MAX_KEY_BYTES`].
    pub fn check(&self) -> Result<(), StoreError> {
        check_part("principal", self.principal, false)?;
        check_part("kind", self.kind, false)?;
        check_part("key", self.key, true)
    }
}

/// Checks one part of a key (`empty`: may it be empty).
pub fn check_part(what: &'static str, s: &str, empty: bool) -> Result<(), StoreError> {
    let why = if s.is_empty() && !empty {
        "it is empty".to_string()
    } else if s.len() > MAX_KEY_BYTES {
        format!("it is {} bytes, past the limit of {MAX_KEY_BYTES}", s.len())
    } else if s.contains('\0') {
        "it contains NUL".to_string()
    } else {
        return Ok(());
    };
    Err(StoreError::InvalidKey { what, why })
}

/// The limits a store keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Bytes (keys plus values) of one principal's live records.
    pub max_bytes_per_principal: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_bytes_per_principal: 64 << 20,
        }
    }
}

/// What `doctor` and `health` say about a store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Description {
    /// `sqlite` or `postgres`.
    pub backend: &'static str,
    /// The file, or the URL without its password.
    pub location: String,
    pub schema_version: i64,
    pub limits: Limits,
}

/// Milliseconds since the Unix epoch (what `expires_at` counts in).
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// When a record written now with `ttl` expires.
pub fn expiry(ttl: Duration) -> i64 {
    now_ms().saturating_add(i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX))
}

/// What a record counts against its principal's limit.
pub fn record_size(key: &str, value: &[u8]) -> u64 {
    (key.len() + value.len()) as u64
}

/// The first `n` characters of a key: prefix matches compare characters (SQLite's and
/// PostgreSQL's `substr` both count them).
pub fn prefix_chars(prefix: &str) -> i64 {
    i64::try_from(prefix.chars().count()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_data_but_bounded() {
        assert!(Key::new("p", "k", "../../etc/passwd").check().is_ok());
        assert!(Key::new("p", "k", "%2F%00").check().is_ok());
        assert!(Key::new("p", "k", "").check().is_ok());
        assert!(Key::new("", "k", "x").check().is_err());
        assert!(Key::new("p", "k", "a\0b").check().is_err());
        let long = "x".repeat(MAX_KEY_BYTES + 1);
        assert!(Key::new("p", "k", &long).check().is_err());
    }
}

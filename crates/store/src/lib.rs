//! The durable store of code-executor-mcp: records that outlive the server process (a
//! session's stored values, tasks' and `wait` handles' results), behind one [`Store`] trait
//! with two implementations: embedded SQLite ([`sqlite::Sqlite`], the default: one file
//! under the data directory, WAL) and PostgreSQL ([`postgres::Postgres`], for replicas that
//! share one store).
//!
//! The rules every implementation keeps (the same test suite runs against both):
//!
//! - **Records are keyed by (principal, kind, key)**, and every operation names its
//!   principal: a principal reads, lists, deletes only its own records. Keys are data, never
//!   paths: `..`, `/`, `%2F` are ordinary characters; NUL and keys past [`MAX_KEY_BYTES`] are
//!   refused ([`StoreError::InvalidKey`]).
//! - **Bounded size per principal**: a principal's records (keys plus values, bytes) stay
//!   within [`Limits::max_bytes_per_principal`]; a write past it is refused
//!   ([`StoreError::Full`], naming the limit and what to do) and changes nothing.
//! - **Expiry**: every record has a time to live; an expired record is never returned, and
//!   [`Store::sweep`] deletes them.
//! - **Versioned schema** ([`migrations`]): a `schema_version` table; a store whose schema is
//!   newer than this binary knows is refused ([`StoreError::SchemaTooNew`]).
//! - **Fail closed**: an unreachable, corrupt or full store is an error that says so; a
//!   write is acknowledged only once it is durable (committed), and a failed write leaves
//!   what was acknowledged before as it was.
//!
//! What the server puts here, and what it never does (secrets and personal-data tokens), is
//! in `docs/store.md`.

pub mod migrations;
pub mod postgres;
pub mod sqlite;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The longest principal, kind or key, in bytes.
pub const MAX_KEY_BYTES: usize = 1024;

/// Why the store did not do what was asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    #[error(
        "the store is unavailable ({backend} at {location}): {reason}; nothing was written, \
         and what was written before is kept there (check that it is reachable and writable, \
         or start with --store none to keep state in memory only)"
    )]
    Unavailable {
        backend: &'static str,
        location: String,
        reason: String,
    },
    #[error(
        "the store refused {size} bytes: this client's records would take {total} bytes, past \
         the limit of {max} bytes per client (store.maxBytesPerClient); delete stored values \
         or let finished results expire, or raise the limit"
    )]
    Full { size: u64, total: u64, max: u64 },
    #[error("invalid record {what}: {why}")]
    InvalidKey { what: &'static str, why: String },
    #[error(
        "the store's schema is version {found}, newer than this binary knows (version \
         {known}): a newer code-executor-mcp wrote it; upgrade this one, or point --store at \
         another store"
    )]
    SchemaTooNew { found: i64, known: i64 },
    #[error(
        "the store file {path} is not a usable SQLite database ({reason}); it was left as it \
         is: move it away, or point --store at another file"
    )]
    Corrupt { path: String, reason: String },
    #[error(
        "bad store {0:?}: expected none, memory, sqlite:PATH, or a postgres://... or \
         postgresql://... URL"
    )]
    BadSpec(String),
}

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

/// Durable records (see the crate docs for the rules every implementation keeps).
#[async_trait::async_trait]
pub trait Store: Send + Sync + 'static {
    /// Keeps `value` under `key` for `ttl`, replacing what was there; acknowledged (`Ok`)
    /// once durable.
    async fn put(&self, key: Key<'_>, value: &[u8], ttl: Duration) -> Result<(), StoreError>;

    /// The live value under `key`.
    async fn get(&self, key: Key<'_>) -> Result<Option<Vec<u8>>, StoreError>;

    /// Deletes the record under `key`: whether there was one.
    async fn delete(&self, key: Key<'_>) -> Result<bool, StoreError>;

    /// The live records of `principal` and `kind` whose keys start with `prefix`, by key.
    async fn list(
        &self,
        principal: &str,
        kind: &str,
        prefix: &str,
    ) -> Result<Vec<(String, Vec<u8>)>, StoreError>;

    /// Deletes the records of `principal` and `kind` whose keys start with `prefix`: how
    /// many.
    async fn delete_prefix(
        &self,
        principal: &str,
        kind: &str,
        prefix: &str,
    ) -> Result<u64, StoreError>;

    /// Gives the live records of `principal` and `kind` whose keys start with `prefix` a new
    /// time to live, `ttl` from now: how many.
    async fn touch_prefix(
        &self,
        principal: &str,
        kind: &str,
        prefix: &str,
        ttl: Duration,
    ) -> Result<u64, StoreError>;

    /// Bytes `principal`'s live records take (counted against the limit).
    async fn usage(&self, principal: &str) -> Result<u64, StoreError>;

    /// Deletes every expired record: how many.
    async fn sweep(&self) -> Result<u64, StoreError>;

    fn describe(&self) -> Description;
}

/// A store shared by the server's parts.
pub type Shared = Arc<dyn Store>;

/// Where the records go, as `--store` and the `store` setting name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Spec {
    /// In memory only: today's behaviour; nothing survives the process.
    None,
    /// An SQLite file (made if missing).
    Sqlite(PathBuf),
    /// A PostgreSQL server (a `postgres://` or `postgresql://` URL).
    Postgres(String),
}

impl Spec {
    /// Parses `none`, `memory`, `sqlite:PATH` or a PostgreSQL URL; `sqlite` alone is
    /// `default_sqlite`.
    pub fn parse(s: &str, default_sqlite: &std::path::Path) -> Result<Spec, StoreError> {
        let t = s.trim();
        match t {
            "none" | "memory" => return Ok(Spec::None),
            "sqlite" | "" => return Ok(Spec::Sqlite(default_sqlite.to_path_buf())),
            _ => {}
        }
        if let Some(path) = t.strip_prefix("sqlite:") {
            let path = path.strip_prefix("//").unwrap_or(path);
            if path.is_empty() {
                return Err(StoreError::BadSpec(s.to_string()));
            }
            return Ok(Spec::Sqlite(PathBuf::from(path)));
        }
        if t.starts_with("postgres://") || t.starts_with("postgresql://") {
            return Ok(Spec::Postgres(t.to_string()));
        }
        Err(StoreError::BadSpec(s.to_string()))
    }

    /// What it is, for messages (a URL without its password).
    pub fn display(&self) -> String {
        match self {
            Spec::None => "none (in memory only)".into(),
            Spec::Sqlite(p) => format!("sqlite:{}", p.display()),
            Spec::Postgres(url) => postgres::redact(url),
        }
    }
}

/// Opens the store `spec` names (`None` for [`Spec::None`]): made and migrated if new.
pub async fn open(spec: &Spec, limits: Limits) -> Result<Option<Shared>, StoreError> {
    Ok(match spec {
        Spec::None => None,
        Spec::Sqlite(path) => Some(Arc::new(sqlite::Sqlite::open(path, limits).await?)),
        Spec::Postgres(url) => Some(Arc::new(postgres::Postgres::connect(url, limits).await?)),
    })
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
    fn specs_parse() {
        let d = std::path::Path::new("/data/store.sqlite3");
        assert_eq!(Spec::parse("none", d), Ok(Spec::None));
        assert_eq!(Spec::parse("memory", d), Ok(Spec::None));
        assert_eq!(Spec::parse("sqlite", d), Ok(Spec::Sqlite(d.into())));
        assert_eq!(
            Spec::parse("sqlite:/x/y.db", d),
            Ok(Spec::Sqlite("/x/y.db".into()))
        );
        assert!(matches!(
            Spec::parse("postgres://u:secret@h/db", d),
            Ok(Spec::Postgres(_))
        ));
        assert!(matches!(
            Spec::parse("mysql://h", d),
            Err(StoreError::BadSpec(_))
        ));
        let shown = Spec::parse("postgres://u:secret@h/db", d)
            .map(|s| s.display())
            .unwrap_or_default();
        assert!(!shown.contains("secret"), "{shown}");
    }

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

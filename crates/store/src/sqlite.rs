//! The embedded store: one SQLite file (made mode 0600 in a 0700 directory if missing), in
//! WAL mode with `synchronous = FULL`, so that a write is on disk when it is acknowledged.
//! One connection, used on tokio's blocking threads (`spawn_blocking`); a second server on
//! the same file waits for its lock (`busy_timeout`) rather than failing at once.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::{Connection, ErrorCode, OptionalExtension, params};

use crate::api::Store;
use crate::error::StoreError;
use crate::migrations;
use crate::record::{
    Description, Key, Limits, check_part, expiry, now_ms, prefix_chars, record_size,
};

const BACKEND: &str = "sqlite";
/// How long a write waits for another connection's lock on the file.
const BUSY: Duration = Duration::from_secs(5);

/// The SQLite store.
pub struct Sqlite {
    conn: Arc<Mutex<Connection>>,
    path: PathBuf,
    limits: Limits,
    schema_version: i64,
}

impl Sqlite {
    /// Opens (or makes) the store at `path` and brings its schema to this binary's version.
    pub async fn open(path: &Path, limits: Limits) -> Result<Sqlite, StoreError> {
        let p = path.to_path_buf();
        let (conn, schema_version) = tokio::task::spawn_blocking(move || open_blocking(&p))
            .await
            .map_err(|e| unavailable(path, e.to_string()))??;
        Ok(Sqlite {
            conn: Arc::new(Mutex::new(conn)),
            path: path.to_path_buf(),
            limits,
            schema_version,
        })
    }

    /// Caps the file at `pages` pages, as a full disk would (tests of a full store).
    #[doc(hidden)]
    pub async fn cap_pages_for_tests(&self, pages: u32) -> Result<(), StoreError> {
        self.run(move |c| c.query_row(&format!("PRAGMA max_page_count = {pages}"), [], |_| Ok(())))
            .await
    }

    /// Runs `f` on the connection on a blocking thread.
    async fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, StoreError> {
        let conn = self.conn.clone();
        let path = self.path.clone();
        let joined = tokio::task::spawn_blocking(move || {
            let mut c = conn
                .lock()
                .map_err(|_| unavailable(&path, "its connection was poisoned by a panic".into()))?;
            f(&mut c).map_err(|e| classify(&path, e))
        })
        .await;
        joined.map_err(|e| unavailable(&self.path, e.to_string()))?
    }
}

fn open_blocking(path: &Path) -> Result<(Connection, i64), StoreError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        make_dir(dir).map_err(|e| {
            unavailable(
                path,
                format!("cannot make its directory {}: {e}", dir.display()),
            )
        })?;
    }
    let fresh = !path.exists();
    let mut conn = Connection::open(path).map_err(|e| classify(path, e))?;
    if fresh {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600));
    }
    let setup = || -> rusqlite::Result<i64> {
        conn.busy_timeout(BUSY)?;
        let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            tracing::warn!("the store {} is in {mode} mode, not WAL", path.display());
        }
        conn.execute_batch("PRAGMA synchronous = FULL;")?;
        conn.execute_batch(migrations::VERSION_TABLE)?;
        Ok(0)
    };
    setup().map_err(|e| classify(path, e))?;
    let version = migrate(&mut conn).map_err(|e| match e {
        Migrate::Sql(e) => classify(path, e),
        Migrate::Store(e) => e,
    })?;
    Ok((conn, version))
}

enum Migrate {
    Sql(rusqlite::Error),
    Store(StoreError),
}

impl From<rusqlite::Error> for Migrate {
    fn from(e: rusqlite::Error) -> Self {
        Migrate::Sql(e)
    }
}

fn migrate(conn: &mut Connection) -> Result<i64, Migrate> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let found: Option<i64> =
        tx.query_row("SELECT max(version) FROM schema_version", [], |r| r.get(0))?;
    let found = found.unwrap_or(0);
    let steps = migrations::plan(found, migrations::SQLITE).map_err(Migrate::Store)?;
    if steps.is_empty() {
        return Ok(found);
    }
    for step in steps {
        tx.execute_batch(step)?;
    }
    tx.execute("DELETE FROM schema_version", [])?;
    tx.execute(
        "INSERT INTO schema_version (version) VALUES (?1)",
        params![migrations::VERSION],
    )?;
    tx.commit()?;
    Ok(migrations::VERSION)
}

fn make_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

fn unavailable(path: &Path, reason: String) -> StoreError {
    StoreError::Unavailable {
        backend: BACKEND,
        location: path.display().to_string(),
        reason,
    }
}

/// An SQLite error as the store's: a file that is not a database is corrupt; the rest make
/// the store unavailable, with SQLite's reason.
fn classify(path: &Path, e: rusqlite::Error) -> StoreError {
    match e.sqlite_error_code() {
        Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => StoreError::Corrupt {
            path: path.display().to_string(),
            reason: e.to_string(),
        },
        Some(ErrorCode::DiskFull) => unavailable(path, format!("the disk is full ({e})")),
        Some(ErrorCode::ReadOnly | ErrorCode::CannotOpen | ErrorCode::PermissionDenied) => {
            unavailable(path, format!("it cannot be written ({e})"))
        }
        _ => unavailable(path, e.to_string()),
    }
}

/// A write refused for the principal's limit, carried out of the transaction.
struct OverLimit {
    size: u64,
    total: u64,
}

#[async_trait::async_trait]
impl Store for Sqlite {
    async fn put(&self, key: Key<'_>, value: &[u8], ttl: Duration) -> Result<(), StoreError> {
        key.check()?;
        let (p, k, n) = (
            key.principal.to_string(),
            key.kind.to_string(),
            key.key.to_string(),
        );
        let value = value.to_vec();
        let max = self.limits.max_bytes_per_principal;
        let over = self
            .run(move |c| {
                let now = now_ms();
                let size = record_size(&n, &value);
                let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
                tx.execute(
                    "DELETE FROM records WHERE principal = ?1 AND expires_at <= ?2",
                    params![p, now],
                )?;
                let others: i64 = tx.query_row(
                    "SELECT COALESCE(SUM(size), 0) FROM records
                     WHERE principal = ?1 AND NOT (kind = ?2 AND key = ?3)",
                    params![p, k, n],
                    |r| r.get(0),
                )?;
                let total = u64::try_from(others).unwrap_or(0) + size;
                if total > max {
                    return Ok(Some(OverLimit { size, total }));
                }
                tx.execute(
                    "INSERT INTO records (principal, kind, key, value, size, expires_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                     ON CONFLICT (principal, kind, key) DO UPDATE SET
                       value = excluded.value, size = excluded.size,
                       expires_at = excluded.expires_at",
                    params![p, k, n, value, size as i64, expiry(ttl)],
                )?;
                tx.commit()?;
                Ok(None)
            })
            .await?;
        match over {
            Some(OverLimit { size, total }) => Err(StoreError::Full { size, total, max }),
            None => Ok(()),
        }
    }

    async fn get(&self, key: Key<'_>) -> Result<Option<Vec<u8>>, StoreError> {
        key.check()?;
        let (p, k, n) = (
            key.principal.to_string(),
            key.kind.to_string(),
            key.key.to_string(),
        );
        self.run(move |c| {
            c.query_row(
                "SELECT value FROM records
                 WHERE principal = ?1 AND kind = ?2 AND key = ?3 AND expires_at > ?4",
                params![p, k, n, now_ms()],
                |r| r.get(0),
            )
            .optional()
        })
        .await
    }

    async fn delete(&self, key: Key<'_>) -> Result<bool, StoreError> {
        key.check()?;
        let (p, k, n) = (
            key.principal.to_string(),
            key.kind.to_string(),
            key.key.to_string(),
        );
        self.run(move |c| {
            c.execute(
                "DELETE FROM records WHERE principal = ?1 AND kind = ?2 AND key = ?3",
                params![p, k, n],
            )
            .map(|n| n > 0)
        })
        .await
    }

    async fn list(
        &self,
        principal: &str,
        kind: &str,
        prefix: &str,
    ) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        Key::new(principal, kind, prefix).check()?;
        let (p, k, pre) = (principal.to_string(), kind.to_string(), prefix.to_string());
        self.run(move |c| {
            let mut st = c.prepare_cached(
                "SELECT key, value FROM records
                 WHERE principal = ?1 AND kind = ?2 AND substr(key, 1, ?3) = ?4
                   AND expires_at > ?5
                 ORDER BY key",
            )?;
            let rows = st.query_map(params![p, k, prefix_chars(&pre), pre, now_ms()], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })?;
            rows.collect()
        })
        .await
    }

    async fn delete_prefix(
        &self,
        principal: &str,
        kind: &str,
        prefix: &str,
    ) -> Result<u64, StoreError> {
        Key::new(principal, kind, prefix).check()?;
        let (p, k, pre) = (principal.to_string(), kind.to_string(), prefix.to_string());
        self.run(move |c| {
            c.execute(
                "DELETE FROM records
                 WHERE principal = ?1 AND kind = ?2 AND substr(key, 1, ?3) = ?4",
                params![p, k, prefix_chars(&pre), pre],
            )
            .map(|n| n as u64)
        })
        .await
    }

    async fn touch_prefix(
        &self,
        principal: &str,
        kind: &str,
        prefix: &str,
        ttl: Duration,
    ) -> Result<u64, StoreError> {
        Key::new(principal, kind, prefix).check()?;
        let (p, k, pre) = (principal.to_string(), kind.to_string(), prefix.to_string());
        self.run(move |c| {
            c.execute(
                "UPDATE records SET expires_at = ?5
                 WHERE principal = ?1 AND kind = ?2 AND substr(key, 1, ?3) = ?4
                   AND expires_at > ?6",
                params![p, k, prefix_chars(&pre), pre, expiry(ttl), now_ms()],
            )
            .map(|n| n as u64)
        })
        .await
    }

    async fn usage(&self, principal: &str) -> Result<u64, StoreError> {
        check_part("principal", principal, false)?;
        let p = principal.to_string();
        self.run(move |c| {
            c.query_row(
                "SELECT COALESCE(SUM(size), 0) FROM records
                 WHERE principal = ?1 AND expires_at > ?2",
                params![p, now_ms()],
                |r| r.get::<_, i64>(0),
            )
            .map(|n| u64::try_from(n).unwrap_or(0))
        })
        .await
    }

    async fn sweep(&self) -> Result<u64, StoreError> {
        self.run(|c| {
            c.execute(
                "DELETE FROM records WHERE expires_at <= ?1",
                params![now_ms()],
            )
            .map(|n| n as u64)
        })
        .await
    }

    fn describe(&self) -> Description {
        Description {
            backend: BACKEND,
            location: self.path.display().to_string(),
            schema_version: self.schema_version,
            limits: self.limits,
        }
    }
}

/// The schema version recorded in the file at `path`, read without migrating (tests of
/// the refusal of a newer schema write one by hand).
#[doc(hidden)]
pub fn set_schema_version_for_tests(path: &Path, version: i64) -> Result<(), StoreError> {
    let c = Connection::open(path).map_err(|e| classify(path, e))?;
    c.execute("UPDATE schema_version SET version = ?1", params![version])
        .map_err(|e| classify(path, e))?;
    Ok(())
}

//! The store's schema, as numbered migrations per backend: version N is the first N steps.
//!
//! A store records its version in `schema_version` (one row). Opening a store applies the
//! steps it lacks, in one transaction (PostgreSQL: under an advisory lock, so that replicas
//! starting together migrate once); a store whose version is newer than [`VERSION`] is
//! refused, never written. A new step is appended to both lists, never edited in place.

/// The schema version this binary writes.
pub const VERSION: i64 = 1;

/// The version table, made before anything is read.
pub const VERSION_TABLE: &str =
    "CREATE TABLE IF NOT EXISTS schema_version (version BIGINT NOT NULL)";

/// SQLite's steps.
pub const SQLITE: &[&str] = &[
    // 1: records keyed by (principal, kind, key), with their size and expiry (Unix ms).
    "CREATE TABLE records (
        principal TEXT NOT NULL,
        kind TEXT NOT NULL,
        key TEXT NOT NULL,
        value BLOB NOT NULL,
        size INTEGER NOT NULL,
        expires_at INTEGER NOT NULL,
        PRIMARY KEY (principal, kind, key)
    ) WITHOUT ROWID;
    CREATE INDEX records_expiry ON records (expires_at);",
];

/// PostgreSQL's steps.
pub const POSTGRES: &[&str] = &[
    // 1: as SQLite's.
    "CREATE TABLE records (
        principal TEXT NOT NULL,
        kind TEXT NOT NULL,
        key TEXT NOT NULL,
        value BYTEA NOT NULL,
        size BIGINT NOT NULL,
        expires_at BIGINT NOT NULL,
        PRIMARY KEY (principal, kind, key)
    );
    CREATE INDEX records_expiry ON records (expires_at);",
];

/// What to do with a store at `found`: the steps to apply, or the refusal.
pub fn plan(
    found: i64,
    steps: &'static [&'static str],
) -> Result<&'static [&'static str], crate::error::StoreError> {
    let known = steps.len() as i64;
    if found > known {
        return Err(crate::error::StoreError::SchemaTooNew { found, known });
    }
    Ok(&steps[usize::try_from(found.max(0)).unwrap_or(0)..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_backends_know_the_same_version() {
        assert_eq!(SQLITE.len() as i64, VERSION);
        assert_eq!(POSTGRES.len() as i64, VERSION);
        assert_eq!(plan(0, SQLITE).map(<[_]>::len), Ok(1));
        assert_eq!(plan(1, SQLITE).map(<[_]>::len), Ok(0));
        assert!(matches!(
            plan(2, SQLITE),
            Err(crate::error::StoreError::SchemaTooNew { found: 2, known: 1 })
        ));
    }
}

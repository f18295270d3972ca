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

pub mod api;
pub mod error;
pub mod migrations;
pub mod postgres;
pub mod record;
pub mod spec;
pub mod sqlite;

use std::sync::Arc;

pub use api::{Shared, Store};
pub use error::StoreError;
pub use record::{
    Description, Key, Limits, MAX_KEY_BYTES, check_part, expiry, now_ms, prefix_chars, record_size,
};
pub use spec::Spec;

/// Opens the store `spec` names (`None` for [`Spec::None`]): made and migrated if new.
pub async fn open(spec: &Spec, limits: Limits) -> Result<Option<Shared>, StoreError> {
    Ok(match spec {
        Spec::None => None,
        Spec::Sqlite(path) => Some(Arc::new(sqlite::Sqlite::open(path, limits).await?)),
        Spec::Postgres(url) => Some(Arc::new(postgres::Postgres::connect(url, limits).await?)),
    })
}

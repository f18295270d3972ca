//! The [`Store`] trait every backend implements, and the shared handle to one.

use std::sync::Arc;
use std::time::Duration;

use crate::error::StoreError;
use crate::record::{Description, Key};

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

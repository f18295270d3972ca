//! The shared store: PostgreSQL, for replicas that serve the same clients
//! (`--store postgres://...`). One connection per server, made again when it was lost (the
//! call that finds it lost fails, closed; the next one reconnects). Writes that count
//! against a principal's limit take a transaction-scoped advisory lock on that principal, so
//! that two replicas writing for one principal cannot both pass the limit.
//!
//! The connection is plain (no TLS): reach PostgreSQL over a Unix socket, a loopback
//! address or a private network (`sslmode=require` is refused by the connector).

use std::time::Duration;

use tokio_postgres::{Client, Config, NoTls};

use crate::api::Store;
use crate::error::StoreError;
use crate::migrations;
use crate::record::{
    Description, Key, Limits, check_part, expiry, now_ms, prefix_chars, record_size,
};

const BACKEND: &str = "postgres";
/// How long connecting may take when the URL does not say.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// The advisory lock key under which migrations run (any constant of ours).
const MIGRATION_LOCK: i64 = 0x0c0d_e54e;

/// The PostgreSQL store.
pub struct Postgres {
    config: Config,
    location: String,
    client: tokio::sync::Mutex<Option<Client>>,
    limits: Limits,
    schema_version: i64,
}

impl Postgres {
    /// Connects to `url` and brings the schema to this binary's version.
    pub async fn connect(url: &str, limits: Limits) -> Result<Postgres, StoreError> {
        let config: Config = url.parse().map_err(|e| StoreError::Unavailable {
            backend: BACKEND,
            location: redact(url),
            reason: format!("the URL is not a PostgreSQL connection URL: {e}"),
        })?;
        Postgres::with_config(config, redact(url), limits).await
    }

    /// As [`Postgres::connect`], from a parsed configuration (`location`: how to name it).
    pub async fn with_config(
        mut config: Config,
        location: String,
        limits: Limits,
    ) -> Result<Postgres, StoreError> {
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        let mut store = Postgres {
            config,
            location,
            client: tokio::sync::Mutex::new(None),
            limits,
            schema_version: 0,
        };
        let mut client = store.dial().await?;
        store.schema_version = store.migrate(&mut client).await?;
        *store.client.get_mut() = Some(client);
        Ok(store)
    }

    async fn dial(&self) -> Result<Client, StoreError> {
        let (client, connection) = self
            .config
            .connect(NoTls)
            .await
            .map_err(|e| self.unavailable(&e))?;
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::warn!("the store's PostgreSQL connection ended: {e}");
            }
        });
        Ok(client)
    }

    fn unavailable(&self, e: &tokio_postgres::Error) -> StoreError {
        let reason = match e.as_db_error() {
            Some(db) => format!("{} ({})", db.message(), db.code().code()),
            None => match std::error::Error::source(e) {
                Some(src) => format!("{e}: {src}"),
                None => e.to_string(),
            },
        };
        StoreError::Unavailable {
            backend: BACKEND,
            location: self.location.clone(),
            reason,
        }
    }

    async fn migrate(&self, client: &mut Client) -> Result<i64, StoreError> {
        let tx = client
            .transaction()
            .await
            .map_err(|e| self.unavailable(&e))?;
        let steps = async {
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
                .await?;
            tx.batch_execute(migrations::VERSION_TABLE).await?;
            let found: Option<i64> = tx
                .query_one("SELECT max(version) FROM schema_version", &[])
                .await?
                .get(0);
            Ok::<_, tokio_postgres::Error>(found.unwrap_or(0))
        }
        .await
        .map_err(|e| self.unavailable(&e))?;
        let found = steps;
        let plan = migrations::plan(found, migrations::POSTGRES)?;
        if plan.is_empty() {
            tx.commit().await.map_err(|e| self.unavailable(&e))?;
            return Ok(found);
        }
        async {
            for step in plan {
                tx.batch_execute(step).await?;
            }
            tx.execute("DELETE FROM schema_version", &[]).await?;
            tx.execute(
                "INSERT INTO schema_version (version) VALUES ($1)",
                &[&migrations::VERSION],
            )
            .await?;
            tx.commit().await
        }
        .await
        .map_err(|e| self.unavailable(&e))?;
        Ok(migrations::VERSION)
    }

    /// Runs `f` with the connection, reconnecting first if it was lost; a failure that lost
    /// the connection drops it, so the next call dials again.
    async fn with<T>(
        &self,
        f: impl AsyncFnOnce(&mut Client) -> Result<T, tokio_postgres::Error>,
    ) -> Result<T, StoreError> {
        let mut slot = self.client.lock().await;
        if slot.as_ref().is_none_or(Client::is_closed) {
            *slot = None;
            *slot = Some(self.dial().await?);
        }
        let Some(client) = slot.as_mut() else {
            return Err(StoreError::Unavailable {
                backend: BACKEND,
                location: self.location.clone(),
                reason: "no connection".into(),
            });
        };
        match f(client).await {
            Ok(v) => Ok(v),
            Err(e) => {
                if client.is_closed() || e.is_closed() {
                    *slot = None;
                }
                Err(self.unavailable(&e))
            }
        }
    }

    /// Sets the schema version by hand (tests of the refusal of a newer schema).
    #[doc(hidden)]
    pub async fn set_schema_version_for_tests(&self, version: i64) -> Result<(), StoreError> {
        self.with(async |c| {
            c.execute("UPDATE schema_version SET version = $1", &[&version])
                .await
                .map(|_| ())
        })
        .await
    }
}

/// `url` without its password (for messages and `doctor`).
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => {
            let user = userinfo.split_once(':').map_or(userinfo, |(u, _)| u);
            let shown = if user.len() == userinfo.len() {
                user.to_string()
            } else {
                format!("{user}:***")
            };
            let query = redact_query(tail);
            format!("{scheme}://{shown}@{host}{query}")
        }
        None => format!("{scheme}://{authority}{}", redact_query(tail)),
    }
}

fn redact_query(tail: &str) -> String {
    let Some((path, query)) = tail.split_once('?') else {
        return tail.to_string();
    };
    let parts: Vec<String> = query
        .split('&')
        .map(|kv| match kv.split_once('=') {
            Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}=***"),
            _ => kv.to_string(),
        })
        .collect();
    format!("{path}?{}", parts.join("&"))
}

#[async_trait::async_trait]
impl Store for Postgres {
    async fn put(&self, key: Key<'_>, value: &[u8], ttl: Duration) -> Result<(), StoreError> {
        key.check()?;
        let max = self.limits.max_bytes_per_principal;
        let size = record_size(key.key, value);
        let refused = self
            .with(async |c| {
                let tx = c.transaction().await?;
                tx.execute(
                    "SELECT pg_advisory_xact_lock(hashtextextended($1, 54))",
                    &[&key.principal],
                )
                .await?;
                tx.execute(
                    "DELETE FROM records WHERE principal = $1 AND expires_at <= $2",
                    &[&key.principal, &now_ms()],
                )
                .await?;
                let others: i64 = tx
                    .query_one(
                        "SELECT COALESCE(SUM(size), 0)::BIGINT FROM records
                         WHERE principal = $1 AND NOT (kind = $2 AND key = $3)",
                        &[&key.principal, &key.kind, &key.key],
                    )
                    .await?
                    .get(0);
                let total = u64::try_from(others).unwrap_or(0) + size;
                if total > max {
                    tx.rollback().await?;
                    return Ok(Some(total));
                }
                tx.execute(
                    "INSERT INTO records (principal, kind, key, value, size, expires_at)
                     VALUES ($1, $2, $3, $4, $5, $6)
                     ON CONFLICT (principal, kind, key) DO UPDATE SET
                       value = excluded.value, size = excluded.size,
                       expires_at = excluded.expires_at",
                    &[
                        &key.principal,
                        &key.kind,
                        &key.key,
                        &value,
                        &(size as i64),
                        &expiry(ttl),
                    ],
                )
                .await?;
                tx.commit().await?;
                Ok(None)
            })
            .await?;
        match refused {
            Some(total) => Err(StoreError::Full { size, total, max }),
            None => Ok(()),
        }
    }

    async fn get(&self, key: Key<'_>) -> Result<Option<Vec<u8>>, StoreError> {
        key.check()?;
        self.with(async |c| {
            let row = c
                .query_opt(
                    "SELECT value FROM records
                     WHERE principal = $1 AND kind = $2 AND key = $3 AND expires_at > $4",
                    &[&key.principal, &key.kind, &key.key, &now_ms()],
                )
                .await?;
            Ok(row.map(|r| r.get::<_, Vec<u8>>(0)))
        })
        .await
    }

    async fn delete(&self, key: Key<'_>) -> Result<bool, StoreError> {
        key.check()?;
        self.with(async |c| {
            c.execute(
                "DELETE FROM records WHERE principal = $1 AND kind = $2 AND key = $3",
                &[&key.principal, &key.kind, &key.key],
            )
            .await
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
        self.with(async |c| {
            let rows = c
                .query(
                    "SELECT key, value FROM records
                     WHERE principal = $1 AND kind = $2 AND substr(key, 1, $3::BIGINT::INT) = $4
                       AND expires_at > $5
                     ORDER BY key COLLATE \"C\"",
                    &[&principal, &kind, &prefix_chars(prefix), &prefix, &now_ms()],
                )
                .await?;
            Ok(rows.into_iter().map(|r| (r.get(0), r.get(1))).collect())
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
        self.with(async |c| {
            c.execute(
                "DELETE FROM records
                 WHERE principal = $1 AND kind = $2 AND substr(key, 1, $3::BIGINT::INT) = $4",
                &[&principal, &kind, &prefix_chars(prefix), &prefix],
            )
            .await
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
        self.with(async |c| {
            c.execute(
                "UPDATE records SET expires_at = $5
                 WHERE principal = $1 AND kind = $2 AND substr(key, 1, $3::BIGINT::INT) = $4
                   AND expires_at > $6",
                &[
                    &principal,
                    &kind,
                    &prefix_chars(prefix),
                    &prefix,
                    &expiry(ttl),
                    &now_ms(),
                ],
            )
            .await
        })
        .await
    }

    async fn usage(&self, principal: &str) -> Result<u64, StoreError> {
        check_part("principal", principal, false)?;
        self.with(async |c| {
            let n: i64 = c
                .query_one(
                    "SELECT COALESCE(SUM(size), 0)::BIGINT FROM records
                     WHERE principal = $1 AND expires_at > $2",
                    &[&principal, &now_ms()],
                )
                .await?
                .get(0);
            Ok(u64::try_from(n).unwrap_or(0))
        })
        .await
    }

    async fn sweep(&self) -> Result<u64, StoreError> {
        self.with(async |c| {
            c.execute("DELETE FROM records WHERE expires_at <= $1", &[&now_ms()])
                .await
        })
        .await
    }

    fn describe(&self) -> Description {
        Description {
            backend: BACKEND,
            location: self.location.clone(),
            schema_version: self.schema_version,
            limits: self.limits,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn passwords_never_show() {
        assert_eq!(
            redact("postgres://u:pw@h:5432/db?sslmode=disable"),
            "postgres://u:***@h:5432/db?sslmode=disable"
        );
        assert_eq!(redact("postgres://u@h/db"), "postgres://u@h/db");
        assert_eq!(
            redact("postgresql://h/db?user=u&password=pw"),
            "postgresql://h/db?user=u&password=***"
        );
    }
}

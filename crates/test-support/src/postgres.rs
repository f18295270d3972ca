//! The test PostgreSQL (`CODE_EXECUTOR_TEST_POSTGRES`, started by scripts/setup-postgres.sh,
//! which scripts/test.sh runs): a fresh database per test, so that tests sharing the one
//! server never see each other's records.

use std::sync::atomic::{AtomicU64, Ordering};

/// The URL of a new, empty database on the test PostgreSQL, or `None` after a loud SKIP
/// naming `test` when no test PostgreSQL is set; under `CODE_EXECUTOR_REQUIRE_POSTGRES=1`
/// (CI) its absence is a failure instead.
pub async fn fresh_database(test: &str) -> Option<String> {
    let Ok(url) = std::env::var("CODE_EXECUTOR_TEST_POSTGRES") else {
        let why = "CODE_EXECUTOR_TEST_POSTGRES is not set (scripts/setup-postgres.sh starts a \
                   PostgreSQL and sets it; scripts/test.sh does both)";
        assert!(
            std::env::var("CODE_EXECUTOR_REQUIRE_POSTGRES").is_err(),
            "CODE_EXECUTOR_REQUIRE_POSTGRES is set but {why}"
        );
        #[allow(
            clippy::print_stderr,
            reason = "a skipped test says so where its output goes"
        )]
        {
            eprintln!(
                "\n==================== SKIP: {test} on PostgreSQL: {why} ====================\n"
            );
        }
        return None;
    };
    let admin: tokio_postgres::Config = url.parse().expect("CODE_EXECUTOR_TEST_POSTGRES");
    let (client, conn) = admin
        .connect(tokio_postgres::NoTls)
        .await
        .expect("connect to the test PostgreSQL");
    tokio::spawn(conn);
    static N: AtomicU64 = AtomicU64::new(0);
    let db = format!(
        "t_{}_{}_{}",
        test.chars()
            .filter(char::is_ascii_alphanumeric)
            .take(24)
            .collect::<String>(),
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
    .to_lowercase();
    client
        .batch_execute(&format!("CREATE DATABASE {db}"))
        .await
        .expect("create a test database");
    let base = url.rsplit_once('/').map_or(url.as_str(), |(b, _)| b);
    Some(format!("{base}/{db}"))
}

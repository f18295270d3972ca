//! The store's suite: the same cases against SQLite and against a real PostgreSQL.
//!
//! PostgreSQL is the one `scripts/setup-postgres.sh` starts (its URL in
//! `CODE_EXECUTOR_TEST_POSTGRES`); each test makes its own database there. Without the
//! variable the PostgreSQL cases print SKIP and why; with `CODE_EXECUTOR_REQUIRE_POSTGRES=1`
//! they fail instead.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use store::postgres::Postgres;
use store::sqlite::Sqlite;
use store::{Key, Limits, MAX_KEY_BYTES, Store, StoreError};

const DAY: Duration = Duration::from_secs(86_400);

/// A temporary directory, removed at the end.
struct Temp(PathBuf);

impl Temp {
    fn new(tag: &str) -> Temp {
        static N: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "cem-store-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        Temp(dir)
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Where a backend's store lives, so that a test can open it again.
enum Place {
    Sqlite(Temp),
    Postgres(Box<tokio_postgres::Config>),
}

impl Place {
    async fn open(&self, limits: Limits) -> Result<Arc<dyn Store>, StoreError> {
        Ok(match self {
            Place::Sqlite(t) => Arc::new(Sqlite::open(&t.0.join("store.sqlite3"), limits).await?),
            Place::Postgres(c) => {
                Arc::new(Postgres::with_config((**c).clone(), "test".into(), limits).await?)
            }
        })
    }
}

/// A fresh SQLite place.
fn sqlite_place() -> Place {
    Place::Sqlite(Temp::new("sqlite"))
}

/// A fresh database on the test PostgreSQL, or `None` (SKIP, or a failure under REQUIRE).
async fn postgres_place(test: &str) -> Option<Place> {
    let url = test_support::postgres::fresh_database(&format!("store::{test}")).await?;
    let config: tokio_postgres::Config = url.parse().expect("the test database's URL");
    Some(Place::Postgres(Box::new(config)))
}

/// Runs `case` on SQLite, then on PostgreSQL (unless skipped).
macro_rules! both {
    ($($name:ident),* $(,)?) => {
        mod sqlite_backend {
            $(
                #[tokio::test]
                async fn $name() {
                    super::$name(super::sqlite_place()).await;
                }
            )*
        }
        mod postgres_backend {
            $(
                #[tokio::test]
                async fn $name() {
                    if let Some(place) = super::postgres_place(stringify!($name)).await {
                        super::$name(place).await;
                    }
                }
            )*
        }
    };
}

both!(
    records_round_trip_and_replace,
    a_principal_reads_only_its_own_records,
    hostile_keys_are_data_or_refused,
    the_limit_per_principal_refuses_and_changes_nothing,
    concurrent_writers_cannot_pass_the_limit_together,
    expired_records_are_never_returned_and_are_swept,
    touch_gives_live_records_more_time,
    what_was_acknowledged_survives_a_reopen,
    a_newer_schema_is_refused,
);

fn k<'a>(p: &'a str, key: &'a str) -> Key<'a> {
    Key::new(p, "value", key)
}

async fn records_round_trip_and_replace(place: Place) {
    let s = place.open(Limits::default()).await.unwrap();
    assert_eq!(s.get(k("alice", "a")).await.unwrap(), None);
    s.put(k("alice", "a"), b"one", DAY).await.unwrap();
    assert_eq!(s.get(k("alice", "a")).await.unwrap(), Some(b"one".to_vec()));
    s.put(k("alice", "a"), b"two!", DAY).await.unwrap();
    assert_eq!(
        s.get(k("alice", "a")).await.unwrap(),
        Some(b"two!".to_vec())
    );
    assert_eq!(s.usage("alice").await.unwrap(), 5);
    // Kinds are separate spaces.
    assert_eq!(s.get(Key::new("alice", "run", "a")).await.unwrap(), None);
    s.put(k("alice", "s1/x"), b"1", DAY).await.unwrap();
    s.put(k("alice", "s1/y"), b"2", DAY).await.unwrap();
    s.put(k("alice", "s2/x"), b"3", DAY).await.unwrap();
    let listed = s.list("alice", "value", "s1/").await.unwrap();
    assert_eq!(
        listed,
        vec![
            ("s1/x".into(), b"1".to_vec()),
            ("s1/y".into(), b"2".to_vec())
        ]
    );
    assert_eq!(s.delete_prefix("alice", "value", "s1/").await.unwrap(), 2);
    assert!(s.list("alice", "value", "s1/").await.unwrap().is_empty());
    assert!(s.delete(k("alice", "s2/x")).await.unwrap());
    assert!(!s.delete(k("alice", "s2/x")).await.unwrap());
    let d = s.describe();
    assert_eq!(d.schema_version, store::migrations::VERSION);
}

async fn a_principal_reads_only_its_own_records(place: Place) {
    let s = place.open(Limits::default()).await.unwrap();
    s.put(k("alice", "secret"), b"alice's", DAY).await.unwrap();
    s.put(k("alice", "s_1/k"), b"v", DAY).await.unwrap();
    assert_eq!(s.get(k("bob", "secret")).await.unwrap(), None);
    assert!(s.list("bob", "value", "").await.unwrap().is_empty());
    assert!(!s.delete(k("bob", "secret")).await.unwrap());
    assert_eq!(s.delete_prefix("bob", "value", "").await.unwrap(), 0);
    assert_eq!(s.touch_prefix("bob", "value", "", DAY).await.unwrap(), 0);
    assert_eq!(s.usage("bob").await.unwrap(), 0);
    // Bob writing the same key makes his own record.
    s.put(k("bob", "secret"), b"bob's", DAY).await.unwrap();
    assert_eq!(
        s.get(k("alice", "secret")).await.unwrap(),
        Some(b"alice's".to_vec())
    );
    assert_eq!(
        s.get(k("bob", "secret")).await.unwrap(),
        Some(b"bob's".to_vec())
    );
    // A principal that is a prefix of another, or looks like a pattern, is its own.
    s.put(k("ali", "secret"), b"x", DAY).await.unwrap();
    assert_eq!(
        s.get(k("alice", "secret")).await.unwrap(),
        Some(b"alice's".to_vec())
    );
    assert_eq!(s.get(k("%", "secret")).await.unwrap(), None);
    assert!(s.list("%", "value", "").await.unwrap().is_empty());
    assert!(s.list("ali%", "value", "").await.unwrap().is_empty());
}

async fn hostile_keys_are_data_or_refused(place: Place) {
    let s = place.open(Limits::default()).await.unwrap();
    let keys = [
        "..",
        "../../etc/passwd",
        "a/../b",
        "%2e%2e%2f",
        "%00",
        "s_1/%",
        "s_1/_",
        "'; DROP TABLE records; --",
        "ключ 🔑",
        "",
    ];
    for (i, key) in keys.iter().enumerate() {
        s.put(k("p", key), i.to_string().as_bytes(), DAY)
            .await
            .unwrap();
    }
    for (i, key) in keys.iter().enumerate() {
        assert_eq!(
            s.get(k("p", key)).await.unwrap(),
            Some(i.to_string().into_bytes()),
            "{key:?}"
        );
    }
    // Pattern characters in a prefix match only themselves.
    let listed = s.list("p", "value", "s_1/%").await.unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(s.list("p", "value", "%").await.unwrap().len(), 2);
    // The longest key fits; one byte more, or a NUL, is refused, typed, and writes nothing.
    let longest = "k".repeat(MAX_KEY_BYTES);
    s.put(k("p", &longest), b"x", DAY).await.unwrap();
    let too_long = "k".repeat(MAX_KEY_BYTES + 1);
    assert!(matches!(
        s.put(k("p", &too_long), b"x", DAY).await,
        Err(StoreError::InvalidKey { what: "key", .. })
    ));
    let err = s.put(k("p", "a\0b"), b"x", DAY).await.unwrap_err();
    assert!(err.to_string().contains("NUL"), "{err}");
    assert!(matches!(
        s.get(k("p\0q", "x")).await,
        Err(StoreError::InvalidKey {
            what: "principal",
            ..
        })
    ));
    assert_eq!(s.get(k("p", "a")).await.unwrap(), None);
    // Values are bytes: NUL and invalid UTF-8 come back as they went.
    s.put(k("p", "bin"), b"\0\xff\xfe", DAY).await.unwrap();
    assert_eq!(
        s.get(k("p", "bin")).await.unwrap(),
        Some(b"\0\xff\xfe".to_vec())
    );
}

async fn the_limit_per_principal_refuses_and_changes_nothing(place: Place) {
    let limits = Limits {
        max_bytes_per_principal: 100,
    };
    let s = place.open(limits).await.unwrap();
    s.put(k("p", "a"), &[b'x'; 79], DAY).await.unwrap();
    let err = s.put(k("p", "b"), &[b'y'; 30], DAY).await.unwrap_err();
    assert_eq!(
        err,
        StoreError::Full {
            size: 31,
            total: 111,
            max: 100
        }
    );
    let text = err.to_string();
    assert!(
        text.contains("store.maxBytesPerClient") && text.contains("100"),
        "{text}"
    );
    assert_eq!(s.get(k("p", "b")).await.unwrap(), None);
    assert_eq!(s.get(k("p", "a")).await.unwrap(), Some(vec![b'x'; 79]));
    // Another principal has its own room.
    s.put(k("q", "b"), &[b'y'; 30], DAY).await.unwrap();
    // Replacing counts the new size only; deleting frees room.
    s.put(k("p", "a"), &[b'z'; 60], DAY).await.unwrap();
    s.put(k("p", "b"), &[b'y'; 30], DAY).await.unwrap();
    assert_eq!(s.usage("p").await.unwrap(), 92);
    s.delete(k("p", "a")).await.unwrap();
    s.put(k("p", "c"), &[b'w'; 60], DAY).await.unwrap();
    // Expired records make room.
    let s2 = place.open(limits).await.unwrap();
    s2.put(k("r", "old"), &[b'o'; 90], Duration::from_millis(1))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    s2.put(k("r", "new"), &[b'n'; 90], DAY).await.unwrap();
}

async fn concurrent_writers_cannot_pass_the_limit_together(place: Place) {
    let limits = Limits {
        max_bytes_per_principal: 1000,
    };
    // Two stores on one place: two servers (or replicas) sharing it.
    let a = place.open(limits).await.unwrap();
    let b = place.open(limits).await.unwrap();
    let mut tasks = Vec::new();
    for i in 0..20 {
        let s = if i % 2 == 0 { a.clone() } else { b.clone() };
        tasks.push(tokio::spawn(async move {
            s.put(
                Key::new("p", "value", &format!("k{i:02}")),
                &[b'v'; 97],
                DAY,
            )
            .await
        }));
    }
    let mut ok = 0;
    for t in tasks {
        match t.await.unwrap() {
            Ok(()) => ok += 1,
            Err(StoreError::Full { .. }) => {}
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(ok, 10, "each record is 100 bytes, the limit 1000");
    assert_eq!(a.usage("p").await.unwrap(), 1000);
}

async fn expired_records_are_never_returned_and_are_swept(place: Place) {
    let s = place.open(Limits::default()).await.unwrap();
    // (A write deletes its principal's expired records: the long one goes first.)
    s.put(k("p", "long"), b"y", DAY).await.unwrap();
    s.put(k("p", "brief"), b"x", Duration::from_millis(1))
        .await
        .unwrap();
    s.put(k("q", "s/brief"), b"x", Duration::from_millis(1))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(s.get(k("p", "brief")).await.unwrap(), None);
    assert!(s.list("q", "value", "s/").await.unwrap().is_empty());
    assert_eq!(s.usage("p").await.unwrap(), 5);
    assert_eq!(s.usage("q").await.unwrap(), 0);
    assert_eq!(s.sweep().await.unwrap(), 2);
    assert_eq!(s.sweep().await.unwrap(), 0);
    assert_eq!(s.get(k("p", "long")).await.unwrap(), Some(b"y".to_vec()));
}

async fn touch_gives_live_records_more_time(place: Place) {
    let s = place.open(Limits::default()).await.unwrap();
    s.put(k("p", "s/a"), b"x", Duration::from_millis(300))
        .await
        .unwrap();
    s.put(k("p", "t/a"), b"x", Duration::from_millis(300))
        .await
        .unwrap();
    assert_eq!(s.touch_prefix("p", "value", "s/", DAY).await.unwrap(), 1);
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(s.get(k("p", "s/a")).await.unwrap(), Some(b"x".to_vec()));
    assert_eq!(s.get(k("p", "t/a")).await.unwrap(), None);
    // An expired record is not brought back.
    assert_eq!(s.touch_prefix("p", "value", "t/", DAY).await.unwrap(), 0);
}

async fn what_was_acknowledged_survives_a_reopen(place: Place) {
    {
        let s = place.open(Limits::default()).await.unwrap();
        s.put(k("p", "kept"), b"durable", DAY).await.unwrap();
    }
    let s = place.open(Limits::default()).await.unwrap();
    assert_eq!(
        s.get(k("p", "kept")).await.unwrap(),
        Some(b"durable".to_vec())
    );
}

async fn a_newer_schema_is_refused(place: Place) {
    let s = place.open(Limits::default()).await.unwrap();
    s.put(k("p", "kept"), b"x", DAY).await.unwrap();
    match &place {
        Place::Sqlite(t) => {
            drop(s);
            store::sqlite::set_schema_version_for_tests(&t.0.join("store.sqlite3"), 99).unwrap();
        }
        Place::Postgres(c) => {
            Postgres::with_config((**c).clone(), "test".into(), Limits::default())
                .await
                .unwrap()
                .set_schema_version_for_tests(99)
                .await
                .unwrap();
        }
    }
    let err = place.open(Limits::default()).await.err();
    assert_eq!(
        err,
        Some(StoreError::SchemaTooNew {
            found: 99,
            known: store::migrations::VERSION
        })
    );
    let text = err.map(|e| e.to_string()).unwrap_or_default();
    assert!(text.contains("newer than this binary"), "{text}");
}

// SQLite only: the file itself.

#[tokio::test]
async fn sqlite_a_corrupt_file_is_refused_and_left_as_it_is() {
    let t = Temp::new("corrupt");
    let path = t.0.join("store.sqlite3");
    let junk = b"this is not an SQLite database, but it is someone's file".repeat(100);
    std::fs::write(&path, &junk).unwrap();
    let err = Sqlite::open(&path, Limits::default()).await.err();
    assert!(matches!(err, Some(StoreError::Corrupt { .. })), "{err:?}");
    let text = err.map(|e| e.to_string()).unwrap_or_default();
    assert!(text.contains("not a usable SQLite database"), "{text}");
    assert_eq!(std::fs::read(&path).unwrap(), junk, "the file was changed");
}

#[tokio::test]
async fn sqlite_an_unwritable_place_is_unavailable() {
    let t = Temp::new("unwritable");
    // A regular file where the directory should be (refused even to root).
    std::fs::write(t.0.join("file"), b"x").unwrap();
    let err = Sqlite::open(&t.0.join("file/store.sqlite3"), Limits::default())
        .await
        .err();
    assert!(
        matches!(
            &err,
            Some(StoreError::Unavailable {
                backend: "sqlite",
                ..
            })
        ),
        "{err:?}"
    );
}

#[tokio::test]
async fn sqlite_a_full_disk_fails_closed_and_keeps_what_was_acknowledged() {
    let t = Temp::new("full");
    let s = Sqlite::open(&t.0.join("store.sqlite3"), Limits::default())
        .await
        .unwrap();
    s.put(k("p", "before"), b"acknowledged", DAY).await.unwrap();
    s.cap_pages_for_tests(8).await.unwrap();
    let mut refused = None;
    for i in 0..200 {
        if let Err(e) = s.put(k("p", &format!("k{i}")), &[b'x'; 4000], DAY).await {
            refused = Some(e);
            break;
        }
    }
    let err = refused.expect("a capped file fills up");
    assert!(err.to_string().contains("full"), "{err}");
    assert!(matches!(err, StoreError::Unavailable { .. }), "{err:?}");
    assert_eq!(
        s.get(k("p", "before")).await.unwrap(),
        Some(b"acknowledged".to_vec())
    );
    drop(s);
    let s = Sqlite::open(&t.0.join("store.sqlite3"), Limits::default())
        .await
        .unwrap();
    assert_eq!(
        s.get(k("p", "before")).await.unwrap(),
        Some(b"acknowledged".to_vec())
    );
}

// PostgreSQL only: the server.

#[tokio::test]
async fn postgres_a_server_that_is_down_is_unavailable() {
    // A loopback port nobody listens on (bound, then closed).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap();
    let url = format!("postgres://nobody:hunter2@127.0.0.1:{port}/none?connect_timeout=2");
    let err = Postgres::connect(&url, Limits::default()).await.err();
    assert!(
        matches!(
            &err,
            Some(StoreError::Unavailable {
                backend: "postgres",
                ..
            })
        ),
        "{err:?}"
    );
    let text = err.map(|e| e.to_string()).unwrap_or_default();
    assert!(!text.contains("hunter2"), "the password leaked: {text}");
    assert!(text.contains(&port.to_string()), "{text}");
}

#[tokio::test]
async fn postgres_a_lost_connection_fails_closed_then_reconnects() {
    let Some(place) = postgres_place("lost_connection").await else {
        return;
    };
    let Place::Postgres(config) = &place else {
        return;
    };
    let s = place.open(Limits::default()).await.unwrap();
    s.put(k("p", "before"), b"acknowledged", DAY).await.unwrap();
    // The server ends every connection to the store's database (as a restart would).
    let url = std::env::var("CODE_EXECUTOR_TEST_POSTGRES").unwrap();
    let admin: tokio_postgres::Config = url.parse().unwrap();
    let (client, conn) = admin.connect(tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(conn);
    let db = config.get_dbname().unwrap().to_string();
    client
        .execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
             WHERE datname = $1 AND pid <> pg_backend_pid()",
            &[&db],
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    // The first call after may fail (closed, with a clear error) or already reconnect;
    // nothing acknowledged is lost, and the store works again.
    match s.put(k("p", "during"), b"x", DAY).await {
        Ok(()) => {}
        Err(e) => {
            assert!(matches!(e, StoreError::Unavailable { .. }), "{e:?}");
            assert!(e.to_string().contains("unavailable"), "{e}");
        }
    }
    s.put(k("p", "after"), b"y", DAY).await.unwrap();
    assert_eq!(
        s.get(k("p", "before")).await.unwrap(),
        Some(b"acknowledged".to_vec())
    );
}

//! Worker pools through the built binary and the real sandbox: a worker never serves two
//! executions outside a session (sequential and concurrent, both languages), and a pool
//! grows under a burst and shrinks back when idle, within its bounds, as `health` reports.

use std::collections::HashSet;
use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use test_support::{Harness, TempConfig};

use crate::common;

/// A server with the fixture upstream, room for a burst (queue and rate), and `extra` in its
/// settings file.
async fn server(extra: Value) -> (Harness, TempConfig) {
    let mut settings = json!({
        "limits": {
            "maxConcurrentExecutions": 8,
            "queue": 64,
            "executionsPerMinute": 100000,
        },
    });
    if let (Some(s), Value::Object(extra)) = (settings.as_object_mut(), extra) {
        s.extend(extra);
    }
    common::server(settings).await
}

/// What an execution reports about the process that ran it: whether it was the first
/// execution there (a global left by an earlier one is absent), and tokens drawn from the
/// process's random state (Math.random; Python's random and its per-process hash seed).
const TS_PROBE: &str = "const fresh = globalThis.__ranHere === undefined; \
    globalThis.__ranHere = true; \
    return [fresh, String(Math.random()) + ':' + String(Math.random())];";
const PY_PROBE: &str = "import builtins, random\n\
    fresh = not hasattr(builtins, '_ran_here')\n\
    builtins._ran_here = True\n\
    [fresh, '%r:%d' % (random.random(), hash('token'))]";

async fn probe(h: &Harness, python: bool) -> (bool, String) {
    let (v, is_error) = if python {
        h.exec_python(PY_PROBE).await
    } else {
        h.exec(TS_PROBE).await
    };
    assert!(!is_error, "{v}");
    (
        v["result"][0].as_bool().unwrap(),
        v["result"][1].as_str().unwrap().to_string(),
    )
}

#[tokio::test]
async fn a_worker_never_serves_two_executions_outside_a_session() {
    let (h, _dir) = server(json!({})).await;
    for python in [false, true] {
        let mut tokens = HashSet::new();
        let mut runs = Vec::new();
        // Back to back (the pool drains and refills), then concurrent bursts.
        for _ in 0..30 {
            runs.push(probe(&h, python).await);
        }
        for _ in 0..3 {
            let burst = (0..10).map(|_| probe(&h, python));
            runs.extend(futures::future::join_all(burst).await);
        }
        for (fresh, token) in &runs {
            assert!(
                fresh,
                "an execution found what an earlier one left (python: {python})"
            );
            assert!(
                tokens.insert(token.clone()),
                "two executions drew the same random token {token} (python: {python}): \
                 same process, or a random state copied between workers"
            );
        }
        assert_eq!(tokens.len(), 60);
    }
}

#[tokio::test]
async fn a_pool_grows_under_a_burst_of_50_and_shrinks_back_within_its_bounds() {
    let (h, _dir) = server(json!({"poolMax": 4, "poolShrinkAfterMs": 300})).await;
    let before = h.pool("js").await;
    let (min, max) = (
        before["min"].as_u64().unwrap(),
        before["max"].as_u64().unwrap(),
    );
    assert_eq!(max, 4, "{before}");
    assert!(min < max, "{before}");

    let burst = (0..50).map(|i| h.exec_with(json!({"code": format!("return {i};")})));
    let results = futures::future::join_all(burst).await;
    for (i, (v, is_error)) in results.iter().enumerate() {
        assert!(!is_error, "{v}");
        assert_eq!(v["result"], json!(i));
    }
    let after = h.pool("js").await;
    let peak = after["peakTarget"].as_u64().unwrap();
    assert!(
        peak > min && peak <= max,
        "the pool should grow under the burst, never past its max: {after}"
    );
    assert!(after["grown"].as_u64().unwrap() >= 1, "{after}");
    assert!(after["target"].as_u64().unwrap() <= max, "{after}");
    assert!(after["ready"].as_u64().unwrap() <= max, "{after}");

    // Idle: back to its floor, one step per idle period, never below it.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let now = h.pool("js").await;
        let (target, ready) = (
            now["target"].as_u64().unwrap(),
            now["ready"].as_u64().unwrap(),
        );
        assert!(target >= min && target <= max, "{now}");
        assert!(ready <= max, "{now}");
        if target == min && ready == min {
            assert!(now["shrunk"].as_u64().unwrap() >= 1, "{now}");
            assert_eq!(now["startFailures"], json!(0), "{now}");
            assert!(now["memoryBytes"].as_u64().unwrap() > 0, "{now}");
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the pool never shrank back to {min}: {now}"
        );
        // Polling a condition, not waiting for time to pass.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The read grants' pools `health` reports.
async fn grant_pools(h: &Harness) -> Vec<Value> {
    let (v, _) = h.run_tool("health", json!({})).await;
    v["grantPools"].as_array().cloned().unwrap_or_default()
}

/// The warm pools of read grants (`runtime/worker/grants.rs`): an execution granted data paths
/// gets a worker whose view holds exactly those paths, from a pool of its own that the first
/// such execution makes; once warm, a granted execution waits for no start; a worker still
/// serves one execution, never sees another grant's paths, and the pool shrinks back to nothing
/// when idle. At most 8 sets are kept.
#[tokio::test]
async fn read_grants_get_warm_workers_of_exactly_their_paths_and_each_serves_one_execution() {
    let dirs: Vec<test_support::TempDir> = (0..9)
        .map(|i| {
            let d = test_support::TempDir::new(&format!("grant-pool-{i}"));
            std::fs::write(d.0.join("mine.txt"), format!("dir {i}")).unwrap();
            d
        })
        .collect();
    let paths: Vec<String> = dirs.iter().map(|d| d.0.display().to_string()).collect();
    let (h, _dir) = server(json!({
        "permissions": {"read": paths},
        "poolShrinkAfterMs": 1500,
    }))
    .await;
    // Reads its own file and tries the other directory's; reports whether it ran first in
    // its process, and a token of the process's random state.
    let code = |python: bool, mine: &str, other: &str| {
        if python {
            format!(
                "import builtins, random\nfresh = not hasattr(builtins, '_ran_here')\n\
                 builtins._ran_here = True\n\
                 try:\n    open({other:?}).read()\n    other = True\nexcept OSError:\n    other = False\n\
                 [fresh, '%r:%d' % (random.random(), hash('token')), open({mine:?}).read(), other]"
            )
        } else {
            format!(
                "const fresh = globalThis.__ranHere === undefined; globalThis.__ranHere = true;\n\
                 let other = true; try {{ await fs.readFile({other:?}, 'utf8'); }} catch {{ other = false; }}\n\
                 return [fresh, String(Math.random()) + ':' + String(Math.random()), \
                 await fs.readFile({mine:?}, 'utf8'), other];"
            )
        }
    };
    let run = |python: bool, i: usize, j: usize| {
        let (h, paths, code) = (&h, &paths, &code);
        async move {
            let mine = format!("{}/mine.txt", paths[i]);
            let other = format!("{}/mine.txt", paths[j]);
            let args = json!({
                "code": code(python, &mine, &other),
                "permissions": {"read": [paths[i]]},
            });
            let (v, is_error) = if python {
                h.exec_python_with(args).await
            } else {
                h.exec_with(args).await
            };
            assert!(!is_error, "{v}");
            let r = &v["result"];
            assert_eq!(r[2], json!(format!("dir {i}")), "{v}");
            assert_eq!(
                r[3],
                json!(false),
                "a worker granted {} read {}: {v}",
                paths[i],
                paths[j]
            );
            (r[0].as_bool().unwrap(), r[1].as_str().unwrap().to_string())
        }
    };
    for python in [false, true] {
        let language = if python { "python" } else { "js" };
        let mut tokens = HashSet::new();
        let mut runs = Vec::new();
        for k in 0..12 {
            runs.push(run(python, k % 2, 1 - k % 2).await);
        }
        let burst = (0..8).map(|k| run(python, k % 2, 1 - k % 2));
        runs.extend(futures::future::join_all(burst).await);
        for (fresh, token) in &runs {
            assert!(
                fresh,
                "an execution found what an earlier one left ({language})"
            );
            assert!(
                tokens.insert(token.clone()),
                "two granted executions drew the same token {token} ({language})"
            );
        }
        // One pool per set of paths; once directory 0's holds a warm worker, a run granted
        // directory 0 takes it without waiting for a start (no miss).
        let mine = |pools: &[Value]| {
            pools
                .iter()
                .find(|p| p["language"] == language && p["dataPaths"] == json!([paths[0]]))
                .cloned()
        };
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        let before = loop {
            let pools = grant_pools(&h).await;
            assert_eq!(
                pools.iter().filter(|p| p["language"] == language).count(),
                2,
                "one pool per set of paths: {pools:?}"
            );
            if let Some(p) = mine(&pools).filter(|p| p["ready"].as_u64() > Some(0)) {
                break p;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "no warm {language} worker for a read grant: {pools:?}"
            );
            // Polling a condition, not waiting for time to pass.
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        assert_eq!(before["min"], json!(0), "{before}");
        run(python, 0, 1).await;
        let after = mine(&grant_pools(&h).await).unwrap();
        assert_eq!(
            after["misses"], before["misses"],
            "a granted run waited for a start though a worker was ready: {before} -> {after}"
        );
        assert!(after["started"].as_u64() > Some(0), "{after}");
    }
    // A granted directory replaced while its pool holds warm workers (a build tool making
    // `dist/` again): the next granted run sees the new one, not the view of the old.
    let replaced = format!("{}.old", paths[0]);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !grant_pools(&h)
        .await
        .iter()
        .any(|p| p["dataPaths"] == json!([paths[0]]) && p["ready"].as_u64() > Some(0))
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no warm worker to make stale"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    std::fs::rename(&paths[0], &replaced).unwrap();
    std::fs::create_dir(&paths[0]).unwrap();
    test_support::set_mode(Path::new(&paths[0]), 0o755);
    std::fs::write(format!("{}/mine.txt", paths[0]), "dir 0, made again").unwrap();
    for python in [false, true] {
        let mine = format!("{}/mine.txt", paths[0]);
        let args = json!({"code": if python { format!("open({mine:?}).read()") } else {
            format!("return await fs.readFile({mine:?}, 'utf8')") }, "permissions": {"read": [paths[0]]}});
        let (v, is_error) = if python {
            h.exec_python_with(args).await
        } else {
            h.exec_with(args).await
        };
        assert!(!is_error, "{v}");
        assert_eq!(v["result"], json!("dir 0, made again"), "a stale view: {v}");
    }
    std::fs::remove_dir_all(&replaced).unwrap();
    std::fs::write(format!("{}/mine.txt", paths[0]), "dir 0").unwrap();
    // Idle: each grant's pool shrinks back to nothing (one step per idle period).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let pools = grant_pools(&h).await;
        if pools
            .iter()
            .all(|p| p["ready"] == json!(0) && p["target"] == json!(0))
        {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the grants' pools kept workers while idle: {pools:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Nine sets of paths in one language: the least recently used pool is closed.
    for i in 0..9 {
        run(false, i, (i + 1) % 9).await;
    }
    let pools = grant_pools(&h).await;
    assert!(
        pools.len() <= 8,
        "more than 8 grants' pools kept: {pools:?}"
    );
    let empty = h.exec("return 1").await;
    assert!(!empty.1, "{}", empty.0);
}

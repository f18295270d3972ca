//! Figures of issue #55, measured against GitHub's document behind its Prism mock and
//! printed, not asserted (timings depend on the machine): `search_tools` over the document
//! cold (read and parsed on first use) and warm (a second server, the operations from the
//! tool cache), recall@5 of the 30 searches in `openapi_queries.json` (written before the
//! operation names were looked at), and a call's latency through us (bridge, policy, the
//! host's request) against the same request made directly to the mock, medians of one run.
//!
//! `cargo test -p code-executor-mcp --test execution -- openapi_measured --nocapture`

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use test_support::{Harness, TempDir};

use crate::common::EXE;
use crate::common::openapi::{credentials_env, github_entry, mocks};

const CALLS: usize = 30;

async fn server(mocks: &crate::common::openapi::Mocks, cache: &std::path::Path) -> Harness {
    let mut env: Vec<(&str, &str)> = credentials_env().to_vec();
    env.push(("CODE_EXECUTOR_CACHE_DIR", cache.to_str().unwrap()));
    Harness::start(
        EXE.as_ref(),
        json!({"github": github_entry(mocks)}),
        &["--pool-size", "1", "--python-pool-size", "1"],
        &env,
    )
    .await
}

/// Time until `search_tools` answers with GitHub operations (asking again while the
/// document is still being read: a search waits a bounded time for a start).
async fn first_search(h: &Harness) -> Duration {
    let started = Instant::now();
    loop {
        let (v, _) = h
            .run_tool(
                "search_tools",
                // No `server` filter: a server named there is always started; unnamed, its
                // cached operations answer.
                json!({"query": "get a repository", "detail": "names"}),
            )
            .await;
        if v["tools"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["name"] == "mcp__github__repos_get"))
        {
            return started.elapsed();
        }
        assert!(started.elapsed() < Duration::from_secs(120), "{v}");
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn github_figures_cold_warm_recall_and_latency() {
    let Some((_, mocks)) = mocks() else { return };
    let dir = TempDir::new("openapi-measured");
    let cache = dir.0.join("cache");
    let h = server(mocks, &cache).await;
    let cold = first_search(&h).await;
    let again = first_search(&h).await;

    // Recall@5 of the 30 searches.
    let queries: Value = serde_json::from_str(include_str!("openapi_queries.json")).unwrap();
    let mut hits = 0;
    let mut misses = Vec::new();
    let queries = queries["queries"].as_array().unwrap();
    for q in queries {
        let want = format!(
            "mcp__github__{}",
            q["expected"].as_str().unwrap().replace('/', "_")
        );
        let (v, _) = h
            .run_tool(
                "search_tools",
                json!({"query": q["query"], "server": "github", "detail": "names", "limit": 5}),
            )
            .await;
        let names: Vec<&str> = v["tools"]
            .as_array()
            .unwrap()
            .iter()
            .take(5)
            .filter_map(|t| t["name"].as_str())
            .collect();
        if names.contains(&want.as_str()) {
            hits += 1;
        } else {
            misses.push(format!("{} -> {names:?} (wanted {want})", q["query"]));
        }
    }

    // A call through us, timed inside the code (bridge, policy, request, answer), against
    // the same request straight to the mock.
    let code = format!(
        "const ms = [];\nfor (let i = 0; i < {CALLS}; i++) {{ const t = performance.now(); await callMCPTool('mcp__github__repos_get', {{owner: 'octocat', repo: 'hello-world'}}); ms.push(performance.now() - t); }}\nreturn ms;"
    );
    let (v, is_err) = h.exec(&code).await;
    assert!(!is_err, "{v}");
    let ours: Vec<f64> = v["result"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_f64)
        .collect();
    test_support::install_tls_provider();
    let client = reqwest::Client::new();
    let url = format!("{}/repos/octocat/hello-world", mocks.github.base_url());
    let mut direct = Vec::new();
    for _ in 0..CALLS {
        let t = Instant::now();
        let body = client
            .get(&url)
            .send()
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        assert!(!body.is_empty());
        direct.push(t.elapsed().as_secs_f64() * 1e3);
    }
    drop(h);

    let h = server(mocks, &cache).await;
    let warm = first_search(&h).await;
    let (ours, direct) = (median(ours), median(direct));
    eprintln!(
        "OpenAPI figures (GitHub, {} queries):\n  first search cold {:.0} ms, same server again {:.0} ms, new server warm (tool cache) {:.0} ms\n  recall@5 {hits}/{} = {:.2}\n  call latency median through us {ours:.1} ms, direct {direct:.1} ms, ratio {:.2}",
        queries.len(),
        cold.as_secs_f64() * 1e3,
        again.as_secs_f64() * 1e3,
        warm.as_secs_f64() * 1e3,
        queries.len(),
        hits as f64 / queries.len() as f64,
        ours / direct,
    );
    for m in &misses {
        eprintln!("  miss: {m}");
    }
}

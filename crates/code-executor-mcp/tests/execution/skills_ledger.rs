//! Nested work shares its caller's accounting: a request and every skill under it, at any
//! depth, draw from one ledger (model calls, discovery, tool calls), report the whole tree's
//! usage, and run at most `maxConcurrentSkills` (default `poolMax`) skills at once, queued
//! within the caller's deadline. Skills are called in parallel from both languages
//! (`Promise.all`, `asyncio.gather`) and in both languages; the fixture's `gauge` tool counts
//! the skills inside it at once, from inside them.

use serde_json::{Value, json};
use test_support::{Harness, Lang, TempConfig, TempDir, fixture_entry};

use crate::common::EXE;

/// A server with `maxConcurrentExecutions: 1`, `maxConcurrentToolCalls: 2`, `poolMax: 2`
/// (so 2 skills at once), model calls to a mock provider with a budget of 2 calls, and the
/// fixture's gauge; returns the provider's log of requests too.
async fn server(
    dir: &std::path::Path,
) -> (
    Harness,
    TempConfig,
    std::sync::Arc<std::sync::Mutex<Vec<crate::llm_provider::Seen>>>,
) {
    let (url, seen) = crate::llm_provider::mock_provider().await;
    let mut fx = fixture_entry("fx");
    fx["env"] = json!({"FIXTURE_GAUGE_TOOLS": "1"});
    let (h, c) = Harness::with_settings(
        EXE.as_ref(),
        json!({ "fx": fx }),
        &json!({
            "skills": {"dir": dir},
            "poolMax": 2,
            "limits": {"maxConcurrentExecutions": 1},
            "executionLimits": {"maxConcurrentToolCalls": 2},
            "llm": {"enabled": true, "maxCalls": 2,
                    "provider": {"api": "anthropic", "baseUrl": url, "model": "m"}}
        }),
        &[],
    )
    .await;
    (h, c, seen)
}

async fn run(h: &Harness, lang: Lang, args: Value) -> Value {
    let (v, is_error) = h.run_tool(lang.tool(), args.clone()).await;
    assert!(!is_error, "{lang:?}: {args}\n{v}");
    v
}

/// Saves `code` as the skill `name` in `language`.
async fn save(h: &Harness, name: &str, language: &str, code: &str) {
    let v = run(
        h,
        Lang::Ts,
        json!({"code": format!(
            "return await saveSkill({name:?}, {{code: {code:?}, description: 'A skill of the ledger tests.', language: {language:?}}})"
        )}),
    )
    .await;
    assert_eq!(v["result"]["version"], 1, "{v}");
}

/// Inside `gauge` for `args.ms` (default 200): how many skills of the key were inside at once.
const HELD_TS: &str =
    "const g = await tools.fx.gauge({key: args.key, delta: 1, ms: args.ms ?? 200});
await tools.fx.gauge({key: args.key, delta: -1});
return g.now;";
const HELD_PY: &str = "g = tools.fx.gauge(key=args['key'], delta=1, ms=args.get('ms', 200))
tools.fx.gauge(key=args['key'], delta=-1)
g['now']";

#[tokio::test]
async fn parallel_skills_run_at_most_the_cap_at_once_and_wait_within_the_callers_time() {
    let dir = TempDir::new("skills-ledger-slots");
    let (h, _c, _) = server(&dir.0).await;
    save(&h, "held", "typescript", HELD_TS).await;
    save(&h, "held-py", "python", HELD_PY).await;
    // Twelve at once from TypeScript, twelve from Python, each language's skill in turn.
    let from_ts = run(
        &h,
        Lang::Ts,
        json!({"code": "const runs = [];
            for (let i = 0; i < 12; i++) runs.push(i % 2 ? skills.held({key: 'ts'}) : skills.held_py({key: 'ts'}));
            const seen = await Promise.all(runs);
            return {seen, peak: (await tools.fx.gauge({key: 'ts', delta: 0})).peak};"}),
    )
    .await;
    let from_py = run(
        &h,
        Lang::Py,
        json!({"code": "import asyncio
seen = await asyncio.gather(*[(askills.held if i % 2 else askills.held_py)(key='py') for i in range(12)])
{'seen': list(seen), 'peak': tools.fx.gauge(key='py', delta=0)['peak']}"}),
    )
    .await;
    for (lang, v) in [("ts", &from_ts), ("py", &from_py)] {
        let r = &v["result"];
        assert_eq!(r["seen"].as_array().map(Vec::len), Some(12), "{lang}: {v}");
        let peak = r["peak"].as_i64().unwrap();
        assert!(
            (1..=2).contains(&peak),
            "{lang}: {peak} skills ran at once; the cap is poolMax (2): {v}"
        );
        assert!(
            r["seen"]
                .as_array()
                .unwrap()
                .iter()
                .all(|n| n.as_i64().is_some_and(|n| (1..=2).contains(&n))),
            "{lang}: {v}"
        );
        // The caller's count is the tree's: two gauge calls per skill, and its own.
        assert_eq!(v["toolCalls"], 25, "{lang}: {v}");
    }
    // Waiting for a slot is the caller's time: eight skills of a second each, two at a
    // time, cannot end within 2.5 s (unbounded, they would in about one).
    let started = std::time::Instant::now();
    let (v, is_error) = h
        .run_tool(
            "execute_typescript",
            json!({"code": "return await Promise.all([...Array(8)].map(() => skills.held({key: 'slow', ms: 1000})))",
                   "timeoutMs": 2500}),
        )
        .await;
    assert!(is_error, "{v}");
    let e = &v["error"];
    assert!(
        e["name"] == "TimeoutError"
            && e["message"]
                .as_str()
                .unwrap_or_default()
                .contains("deadline"),
        "{v}"
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "{v}"
    );
}

const ASKS_TS: &str =
    "try { return await llm.ask('q'); } catch (e) { return e.name + ': ' + e.message; }";
const ASKS_PY: &str = "try:
    r = llm.ask('q')
except Exception as e:
    r = type(e).__name__ + ': ' + str(e)
r";
/// One model call at each depth, then the skill below: `n` levels deep.
const CHAIN_TS: &str =
    "let mine; try { mine = await llm.ask('c' + args.n); } catch (e) { mine = e.name; }
const below = args.n > 1 ? await skills.chain({n: args.n - 1}) : [];
return [mine, ...below];";
/// Four tool calls and two discovery requests, counting what was refused.
const SPENDS_TS: &str = "let ok = 0, found = 0; const refused = [];
for (let i = 0; i < 4; i++) { try { await tools.fx.add({a: i, b: 1}); ok++; } catch (e) { refused.push(e.name); } }
for (let i = 0; i < 2; i++) { try { await listServers(); found++; } catch (e) { refused.push(e.name); } }
return {ok, found, refused};";
const SPENDS_PY: &str = "ok = 0
found = 0
refused = []
for i in range(4):
    try:
        tools.fx.add(a=i, b=1)
        ok += 1
    except Exception as e:
        refused.append(type(e).__name__)
for i in range(2):
    try:
        list_servers()
        found += 1
    except Exception as e:
        refused.append(type(e).__name__)
{'ok': ok, 'found': found, 'refused': refused}";

/// The strings of `v` (nested arrays flattened).
fn strings(v: &Value) -> Vec<String> {
    match v {
        Value::String(s) => vec![s.clone()],
        Value::Array(a) => a.iter().flat_map(strings).collect(),
        _ => Vec::new(),
    }
}

#[tokio::test]
async fn model_calls_discovery_and_tool_calls_are_one_budget_for_the_whole_tree() {
    let dir = TempDir::new("skills-ledger-budgets");
    let (h, _c, seen) = server(&dir.0).await;
    save(&h, "asks", "typescript", ASKS_TS).await;
    save(&h, "asks-py", "python", ASKS_PY).await;
    save(&h, "chain", "typescript", CHAIN_TS).await;
    save(&h, "spends", "typescript", SPENDS_TS).await;
    save(&h, "spends-py", "python", SPENDS_PY).await;
    // llm.maxCalls is 2 for the request, however many skills ask and however deep.
    let cases = [
        (
            Lang::Ts,
            "return await Promise.all([...Array(6)].map((_, i) => i % 2 ? skills.asks({}) : skills.asks_py({})))",
        ),
        (
            Lang::Py,
            "import asyncio\nlist(await asyncio.gather(*[(askills.asks if i % 2 else askills.asks_py)() for i in range(6)]))",
        ),
        // Two chains four deep: eight skills asking.
        (
            Lang::Ts,
            "return await Promise.all([skills.chain({n: 4}), skills.chain({n: 4})])",
        ),
        (
            Lang::Py,
            "import asyncio\nlist(await asyncio.gather(askills.chain(n=4), askills.chain(n=4)))",
        ),
    ];
    for (lang, code) in cases {
        let before = seen.lock().unwrap().len();
        let v = run(&h, lang, json!({ "code": code })).await;
        let answers = strings(&v["result"]);
        let replies = answers.iter().filter(|a| a.starts_with("reply to")).count();
        assert_eq!(replies, 2, "{lang:?}: {code}\n{v}");
        assert!(
            answers
                .iter()
                .filter(|a| !a.starts_with("reply to"))
                .all(|a| a.starts_with("LimitError")),
            "{lang:?}: {v}"
        );
        assert_eq!(
            seen.lock().unwrap().len() - before,
            2,
            "{lang:?}: the provider was asked past the budget: {v}"
        );
        // The caller's report is the tree's.
        assert_eq!(v["llm"]["calls"], 2, "{lang:?}: {v}");
        assert_eq!(v["llm"]["inputTokens"], 14, "{lang:?}: {v}");
    }
    // The request's maxToolCalls and maxDiscoveryCalls bound its skills together.
    for (lang, code) in [
        (
            Lang::Ts,
            "return await Promise.all([skills.spends({}), skills.spends_py({}), skills.spends({})])",
        ),
        (
            Lang::Py,
            "import asyncio\nlist(await asyncio.gather(askills.spends(), askills.spends_py(), askills.spends()))",
        ),
    ] {
        let v = run(
            &h,
            lang,
            json!({"code": code, "limits": {"maxToolCalls": 5, "maxDiscoveryCalls": 3}}),
        )
        .await;
        let parts = v["result"].as_array().unwrap();
        let sum = |k: &str| parts.iter().map(|p| p[k].as_u64().unwrap()).sum::<u64>();
        assert_eq!(sum("ok"), 5, "{lang:?}: {v}");
        assert_eq!(sum("found"), 3, "{lang:?}: {v}");
        assert!(
            strings(&json!(
                parts
                    .iter()
                    .map(|p| p["refused"].clone())
                    .collect::<Vec<_>>()
            ))
            .iter()
            .all(|n| n == "LimitError"),
            "{lang:?}: {v}"
        );
        assert_eq!(v["toolCalls"], 5, "{lang:?}: {v}");
    }
}

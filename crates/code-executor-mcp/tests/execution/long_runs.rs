//! Long runs through the built binary and a real MCP client (rmcp over stdio), in both
//! languages: `yieldAfterMs` + `wait` over the fixture's 10,000 records, `progress()` and what
//! it refuses, cancellation with `wait` (the upstream call cancelled, the audit lines), limits
//! refused with the setting named, and a result that expired. Tasks, progress notifications
//! and both protocol generations are driven by the official Python SDK in the server suite's `interop`.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use test_support::{Harness, Lang};

use crate::common::{BOTH, server};

async fn call(h: &Harness, tool: &str, args: Value) -> (Value, bool) {
    let r = h.call(tool, args).await;
    (
        r.structured_content.unwrap_or(Value::Null),
        r.is_error == Some(true),
    )
}

/// Pages through the fixture's records, slowly enough to be still running when the call
/// returns; prints a line every 25 pages and reports progress.
fn pager(lang: Lang) -> &'static str {
    lang.pick(
        "let cursor, n = 0, calls = 0;
         do {
           const page = await tools.fx.records(cursor ? { cursor } : {});
           await tools.fx.sleep({ ms: 5 });
           calls++; n += page.records.length; cursor = page.nextCursor;
           await progress(n, page.total, `page ${calls}`);
           if (calls % 25 === 0) console.log(`read ${n}`);
         } while (cursor);
         return { n, calls };",
        "cursor, n, calls = None, 0, 0
while True:
    page = tools.fx.records(**({'cursor': cursor} if cursor else {}))
    tools.fx.sleep(ms=5)
    calls += 1
    n += len(page['records'])
    cursor = page.get('nextCursor')
    progress(n, page['total'], f'page {calls}')
    if calls % 25 == 0:
        print(f'read {n}')
    if not cursor:
        break
{'n': n, 'calls': calls}",
    )
}

fn handle_of(v: &Value) -> String {
    v["running"]["handle"]
        .as_str()
        .unwrap_or_else(|| panic!("no handle in {v}"))
        .to_string()
}

#[tokio::test]
async fn a_run_that_yields_is_read_to_its_end_with_wait_in_both_languages() {
    let (h, _dir) = server(json!({})).await;
    for lang in BOTH {
        let (first, is_error) = call(
            &h,
            lang.tool(),
            json!({"code": pager(lang), "yieldAfterMs": 200, "timeoutMs": 120000}),
        )
        .await;
        assert!(!is_error, "{lang:?}: {first}");
        let handle = handle_of(&first);
        assert!(
            handle.len() == 36 && handle.starts_with("run-"),
            "a handle is run- and 128 bits in hex: {handle}"
        );
        let mut lines: Vec<String> = Vec::new();
        let mut v = first;
        let mut saw_progress = false;
        loop {
            lines.extend(
                v["logs"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|l| l["text"].as_str().unwrap().to_string()),
            );
            if v.get("running").is_none() {
                break;
            }
            if let Some(p) = v["running"]["progress"].as_object() {
                assert_eq!(p["total"], json!(10000.0), "{v}");
                assert!(p["message"].as_str().unwrap().starts_with("page "), "{v}");
                saw_progress = true;
            }
            (v, _) = call(&h, "wait", json!({"handle": handle, "timeoutMs": 500})).await;
        }
        assert_eq!(
            v["result"],
            json!({"n": 10000, "calls": 100}),
            "{lang:?}: {v}"
        );
        assert_eq!(v["toolCalls"], json!(200), "{v}");
        assert!(saw_progress, "{lang:?}: no running answer carried progress");
        assert_eq!(
            lines,
            ["read 2500", "read 5000", "read 7500", "read 10000"],
            "{lang:?}: every line once, in order"
        );
        // The kept result is there again; another client's view of it is `unknown`.
        let (again, _) = call(&h, "wait", json!({"handle": handle})).await;
        assert_eq!(again["result"], v["result"]);
    }
}

#[tokio::test]
async fn a_run_that_ends_before_yield_after_ms_answers_directly() {
    let (h, _dir) = server(json!({})).await;
    for lang in BOTH {
        let (v, is_error) = call(
            &h,
            lang.tool(),
            json!({"code": lang.pick("return 6 * 7", "6 * 7"), "yieldAfterMs": 20000}),
        )
        .await;
        assert!(!is_error, "{v}");
        assert_eq!(v["result"], json!(42));
        assert!(v.get("running").is_none(), "{v}");
    }
}

#[tokio::test]
async fn wait_with_cancel_stops_the_run_and_its_upstream_call_and_is_audited() {
    let (h, dir) = server(json!({})).await;
    for lang in BOTH {
        let marker = dir.dir.join(format!("cancelled-{}", lang.tool()));
        let code = match lang {
            Lang::Ts => format!(
                "console.log('holding'); await tools.fx.sleep_marked({{ ms: 60000, marker: {} }});",
                json!(marker)
            ),
            Lang::Py => format!(
                "print('holding')\ntools.fx.sleep_marked(ms=60000, marker={})",
                json!(marker)
            ),
        };
        let (v, _) = call(
            &h,
            lang.tool(),
            json!({"code": code, "yieldAfterMs": 300, "timeoutMs": 120000}),
        )
        .await;
        let handle = handle_of(&v);
        // Once the line is out, the call follows at once; a little more waiting lets it reach
        // the fixture (a Python pool may still be starting when the run begins).
        let mut seen = v["logs"].to_string().contains("holding");
        let until = Instant::now() + Duration::from_secs(20);
        while !seen && Instant::now() < until {
            let (w, _) = call(&h, "wait", json!({"handle": handle, "timeoutMs": 100})).await;
            seen = w["logs"].to_string().contains("holding");
        }
        assert!(seen, "{lang:?}: the run never printed its line");
        call(&h, "wait", json!({"handle": handle, "timeoutMs": 500})).await;
        let (v, is_error) = call(&h, "wait", json!({"handle": handle, "cancel": true})).await;
        assert!(is_error, "{v}");
        assert_eq!(v["error"]["name"], "CancelledError", "{v}");
        let until = Instant::now() + Duration::from_secs(10);
        while !marker.exists() && Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(
            marker.exists(),
            "{lang:?}: the upstream call was not cancelled"
        );
        // Cancelling again is harmless; the result says it was cancelled.
        let (v, _) = call(&h, "wait", json!({"handle": handle, "cancel": true})).await;
        assert_eq!(v["error"]["name"], "CancelledError", "{v}");
    }
    let audit = std::fs::read_to_string(h.audit_path()).unwrap_or_default();
    let lines: Vec<Value> = audit
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let cancels: Vec<&Value> = lines
        .iter()
        .filter(|l| l["event"] == "run.cancel")
        .collect();
    assert_eq!(cancels.len(), 2, "one run.cancel per run: {audit}");
    for c in cancels {
        assert_eq!(c["by"], "wait", "{c}");
        assert!(
            lines.iter().any(|l| l["event"] == "run.end"
                && l["execution"] == c["execution"]
                && l["outcome"] == "cancelled"),
            "no run.end cancelled for {c}"
        );
    }
}

#[tokio::test]
async fn limits_are_refused_with_the_setting_named() {
    let (h, _dir) =
        server(json!({"longRuns": {"maxParkedPerClient": 1, "maxDurationMs": 60000}})).await;
    let (v, _) = call(
        &h,
        "execute_typescript",
        json!({"code": "await tools.fx.sleep({ ms: 30000 })", "yieldAfterMs": 50}),
    )
    .await;
    let held = handle_of(&v);
    let (v, is_error) = call(
        &h,
        "execute_python",
        json!({"code": "1", "yieldAfterMs": 50}),
    )
    .await;
    assert!(is_error, "{v}");
    assert_eq!(v["error"]["name"], "LimitError", "{v}");
    assert_eq!(
        v["error"]["message"],
        "this client already holds 1 running executions (longRuns.maxParkedPerClient is 1); \
         wait for one to finish, or cancel one with wait {handle, cancel: true}"
    );
    let (v, is_error) = call(
        &h,
        "execute_typescript",
        json!({"code": "1", "yieldAfterMs": 50, "timeoutMs": 60001}),
    )
    .await;
    assert!(is_error);
    assert_eq!(
        v["error"]["message"],
        "timeoutMs must be between 1 and 60000 for a task or a run with yieldAfterMs \
         (longRuns.maxDurationMs) (got 60001)"
    );
    let (v, is_error) = call(&h, "wait", json!({"handle": "run-0123"})).await;
    assert!(is_error);
    assert_eq!(v["error"]["name"], "HandleError");
    assert_eq!(
        v["error"]["message"],
        "unknown handle \"run-0123\": it was never issued to this client"
    );
    let (v, is_error) = call(&h, "wait", json!({"handle": held, "timeoutMs": 60000})).await;
    assert!(is_error);
    assert_eq!(v["error"]["name"], "RangeError", "{v}");
    let Value::Object(bogus) = json!({"handle": held, "bogus": 1}) else {
        panic!("an object")
    };
    let refused = h
        .client
        .peer()
        .call_tool(rmcp::model::CallToolRequestParams::new("wait").with_arguments(bogus))
        .await
        .expect_err("unknown arguments of wait are a protocol error");
    assert!(
        refused
            .to_string()
            .contains("wait has no parameter \"bogus\"; it accepts handle, timeoutMs"),
        "{refused}"
    );
    // Stopping the held run makes room: its finished result is dropped for the next one.
    call(&h, "wait", json!({"handle": held, "cancel": true})).await;
    let (v, is_error) = call(
        &h,
        "execute_python",
        json!({"code": "2", "yieldAfterMs": 50}),
    )
    .await;
    assert!(!is_error, "{v}");
    let (v, _) = call(&h, "wait", json!({"handle": held})).await;
    assert_eq!(v["error"]["name"], "HandleError", "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("longRuns.maxParkedPerClient"),
        "{v}"
    );
}

#[tokio::test]
async fn a_result_past_its_keep_time_says_it_expired() {
    let (h, _dir) = server(json!({"longRuns": {"keepResultMs": 200}})).await;
    let (v, _) = call(
        &h,
        "execute_typescript",
        json!({"code": "return 1", "yieldAfterMs": 0}),
    )
    .await;
    let handle = handle_of(&v);
    let (v, _) = call(&h, "wait", json!({"handle": handle})).await;
    assert_eq!(v["result"], json!(1), "{v}");
    let until = Instant::now() + Duration::from_secs(10);
    let v = loop {
        let (v, _) = call(&h, "wait", json!({"handle": handle})).await;
        if v["error"].is_object() || Instant::now() > until {
            break v;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(v["error"]["name"], "HandleError", "{v}");
    assert_eq!(
        v["error"]["message"],
        format!(
            "the result of \"{handle}\" is gone: it expired: results are kept for 200 ms after \
             the run finished (longRuns.keepResultMs)"
        )
    );
}

#[tokio::test]
async fn progress_refuses_what_it_cannot_send_in_both_languages() {
    let (h, _dir) = server(json!({})).await;
    let cases = [
        (
            Lang::Ts,
            "try { await progress(NaN) } catch (e) { return `${e.name}: ${e.message}` }",
            "RangeError: progress: done must be a finite number >= 0, got NaN",
        ),
        (
            Lang::Ts,
            "try { await progress(1, 0) } catch (e) { return `${e.name}: ${e.message}` }",
            "RangeError: progress: total must be a finite number > 0, got 0",
        ),
        (
            Lang::Ts,
            "try { await progress(1, 2, 'x'.repeat(2000)) } catch (e) { return `${e.name}: ${e.message}` }",
            "RangeError: progress: the message is 2000 bytes; at most 1024 are accepted",
        ),
        (
            Lang::Ts,
            "await progress(1); await progress(2, 'two'); await progress(3, 4, 'three'); return 'ok'",
            "ok",
        ),
        (
            Lang::Py,
            "try:\n    progress(float('inf'))\nexcept ValueError as e:\n    r = f'{type(e).__name__}: {e}'\nr",
            "ValueError: progress: done must be a finite number >= 0, got inf",
        ),
        (
            Lang::Py,
            "try:\n    progress(True)\nexcept ValueError as e:\n    r = str(e)\nr",
            "progress: done must be a finite number >= 0, got True",
        ),
        (
            Lang::Py,
            "try:\n    progress(1, 2, 'x' * 2000)\nexcept ValueError as e:\n    r = str(e)\nr",
            "progress: the message is 2000 bytes; at most 1024 are accepted",
        ),
        (
            Lang::Py,
            "progress(1)\nprogress(2, 'two')\nprogress(3, 4, 'three')\n'ok'",
            "ok",
        ),
    ];
    for (lang, code, want) in cases {
        let (v, is_error) = call(&h, lang.tool(), json!({"code": code})).await;
        assert!(!is_error, "{lang:?} {code}: {v}");
        assert_eq!(v["result"], json!(want), "{lang:?} {code}");
    }
}

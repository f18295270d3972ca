//! A Python worker imports only what the protocol and a trivial run need before it is ready;
//! the rest (asyncio, logging, linecache, traceback, json, ...) when code or the shim needs it,
//! or ahead of time while it waits in the pool (docs/performance.md). These tests run code in
//! workers that had no time to import anything ahead (no pool: each execution starts its own
//! worker and sends it the run as soon as it is ready) and in a session's worker across runs:
//! what was imported late must behave as if it had been imported up front.

use serde_json::{Value, json};
use test_support::{Harness, fixture_entry};

use crate::common::EXE;

/// A server whose Python pool is empty: every execution starts a fresh worker.
async fn cold() -> Harness {
    Harness::start(
        EXE.as_ref(),
        json!({ "fx": fixture_entry("fx") }),
        &["--pool-size", "0", "--python-pool-size", "0"],
        &[],
    )
    .await
}

/// Top-level await with gather, sleep, tasks, a timeout and parallel tool calls; `asyncio` is
/// loaded without ssl (which code can still import itself).
const ASYNC_CODE: &str = r#"
import asyncio, sys
async def slow():
    await asyncio.sleep(30)
async def twice(x):
    await asyncio.sleep(0.001)
    return 2 * x
task = asyncio.create_task(twice(21))
try:
    await asyncio.wait_for(slow(), 0.05)
    timed_out = False
except asyncio.TimeoutError:
    timed_out = True
echoes = await asyncio.gather(*[acall_mcp_tool('fx', 'echo', {'message': str(i)}) for i in range(3)])
ssl_loaded = 'ssl' in sys.modules
import ssl
[await task, timed_out, echoes, ssl_loaded, hasattr(ssl, 'SSLContext')]
"#;

fn async_expected() -> Value {
    json!([42, true, ["Echo: 0", "Echo: 1", "Echo: 2"], false, true])
}

#[tokio::test]
async fn modules_imported_late_work_in_a_fresh_worker() {
    let h = cold().await;

    // A trivial run needs none of them: they are not loaded.
    let (v, is_error) = h
        .exec_python(
            "import sys\n[m for m in ('asyncio', 'logging', 'json', 'threading', 'traceback', 'ast', 're') if m in sys.modules]",
        )
        .await;
    assert!(!is_error, "{v}");
    assert_eq!(v["result"], json!([]), "{v}");

    let (v, is_error) = h.exec_python(ASYNC_CODE).await;
    assert!(!is_error, "{v}");
    assert_eq!(v["result"], async_expected(), "{v}");

    // asyncio imported by code that never says so in its text (no top-level await), through
    // asyncio.run: loaded without ssl too, and its calls work.
    let (v, is_error) = h
        .exec_python(
            "import importlib, sys\naio = importlib.import_module('asyn' + 'cio')\nasync def main():\n    return await aio.gather(acall_mcp_tool('fx', 'echo', {'message': 'r'}), aio.sleep(0, 'slept'))\n[aio.run(main()), 'ssl' in sys.modules]",
        )
        .await;
    assert!(!is_error, "{v}");
    assert_eq!(v["result"], json!([["Echo: r", "slept"], false]), "{v}");

    // logging is captured with levels whoever imports it.
    let (v, is_error) = h
        .exec_python(
            "import logging\nlogging.info('i')\nlogging.getLogger('lib').warning('w')\nlogging.debug('d')\n[type(h).__name__ for h in logging.getLogger().handlers]",
        )
        .await;
    assert!(!is_error, "{v}");
    assert_eq!(
        v["logs"],
        json!([
            {"level": "info", "text": "i"},
            {"level": "warn", "text": "lib: w"},
            {"level": "debug", "text": "d"},
        ]),
        "{v}"
    );
    assert_eq!(v["result"], json!(["_LogHandler"]), "{v}");

    // linecache knows code.py when code imports traceback itself.
    let (v, is_error) = h
        .exec_python(
            "import traceback\ndef f():\n    return 1 / 0\ntry:\n    f()\nexcept ZeroDivisionError:\n    text = traceback.format_exc()\n['return 1 / 0' in text, 'f()' in text]",
        )
        .await;
    assert!(!is_error, "{v}");
    assert_eq!(v["result"], json!([true, true]), "{v}");

    // An uncaught error: its stack shows the code's lines (the shim imports traceback then).
    let (v, is_error) = h
        .exec_python("def g():\n    raise ValueError('no')\ng()")
        .await;
    assert!(is_error, "{v}");
    assert_eq!(v["error"]["name"], "ValueError", "{v}");
    let stack = v["error"]["stack"].as_str().unwrap_or_default();
    assert!(
        stack.contains("code.py\", line 2, in g") && stack.contains("raise ValueError('no')"),
        "{v}"
    );

    // Out of memory: the error is described (which imports traceback) outside the run's limit.
    let (v, is_error) = h
        .exec_python("a = []\nwhile True:\n    a.append('x' * 4096 + str(len(a)))")
        .await;
    assert!(is_error, "{v}");
    assert_eq!(v["error"]["name"], "MemoryError", "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("MiB")
            && v["error"]["stack"]
                .as_str()
                .unwrap_or_default()
                .contains("code.py\", line 3"),
        "{v}"
    );

    // A top-level return, a result of every kind the shim converts, and keys JSON cannot hold.
    let (v, is_error) = h
        .exec_python(
            "import enum, dataclasses\nclass C(enum.Enum):\n    A = 'a'\n@dataclasses.dataclass\nclass P:\n    x: int\nif True:\n    return [C.A, P(1), b'hi', {1: 'i', None: 'n', 1.5: 'f', True: 't'}]",
        )
        .await;
    assert!(!is_error, "{v}");
    assert_eq!(
        v["result"],
        json!(["a", {"x": 1}, "aGk=", {"1": "t", "null": "n", "1.5": "f"}]),
        "{v}"
    );

    // Tool proxies (identifier forms of names) and threads calling tools.
    let (v, is_error) = h
        .exec_python(
            "import threading\nout = []\nts = [threading.Thread(target=lambda i=i: out.append(tools.fx.echo(message=str(i)))) for i in range(3)]\nfor t in ts: t.start()\nfor t in ts: t.join()\n[sorted(out), tools.fx.get_page() == tools.fx['get.page'](), threading.main_thread() is threading.current_thread()]",
        )
        .await;
    assert!(!is_error, "{v}");
    assert_eq!(
        v["result"][0],
        json!(["Echo: 0", "Echo: 1", "Echo: 2"]),
        "{v}"
    );
    assert_eq!(v["result"][1], json!(true), "{v}");
    assert_eq!(v["result"][2], json!(true), "{v}");
}

#[tokio::test]
async fn modules_imported_late_work_across_a_sessions_runs() {
    let h = cold().await;
    let (v, is_error) = h
        .exec_python_with(json!({"code": "x = 20\nx", "session": "new"}))
        .await;
    assert!(!is_error, "{v}");
    let id = v["session"]["id"].as_str().unwrap().to_string();
    // The second run finds ssl imported by the first (the code imports it at its end).
    for ssl_loaded in [false, true] {
        let (v, is_error) = h
            .exec_python_with(json!({"code": ASYNC_CODE, "session": id}))
            .await;
        assert!(!is_error, "{v}");
        let mut expected = async_expected();
        expected[3] = json!(ssl_loaded);
        assert_eq!(v["result"], expected, "{v}");
    }
    let (v, is_error) = h
        .exec_python_with(json!({
            "code": "import logging\nlogging.warning('w')\nasync def f():\n    return x + 1\nawait f()",
            "session": id,
        }))
        .await;
    assert!(!is_error, "{v}");
    assert_eq!(v["result"], json!(21), "{v}");
    assert_eq!(v["logs"], json!([{"level": "warn", "text": "w"}]), "{v}");
}

/// Waits until the Python pool is full, having started at least `started` workers; returns
/// how many it has started.
async fn python_pool_full(h: &Harness, started: u64) -> u64 {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let p = h.pool("python").await;
        let now = p["started"].as_u64().unwrap_or(0);
        if p["ready"] == p["target"] && now >= started {
            return now;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the pool was not refilled: {p}"
        );
        // Polling a condition, not waiting for time to pass.
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn after_code_that_used_asyncio_the_pool_starts_workers_with_asyncio_loaded() {
    let h = Harness::start(
        EXE.as_ref(),
        json!({ "fx": fixture_entry("fx") }),
        &["--python-pool-size", "1"],
        &[],
    )
    .await;
    // The code below takes the pooled worker, started before any code ran (plain).
    let started = python_pool_full(&h, 1).await;
    let (v, is_error) = h.exec_python(ASYNC_CODE).await;
    assert!(!is_error, "{v}");
    assert_eq!(v["result"], async_expected(), "{v}");
    // The worker that replaces it is started warm: asyncio is imported before it is ready.
    python_pool_full(&h, started + 1).await;
    // Taken at once, before a worker idle for 2 s imports everything ahead (json among it,
    // which asyncio does not import): asyncio is there because the host asked for it.
    let (v, is_error) = h
        .exec_python(
            "import sys\n['asyncio' in sys.modules, 'json' in sys.modules, 'ssl' in sys.modules]",
        )
        .await;
    assert!(!is_error, "{v}");
    assert_eq!(v["result"], json!([true, false, false]), "{v}");
    // The hint is not in the environment code sees.
    let (v, is_error) = h
        .exec_python("import os\n[k for k in os.environ if k.startswith('CODE_EXECUTOR')]")
        .await;
    assert!(!is_error, "{v}");
    assert_eq!(v["result"], json!([]), "{v}");
}

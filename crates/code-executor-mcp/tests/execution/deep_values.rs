//! Values code hands the host that nest too deeply or hold themselves, and huge but shallow
//! ones: tool arguments (plain calls and typed proxies), stored values, Python's `fetch`
//! json bodies and skill arguments, and results. Passed to the host, a value past the limit
//! (100 levels of arrays/lists and objects/dicts, `worker_protocol::MAX_VALUE_DEPTH`) or
//! with a cycle is the code's own catchable error at the call, naming the limit; the run goes
//! on and its worker stays healthy. A result shows its levels past the limit as text.

use serde_json::{Value, json};
use test_support::Lang;

use crate::common::{BOTH, server};

/// TypeScript binding `v` to a value too deep or cyclic, and what the error says.
const TS_BAD: &[(&str, &str, &str)] = &[
    (
        "arrays one level past the limit",
        "let v = 1; for (let i = 0; i < 100; i++) v = [v];",
        "100 levels",
    ),
    (
        "objects 130 deep",
        "let v = {}; for (let i = 0; i < 130; i++) v = { a: v };",
        "100 levels",
    ),
    (
        "mixed, deeper than the engine's stack",
        "let v = 0; for (let i = 0; i < 20000; i++) v = i % 2 ? [v] : { k: v };",
        "100 levels",
    ),
    ("a cycle", "const v = { a: [1] }; v.a.push(v);", "cycle"),
    (
        "a cycle under a getter and toJSON",
        "const inner = []; inner.push({ toJSON() { return inner; } }); \
         const v = { get x() { return inner; } };",
        "cycle",
    ),
];

/// The same in Python.
const PY_BAD: &[(&str, &str, &str)] = &[
    (
        "lists one level past the limit",
        "v = 1\nfor _ in range(100):\n    v = [v]",
        "100 levels",
    ),
    (
        "dicts 130 deep",
        "v = {}\nfor _ in range(130):\n    v = {'a': v}",
        "100 levels",
    ),
    (
        "mixed, deeper than the interpreter's recursion limit",
        "v = 0\nfor i in range(20000):\n    v = (v,) if i % 3 == 0 else [v] if i % 3 == 1 else {'k': v}",
        "100 levels",
    ),
    ("a cycle", "v = {'a': [1]}\nv['a'].append(v)", "cycle"),
    (
        "a cycle through a dataclass",
        "import dataclasses\n@dataclasses.dataclass\nclass N:\n    next: object = None\n\
         v = N()\nv.next = [v]",
        "cycle",
    ),
];

/// Values the host takes: exactly at the limit (with the arguments' own object), and huge
/// but shallow.
const TS_GOOD: &[(&str, &str)] = &[
    (
        "at the limit",
        "let v = 1; for (let i = 0; i < 99; i++) v = [v];",
    ),
    (
        "huge and shallow",
        "const v = Array.from({ length: 20000 }, (_, i) => ({ i }));",
    ),
    (
        "many keys",
        "const v = Object.fromEntries(Array.from({ length: 20000 }, (_, i) => ['k' + i, [i]]));",
    ),
    (
        "brackets inside strings",
        "const v = ['['.repeat(5000), '{'.repeat(5000), '\"[\\\\'.repeat(1000)];",
    ),
];

const PY_GOOD: &[(&str, &str)] = &[
    ("at the limit", "v = 1\nfor _ in range(99):\n    v = [v]"),
    ("huge and shallow", "v = [{'i': i} for i in range(20000)]"),
    ("many keys", "v = {'k%d' % i: [i] for i in range(20000)}"),
    (
        "brackets inside strings",
        "v = ['[' * 5000, '{' * 5000, '\"[\\\\' * 1000]",
    ),
];

/// TypeScript that calls the echo tool with `v` among its arguments (in every way code calls
/// a tool), catching what each call raises, then makes a plain call: `[what was caught or
/// 'sent', ..., the plain call's answer]`.
const TS_CALLS: &str = r#"
const out = [];
for (const call of [
  () => callMCPTool('mcp__fx__echo', { message: 'x', v }),
  () => callMCPTool('fx', 'echo', { message: 'x', v }),
  () => tools.fx.echo({ message: 'x', v }),
]) {
  try { await call(); out.push('sent'); }
  catch (e) { out.push([e.name, e.message, e instanceof RangeError || e instanceof TypeError]); }
}
out.push(await callMCPTool('mcp__fx__echo', { message: 'after' }));
return out;
"#;

/// The same in Python, awaited too.
const PY_CALLS: &str = r#"
import asyncio
out = []
async def awaited():
    await acall_mcp_tool('mcp__fx__echo', {'message': 'x', 'v': v})
for call in (
    lambda: call_mcp_tool('mcp__fx__echo', {'message': 'x', 'v': v}),
    lambda: call_mcp_tool('fx', 'echo', {'message': 'x', 'v': v}),
    lambda: tools.fx.echo(message='x', v=v),
    lambda: asyncio.run(awaited()),
):
    try:
        call()
        out.append('sent')
    except Exception as e:
        out.append([type(e).__name__, str(e), isinstance(e, ValueError)])
out.append(call_mcp_tool('mcp__fx__echo', {'message': 'after'}))
out
"#;

fn call_with(lang: Lang, shape: &str) -> String {
    format!("{shape}\n{}", lang.pick(TS_CALLS, PY_CALLS))
}

/// Stores `{v}` (and in Python sends it as a `fetch` json body), catching what each raises,
/// then stores a plain value and reads it back.
const TS_STORE: &str = r#"
const out = [];
try { await store('k', { v }); out.push('stored'); }
catch (e) { out.push([e.name, e.message]); }
await store('k', 1);
out.push(await load('k'));
return out;
"#;

const PY_STORE: &str = r#"
out = []
for f in (lambda: store('k', {'v': v}), lambda: fetch('https://example.com', json={'v': v})):
    try:
        f()
        out.append('passed')
    except ValueError as e:
        out.append(str(e))
store('k', 1)
out.append(load('k'))
out
"#;

#[tokio::test]
async fn tool_arguments_too_deep_or_cyclic_are_the_codes_error_at_the_call() {
    let (h, _d) = server(json!({})).await;
    for lang in BOTH {
        let ways = lang.pick(3, 4);
        for (what, shape, says) in lang.pick(TS_BAD, PY_BAD) {
            let (v, is_error) = h
                .run_tool(lang.tool(), json!({"code": call_with(lang, shape)}))
                .await;
            assert!(!is_error, "{lang:?} {what}: {v}");
            let out = v["result"].as_array().unwrap();
            for caught in &out[..ways] {
                assert_eq!(caught[2], json!(true), "{lang:?} {what}: {caught}");
                let message = caught[1].as_str().unwrap();
                assert!(
                    message.contains(says) && message.contains("arguments"),
                    "{lang:?} {what}: {message}"
                );
            }
            // The run went on: the next call reached the tool, and only it.
            assert!(
                out[ways].to_string().contains("after"),
                "{lang:?} {what}: {v}"
            );
            assert_eq!(v["toolCalls"], json!(1), "{lang:?} {what}: {v}");
        }
        for (what, shape) in lang.pick(TS_GOOD, PY_GOOD) {
            let (v, is_error) = h
                .run_tool(lang.tool(), json!({"code": call_with(lang, shape)}))
                .await;
            assert!(!is_error, "{lang:?} {what}: {}", short(&v));
            let out = v["result"].as_array().unwrap();
            assert!(
                out[..ways].iter().all(|s| s == "sent"),
                "{lang:?} {what}: {}",
                short(&v)
            );
        }
    }
}

#[tokio::test]
async fn results_show_their_levels_past_the_limit_as_text_and_the_worker_stays_healthy() {
    let (h, _d) = server(json!({})).await;
    for lang in BOTH {
        for (what, shape, _) in lang.pick(TS_BAD, PY_BAD) {
            let code = lang.pick(format!("{shape}\nreturn v;"), format!("{shape}\nv"));
            let (v, is_error) = h.run_tool(lang.tool(), json!({"code": code})).await;
            assert!(!is_error, "{lang:?} {what}: {}", short(&v));
            assert!(depth(&v["result"]) <= 101, "{lang:?} {what}: {}", short(&v));
        }
        // A Map of Maps, each made an object, is cut at the same level.
        if lang == Lang::Ts {
            let code = "let v = new Map(); for (let i = 0; i < 300; i++) v = new Map([['m', v]]);\nreturn v;";
            let (v, is_error) = h.run_tool(lang.tool(), json!({"code": code})).await;
            assert!(!is_error, "{}", short(&v));
            assert_eq!(depth(&v["result"]), 100, "{}", short(&v));
        }
        let (v, is_error) = h
            .run_tool(
                lang.tool(),
                json!({"code": lang.pick("return await callMCPTool('mcp__fx__echo', { message: 'ok' })", "call_mcp_tool('mcp__fx__echo', {'message': 'ok'})")}),
            )
            .await;
        assert!(!is_error && v.to_string().contains("ok"), "{lang:?}: {v}");
    }
}

#[tokio::test]
async fn stored_values_fetch_bodies_and_skill_arguments_too_deep_are_refused_at_the_call() {
    let (h, _d) = server(json!({})).await;
    for lang in BOTH {
        for (what, shape, says) in lang.pick(TS_BAD, PY_BAD) {
            let code = format!("{shape}\n{}", lang.pick(TS_STORE, PY_STORE));
            let (v, is_error) = h
                .run_tool(lang.tool(), json!({"code": code, "session": "new"}))
                .await;
            assert!(!is_error, "{lang:?} {what}: {v}");
            let out = v["result"].to_string();
            assert!(out.contains(says), "{lang:?} {what}: {out}");
            assert!(
                out.ends_with(",1]"),
                "{lang:?} {what}: the run went on: {out}"
            );
        }
    }
}

/// How deeply `v` nests (arrays and objects).
fn depth(v: &Value) -> usize {
    match v {
        Value::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
        Value::Object(o) => 1 + o.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 600 {
        format!("{}...", &s[..600])
    } else {
        s
    }
}

/// A value that holds one object in several places (shared, not a cycle) is stored and read
/// back whole, in both languages: only a cycle is refused (it was stored as '[Circular]' in
/// TypeScript, and so was every second use of a shared object).
#[tokio::test]
async fn stored_values_keep_shared_objects_whole() {
    let (h, _d) = server(json!({})).await;
    let ts = "const s = { v: 1 }; let dag = [s, s]; for (let i = 0; i < 4; i++) dag = [dag, dag];
        await store('shared', { a: s, b: s, m: new Map([['k', s]]), dag });
        return await load('shared');";
    let py = "s = {'v': 1}\ndag = [s, s]\nfor _ in range(4):\n    dag = [dag, dag]\n\
        store('shared', {'a': s, 'b': s, 'm': {'k': s}, 'dag': dag})\nload('shared')";
    let mut dag = json!([{"v": 1}, {"v": 1}]);
    for _ in 0..4 {
        dag = json!([dag, dag]);
    }
    let want = json!({"a": {"v": 1}, "b": {"v": 1}, "m": {"k": {"v": 1}}, "dag": dag});
    for lang in BOTH {
        let (v, is_error) = h
            .run_tool(
                lang.tool(),
                json!({"code": lang.pick(ts, py), "session": "new"}),
            )
            .await;
        assert!(!is_error, "{lang:?}: {v}");
        assert_eq!(v["result"], want, "{lang:?}: {v}");
    }
}

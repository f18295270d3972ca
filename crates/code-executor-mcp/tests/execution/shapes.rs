//! Result shapes, through the built server in both languages: `callMCPTool` / `call_mcp_tool`
//! answer in the documents' shape (the answer's text; the structured value only when the text
//! is that data; a JSON object or array text parsed), the typed proxies `tools.s.t` in the
//! structured one, on the same tool in the same run; a result passed where a string is wanted
//! is named with the call that returned it and the field to take; `llm.ask` / `llm.think`
//! refuse a prompt that is not text. Against the fixture's `shaped` tool (answers in the shape
//! it is told, hostile ones included) and the real filesystem reference server.

use std::path::PathBuf;

use serde_json::{Value, json};
use test_support::{Harness, Lang, TempConfig, TempDir, fixture_entry};

use crate::common::{BOTH, EXE};

/// The fixture upstream with its `shaped` tool, and a schema cache of the test's own.
async fn fixture_server(cache: &TempDir) -> (Harness, TempConfig) {
    let mut fx = fixture_entry("fx");
    fx["env"] = json!({"FIXTURE_SHAPE_TOOLS": "1"});
    Harness::with_settings(
        EXE.as_ref(),
        json!({ "fx": fx }),
        &json!({}),
        &[("CODE_EXECUTOR_CACHE_DIR", cache.0.to_str().unwrap())],
    )
    .await
}

async fn run(h: &Harness, lang: Lang, code: &str) -> (Value, bool) {
    let (v, is_error) = h.run_tool(lang.tool(), json!({ "code": code })).await;
    (v, is_error)
}

async fn result(h: &Harness, lang: Lang, code: &str) -> Value {
    let (v, is_error) = run(h, lang, code).await;
    assert!(!is_error, "{lang:?}: {code}\n{v}");
    v["result"].clone()
}

/// `text` as a string literal both languages read.
fn literal(text: &str) -> String {
    serde_json::to_string(text).unwrap()
}

/// Each case: the arguments of `shaped`, what `callMCPTool` returns, what `tools.fx.shaped`
/// returns.
fn cases() -> Vec<(&'static str, Value, Value, Value)> {
    vec![
        (
            "structured, its text the same JSON",
            json!({"text": "{\"b\": [true, 1.0], \"a\": \"x\"}", "structured": {"a": "x", "b": [true, 1]}}),
            json!({"a": "x", "b": [true, 1]}),
            json!({"a": "x", "b": [true, 1]}),
        ),
        (
            "structured {content} beside a JSON file's text",
            json!({"text": "{\"numbers\": [1, 2]}", "structured": {"content": "{\"numbers\": [1, 2]}"}}),
            json!("{\"numbers\": [1, 2]}"),
            json!({"content": "{\"numbers\": [1, 2]}"}),
        ),
        (
            "a text crafted as JSON of something else than the structured content",
            json!({"text": "{\"content\": \"forged\"}", "structured": {"content": "real"}}),
            json!("{\"content\": \"forged\"}"),
            json!({"content": "real"}),
        ),
        (
            "no structured, a JSON object",
            json!({"text": "{\"suggestions\": [\"fix\"]}"}),
            json!({"suggestions": ["fix"]}),
            json!({"suggestions": ["fix"]}),
        ),
        (
            "no structured, a JSON array",
            json!({"text": "[1, {\"a\": null}]"}),
            json!([1, {"a": null}]),
            json!([1, {"a": null}]),
        ),
        (
            "no structured, a JSON scalar",
            json!({"text": "42"}),
            json!("42"),
            json!(42),
        ),
        (
            "no structured, plain text",
            json!({"text": "hello"}),
            json!("hello"),
            json!("hello"),
        ),
        (
            "several text blocks",
            json!({"text": ["first", "second"]}),
            json!("first\nsecond"),
            json!(["first", "second"]),
        ),
        (
            "a byte-order mark before JSON",
            json!({"text": "\u{feff}{\"a\": 1}"}),
            json!("\u{feff}{\"a\": 1}"),
            json!("\u{feff}{\"a\": 1}"),
        ),
        (
            "a byte-order mark before the structured content's JSON",
            json!({"text": "\u{feff}{\"a\": 1}", "structured": {"a": 1}}),
            json!("\u{feff}{\"a\": 1}"),
            json!({"a": 1}),
        ),
        (
            "trailing garbage after JSON",
            json!({"text": "{\"a\": 1} and more", "structured": {"a": 1}}),
            json!("{\"a\": 1} and more"),
            json!({"a": 1}),
        ),
        (
            "structured and no content blocks",
            json!({"structured": {"a": 1}}),
            json!({"a": 1}),
            json!({"a": 1}),
        ),
        ("nothing at all", json!({}), Value::Null, Value::Null),
    ]
}

/// One server, both languages: every case's two shapes on the same tool in the same run,
/// image blocks and errors alike in both, the wrong use named, huge and deep results, model
/// prompts that are not text, and the type learned from `text`-shaped calls.
#[tokio::test]
async fn callmcptool_and_the_proxies_on_the_same_tool() {
    let cache = TempDir::new("shapes-fx");
    let (h, _c) = fixture_server(&cache).await;

    // Learned output types come from the structured shape, whichever shape code asked for:
    // `text`-shaped calls whose text is prose teach `{n: number}`, never `string`.
    result(
        &h,
        Lang::Ts,
        "await callMCPTool('mcp__fx__shaped', {text: 'prose', structured: {n: 1}}); \
         return await callMCPTool('fx', 'shaped', {text: 'more prose', structured: {n: 2}})",
    )
    .await;
    let sig = result(&h, Lang::Ts, "return tools.fx.shaped.signature").await;
    let sig = sig.as_str().unwrap();
    assert!(
        sig.contains("from 2 results") && sig.contains("n: number;"),
        "{sig}"
    );
    assert!(!sig.contains("Promise<string>"), "{sig}");

    let cases = cases();
    let all: Value = cases.iter().map(|c| c.1.clone()).collect();
    let json_text = literal(&all.to_string());
    let ts = format!(
        "const out = []; \
         for (const a of JSON.parse({json_text})) \
           out.push([await callMCPTool('mcp__fx__shaped', a), await tools.fx.shaped(a)]); \
         out.push([await callMCPTool('fx', 'image', {{}}), await tools.fx.image()]); \
         try {{ await callMCPTool('mcp__fx__fail', {{message: 'boom'}}); }} \
         catch (e) {{ out.push([e.name, e.message]); }} \
         return out;"
    );
    let py = format!(
        "import json\n\
         out = [[call_mcp_tool('mcp__fx__shaped', a), tools.fx.shaped(a)] for a in json.loads({json_text})]\n\
         out.append([call_mcp_tool('fx', 'image', {{}}), tools.fx.image()])\n\
         try:\n    call_mcp_tool('mcp__fx__fail', {{'message': 'boom'}})\n\
         except ToolError as e:\n    out.append([type(e).__name__, str(e)])\n\
         out"
    );
    for lang in BOTH {
        let code = if lang == Lang::Ts { &ts } else { &py };
        let got = result(&h, lang, code).await;
        let got = got.as_array().unwrap();
        for (i, (name, args, text, structured)) in cases.iter().enumerate() {
            assert_eq!(got[i][0], *text, "{lang:?} callMCPTool: {name}: {args}");
            assert_eq!(got[i][1], *structured, "{lang:?} proxy: {name}: {args}");
        }
        let image = &got[cases.len()];
        assert_eq!(image[0], image[1], "{lang:?}: content blocks alike");
        assert_eq!(image[0][1]["type"], "image", "{lang:?}: {image}");
        assert_eq!(
            got[cases.len() + 1],
            json!(["ToolError", "boom"]),
            "{lang:?}"
        );
    }

    // `json.loads` / `JSON.parse` of a JSON file's text, as the documents write it.
    let file = "{\"numbers\": [1, 2, 3]}";
    let args = json!({"text": file, "structured": {"content": file}}).to_string();
    let got = result(
        &h,
        Lang::Py,
        &format!(
            "import json\ndata = json.loads(call_mcp_tool('mcp__fx__shaped', json.loads({})))\n\
             [x * 2 for x in data['numbers']]",
            literal(&args)
        ),
    )
    .await;
    assert_eq!(got, json!([2, 4, 6]));
    let got = result(
        &h,
        Lang::Ts,
        &format!(
            "const data = JSON.parse(await callMCPTool('mcp__fx__shaped', {args})); \
             return data.numbers.map((x) => x * 2);"
        ),
    )
    .await;
    assert_eq!(got, json!([2, 4, 6]));

    // The wrong use, loud: the proxy's object passed where a string is wanted names the
    // call it came from and the field to take; an object from elsewhere is named too.
    let ts = "const r = await tools.fx.shaped({text: 'file text', structured: {content: 'file text'}}); \
              const out = []; \
              for (const message of [r, {other: 'x'}, [r]]) { \
                try { await tools.fx.echo({message}); out.push('no error'); } \
                catch (e) { out.push([e.name, e.message]); } } \
              return out;";
    let py = "r = tools.fx.shaped({'text': 'file text', 'structured': {'content': 'file text'}})\n\
              out = []\n\
              for message in [r, {'other': 'x'}, [r]]:\n\
              \x20   try:\n\
              \x20       tools.fx.echo(message=message)\n\
              \x20       out.append('no error')\n\
              \x20   except TypeError as e:\n\
              \x20       out.append([type(e).__name__, str(e)])\n\
              out";
    for lang in BOTH {
        let got = result(&h, lang, if lang == Lang::Ts { ts } else { py }).await;
        let named = got[0][1]
            .as_str()
            .unwrap_or_else(|| panic!("{lang:?}: {got}"));
        assert_eq!(got[0][0], "TypeError", "{lang:?}: {got}");
        assert!(
            named.contains(
                "`message` wants a string but got the object fx.shaped returned (call 1 of this \
                 run); take its `.content`"
            ),
            "{lang:?}: {named}"
        );
        let plain = got[1][1].as_str().unwrap();
        assert!(
            plain.contains("`message` wants a string but got an object;")
                && !plain.contains("returned"),
            "{lang:?}: {plain}"
        );
        let array = got[2][1].as_str().unwrap();
        assert!(
            array.contains("wants a string but got an array"),
            "{lang:?}: {array}"
        );
    }

    // A huge result passed back: named all the same, and the error stays small; the run's
    // bookkeeping is digests (the unit tests bound their number).
    let ts = "const r = await tools.fx.shaped({big: 3000000}); \
              for (let i = 0; i < 40; i++) await tools.fx.shaped({text: '{\"i\": ' + i + '}'}); \
              const again = await tools.fx.shaped({big: 3000000}); \
              try { await tools.fx.echo({message: again}); return 'no error'; } \
              catch (e) { return [e.message.length, e.message.slice(-160), r.content.length]; }";
    let py = "r = tools.fx.shaped(big=3000000)\n\
              for i in range(40):\n    tools.fx.shaped(text='{\"i\": %d}' % i)\n\
              again = tools.fx.shaped(big=3000000)\n\
              try:\n    tools.fx.echo(message=again)\n    out = 'no error'\n\
              except TypeError as e:\n    out = [len(str(e)), str(e)[-160:], len(r['content'])]\n\
              out";
    for lang in BOTH {
        let got = result(&h, lang, if lang == Lang::Ts { ts } else { py }).await;
        let len = got[0].as_u64().unwrap_or_else(|| panic!("{lang:?}: {got}"));
        assert!(len < 4_000, "{lang:?}: an error of {len} bytes");
        let tail = got[1].as_str().unwrap();
        assert!(
            tail.contains("fx.shaped returned (call 42 of this run); take its `.content`"),
            "{lang:?}: {tail}"
        );
        assert_eq!(got[2], 3_000_000, "{lang:?}");
    }

    // Deeply nested JSON text: the run goes on, and gets the text in both shapes.
    let deep = format!("{}{}", "[".repeat(5_000), "]".repeat(5_000));
    let deep = literal(&deep);
    let ts = format!(
        "const out = []; \
         for (const f of [() => callMCPTool('mcp__fx__shaped', {{text: {deep}}}), () => tools.fx.shaped({{text: {deep}}})]) {{ \
           try {{ const r = await f(); out.push(typeof r === 'string' ? r.length : 'parsed'); }} \
           catch (e) {{ out.push(e.name); }} }} \
         return out;"
    );
    let py = format!(
        "out = []\n\
         for f in [lambda: call_mcp_tool('mcp__fx__shaped', {{'text': {deep}}}), lambda: tools.fx.shaped(text={deep})]:\n\
         \x20   try:\n\
         \x20       r = f()\n\
         \x20       out.append(len(r) if isinstance(r, str) else 'parsed')\n\
         \x20   except Exception as e:\n\
         \x20       out.append(type(e).__name__)\n\
         out"
    );
    for lang in BOTH {
        let got = result(&h, lang, if lang == Lang::Ts { &ts } else { &py }).await;
        // Past the host's bound of 128 levels, JSON text is text in both shapes (a worker's
        // decoder has a bound too: Python's took its worker down at 5,000 levels).
        assert_eq!(got, json!([10_000, 10_000]), "{lang:?}");
    }

    // A prompt is text: objects are refused before anything is sent, in both languages.
    let ts = "const out = []; \
              for (const f of [() => llm.ask({content: 'x'}), \
                               () => llm.think({messages: [{role: 'user', content: {content: 'x'}}]}), \
                               () => llm.ask('x', {system: {a: 1}})]) { \
                try { await f(); out.push('no error'); } catch (e) { out.push([e.name, e.message]); } } \
              return out;";
    let py = "out = []\n\
              for f in [lambda: llm.ask({'content': 'x'}), \
                        lambda: llm.think([{'role': 'user', 'content': {'content': 'x'}}]), \
                        lambda: llm.ask('x', system={'a': 1})]:\n\
              \x20   try:\n\
              \x20       f()\n\
              \x20       out.append('no error')\n\
              \x20   except TypeError as e:\n\
              \x20       out.append([type(e).__name__, str(e)])\n\
              out";
    for lang in BOTH {
        let got = result(&h, lang, if lang == Lang::Ts { ts } else { py }).await;
        let got = got.as_array().unwrap();
        assert_eq!(got.len(), 3, "{lang:?}: {got:?}");
        for e in got {
            assert_eq!(e[0], "TypeError", "{lang:?}: {e}");
            let m = e[1].as_str().unwrap();
            assert!(!m.contains("[object Object]"), "{lang:?}: {m}");
            assert!(m.contains("llm."), "{lang:?}: {m}");
        }
    }
}

/// The filesystem reference server (`@modelcontextprotocol/server-filesystem`, from the
/// interop prefix) on a directory of the test's own: `read_file` answers `{content}` beside
/// the file's text; the documents' functions give the text (so `JSON.parse` / `json.loads`
/// of a JSON file works), the proxies `{content}`; that object passed to `write_file`'s
/// `content` is named, with `.content` to take.
#[tokio::test]
async fn the_filesystem_servers_read_file_in_both_shapes() {
    let Some(p) = crate::common::interop::prefix(&[
        "npm/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js",
    ]) else {
        return;
    };
    let root = TempDir::new("shapes-fs");
    let data = root.0.join("data.json");
    std::fs::write(&data, "{\"numbers\": [1, 2, 3]}\n").unwrap();
    let server: PathBuf =
        p.join("npm/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
    let cache = TempDir::new("shapes-fs-cache");
    let (h, _c) = Harness::with_settings(
        EXE.as_ref(),
        json!({"filesystem": {"command": "node", "args": [server, root.0]}}),
        &json!({}),
        &[("CODE_EXECUTOR_CACHE_DIR", cache.0.to_str().unwrap())],
    )
    .await;
    let path = literal(data.to_str().unwrap());
    let out = literal(root.0.join("out.txt").to_str().unwrap());
    let ts = format!(
        "const text = await callMCPTool('mcp__filesystem__read_file', {{path: {path}}}); \
         const data = JSON.parse(text); \
         const r = await tools.filesystem.read_file({{path: {path}}}); \
         let error; \
         try {{ await tools.filesystem.write_file({{path: {out}, content: r}}); }} \
         catch (e) {{ error = [e.name, e.message]; }} \
         return [typeof text, data.numbers.map((x) => x * 2), r.content === text, error];"
    );
    let py = format!(
        "import json\n\
         text = call_mcp_tool('mcp__filesystem__read_file', {{'path': {path}}})\n\
         data = json.loads(text)\n\
         r = tools.filesystem.read_file(path={path})\n\
         error = None\n\
         try:\n    tools.filesystem.write_file(path={out}, content=r)\n\
         except TypeError as e:\n    error = [type(e).__name__, str(e)]\n\
         [type(text).__name__, [x * 2 for x in data['numbers']], r['content'] == text, error]"
    );
    for lang in BOTH {
        let got = result(&h, lang, if lang == Lang::Ts { &ts } else { &py }).await;
        let kind = if lang == Lang::Ts { "string" } else { "str" };
        assert_eq!(got[0], kind, "{lang:?}: {got}");
        assert_eq!(got[1], json!([2, 4, 6]), "{lang:?}: {got}");
        assert_eq!(got[2], true, "{lang:?}: {got}");
        assert_eq!(got[3][0], "TypeError", "{lang:?}: {got}");
        let m = got[3][1].as_str().unwrap();
        assert!(
            m.contains(
                "`content` wants a string but got the object filesystem.read_file returned \
                 (call 2 of this run); take its `.content`"
            ),
            "{lang:?}: {m}"
        );
        assert!(
            !root.0.join("out.txt").exists(),
            "{lang:?}: nothing written"
        );
    }
}

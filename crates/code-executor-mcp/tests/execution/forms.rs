//! The TypeScript sandbox's forms from the product line's documents (issue #51), and other
//! shapes of the same kinds: module syntax (`import { filesystem } from './mcp-wrappers'`,
//! wrapper files with `export`), discovery used with and without `await`
//! (`discoverMCPTools()` as an array, `getToolSchema(server, tool)`, `listServers()`), the
//! documented options of `llm.ask`/`llm.think`, and unknown options refused by name. Attacks:
//! import specifiers that could name a file, a package or a URL, in plain and encoded forms.

use serde_json::{Value, json};
use test_support::{Harness, TempDir, fixture_entry};

use crate::common::EXE;

async fn harness() -> Harness {
    Harness::start(
        EXE.as_ref(),
        json!({ "fx": fixture_entry("fx"), "other-server": fixture_entry("other") }),
        &[],
        &[],
    )
    .await
}

/// Runs `code`, expecting success; returns its result.
async fn ok(h: &Harness, code: &str) -> Value {
    let (v, is_error) = h.exec(code).await;
    assert!(!is_error, "{code}\n=> {v}");
    v["result"].clone()
}

/// Runs `code`, expecting it to fail; returns `name: message`.
async fn fails(h: &Harness, code: &str) -> String {
    let (v, is_error) = h.exec(code).await;
    assert!(is_error, "{code}\n=> {v}");
    format!(
        "{}: {}",
        v["error"]["name"].as_str().unwrap_or(""),
        v["error"]["message"].as_str().unwrap_or("")
    )
}

#[tokio::test]
async fn module_forms_of_the_documents_and_other_shapes_run() {
    let h = harness().await;
    // 001: the wizard's wrappers, one object per server with camelCase methods.
    let v = ok(
        &h,
        "import { fx } from './mcp-wrappers';\n\
         const file = await fx.echo({ message: 'hi' });\n\
         return [file, await fx.getPage(), await fx.dashTool()];",
    )
    .await;
    assert_eq!(v, json!(["Echo: hi", "page", "dash"]));
    // 002: a wrapper template with `export`, then imported from its file and used.
    let v = ok(
        &h,
        "// Adapt to your environment\n\
         export async function zenThinkDeep(question: string) {\n\
           const result = await callMCPTool('mcp__fx__echo', { message: question });\n\
           return typeof result === 'string' ? result.toUpperCase() : result;\n\
         }\n\n\
         // Use it\n\
         import { zenThinkDeep } from './lib/mcp/zen';\n\
         const analysis = await zenThinkDeep('How to optimize this?');\n\
         return analysis;",
    )
    .await;
    assert_eq!(v, "ECHO: HOW TO OPTIMIZE THIS?");
    // A wrapper file with several exports of every kind, imported by alias, default and
    // namespace, beside the server modules in their other paths.
    let v = ok(
        &h,
        "export const PREFIX = 'p:';\n\
         export function a(x: string): string { return PREFIX + x; }\n\
         export default function b(x: string) { return 'b' + x; }\n\
         export class K { v = 1 }\n\
         export interface Shape { x: number }\n\
         export type Name = string;\n\
         const hidden = 'h';\n\
         export { hidden as shown };\n\
         import { a as aa, PREFIX as P, shown } from './wrappers/mine';\n\
         import bDefault from '../src/wrappers/mine.ts';\n\
         import * as fxAll from './mcp-wrappers/fx';\n\
         import { echo as say, getPage, 'get.page' as dotted } from './mcp-wrappers/fx.ts';\n\
         import mw, { other_server, otherServer } from './mcp-wrappers/index.js';\n\
         import { echo } from './mcp-wrappers/fx/echo';\n\
         import type { Anything } from './mcp-wrappers';\n\
         const s: Shape = { x: 2 };\n\
         return [aa('x'), P, shown, bDefault('y'), new K().v, s.x,\n\
           await fxAll.echo({ message: 'n' }), await say({ message: 's' }), await getPage(),\n\
           await dotted(), await mw.fx.echo({ message: 'm' }), await echo({ message: 'e' }),\n\
           await other_server.echo({ message: 'o' }), otherServer === other_server];",
    )
    .await;
    assert_eq!(
        v,
        json!([
            "p:x", "p:", "h", "by", 1, 2, "Echo: n", "Echo: s", "page", "page", "Echo: m",
            "Echo: e", "Echo: o", true
        ])
    );
    // `export default` of an expression, imported by any name.
    let v = ok(
        &h,
        "export default { k: 1 };\nimport cfg from './config';\nreturn cfg.k;",
    )
    .await;
    assert_eq!(v, 1);
    // Imports are hoisted: a binding is usable above its statement.
    let v = ok(
        &h,
        "const r = await fx.echo({ message: 'early' });\nimport { fx } from './mcp-wrappers';\nreturn r;",
    )
    .await;
    assert_eq!(v, "Echo: early");
    // A line number after rewritten statements is still the user's.
    let (v, is_error) = h
        .exec(
            "import { fx } from './mcp-wrappers';\nexport const a = 1;\nimport {\n  echo\n} from './mcp-wrappers/fx';\nthrow new Error('line 6');",
        )
        .await;
    assert!(is_error, "{v}");
    assert!(
        v["error"]["stack"]
            .as_str()
            .unwrap_or("")
            .contains("code.ts:6"),
        "{v}"
    );

    // In a session, imports and exports are top-level declarations kept for the next run.
    let (v, is_error) = h
        .exec_with(json!({"code": "import { fx } from './mcp-wrappers';\nexport const greet = (m: string) => fx.echo({ message: m });\nreturn 1;", "session": "new"}))
        .await;
    assert!(!is_error, "{v}");
    let id = v["session"]["id"].as_str().unwrap().to_string();
    let (v, is_error) = h
        .exec_with(json!({"code": "import { fx } from './mcp-wrappers';\nreturn [await greet('again'), await fx.getPage()];", "session": id}))
        .await;
    assert!(!is_error, "{v}");
    assert_eq!(v["result"], json!(["Echo: again", "page"]));

    // What does not exist is a TypeError naming what does.
    let e = fails(&h, "import { x } from './utils/helpers';\nreturn x;").await;
    assert!(e.starts_with("TypeError: "), "{e}");
    assert!(
        e.contains("no such module") && e.contains("fx, other-server"),
        "{e}"
    );
    let e = fails(
        &h,
        "export const mine = 1;\nimport * as u from './utils';\nreturn u;",
    )
    .await;
    assert!(e.contains("own exports (mine)"), "{e}");
    let e = fails(&h, "import { github } from './mcp-wrappers';\nreturn 1;").await;
    assert!(
        e.contains("no server \"github\"") && e.contains("fx, other-server"),
        "{e}"
    );
    let e = fails(
        &h,
        "import { nosuch } from './mcp-wrappers/fx';\nreturn await nosuch({});",
    )
    .await;
    assert!(e.contains("nosuch") && e.contains("echo"), "{e}");
    let e = fails(&h, "import { x } from './mcp-wrappers/nosrv';\nreturn x;").await;
    assert!(e.contains("no such module"), "{e}");
    // Names objects have are no tools or servers.
    for name in [
        "constructor",
        "then",
        "__proto__",
        "toString",
        "hasOwnProperty",
    ] {
        let e = fails(
            &h,
            &format!("import {{ {name} as x }} from './mcp-wrappers/fx';\nreturn typeof x;"),
        )
        .await;
        assert!(e.contains(&format!("no tool \"{name}\"")), "{e}");
        let e = fails(
            &h,
            &format!("import {{ {name} as x }} from './mcp-wrappers';\nreturn typeof x;"),
        )
        .await;
        assert!(e.contains(&format!("no server \"{name}\"")), "{e}");
    }
}

#[tokio::test]
async fn import_specifiers_that_could_reach_files_packages_or_urls_are_refused() {
    let h = harness().await;
    for (spec, name, says) in [
        ("node:fs", "SyntaxError", "scheme"),
        ("fs", "SyntaxError", "a package"),
        ("/etc/passwd", "SyntaxError", "absolute path"),
        ("file:///etc/passwd", "SyntaxError", "scheme"),
        ("https://example.com/x.js", "SyntaxError", "scheme"),
        (
            "data:text/javascript,export default 1",
            "SyntaxError",
            "scheme",
        ),
        (
            "./%2e%2e/%2e%2e/etc/passwd",
            "SyntaxError",
            "not a character",
        ),
        (
            "./..\\\\..\\\\etc\\\\passwd",
            "SyntaxError",
            "not a character",
        ),
        (
            "./mcp-wrappers/../../../../etc/passwd",
            "SyntaxError",
            "climbs back",
        ),
        (
            "./\\u002e\\u002e/x/\\u002e\\u002e/etc/passwd",
            "SyntaxError",
            "climbs back",
        ),
        (
            "../../../../../../etc/passwd",
            "TypeError",
            "no such module",
        ),
        (
            "../../../../../../proc/self/environ",
            "TypeError",
            "no such module",
        ),
    ] {
        for code in [
            format!("import {{ x }} from '{spec}';\nreturn x;"),
            format!("import * as m from '{spec}';\nreturn m;"),
            format!("export {{ x }} from '{spec}';\nreturn 1;"),
        ] {
            if name == "TypeError" && code.starts_with("export") {
                continue; // a re-export binds nothing, and runs nothing
            }
            let e = fails(&h, &code).await;
            assert!(e.starts_with(&format!("{name}: ")), "{code}: {e}");
            assert!(e.contains(says), "{code}: {e}");
            assert!(!e.contains("root:") && !e.contains("PATH="), "{code}: {e}");
        }
    }
    // The escaped spelling of a good name is that name.
    let v = ok(
        &h,
        "import { fx } from './mcp-wr\\u0061ppers';\nreturn await fx.echo({ message: 'ok' });",
    )
    .await;
    assert_eq!(v, "Echo: ok");
    // Dynamic imports and require load nothing.
    for code in [
        "return await import('/etc/passwd');",
        "return await import('node:fs');",
        "return await import('./mcp-wrappers');",
        "return require('fs').readFileSync('/etc/passwd', 'utf8');",
    ] {
        let e = fails(&h, code).await;
        assert!(!e.contains("root:"), "{code}: {e}");
    }
}

#[tokio::test]
async fn discovery_answers_with_and_without_await_in_the_documents_shapes() {
    let h = harness().await;
    let v = ok(
        &h,
        r#"
        const tools = await discoverMCPTools();
        const now = discoverMCPTools();
        let iterated = 0;
        for (const t of tools) iterated++;
        const echo = tools.find((t) => t.name === 'mcp__fx__echo');
        const two = getToolSchema('fx', 'echo');
        const one = await getToolSchema('mcp__fx__echo');
        const camel = await getToolSchema('other-server', 'getPage');
        const servers = listServers();
        const awaited = await listServers();
        const chained = await listServers().then((s) => s.servers.length);
        const caught = await getToolSchema('fx', 'nosuch').catch((e) => e.name);
        let thrown = null;
        try { getToolSchema('fx', 'nosuch').inputSchema; } catch (e) { thrown = e.name; }
        const found = searchTools('echo', { limit: 1 });
        return {
          length: tools.length === now.length && tools.length > 10, isArray: Array.isArray(tools),
          old: tools.tools === tools && (await discoverMCPTools()).tools.length === tools.length,
          iterated: iterated === tools.length, index: tools[0].name.startsWith('mcp__'),
          filtered: tools.filter((t) => t.server === 'fx').map((t) => t.tool).includes('get.page'),
          mapped: tools.map((t) => t.name).includes('mcp__other-server__echo'),
          echo: [echo.server, echo.tool, typeof echo.description, echo.inputSchema.type],
          two: [two.name, two.inputSchema.type, JSON.stringify(two) === JSON.stringify(one)],
          camel: camel.name, servers: servers.servers.map((s) => s.name).sort(),
          same: JSON.stringify(awaited) === JSON.stringify(servers), chained,
          failed: caught === thrown && typeof caught === 'string',
          found: found.tools.length === 1 && found.tools[0].tool === 'echo',
          json: JSON.parse(JSON.stringify(now)).length === tools.length,
        };
        "#,
    )
    .await;
    assert_eq!(
        v,
        json!({
            "length": true, "isArray": true, "old": true, "iterated": true, "index": true,
            "filtered": true, "mapped": true, "echo": ["fx", "echo", "string", "object"],
            "two": ["mcp__fx__echo", "object", true], "camel": "mcp__other-server__get.page",
            "servers": ["fx", "other-server"], "same": true, "chained": 2,
            "failed": true, "found": true, "json": true
        })
    );
    // The camelCase form of a tool's name reaches it from Python too (the host resolves it).
    let (v, is_error) = h
        .exec_python("[tools.fx.getPage(), tools.other_server.dashTool(), get_tool_schema('mcp__fx__getPage')['tool']]")
        .await;
    assert!(!is_error, "{v}");
    assert_eq!(v["result"], json!(["page", "dash", "get.page"]));
    // Wrong uses are loud, whether awaited or not.
    for (code, says) in [
        (
            "return await getToolSchema('fx', 'echo', 'extra');",
            "(server, tool)",
        ),
        ("return getToolSchema(42).name;", "(server, tool)"),
        (
            "return await searchTools('echo', { detial: 'full' });",
            "unknown option \"detial\"",
        ),
        (
            "return searchTools('echo', { limit: 'ten' }).results;",
            "limit must be",
        ),
        (
            "return (await discoverMCPTools({ server: 'fx' })).length;",
            "unknown option \"server\"",
        ),
        ("return listServers('fx').servers;", "takes no arguments"),
    ] {
        let e = fails(&h, code).await;
        assert!(
            e.starts_with("TypeError: ") && e.contains(says),
            "{code}: {e}"
        );
    }
}

#[tokio::test]
async fn llm_options_are_honoured_and_unknown_options_are_loud_in_both_languages() {
    let (url, seen) = crate::llm_provider::mock_provider().await;
    let dir = TempDir::new("forms-llm");
    let settings = dir.0.join("settings.json");
    std::fs::write(
        &settings,
        json!({"llm": {"enabled": true, "provider": {"api": "anthropic", "baseUrl": url,
            "model": "m1", "apiKeyEnv": "MOCK_PROVIDER_KEY"}}})
        .to_string(),
    )
    .unwrap();
    let h = Harness::start(
        EXE.as_ref(),
        json!({ "fx": fixture_entry("fx") }),
        &[],
        &[
            ("CODE_EXECUTOR_CONFIG_PATH", settings.to_str().unwrap()),
            ("MOCK_PROVIDER_KEY", "sk-mock"),
        ],
    )
    .await;
    let v = ok(
        &h,
        "const a = await llm.think({ messages: [{ role: 'user', content: 'q1' }], systemPrompt: 'terse', model: 'm2', maxTokens: 33 });\n\
         const b = await llm.ask('q2', { systemPrompt: 'sys2', maxTokens: 12, model: 'm3' });\n\
         const c = await llm.think([{ role: 'user', content: 'q3' }], { system: 'sys3' });\n\
         return [a, b, c];",
    )
    .await;
    assert_eq!(v, json!(["reply to: q1", "reply to: q2", "reply to: q3"]));
    for (code, says) in [
        (
            "await llm.think({ messages: [{ role: 'user', content: 'x' }], temperature: 0.5 });",
            "unknown option \"temperature\" in options; accepted: messages, systemPrompt",
        ),
        (
            "await llm.ask('x', { sytemPrompt: 'typo' });",
            "unknown option \"sytemPrompt\"",
        ),
        (
            "await llm.think({ messages: [{ role: 'user', content: 'x', name: 'bob' }] });",
            "unknown option \"name\" in messages[0]; accepted: role, content",
        ),
        (
            "await llm.ask('x', { system: 'a', systemPrompt: 'b' });",
            "disagree",
        ),
        (
            "await llm.ask('x', { maxTokens: '10' });",
            "maxTokens must be",
        ),
        (
            "await llm.think({ messages: [{ role: 'user', content: { a: 1 } }] });",
            "messages[0].content must be a string",
        ),
        (
            "await saveSkill('x', { code: 'return 1', description: 'd', tags: [] });",
            "unknown option \"tags\"",
        ),
        (
            "await fetch('https://example.com/', { header: { a: 'b' } });",
            "unknown option \"header\" in init; accepted: method, headers",
        ),
    ] {
        let e = fails(&h, code).await;
        assert!(
            e.starts_with("TypeError: ") && e.contains(says),
            "{code}: {e}"
        );
    }
    // Python refuses an unknown option by name too.
    for (code, name) in [
        ("llm.ask('x', temperature=0.5)", "temperature"),
        ("fetch('https://example.com/', header={'a': 'b'})", "header"),
        ("search_tools('echo', detial='full')", "detial"),
    ] {
        let (v, is_error) = h.exec_python(code).await;
        assert!(is_error, "{code}: {v}");
        assert_eq!(v["error"]["name"], "TypeError", "{code}: {v}");
        let message = v["error"]["message"].as_str().unwrap_or("");
        assert!(message.contains(name), "{code}: {v}");
    }
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 3, "refused calls reached the provider");
    let bodies: Vec<(Value, Value, Value)> = seen
        .iter()
        .map(|s| {
            (
                s.body["system"].clone(),
                s.body["model"].clone(),
                s.body["max_tokens"].clone(),
            )
        })
        .collect();
    assert_eq!(bodies[0], (json!("terse"), json!("m2"), json!(33)));
    assert_eq!(bodies[1], (json!("sys2"), json!("m3"), json!(12)));
    assert_eq!(bodies[2].0, json!("sys3"));
}

//! The same scenarios in TypeScript and Python, from one table, driven through the built server
//! by a real MCP client (rmcp over stdio) with fixture MCP servers upstream.
//!
//! Every case runs in both languages against one server, then checks that the server still
//! answers in both. One test per case (named after it), so a failure names the scenario.

use serde_json::{Value, json};
use test_support::{Harness, Lang, fixture_entry};

use crate::common::EXE;

enum Expect {
    /// Succeeds with exactly this result.
    Result(Value),
    /// Fails with this error name and a message containing this text, per language (ts, py).
    Error {
        name: (&'static str, &'static str),
        message: (&'static str, &'static str),
    },
    /// Anything else: (language, structuredContent, isError).
    Check(fn(Lang, &Value, bool)),
}

struct Case {
    name: &'static str,
    ts: &'static str,
    py: &'static str,
    /// Extra arguments of the execution (timeoutMs, allowedTools).
    args: Value,
    expect: Expect,
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "tool_calls_in_every_form",
            ts: r#"
                const a = await callMCPTool('mcp__fx__echo', { message: 'one' });
                const b = await callMCPTool('fx', 'echo', { message: 'two' });
                const c = await tools.fx.echo({ message: 'three' });
                const d = await tools.fx.add({ a: 2, b: 3 });
                const e = await tools.fx['get.page']();
                const f = await tools.fx.get_page();
                const g = await tools.fx.dash_tool();
                const h = await tools.other_server.whoami();
                const i = await tools['other-server']['whoami']();
                return [a, b, c, d, e, f, g, h, i];
            "#,
            py: r#"
a = call_mcp_tool('mcp__fx__echo', {'message': 'one'})
b = call_mcp_tool('fx', 'echo', {'message': 'two'})
c = tools.fx.echo(message='three')
d = tools.fx.add({'a': 2, 'b': 3})
e = tools['fx']['get.page']()
f = tools.fx.get_page()
g = tools.fx.dash_tool()
h = tools.other_server.whoami()
i = tools['other-server']['whoami']()
[a, b, c, d, e, f, g, h, i]
"#,
            args: json!({}),
            expect: Expect::Check(|_, v, is_error| {
                assert!(!is_error, "{v}");
                let mut r = v["result"].clone();
                // JavaScript has one number type (5); Python keeps the upstream's float (5.0).
                assert_eq!(r[3]["sum"].as_f64(), Some(5.0), "{v}");
                r[3] = Value::Null;
                assert_eq!(
                    r,
                    json!([
                        "Echo: one",
                        "Echo: two",
                        "Echo: three",
                        null,
                        "page",
                        "page",
                        "dash",
                        "other",
                        "other"
                    ])
                );
                assert_eq!(v["toolCalls"], json!(9));
            }),
        },
        Case {
            name: "parallel_calls_are_in_flight_together_on_the_host",
            // The rendezvous tool only answers once all 5 calls with its key are in flight.
            ts: "return await Promise.all([1,2,3,4,5].map(() => tools.fx.rendezvous({ key: 'ts', n: 5 })));",
            py: r#"
import asyncio
calls = [acall_mcp_tool('fx', 'rendezvous', {'key': 'py', 'n': 5}) for _ in range(3)]
calls += [atools.fx.rendezvous(key='py', n=5), acall_mcp_tool('mcp__fx__rendezvous', key='py', n=5)]
await asyncio.gather(*calls)
"#,
            args: json!({}),
            expect: Expect::Result(json!(["met", "met", "met", "met", "met"])),
        },
        Case {
            name: "large_results_reach_code_whole",
            // Replies of ~200 KB span many pipe reads and split multi-byte characters; the
            // parallel ones arrive back to back.
            ts: r#"
                const m = ('é'.repeat(1000) + '🦀').repeat(100);
                const r = await tools.fx.echo({ message: m });
                const rs = await Promise.all([0, 1, 2].map((i) => tools.fx.echo({ message: m + i })));
                return [r.length, r === 'Echo: ' + m, rs.map((x, i) => x === 'Echo: ' + m + i)];
            "#,
            py: r#"
import asyncio
m = ('é' * 1000 + '🦀') * 100
r = call_mcp_tool('fx', 'echo', {'message': m})
rs = await asyncio.gather(*[acall_mcp_tool('fx', 'echo', {'message': m + str(i)}) for i in range(3)])
[len(r.encode('utf-16-le')) // 2, r == 'Echo: ' + m, [x == 'Echo: ' + m + str(i) for i, x in enumerate(rs)]]
"#,
            args: json!({}),
            // JavaScript counts UTF-16 units: 6 + 100 * (1000 + 2).
            expect: Expect::Result(json!([100_206, true, [true, true, true]])),
        },
        Case {
            name: "tool_error_is_catchable_with_the_upstream_message",
            ts: "try { await tools.fx.fail({ message: 'disk on fire' }); } catch (e) { return [e instanceof ToolError, e.name, e.message]; }",
            py: r#"
try:
    tools.fx.fail(message='disk on fire')
except ToolError as e:
    r = [isinstance(e, ToolError), type(e).__name__, str(e)]
r
"#,
            args: json!({}),
            expect: Expect::Result(json!([true, "ToolError", "disk on fire"])),
        },
        Case {
            name: "uncaught_tool_error_fails_the_execution",
            ts: "await tools.fx.fail({ message: 'uncaught' });",
            py: "tools.fx.fail(message='uncaught')",
            args: json!({}),
            expect: Expect::Error {
                name: ("ToolError", "ToolError"),
                message: ("uncaught", "uncaught"),
            },
        },
        Case {
            name: "tools_outside_allowed_tools_raise_a_policy_error",
            ts: "const ok = await tools.fx.echo({message: 'x'});\ntry { await callMCPTool('fx', 'add', {a: 1, b: 2}); } catch (e) { return [ok, e.name, e.message]; }",
            py: r#"
ok = tools.fx.echo(message='x')
try:
    call_mcp_tool('fx', 'add', {'a': 1, 'b': 2})
except PolicyError as e:
    r = [ok, type(e).__name__, str(e)]
r
"#,
            args: json!({"allowedTools": ["mcp__fx__ec*"]}),
            expect: Expect::Result(json!([
                "Echo: x",
                "PolicyError",
                "mcp__fx__add is not in this execution's allowedTools (mcp__fx__ec*)"
            ])),
        },
        Case {
            name: "errors_are_one_taxonomy_in_both_languages",
            ts: r#"
                const out = [];
                const probe = async (f) => {
                  try { await f(); out.push('no error'); }
                  catch (e) { out.push([e.name, e instanceof ToolError, e instanceof TypeError, e instanceof PolicyError, e instanceof LimitError]); }
                };
                await probe(() => tools.fx.fail({ message: 'boom' }));
                await probe(() => callMCPTool('fx', 'add', { a: 1, b: 2 }));
                await probe(() => tools.fx.echo({ message: 5 }));
                await probe(() => tools.fx.echo({ message: 'ok' }));
                await probe(() => tools.fx.echo({ message: 'one too many' }));
                return out;
            "#,
            py: r#"
out = []
def probe(f):
    try:
        f()
        out.append('no error')
    except Exception as e:
        out.append([type(e).__name__, isinstance(e, ToolError), isinstance(e, TypeError), isinstance(e, PolicyError), isinstance(e, LimitError)])
probe(lambda: tools.fx.fail(message='boom'))
probe(lambda: call_mcp_tool('fx', 'add', {'a': 1, 'b': 2}))
probe(lambda: tools.fx.echo(message=5))
probe(lambda: tools.fx.echo(message='ok'))
probe(lambda: tools.fx.echo(message='one too many'))
out
"#,
            args: json!({"allowedTools": ["mcp__fx__fail", "mcp__fx__echo"], "limits": {"maxToolCalls": 4}}),
            expect: Expect::Result(json!([
                ["ToolError", true, false, false, false],
                ["PolicyError", true, false, true, false],
                ["TypeError", false, true, false, false],
                "no error",
                ["LimitError", true, false, false, true],
            ])),
        },
        // Past maxToolCalls while earlier calls are still answered: the refusal ends the
        // run as a LimitError (the worker once exited on the late answers, and aborted on
        // its way out, which the run reported as WorkerCrashed).
        Case {
            name: "a_fan_out_past_max_tool_calls_is_a_limit_error",
            ts: "await Promise.all(Array.from({length: 30}, () => tools.fx.sleep({ms: 300})));\nreturn 'all';",
            py: "import asyncio\nasync def main():\n    await asyncio.gather(*[acall_mcp_tool('fx', 'sleep', {'ms': 300}) for _ in range(30)])\nasyncio.run(main())\n'all'",
            args: json!({"limits": {"maxToolCalls": 5}}),
            expect: Expect::Error {
                name: ("LimitError", "LimitError"),
                message: ("limit of 5 tool calls", "limit of 5 tool calls"),
            },
        },
        Case {
            name: "signatures_of_servers_not_started_yet",
            ts: "const s = tools.other_server.whoami.signature;\nreturn typeof s === 'string' && s.includes('whoami') && !s.includes('args?: object');",
            py: "s = tools.other_server.whoami.signature\nisinstance(s, str) and 'whoami' in s",
            args: json!({}),
            expect: Expect::Result(json!(true)),
        },
        Case {
            name: "results_are_json",
            ts: "return { a: [1, 'x', null, true, 1.5], nested: { k: [] }, s: 'é😀' };",
            py: "{'a': [1, 'x', None, True, 1.5], 'nested': {'k': ()}, 's': 'é😀'}",
            args: json!({}),
            expect: Expect::Result(
                json!({"a": [1, "x", null, true, 1.5], "nested": {"k": []}, "s": "é😀"}),
            ),
        },
        Case {
            name: "top_level_await_and_return",
            ts: "const r = await tools.fx.echo({ message: 'a' });\nif (r) return r + '!';\nreturn 'no';",
            py: "r = await acall_mcp_tool('fx', 'echo', {'message': 'a'})\nif r:\n    return r + '!'\nreturn 'no'",
            args: json!({}),
            expect: Expect::Result(json!("Echo: a!")),
        },
        Case {
            name: "non_text_content_is_kept_as_objects",
            ts: "return await tools.fx.image();",
            py: "tools.fx.image()",
            args: json!({}),
            expect: Expect::Result(
                json!(["a picture", {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}]),
            ),
        },
        Case {
            name: "output_is_captured_in_order_with_levels",
            ts: "console.log('a', 1); console.info('i'); console.warn('w'); console.error('e');",
            py: "import logging, sys\nprint('a', 1)\nlogging.info('i')\nlogging.warning('w')\nprint('e', file=sys.stderr)",
            args: json!({}),
            expect: Expect::Check(|_, v, is_error| {
                assert!(!is_error, "{v}");
                assert_eq!(
                    v["logs"],
                    json!([
                        {"level": "log", "text": "a 1"},
                        {"level": "info", "text": "i"},
                        {"level": "warn", "text": "w"},
                        {"level": "error", "text": "e"},
                    ])
                );
                assert_eq!(v["result"], Value::Null);
            }),
        },
        Case {
            name: "syntax_error_reports_line_and_column",
            ts: "const a = 1;\nconst b = ;\n",
            py: "a = 1\nb = \n",
            args: json!({}),
            expect: Expect::Error {
                name: ("SyntaxError", "SyntaxError"),
                message: ("code.ts:2:11", "code.py:2:5"),
            },
        },
        Case {
            name: "thrown_errors_carry_name_message_and_user_line",
            ts: "type T = number;\n\nconst x: T = 1;\nthrow new RangeError('too far ' + x);",
            py: "import json\n\nx = 1\nraise ValueError('too far ' + str(x))",
            args: json!({}),
            expect: Expect::Check(|lang, v, is_error| {
                assert!(is_error, "{v}");
                assert_eq!(v["error"]["name"], lang.pick("RangeError", "ValueError"));
                assert_eq!(v["error"]["message"], "too far 1");
                let stack = v["error"]["stack"].as_str().unwrap();
                assert!(
                    stack.contains(lang.pick("code.ts:4", "\"code.py\", line 4")),
                    "{stack}"
                );
                assert!(
                    !stack.contains("prelude") && !stack.contains("shim"),
                    "{stack}"
                );
            }),
        },
        Case {
            name: "tool_error_traceback_shows_only_user_lines",
            ts: "\nawait tools.fx.fail({ message: 'x' });",
            py: "\ntools.fx.fail(message='x')",
            args: json!({}),
            expect: Expect::Check(|lang, v, is_error| {
                assert!(is_error, "{v}");
                if lang == Lang::Py {
                    assert_eq!(
                        v["error"]["stack"],
                        "Traceback (most recent call last):\n  File \"code.py\", line 2, in <module>\n    tools.fx.fail(message='x')"
                    );
                }
            }),
        },
        Case {
            name: "infinite_loop_ends_at_the_deadline",
            ts: "while (true) {}",
            py: "while True: pass",
            args: json!({"timeoutMs": 300}),
            expect: Expect::Error {
                name: ("TimeoutError", "TimeoutError"),
                message: ("300 ms", "300 ms"),
            },
        },
        Case {
            name: "memory_bomb_is_a_memory_error",
            ts: "const a = []; while (true) a.push('x'.repeat(4096) + a.length);",
            py: "a = []\nwhile True: a.append('x' * 4096 + str(len(a)))",
            args: json!({}),
            expect: Expect::Error {
                name: ("MemoryError", "MemoryError"),
                message: ("MiB", "MiB"),
            },
        },
        Case {
            name: "deep_recursion_is_an_error",
            ts: "function f(n) { return f(n + 1) + 1 }\nreturn f(0);",
            py: "def f(n):\n    return f(n + 1) + 1\nf(0)",
            args: json!({}),
            expect: Expect::Error {
                name: ("RangeError", "RecursionError"),
                message: ("", "maximum recursion depth"),
            },
        },
        Case {
            name: "huge_output_is_truncated_with_a_marker",
            ts: "const line = 'y'.repeat(1000); for (let i = 0; i < 5000; i++) console.log(line); return 'done';",
            py: "line = 'y' * 1000\nfor i in range(5000):\n    print(line)\n'done'",
            args: json!({}),
            expect: Expect::Check(|_, v, is_error| {
                assert!(!is_error, "{v}");
                assert_eq!(v["result"], "done");
                let logs = v["logs"].as_array().unwrap();
                let last = logs.last().unwrap();
                assert_eq!(last["level"], "host");
                assert!(
                    last["text"]
                        .as_str()
                        .unwrap()
                        .starts_with("[output truncated at the 1024 KiB limit"),
                    "{last}"
                );
                let kept: usize = logs[..logs.len() - 1]
                    .iter()
                    .map(|l| l["text"].as_str().unwrap().len())
                    .sum();
                assert!(kept <= 1024 * 1024, "{kept}");
                assert!(logs.len() > 1000, "{}", logs.len());
                // The whole output is kept in the execution's scratch directory.
                let file = v["outputFile"].as_str().expect("outputFile");
                assert!(last["text"].as_str().unwrap().contains(file), "{last}");
                let full = std::fs::read_to_string(file).unwrap();
                assert_eq!(full.lines().count(), 5000);
                assert!(full.lines().all(|l| l == "y".repeat(1000)));
            }),
        },
        Case {
            name: "unknown_names_say_what_exists",
            ts: r#"
                const out = [];
                for (const f of [
                  () => tools.nope.x(),
                  () => callMCPTool('mcp__nope__x', {}),
                  () => callMCPTool('fx', 'nope', {}),
                  () => callMCPTool('fx', 'echo', 'not an object'),
                ]) { try { await f(); out.push('no error'); } catch (e) { out.push(e.name + ': ' + e.message); } }
                return out;
            "#,
            py: r#"
out = []
for f in [
    lambda: tools.nope.x(),
    lambda: call_mcp_tool('mcp__nope__x', {}),
    lambda: call_mcp_tool('fx', 'nope', {}),
    lambda: call_mcp_tool('fx', 'echo', 'not an object'),
]:
    try:
        f()
        out.append('no error')
    except Exception as e:
        out.append(type(e).__name__ + ': ' + str(e))
out
"#,
            args: json!({}),
            expect: Expect::Check(|lang, v, _| {
                let out: Vec<String> = serde_json::from_value(v["result"].clone()).unwrap();
                // The same ToolError in both languages, by the host.
                assert!(
                    out[0].starts_with(
                        "ToolError: unknown tool mcp__nope__x: no MCP server named \"nope\"; nearest: "
                    ),
                    "{out:?}"
                );
                assert!(
                    out[1].starts_with(
                        "ToolError: unknown tool mcp__nope__x: no MCP server named \"nope\"; nearest: "
                    ),
                    "{out:?}"
                );
                assert!(
                    out[2].starts_with(
                        "ToolError: unknown tool mcp__fx__nope: no tool of server \"fx\" named \"nope\"; nearest: "
                    ),
                    "{out:?}"
                );
                let want3 = lang.pick(
                    "TypeError: callMCPTool: arguments must be an object",
                    "TypeError: call_mcp_tool: arguments must be a dict",
                );
                assert!(out[3].starts_with(want3), "{out:?}");
            }),
        },
        Case {
            name: "discovery_functions_work_inside_the_sandbox",
            ts: r#"
                const servers = await listServers();
                const found = await searchTools('echo message', { server: 'fx', detail: 'names' });
                const schema = await getToolSchema('mcp__fx__add');
                const all = await discoverMCPTools();
                return { servers: servers.servers.map(s => s.name), first: found.tools[0].name,
                         required: schema.inputSchema.required, many: all.tools.length >= 20 };
            "#,
            py: r#"
servers = list_servers()
found = search_tools('echo message', server='fx', detail='names')
schema = get_tool_schema('mcp__fx__add')
everything = discover_mcp_tools()
{'servers': [s['name'] for s in servers['servers']], 'first': found['tools'][0]['name'],
 'required': schema['inputSchema']['required'], 'many': len(everything['tools']) >= 20}
"#,
            args: json!({}),
            expect: Expect::Result(json!({
                "servers": ["fx", "other-server"], "first": "mcp__fx__echo",
                "required": ["a", "b"], "many": true,
            })),
        },
    ]
}

async fn harness() -> Harness {
    Harness::start(
        EXE.as_ref(),
        json!({ "fx": fixture_entry("fx"), "other-server": fixture_entry("other") }),
        &["--pool-size", "1", "--python-pool-size", "1"],
        &[],
    )
    .await
}

async fn run_case(name: &str) {
    let cases = cases();
    let case = cases
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no case {name} in the table"));
    let h = harness().await;
    for lang in [Lang::Ts, Lang::Py] {
        let mut args = case.args.clone();
        args["code"] = json!(lang.pick(case.ts, case.py));
        let (v, is_error) = h.run_tool(lang.tool(), args).await;
        eprintln!("{name} [{lang:?}]: {v}");
        match &case.expect {
            Expect::Result(want) => {
                assert!(!is_error, "{name} [{lang:?}]: {v}");
                assert_eq!(&v["result"], want, "{name} [{lang:?}]");
            }
            Expect::Error { name: n, message } => {
                assert!(is_error, "{name} [{lang:?}]: {v}");
                assert_eq!(
                    v["error"]["name"],
                    lang.pick(n.0, n.1),
                    "{name} [{lang:?}]: {v}"
                );
                let msg = v["error"]["message"].as_str().unwrap_or("");
                assert!(
                    msg.contains(lang.pick(message.0, message.1)),
                    "{name} [{lang:?}]: {v}"
                );
            }
            Expect::Check(check) => check(lang, &v, is_error),
        }
    }
    // Whatever the case did, the server still answers in both languages.
    let (v, is_error) = h.exec("return 1 + 1").await;
    assert!(
        !is_error && v["result"] == 2,
        "{name}: TS after the case: {v}"
    );
    let (v, is_error) = h.exec_python("1 + 1").await;
    assert!(
        !is_error && v["result"] == 2,
        "{name}: Python after the case: {v}"
    );
}

macro_rules! case_tests {
    ($($name:ident),* $(,)?) => {
        $(
            #[tokio::test]
            async fn $name() {
                run_case(stringify!($name)).await;
            }
        )*

        #[test]
        fn every_case_in_the_table_has_a_test() {
            let tests = [$(stringify!($name)),*];
            let table: Vec<&str> = cases().iter().map(|c| c.name).collect();
            assert_eq!(table, tests);
        }
    };
}

case_tests!(
    tool_calls_in_every_form,
    parallel_calls_are_in_flight_together_on_the_host,
    large_results_reach_code_whole,
    tool_error_is_catchable_with_the_upstream_message,
    uncaught_tool_error_fails_the_execution,
    tools_outside_allowed_tools_raise_a_policy_error,
    errors_are_one_taxonomy_in_both_languages,
    a_fan_out_past_max_tool_calls_is_a_limit_error,
    signatures_of_servers_not_started_yet,
    results_are_json,
    top_level_await_and_return,
    non_text_content_is_kept_as_objects,
    output_is_captured_in_order_with_levels,
    syntax_error_reports_line_and_column,
    thrown_errors_carry_name_message_and_user_line,
    tool_error_traceback_shows_only_user_lines,
    infinite_loop_ends_at_the_deadline,
    memory_bomb_is_a_memory_error,
    deep_recursion_is_an_error,
    huge_output_is_truncated_with_a_marker,
    unknown_names_say_what_exists,
    discovery_functions_work_inside_the_sandbox,
);

/// Every way code reaches an unknown tool or server, in TypeScript: (how, error name, a
/// ToolError?, message); then what reading unknown names gives (it never throws).
const UNKNOWN_TS: &str = r#"
const out = [];
const probe = async (how, f) => {
  try { await f(); out.push([how, 'no error']); }
  catch (e) { out.push([how, e.name, e instanceof ToolError, e.message]); }
};
await probe('proxy', () => tools.fx.ecoh({ message: 'x' }));
await probe('proxy, by key', () => tools['fx']['nope-tool']());
await probe('proxy, server not started', () => tools.other_server.whoamii());
await probe('proxy, unknown server', () => tools.fz.echo({}));
await probe('qualified', () => callMCPTool('mcp__fx__ecoh', {}));
await probe('qualified, unknown server', () => callMCPTool('mcp__fz__echo', {}));
await probe('server and tool', () => callMCPTool('fx', 'ecoh', {}));
await probe('server and tool, unknown server', () => callMCPTool('fz', 'echo', {}));
await probe('async', () => callMCPTool('fx', 'ecoh', {}));
await probe('async proxy', () => tools.fx.ecoh());
const fx = tools.fx;
const reads = [
  typeof fx.ecoh, typeof tools.fz, typeof tools.fz.echo, 'ecoh' in fx, 'fz' in tools,
  Object.keys(tools).includes('fz'), fx.then === undefined, tools.fz.then === undefined,
  String(fx) === '[object Object]', fx[Symbol.toPrimitive] === undefined, (await fx) === fx,
];
return { out, reads };
"#;

/// The same in Python (`async`: `acall_mcp_tool`; `async proxy`: `atools`).
const UNKNOWN_PY: &str = r#"
out = []
def probe(how, f):
    try:
        f()
        out.append([how, 'no error'])
    except Exception as e:
        out.append([how, type(e).__name__, isinstance(e, ToolError), str(e)])
probe('proxy', lambda: tools.fx.ecoh(message='x'))
probe('proxy, by key', lambda: tools['fx']['nope-tool']())
probe('proxy, server not started', lambda: tools.other_server.whoamii())
probe('proxy, unknown server', lambda: tools.fz.echo())
probe('qualified', lambda: call_mcp_tool('mcp__fx__ecoh', {}))
probe('qualified, unknown server', lambda: call_mcp_tool('mcp__fz__echo', {}))
probe('server and tool', lambda: call_mcp_tool('fx', 'ecoh', {}))
probe('server and tool, unknown server', lambda: call_mcp_tool('fz', 'echo', {}))
for how, call in [('async', lambda: acall_mcp_tool('fx', 'ecoh', {})), ('async proxy', lambda: atools.fx.ecoh())]:
    try:
        await call()
        out.append([how, 'no error'])
    except Exception as e:
        out.append([how, type(e).__name__, isinstance(e, ToolError), str(e)])
fx = tools.fx
def dunder():
    try:
        fx.__wrapped__
        return False
    except AttributeError:
        return True
reads = [
    'function' if callable(fx.ecoh) else 'no', 'object' if tools.fz is not None else 'no',
    'function' if callable(tools.fz.echo) else 'no', 'ecoh' in dir(fx), 'fz' in dir(tools),
    hasattr(tools, '__len__'), not hasattr(fx, '__iter__'), not hasattr(tools.fz, '__await__'),
    dunder(), 'not configured' in repr(tools.fz), hasattr(fx, 'ecoh'),
]
{'out': out, 'reads': reads}
"#;

/// An unknown tool or server is one error in both languages, however it is reached (a typed
/// proxy by name or key, a server not started yet, a server that is not configured, the
/// qualified name, server and tool apart, awaitable forms), in the first execution or a later
/// one, in a session or not: a ToolError from the host, naming the tool asked for and the
/// nearest names. Reading an unknown name never throws (`typeof`, `await`, `String`,
/// `hasattr`); a dunder is an AttributeError in Python as usual.
#[tokio::test]
async fn an_unknown_tool_is_one_tool_error_however_and_whenever_it_is_reached() {
    let mut seen: Vec<(String, Value)> = Vec::new();
    // First executions: TypeScript on one server, Python on another, neither upstream
    // started yet; then later ones, and in a session.
    for first in [Lang::Ts, Lang::Py] {
        let h = harness().await;
        let servers = h.call("list_servers", json!({})).await;
        let status = servers.structured_content.unwrap();
        let fx_connected = status["servers"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["name"] == "fx" && s["status"] == "connected");
        assert!(
            !fx_connected,
            "fx started before the first execution: {status}"
        );
        let other = match first {
            Lang::Ts => Lang::Py,
            Lang::Py => Lang::Ts,
        };
        let mut session = None;
        for (label, lang, in_session) in [
            ("first", first, false),
            ("later", first, false),
            ("later", other, false),
            ("session", first, true),
            ("session again", first, true),
        ] {
            let mut args = json!({"code": lang.pick(UNKNOWN_TS, UNKNOWN_PY)});
            if in_session {
                args["session"] = session.clone().unwrap_or_else(|| json!("new"));
            }
            let (v, is_error) = h.run_tool(lang.tool(), args).await;
            assert!(!is_error, "{label} [{lang:?}]: {v}");
            if in_session {
                session = Some(v["session"]["id"].clone());
            }
            seen.push((
                format!("{label} [{lang:?}], {first:?} first"),
                v["result"].clone(),
            ));
        }
    }
    let (_, reference) = &seen[0];
    eprintln!("unknown names: {reference}");
    let out = reference["out"].as_array().unwrap();
    assert_eq!(out.len(), 10, "{reference}");
    for row in out {
        let (how, name, tool_error, message) =
            (&row[0], &row[1], &row[2], row[3].as_str().unwrap_or(""));
        assert_eq!(name, "ToolError", "{how}: {row}");
        assert_eq!(tool_error, true, "{how}: {row}");
        assert!(
            message.starts_with("unknown tool mcp__"),
            "{how}: {message}"
        );
    }
    let message = |i: usize| out[i][3].as_str().unwrap();
    assert!(
        message(0).starts_with(
            "unknown tool mcp__fx__ecoh: no tool of server \"fx\" named \"ecoh\"; nearest: echo, "
        ) && message(0)
            .ends_with("; searchTools(query) / search_tools(query) finds tools by what they do"),
        "{}",
        message(0)
    );
    assert!(message(1).starts_with(
        "unknown tool mcp__fx__nope-tool: no tool of server \"fx\" named \"nope-tool\"; nearest: "
    ));
    assert!(message(2).starts_with("unknown tool mcp__other-server__whoamii: no tool of server \"other-server\" named \"whoamii\"; nearest: whoami"), "{}", message(2));
    let unknown_server = "unknown tool mcp__fz__echo: no MCP server named \"fz\"; nearest: fx, other-server; listServers() / list_servers() lists them";
    for i in [3, 5, 7] {
        assert_eq!(message(i), unknown_server, "{}", out[i][0]);
    }
    for i in [4, 6, 8, 9] {
        assert_eq!(message(i), message(0), "{}", out[i][0]);
    }
    assert_eq!(
        reference["reads"],
        json!([
            "function", "object", "function", false, false, false, true, true, true, true, true
        ])
    );
    // Every run, both languages: the very same.
    for (label, v) in &seen {
        assert_eq!(v, reference, "{label} differs from {}", seen[0].0);
    }
}

#[tokio::test]
async fn python_threads_and_asyncio_call_tools_at_once() {
    // Plain calls from several threads, alone and while asyncio calls are in flight: whichever
    // thread reads the pipe must hand every reply to its caller.
    let h = harness().await;
    let (v, is_error) = h
        .exec_python(
            r#"
import asyncio, threading
out = []
def worker(i):
    for j in range(5):
        out.append(tools.fx.echo(message=f"{i}-{j}"))
threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
for t in threads: t.start()
for t in threads: t.join()
late = threading.Thread(target=worker, args=(9,))
late.start()
gathered = await asyncio.gather(*[acall_mcp_tool('fx', 'echo', {'message': str(k)}) for k in range(10)])
late.join()
[sorted(out) == sorted(f"Echo: {i}-{j}" for i in [0, 1, 2, 3, 9] for j in range(5)), gathered == [f"Echo: {k}" for k in range(10)]]
"#,
        )
        .await;
    assert!(!is_error, "{v}");
    assert_eq!(v["result"], json!([true, true]), "{v}");
    assert_eq!(v["toolCalls"], 35, "{v}");
}

#[tokio::test]
async fn python_values_that_json_cannot_hold_are_documented_forms() {
    let h = harness().await;
    let (v, is_error) = h
        .exec_python(
            r#"
import datetime, decimal, enum, dataclasses, collections
class Color(enum.Enum):
    RED = 'red'
@dataclasses.dataclass
class P:
    x: int
Point = collections.namedtuple('Point', 'x y')
loop = []
loop.append(loop)
{
    'tuple': (1, 2), 'set': {3, 1, 2}, 'bytes': b'hi', 'big': 2**70, 'nan': float('nan'),
    'inf': float('-inf'), 'date': datetime.date(2024, 1, 2), 'dec': decimal.Decimal('1.10'),
    'enum': Color.RED, 'dc': P(1), 'nt': Point(1, 2), 'keys': {1: 'a', None: 'b'},
    'loop': loop, 'func': len, 'exc': ValueError('v'),
}
"#,
        )
        .await;
    assert!(!is_error, "{v}");
    assert_eq!(
        v["result"],
        json!({
            "tuple": [1, 2], "set": [1, 2, 3], "bytes": "aGk=", "big": "1180591620717411303424",
            "nan": "nan", "inf": "-inf", "date": "2024-01-02", "dec": "1.10", "enum": "red",
            "dc": {"x": 1}, "nt": {"x": 1, "y": 2}, "keys": {"1": "a", "null": "b"},
            "loop": ["[Circular]"], "func": "<built-in function len>",
            "exc": {"name": "ValueError", "message": "v"},
        })
    );
}

#[tokio::test]
async fn python_stray_writes_to_the_protocol_descriptors_do_not_corrupt_frames() {
    let h = harness().await;
    let (v, is_error) = h
        .exec_python(
            "import os\nos.write(1, b'\\x00\\x00\\x00\\x05garbage')\nos.write(2, b'to stderr\\n')\n'intact'",
        )
        .await;
    assert!(!is_error, "{v}");
    assert_eq!(v["result"], "intact");
}

#[tokio::test]
async fn python_sys_exit_and_blocking_calls_inside_threads() {
    let h = harness().await;
    let (v, is_error) = h
        .exec_python(
            r#"
import concurrent.futures
with concurrent.futures.ThreadPoolExecutor(4) as ex:
    r = list(ex.map(lambda i: tools.fx.rendezvous(key='threads', n=4), range(4)))
r
"#,
        )
        .await;
    assert!(!is_error, "{v}");
    assert_eq!(v["result"], json!(["met", "met", "met", "met"]));
    let (v, is_error) = h.exec_python("import sys\nsys.exit(3)").await;
    assert!(is_error);
    assert_eq!(v["error"]["name"], "SystemExit");
    let (v, is_error) = h.exec_python("import sys\nprint('bye')\nsys.exit()").await;
    assert!(!is_error, "{v}");
    assert_eq!(v["logs"], json!([{"level": "log", "text": "bye"}]));
}

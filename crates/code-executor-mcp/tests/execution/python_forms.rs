//! Python's two forms of every sandbox function, through the built server and real sandboxed
//! workers: blocking (`x = call_mcp_tool(...)`) and awaited (`await call_mcp_tool(...)`), in
//! plain code, inside `async def main(): ...; asyncio.run(main())`, with top-level `await`,
//! and gathered (`asyncio.gather`, tasks), where the calls must be in flight together; errors of
//! awaited calls; deadlines that pass while awaiting; model calls with the documented options;
//! and the attacks on the event loop (coroutines never awaited, loops and threads left running,
//! nested `asyncio.run`). See docs/python.md, "Blocking or awaited".

use std::path::PathBuf;

use serde_json::{Value, json};
use test_support::{Harness, TempDir, fixture_entry};

use crate::common::EXE;

async fn harness() -> Harness {
    Harness::start(
        EXE.as_ref(),
        json!({ "fx": fixture_entry("fx"), "other-server": fixture_entry("other") }),
        &["--pool-size", "1", "--python-pool-size", "1"],
        &[],
    )
    .await
}

/// Runs Python `code` with extra execution arguments; the answer must not be an error.
async fn ok(h: &Harness, code: &str, args: Value) -> Value {
    let mut args = args;
    args["code"] = json!(code);
    let (v, is_error) = h.exec_python_with(args).await;
    assert!(!is_error, "{code}\n=> {v}");
    v
}

/// What the same calls give, whatever their form: the probe sees each value as plain code would.
const PROBE: &str = r#"
import asyncio, json
def probe(r, e, p, tl, found, s1, s2, servers):
    return [type(r) is dict, isinstance(r, dict), json.dumps(r, sort_keys=True), r['k'][1], str(r),
            e, p, isinstance(tl, list), len(tl) == len(tl['tools']) > 1,
            tl[0]['name'] == [t for t in tl][0]['name'] == tl['tools'][0]['name'],
            sorted(k for k in ('name', 'server', 'tool', 'description', 'inputSchema') if k in tl[-1]),
            found['tools'][0]['name'], s1['inputSchema'] == s2['inputSchema'], s2['name'],
            [s['name'] for s in servers['servers']]]
"#;

/// The calls of [`PROBE`], each between `a` and `z` (`""` blocking, `"await "` awaited,
/// `"asyncio.run("` and `")"` as the documents' cut-down examples write it).
fn probe_calls(a: &str, z: &str) -> String {
    format!(
        "probe({a}call_mcp_tool('fx', 'reflect', {{'value': {{'k': [1, 2]}}}}){z}, \
         {a}call_mcp_tool('mcp__fx__echo', {{'message': 'hi'}}){z}, {a}tools.fx.echo(message='proxy'){z}, \
         {a}discover_mcp_tools(){z}, {a}search_tools('echo message', server='fx', detail='names'){z}, \
         {a}get_tool_schema('mcp__fx__add'){z}, {a}get_tool_schema('fx', 'add'){z}, {a}list_servers(){z})"
    )
}

/// Every function the documents use, blocking in plain code, awaited inside
/// `asyncio.run(main())`, awaited at top level, and each call given to `asyncio.run` in plain
/// code: the same values, plain ones.
#[tokio::test]
async fn every_function_blocking_and_awaited_gives_the_same_plain_values() {
    let h = harness().await;
    let blocking = format!("{PROBE}\n{}", probe_calls("", ""));
    let in_main = format!(
        "{PROBE}\nasync def main():\n    return {}\nasyncio.run(main())",
        probe_calls("await ", "")
    );
    let top_level = format!("{PROBE}\nx = {}\nx", probe_calls("await ", ""));
    let each_run = format!("{PROBE}\n{}", probe_calls("asyncio.run(", ")"));
    let want = json!([
        true,
        true,
        r#"{"k": [1, 2]}"#,
        2,
        "{'k': [1, 2]}",
        "Echo: hi",
        "Echo: proxy",
        true,
        true,
        true,
        ["description", "inputSchema", "name", "server", "tool"],
        "mcp__fx__echo",
        true,
        "mcp__fx__add",
        ["fx", "other-server"]
    ]);
    for code in [&blocking, &in_main, &top_level, &each_run] {
        let v = ok(&h, code, json!({})).await;
        assert_eq!(v["result"], want, "{code}\n=> {v}");
    }
}

/// The documents' sampling example's shape: a blocking call, then `await` at top level in the
/// same code. A value kept from a call in async code is the value (json, isinstance, methods)
/// and can be awaited later; calls passed on unawaited act as their values when used as such.
#[tokio::test]
async fn blocking_calls_inside_async_code_are_values_and_awaitable() {
    let h = harness().await;
    let code = r#"
import json, asyncio
r = call_mcp_tool('fx', 'reflect', {'value': {'k': [1, 2]}})
e = call_mcp_tool('fx', 'echo', {'message': 'x'})
awaited = await call_mcp_tool('fx', 'echo', {'message': 'y'})
later = await r
items = [call_mcp_tool('fx', 'echo', {'message': str(i)}) for i in range(2)]
d = {}
d['k'] = call_mcp_tool('fx', 'reflect', {'value': [3]})
async def helper():
    t = call_mcp_tool('fx', 'echo', {'message': 'kept'})
    return [t.upper(), await t]
[isinstance(r, dict), json.dumps(r, sort_keys=True), r['k'], e.upper(), e + '!', awaited,
 later == r, json.dumps(items), [i.upper() for i in items], len(items[0]), f'{items[1]}',
 d['k'][0], json.dumps(d), await helper(), isinstance(items[0], str), asyncio.iscoroutine(items[1])]
"#;
    let v = ok(&h, code, json!({})).await;
    assert_eq!(
        v["result"],
        json!([
            true,
            r#"{"k": [1, 2]}"#,
            [1, 2],
            "ECHO: X",
            "Echo: x!",
            "Echo: y",
            true,
            r#"["Echo: 0", "Echo: 1"]"#,
            ["ECHO: 0", "ECHO: 1"],
            7,
            "Echo: 1",
            3,
            r#"{"k": [3]}"#,
            ["ECHO: KEPT", "Echo: kept"],
            true,
            true
        ]),
        "{v}"
    );
}

/// Calls gathered, made tasks, or awaited in gathered coroutines are in flight together on the
/// host: the rendezvous tool answers only once all calls with its key are in flight (and fails
/// after 5 s otherwise), so calls made one after another would fail here.
#[tokio::test]
async fn gathered_calls_are_in_flight_together() {
    let h = harness().await;
    let code = r#"
import asyncio
async def main():
    a = await asyncio.gather(*[call_mcp_tool('fx', 'rendezvous', {'key': 'list', 'n': 3}) for _ in range(3)])
    b = await asyncio.gather(call_mcp_tool('mcp__fx__rendezvous', {'key': 'args', 'n': 2}), tools.fx.rendezvous(key='args', n=2))
    tasks = [asyncio.create_task(call_mcp_tool('fx', 'rendezvous', {'key': 'tasks', 'n': 2})) for _ in range(2)]
    c = [await t for t in tasks]
    async def one():
        return await call_mcp_tool('fx', 'rendezvous', {'key': 'coros', 'n': 2})
    d = await asyncio.gather(one(), one())
    e = await asyncio.wait_for(asyncio.gather(call_mcp_tool('fx', 'rendezvous', {'key': 'wait_for', 'n': 2}), call_mcp_tool('fx', 'rendezvous', {'key': 'wait_for', 'n': 2})), 10)
    f = await asyncio.gather(discover_mcp_tools(), search_tools('echo'), list_servers(), get_tool_schema('fx', 'echo'))
    return [a, b, c, d, e, [type(x).__name__ for x in f]]
asyncio.run(main())
"#;
    let v = ok(&h, code, json!({})).await;
    assert_eq!(
        v["result"],
        json!([
            ["met", "met", "met"],
            ["met", "met"],
            ["met", "met"],
            ["met", "met"],
            ["met", "met"],
            ["ToolList", "dict", "dict", "dict"]
        ]),
        "{v}"
    );
    // At top level too.
    let v = ok(
        &h,
        "import asyncio\nawait asyncio.gather(*[call_mcp_tool('fx', 'rendezvous', {'key': 'top', 'n': 4}) for _ in range(4)])",
        json!({}),
    )
    .await;
    assert_eq!(v["result"], json!(["met", "met", "met", "met"]), "{v}");
    assert_eq!(v["toolCalls"], json!(4), "{v}");
}

/// A failed call raises where it is awaited, as its own class: ToolError, PolicyError (outside
/// allowedTools), LimitError (past maxToolCalls), in async code, alone or gathered.
#[tokio::test]
async fn errors_of_awaited_calls_are_caught_in_async_code() {
    let h = harness().await;
    let code = r#"
import asyncio
async def main():
    out = []
    try:
        await call_mcp_tool('fx', 'fail', {'message': 'disk on fire'})
    except ToolError as e:
        out.append([type(e).__name__, str(e)])
    try:
        await call_mcp_tool('fx', 'add', {'a': 1, 'b': 2})
    except PolicyError as e:
        out.append([type(e).__name__, isinstance(e, ToolError)])
    r = await asyncio.gather(call_mcp_tool('fx', 'fail', {'message': 'g'}), call_mcp_tool('fx', 'echo', {'message': 'ok'}), return_exceptions=True)
    out.append([type(x).__name__ for x in r])
    try:
        await asyncio.gather(*[call_mcp_tool('fx', 'echo', {'message': str(i)}) for i in range(3)])
    except LimitError as e:
        out.append(['LimitError', isinstance(e, ToolError)])
    return out
asyncio.run(main())
"#;
    let v = ok(
        &h,
        code,
        json!({"allowedTools": ["mcp__fx__fail", "mcp__fx__echo"], "limits": {"maxToolCalls": 4}}),
    )
    .await;
    assert_eq!(
        v["result"],
        json!([
            ["ToolError", "disk on fire"],
            ["PolicyError", true],
            ["ToolError", "str"],
            ["LimitError", true]
        ]),
        "{v}"
    );
}

/// The deadline ends a run that awaits a slow call or a long sleep, and the server answers the
/// next run.
#[tokio::test]
async fn the_deadline_passes_while_awaiting() {
    let h = harness().await;
    for code in [
        "import asyncio\nasync def main():\n    return await call_mcp_tool('fx', 'sleep', {'ms': 60000})\nasyncio.run(main())",
        "import asyncio\nawait asyncio.gather(asyncio.sleep(60), call_mcp_tool('fx', 'sleep', {'ms': 60000}))",
        "await discover_mcp_tools()\nimport asyncio\nawait asyncio.sleep(60)",
    ] {
        let started = std::time::Instant::now();
        let (v, is_error) = h
            .exec_python_with(json!({"code": code, "timeoutMs": 1500}))
            .await;
        assert!(is_error, "{code}\n=> {v}");
        assert_eq!(v["error"]["name"], "TimeoutError", "{code}\n=> {v}");
        assert!(started.elapsed().as_secs() < 30, "{code}");
    }
    let v = ok(
        &h,
        "import asyncio\nawait asyncio.sleep(0.01)\n(await call_mcp_tool('fx', 'echo', {'message': 'after'}))",
        json!({}),
    )
    .await;
    assert_eq!(v["result"], "Echo: after", "{v}");
}

/// Attacks on the event loop: calls and coroutines never awaited (no warning per call, no
/// hang), an event loop left running in a thread and tasks left pending (the run still ends),
/// a thread started from async code (still confined: no host file, no network; its calls go
/// through the host), and `asyncio.run` inside a running loop (a clear error that says what
/// to write).
#[tokio::test]
async fn event_loop_attacks_end_cleanly_and_stay_confined() {
    let h = harness().await;
    // Never awaited: 40 calls passed on and dropped, 40 coroutines never started.
    let v = ok(
        &h,
        "import asyncio\nasync def main():\n    ps = [call_mcp_tool('fx', 'echo', {'message': str(i)}) for i in range(40)]\n    cs = [acall_mcp_tool('fx', 'echo', {'message': str(i)}) for i in range(40)]\n    del ps, cs\n    return 'left'\nasyncio.run(main())",
        json!({}),
    )
    .await;
    assert_eq!(v["result"], "left", "{v}");
    let logs = v["logs"].as_array().cloned().unwrap_or_default();
    assert!(logs.len() <= 1, "one warning at most: {v}");
    // A loop left running in a thread, a task left pending, a second loop never closed.
    let v = ok(
        &h,
        "import asyncio, threading\nloop = asyncio.new_event_loop()\nthreading.Thread(target=loop.run_forever, daemon=True).start()\nother = asyncio.new_event_loop()\nasync def forever():\n    await asyncio.sleep(3600)\npending = asyncio.create_task(forever())\nawait asyncio.sleep(0)\nf = asyncio.run_coroutine_threadsafe(call_mcp_tool('fx', 'echo', {'message': 'other loop'}), loop)\nawait asyncio.wrap_future(f)",
        json!({"timeoutMs": 20000}),
    )
    .await;
    assert_eq!(v["result"], "Echo: other loop", "{v}");
    // The same in a session, whose worker would live on: a loop left running in a thread
    // stops the worker with its run (nothing of it may act in the next run), and the next run
    // starts afresh, saying why.
    let v = ok(
        &h,
        r#"
import asyncio, threading
loop = asyncio.new_event_loop()
threading.Thread(target=loop.run_forever, daemon=True).start()
async def main():
    global left
    left = [call_mcp_tool('fx', 'sleep', {'ms': 300}) for _ in range(3)]
    await asyncio.gather(*left)
    return 'first'
asyncio.run(main())
"#,
        json!({"session": "new"}),
    )
    .await;
    assert_eq!(v["result"], "first", "{v}");
    let id = v["session"]["id"].as_str().unwrap().to_string();
    let v = ok(
        &h,
        r#"
import asyncio
r = await asyncio.gather(*[call_mcp_tool('fx', 'echo', {'message': str(i)}) for i in range(3)])
[r, call_mcp_tool('fx', 'echo', {'message': 'plain'}), 'loop' in globals()]
"#,
        json!({"session": id}),
    )
    .await;
    assert_eq!(
        v["result"],
        json!([["Echo: 0", "Echo: 1", "Echo: 2"], "Echo: plain", false]),
        "{v}"
    );
    let lost = v["session"]["stateLost"].as_str().unwrap_or_default();
    assert!(lost.contains("left 1 thread running"), "{v}");
    // Calls left in flight when a session's run ends: the host stops its worker (as for
    // TypeScript's promises never awaited), and the next run says so.
    ok(
        &h,
        r#"
import asyncio
async def main():
    dropped = [call_mcp_tool('fx', 'sleep', {'ms': 2000}) for _ in range(2)]
    return 'dropped'
asyncio.run(main())
"#,
        json!({"session": id}),
    )
    .await;
    let v = ok(&h, "'next'", json!({"session": id})).await;
    assert_eq!(v["result"], "next", "{v}");
    assert!(
        v["session"]["stateLost"]
            .as_str()
            .unwrap_or_default()
            .contains("tool calls still unanswered"),
        "{v}"
    );
    // A thread from async code: confined like the rest of the worker.
    let secret_dir = TempDir::new("pyforms-secret");
    let secret: PathBuf = secret_dir.0.join("secret.txt");
    std::fs::write(&secret, "host secret").unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let code = format!(
        r#"
import asyncio, socket
def read():
    try:
        return open({path:?}).read()
    except OSError as e:
        return type(e).__name__
def connect():
    try:
        socket.create_connection(('127.0.0.1', {port}), timeout=2)
        return 'connected'
    except OSError as e:
        return type(e).__name__
async def main():
    return await asyncio.gather(asyncio.to_thread(read), asyncio.to_thread(connect),
                                asyncio.to_thread(call_mcp_tool, 'fx', 'echo', {{'message': 'thread'}}))
asyncio.run(main())
"#,
        path = secret.to_str().unwrap()
    );
    let v = ok(&h, &code, json!({})).await;
    let got = v["result"].as_array().unwrap();
    assert!(
        ["FileNotFoundError", "PermissionError"].contains(&got[0].as_str().unwrap()),
        "a thread read a host file: {v}"
    );
    assert!(
        got[1].as_str().unwrap().ends_with("Error"),
        "a thread reached the network: {v}"
    );
    assert_eq!(got[2], "Echo: thread", "{v}");
    drop(listener);
    // asyncio.run inside a running loop: Python's RuntimeError, saying what to write.
    for code in [
        "import asyncio\nasync def main():\n    return 1\nawait asyncio.sleep(0)\nasyncio.run(main())",
        "import asyncio\nasync def inner():\n    return 1\nasync def main():\n    return asyncio.run(inner())\nasyncio.run(main())",
    ] {
        let (v, is_error) = h.exec_python(code).await;
        assert!(is_error, "{v}");
        assert_eq!(v["error"]["name"], "RuntimeError", "{v}");
        let message = v["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("cannot be called from a running event loop")
                && message.contains("`await main()`"),
            "{v}"
        );
    }
    let v = ok(
        &h,
        "call_mcp_tool('fx', 'echo', {'message': 'still here'})",
        json!({}),
    )
    .await;
    assert_eq!(v["result"], "Echo: still here", "{v}");
}

/// Unknown keyword options are a TypeError naming the accepted ones, in both forms.
#[tokio::test]
async fn unknown_options_name_the_accepted_ones() {
    let h = harness().await;
    let code = r#"
out = []
for f in (lambda: search_tools('x', detial='names'), lambda: get_tool_schema('mcp__fx__echo', verbose=True),
          lambda: discover_mcp_tools(limit=3), lambda: list_servers(all=True),
          lambda: llm.ask('x', temperature=1), lambda: llm.think([], sytem_prompt='x'),
          lambda: llm.think([{'role': 'user', 'content': 'x', 'name': 'bob'}]),
          lambda: llm.think([{'role': 1, 'content': 'x'}])):
    try:
        f()
        out.append('no error')
    except TypeError as e:
        out.append(str(e))
async def awaited():
    try:
        await search_tools('x', detial='names')
    except TypeError as e:
        return str(e)
out.append(await awaited())
out
"#;
    let v = ok(&h, code, json!({})).await;
    assert_eq!(
        v["result"],
        json!([
            "search_tools() got unexpected keyword argument 'detial'; it accepts query, detail, server, limit, cursor",
            "get_tool_schema() got unexpected keyword argument 'verbose'; it accepts name ('mcp__server__tool'), or server and tool",
            "discover_mcp_tools() got unexpected keyword argument 'limit'; it accepts no arguments",
            "list_servers() got unexpected keyword argument 'all'; it accepts no arguments",
            "llm.ask() got unexpected keyword argument 'temperature'; it accepts system_prompt (or system, systemPrompt), max_tokens (or maxTokens), model",
            "llm.think() got unexpected keyword argument 'sytem_prompt'; it accepts system_prompt (or system, systemPrompt), max_tokens (or maxTokens), model",
            "llm.think: messages[0] got unexpected key 'name'; it accepts 'role', 'content'",
            "llm.think: messages[0]['role'] must be 'user' or 'assistant', got 1",
            "search_tools() got unexpected keyword argument 'detial'; it accepts query, detail, server, limit, cursor"
        ]),
        "{v}"
    );
}

/// `llm.ask(prompt, system_prompt=, max_tokens=)` and `llm.think(messages, model=, max_tokens=,
/// system_prompt=)` as the documents give them (positional too), blocking and awaited, our
/// earlier names kept; the documents' sampling example at top level. Answered by a mock
/// provider, which records what reached it.
#[tokio::test]
async fn llm_ask_and_think_take_the_documented_options_in_both_forms() {
    let (url, seen) = crate::llm_provider::mock_provider().await;
    let dir = TempDir::new("pyforms-llm");
    let settings = dir.0.join("settings.json");
    std::fs::write(
        &settings,
        json!({"llm": {"enabled": true, "provider": {"api": "anthropic", "baseUrl": url, "model": "m0", "apiKeyEnv": "MOCK_PROVIDER_KEY"}}}).to_string(),
    )
    .unwrap();
    let h = Harness::start(
        EXE.as_ref(),
        json!({ "fx": fixture_entry("fx") }),
        &["--python-pool-size", "1"],
        &[
            ("CODE_EXECUTOR_CONFIG_PATH", settings.to_str().unwrap()),
            ("MOCK_PROVIDER_KEY", "sk-mock-key-0123456789"),
        ],
    )
    .await;
    let code = r#"
import asyncio
data = call_mcp_tool('mcp__fx__reflect', {'value': {'numbers': [1, 2]}})
summary = await llm.ask(f'Summarize this data: {data}')
a = llm.ask('plain', system_prompt='sp', max_tokens=11)
t = await llm.think([{'role': 'user', 'content': 'u1'}, {'role': 'assistant', 'content': 'a1'},
                     {'role': 'user', 'content': 'u2'}], max_tokens=12, system_prompt='sys3')
t2 = llm.think([{'role': 'user', 'content': 'pos'}], '', 13, 'sys4')
old = llm.ask('old', system='s5', maxTokens=14)
ts = await llm.think({'messages': [{'role': 'user', 'content': 'ts'}], 'systemPrompt': 's6', 'maxTokens': 15})
gathered = await asyncio.gather(llm.ask('g1'), llm.think([{'role': 'user', 'content': 'g2'}]))
[summary, a, t, t2, old, ts, gathered]
"#;
    let v = ok(&h, code, json!({})).await;
    assert_eq!(
        v["result"],
        json!([
            "reply to: Summarize this data: {'numbers': [1, 2]}",
            "reply to: plain",
            "reply to: u2",
            "reply to: pos",
            "reply to: old",
            "reply to: ts",
            ["reply to: g1", "reply to: g2"]
        ]),
        "{v}"
    );
    let bodies: Vec<Value> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|s| s.body.clone())
        .collect();
    let by_last = |text: &str| {
        bodies
            .iter()
            .find(|b| b["messages"].as_array().unwrap().last().unwrap()["content"] == text)
            .unwrap_or_else(|| panic!("no request ending with {text}: {bodies:?}"))
            .clone()
    };
    let options = |b: Value| (b["system"].clone(), b["max_tokens"].clone());
    assert_eq!(options(by_last("plain")), (json!("sp"), json!(11)));
    assert_eq!(options(by_last("u2")), (json!("sys3"), json!(12)));
    assert_eq!(by_last("u2")["messages"].as_array().unwrap().len(), 3);
    assert_eq!(options(by_last("pos")), (json!("sys4"), json!(13)));
    assert_eq!(options(by_last("old")), (json!("s5"), json!(14)));
    assert_eq!(options(by_last("ts")), (json!("s6"), json!(15)));
}

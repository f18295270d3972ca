//! Code of one execution never acts in the next one of its session: whatever it left to run
//! later (threads, executors, event loops in threads, child processes, timers, pending
//! promises) either stops with it or stops its worker. Every shape below calls a tool over
//! and over once its execution has ended; the next execution gives it room to act (it waits
//! inside the sandbox) and must count none of those calls. Shapes that finish within their
//! execution keep the session's worker and its variables.

use serde_json::json;
use test_support::Lang;

use super::{new_session, ok_in};
use crate::common::server;

/// A loop that calls a tool until the process dies, as Python source (`ghost()`).
const PY_GHOST: &str = "\
import time
def ghost():
    while True:
        try:
            call_mcp_tool('mcp__fx__echo', {'message': 'ghost'})
        except BaseException:
            pass
        time.sleep(0.005)
";

/// Python code that leaves something of its execution running (each a different way).
const PY_LEFT_RUNNING: &[(&str, &str)] = &[
    (
        "a daemon thread",
        "import threading\nthreading.Thread(target=ghost, daemon=True).start()",
    ),
    (
        "a thread that is not a daemon",
        "import threading\nthreading.Thread(target=ghost).start()",
    ),
    (
        "a thread of the _thread module",
        "import _thread\n_thread.start_new_thread(ghost, ())",
    ),
    (
        "an executor never shut down",
        "import concurrent.futures\nex = concurrent.futures.ThreadPoolExecutor(2)\nex.submit(ghost)",
    ),
    (
        "an idle executor never shut down",
        "import concurrent.futures\nex = concurrent.futures.ThreadPoolExecutor(1)\nex.submit(int).result()",
    ),
    (
        "a task on a thread's own event loop",
        "import asyncio, threading\n\
         async def aghost():\n    while True:\n        try:\n            await acall_mcp_tool('mcp__fx__echo', {'message': 'ghost'})\n        except BaseException:\n            pass\n        await asyncio.sleep(0.005)\n\
         loop = asyncio.new_event_loop()\nloop.create_task(aghost())\n\
         threading.Thread(target=loop.run_forever, daemon=True).start()",
    ),
    (
        "a default executor's thread still busy",
        "import asyncio\ntry:\n    await asyncio.wait_for(asyncio.to_thread(ghost), 0.01)\nexcept asyncio.TimeoutError:\n    pass",
    ),
    (
        "a forked child process",
        "import os\nif os.fork() == 0:\n    try:\n        ghost()\n    finally:\n        os._exit(0)",
    ),
    (
        "a POSIX timer signalling a handler (timer_create through ctypes)",
        r#"import ctypes, signal
signal.signal(signal.SIGUSR1, lambda *a: call_mcp_tool('mcp__fx__echo', {'message': 'ghost'}))
libc = ctypes.CDLL(None, use_errno=True)
class SigEvent(ctypes.Structure):
    _fields_ = [('value', ctypes.c_void_p), ('signo', ctypes.c_int), ('notify', ctypes.c_int), ('pad', ctypes.c_byte * 48)]
class TimeSpec(ctypes.Structure):
    _fields_ = [('sec', ctypes.c_long), ('nsec', ctypes.c_long)]
class ITimerSpec(ctypes.Structure):
    _fields_ = [('interval', TimeSpec), ('value', TimeSpec)]
ev = SigEvent(None, signal.SIGUSR1, 0)
tid = ctypes.c_void_p()
assert libc.timer_create(1, ctypes.byref(ev), ctypes.byref(tid)) == 0, ctypes.get_errno()
spec = ITimerSpec(TimeSpec(0, 20_000_000), TimeSpec(0, 50_000_000))
assert libc.timer_settime(tid, 0, ctypes.byref(spec), None) == 0, ctypes.get_errno()"#,
    ),
    (
        "a child process that outlives its parent",
        "import os\nif os.fork() == 0:\n    if os.fork() == 0:\n        try:\n            ghost()\n        finally:\n            os._exit(0)\n    os._exit(0)\nos.wait()",
    ),
];

/// Python code that starts threads, tasks or processes and ends them before it ends, or
/// leaves what its execution's end cancels.
const PY_FINISHED: &[(&str, &str)] = &[
    (
        "a signal timer (cancelled with its execution)",
        "import signal\nsignal.signal(signal.SIGALRM, lambda *a: call_mcp_tool('mcp__fx__echo', {'message': 'ghost'}))\nsignal.setitimer(signal.ITIMER_REAL, 0.05, 0.01)",
    ),
    (
        "a joined thread",
        "import threading\nt = threading.Thread(target=lambda: call_mcp_tool('mcp__fx__echo', {'message': 'one'}))\nt.start()\nt.join()",
    ),
    (
        "an executor used as a context",
        "import concurrent.futures\nwith concurrent.futures.ThreadPoolExecutor(4) as ex:\n    list(ex.map(lambda m: call_mcp_tool('mcp__fx__echo', {'message': m}), 'abc'))",
    ),
    (
        "awaited calls and asyncio.to_thread",
        "import asyncio\nawait asyncio.gather(acall_mcp_tool('mcp__fx__echo', {'message': 'a'}), asyncio.to_thread(sum, [1, 2]))",
    ),
    (
        "a task left pending on the execution's loop (cancelled with it)",
        "import asyncio\nasync def later():\n    await asyncio.sleep(0.05)\n    call_mcp_tool('mcp__fx__echo', {'message': 'ghost'})\nasyncio.get_running_loop().create_task(later())\nawait asyncio.sleep(0)",
    ),
    (
        "a waited-for child process",
        "import subprocess, sys\nsubprocess.run([sys.executable, '-c', 'pass'], check=True)",
    ),
];

/// TypeScript code that leaves callbacks behind: timers, intervals, promise chains. Each
/// either never runs again (the worker and its variables are kept) or, when it made a call
/// its execution did not wait for, is stopped with its worker (`true`: the variables go).
const TS_LEFT_BEHIND: &[(&str, &str, bool)] = &[
    (
        "a timer",
        "setTimeout(() => callMCPTool('mcp__fx__echo', { message: 'ghost' }), 30);",
        false,
    ),
    (
        "an interval",
        "setInterval(() => callMCPTool('mcp__fx__echo', { message: 'ghost' }).catch(() => {}), 5);",
        false,
    ),
    (
        "an async loop waiting on timers",
        "(async () => { for (;;) { await new Promise(r => setTimeout(r, 5)); \
         await callMCPTool('mcp__fx__echo', { message: 'ghost' }).catch(() => {}); } })();",
        false,
    ),
    (
        "jobs queued while the result is read",
        "const result = { toJSON() { Promise.resolve().then(() => \
         callMCPTool('mcp__fx__echo', { message: 'ghost' })); return 1; } };",
        true,
    ),
    (
        "jobs queued while the error thrown is read",
        "const queue = () => { Promise.resolve().then(() => \
         callMCPTool('mcp__fx__echo', { message: 'ghost' })); return 'boom'; };\n\
         throw { get name() { return queue(); }, get message() { return queue(); }, \
         get stack() { queue(); return undefined; } };",
        true,
    ),
    (
        "a timer set while the error thrown is read",
        "throw { get message() { setTimeout(() => \
         callMCPTool('mcp__fx__echo', { message: 'ghost' }), 0); return 'boom'; } };",
        false,
    ),
];

/// How the next execution gives a ghost room to act: it waits inside the sandbox.
const PY_ROOM: &str = "import time\ntime.sleep(0.3)\n'x' in globals()";
const TS_ROOM: &str = "await new Promise(r => setTimeout(r, 300)); return typeof x";

#[tokio::test]
async fn python_code_left_running_stops_its_sessions_worker_and_acts_in_no_later_execution() {
    let (h, _d) = server(json!({})).await;
    for (what, shape) in PY_LEFT_RUNNING {
        let code = format!("{PY_GHOST}x = 41\n{shape}\n'started'");
        let (id, v) = new_session(&h, Lang::Py, &code).await;
        assert_eq!(v["result"], json!("started"), "{what}: {v}");
        let warning = v["warning"].as_str().unwrap_or_default();
        assert!(
            warning.contains("left") && warning.contains("running") && warning.contains("join"),
            "{what}: the execution says what it left and what to do: {v}"
        );
        let v = ok_in(&h, Lang::Py, &id, PY_ROOM).await;
        assert_eq!(v["toolCalls"], json!(0), "{what}: a ghost acted: {v}");
        assert_eq!(v["result"], json!(false), "{what}: a fresh worker: {v}");
        let lost = v["session"]["stateLost"].as_str().unwrap_or_default();
        assert!(
            lost.contains("left") && lost.contains("running"),
            "{what}: the next execution says why its variables are gone: {v}"
        );
    }
}

/// An audit hook cannot be removed, so one added by code would see the next execution's
/// code before it runs: `sys.addaudithook` is refused loudly, and one added past it through
/// ctypes (`PySys_AddAuditHook`) never joins.
#[tokio::test]
async fn python_code_cannot_add_an_audit_hook_that_would_watch_later_executions() {
    let (h, _d) = server(json!({})).await;
    let code = r#"import sys, ctypes
seen = []
try:
    sys.addaudithook(lambda e, a: seen.append(e))
    out = 'added'
except PermissionError as e:
    out = str(e)
HOOK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_char_p, ctypes.py_object, ctypes.c_void_p)
def spy(event, args, data):
    seen.append(event)
    return 0
keep = HOOK(spy)
ctypes.pythonapi.PySys_AddAuditHook.argtypes = [HOOK, ctypes.c_void_p]
ctypes.pythonapi.PySys_AddAuditHook(keep, None)
compile('1', 'probe', 'eval')
[out, len(seen)]"#;
    let (id, v) = new_session(&h, Lang::Py, code).await;
    let r = &v["result"];
    assert!(
        r[0].as_str()
            .unwrap_or_default()
            .contains("not available in the sandbox"),
        "{v}"
    );
    assert_eq!(r[1], json!(0), "no hook of the code saw anything: {v}");
    let v = ok_in(
        &h,
        Lang::Py,
        &id,
        "password = 'next-secret'
len(seen)",
    )
    .await;
    assert_eq!(v["result"], json!(0), "{v}");
}

#[tokio::test]
async fn python_code_that_ends_what_it_started_keeps_its_sessions_worker() {
    let (h, _d) = server(json!({})).await;
    for (what, shape) in PY_FINISHED {
        let code = format!("x = 41\n{shape}\n'done'");
        let (id, v) = new_session(&h, Lang::Py, &code).await;
        assert!(v.get("warning").is_none(), "{what}: {v}");
        let v = ok_in(&h, Lang::Py, &id, PY_ROOM).await;
        assert_eq!(v["toolCalls"], json!(0), "{what}: {v}");
        assert_eq!(v["result"], json!(true), "{what}: the variables stay: {v}");
        assert!(v["session"].get("stateLost").is_none(), "{what}: {v}");
    }
}

#[tokio::test]
async fn typescript_callbacks_left_behind_never_run_in_a_later_execution() {
    let (h, _d) = server(json!({})).await;
    for (what, shape, stopped) in TS_LEFT_BEHIND {
        let code = format!(
            "globalThis.x = 41;\n{shape}\nreturn typeof result === 'undefined' ? 'started' : result;"
        );
        // Some shapes fail (what they threw is read after the code ended): the session stays.
        let (v, _) = h
            .run_tool(Lang::Ts.tool(), json!({"code": code, "session": "new"}))
            .await;
        let id = v["session"]["id"].as_str().unwrap_or_default().to_string();
        assert!(!id.is_empty(), "{what}: {v}");
        let v = ok_in(&h, Lang::Ts, &id, TS_ROOM).await;
        assert_eq!(
            v["toolCalls"],
            json!(0),
            "{what}: a callback of the last execution acted: {v}"
        );
        // Nothing of the last execution runs; its variables are kept unless it left a call
        // unanswered.
        let kept = lang_kept(*stopped);
        assert_eq!(v["result"], json!(kept), "{what}: {v}");
        assert_eq!(
            v["session"].get("stateLost").is_some(),
            *stopped,
            "{what}: {v}"
        );
    }
}

/// What `typeof x` is in the next execution: the worker was stopped, or kept.
fn lang_kept(stopped: bool) -> &'static str {
    if stopped { "undefined" } else { "number" }
}

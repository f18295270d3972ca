#!/usr/bin/env python3
"""Long runs through the built binary, driven by the official Python MCP SDK client in both
protocol generations (legacy = 2025-11-25 with initialize, auto = 2026-07-28):

- a script that pages through the fixture's 10,000 records (100 calls) run as a task
  (`io.modelcontextprotocol/tasks`, 2026-07-28; task-augmented tools/call, 2025-11-25) and
  polled to completion;
- the same with yieldAfterMs + wait (every client);
- progress notifications seen by the client in order (from progress() in TypeScript and
  Python, and forwarded from an upstream tool);
- cancelled mid-way (wait with cancel, tasks/cancel, notifications/cancelled): the worker is
  gone, the upstream call is cancelled, the audit log has run.cancel and run.end cancelled;
- a task whose result expired;
- limits refused with clear errors.

    long_runs.py --exe target/debug/code-executor-mcp --fixture target/debug/fixture-server

Prints one line per check and a closing 'N passed, M failed' line; exits 1 on any failure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
from typing import Any, Literal

import anyio
import httpx2
import mcp_types
from mcp import Client, StdioServerParameters, types
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

try:
    from mcp import MCPDeprecationWarning

    warnings.filterwarnings("ignore", category=MCPDeprecationWarning)
except ImportError:  # pragma: no cover
    pass

TASKS = "io.modelcontextprotocol/tasks"
META_PROGRESS = "io.github.code-executor-mcp/progress"
META_LOGS = "io.github.code-executor-mcp/logs"

results: list[tuple[str, bool, str]] = []


def check(name: str, ok: bool, detail: str = "") -> None:
    results.append((name, ok, detail))
    print(f"{'PASS' if ok else 'FAIL'}  {name}{'' if ok else '  ' + detail[:600]}", flush=True)


# ----------------------------------------------------------------------------- the scripts
PAGE_TS = """
let cursor, n = 0, calls = 0, sum = 0;
do {
  const page = await tools.fx.records(cursor ? { cursor } : {});
  calls++;
  n += page.records.length;
  for (const r of page.records) sum += r.value;
  cursor = page.nextCursor;
  await progress(n, page.total, `page ${calls}`);
  if (calls % 25 === 0) console.log(`read ${n} records`);
} while (cursor);
return { n, calls, sum };
"""

PAGE_PY = """
cursor, n, calls, total = None, 0, 0, 0
while True:
    page = tools.fx.records(**({"cursor": cursor} if cursor else {}))
    calls += 1
    n += len(page["records"])
    total += sum(r["value"] for r in page["records"])
    progress(n, page["total"], f"page {calls}")
    if calls % 25 == 0:
        print(f"read {n} records")
    cursor = page.get("nextCursor")
    if not cursor:
        break
{"n": n, "calls": calls, "sum": total}
"""

# The same pages, slowed down so that the run is still going when the call returns.
PAGE_SLOW_TS = PAGE_TS.replace("calls++;", "calls++; await tools.fx.sleep({ ms: 20 });")
EXPECTED = {"n": 10000, "calls": 100, "sum": sum(i % 97 for i in range(10000))}


def tool(lang: str) -> str:
    return "execute_python" if lang == "py" else "execute_typescript"


# ---------------------------------------------------------------------- tasks, 2026-07-28
class TaskHandle(mcp_types.Result):
    """A tools/call answered with a task (resultType "task")."""

    result_type: Literal["task"] = "task"
    task_id: str
    status: str
    poll_interval_ms: int | None = None
    status_message: str | None = None


async def raw(session: Any, method: str, params: dict[str, Any], timeout: float = 60) -> dict[str, Any]:
    """A request the SDK has no method for, stamped as its own requests are."""
    data: dict[str, Any] = {"method": method, "params": params}
    opts: dict[str, Any] = {"timeout": timeout}
    session._stamp(data, opts)
    return await session._dispatcher.send_raw_request(method, data.get("params"), opts)


class Tasks(ClientExtension):
    """The client side of the tasks extension: resolves a task handle by polling tasks/get,
    keeping every status it saw."""

    identifier = TASKS

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []
        self.handles: list[TaskHandle] = []
        self.cancel_after_polls: int | None = None

    def claims(self):
        return (ResultClaim(result_type="task", model=TaskHandle, resolve=self.resolve),)

    async def resolve(self, handle: TaskHandle, ctx: ClaimContext) -> types.CallToolResult:
        self.handles.append(handle)
        polls = 0
        while True:
            await anyio.sleep((handle.poll_interval_ms or 500) / 1000 / 5)
            got = await raw(ctx.session, "tasks/get", {"taskId": handle.task_id})
            self.seen.append(got)
            polls += 1
            if self.cancel_after_polls is not None and polls == self.cancel_after_polls:
                await raw(ctx.session, "tasks/cancel", {"taskId": handle.task_id})
            if got["status"] == "completed":
                return types.CallToolResult.model_validate(got["result"])
            if got["status"] in ("failed", "cancelled"):
                return types.CallToolResult(content=[types.TextContent(type="text", text=json.dumps(got))],
                                            is_error=True, structured_content={"task": got})


# ------------------------------------------------------------------------------- servers
class Server:
    """Our binary with the fixture upstream and `settings`, and a temp dir for its state."""

    def __init__(self, exe: str, fixture: str, settings: dict[str, Any], http: bool = False):
        self.http = http
        self.url: str | None = None
        self.proc: subprocess.Popen | None = None
        self.dir = tempfile.mkdtemp(prefix="cem-longruns-")
        self.audit = os.path.join(self.dir, "audit.jsonl")
        settings = {**settings, "audit": {"path": self.audit}}
        with open(os.path.join(self.dir, "settings.json"), "w") as f:
            json.dump(settings, f)
        with open(os.path.join(self.dir, "mcp.json"), "w") as f:
            json.dump({"mcpServers": {"fx": {"command": fixture, "args": ["fx"]}}}, f)
        env = dict(os.environ)
        env["CODE_EXECUTOR_CONFIG_PATH"] = os.path.join(self.dir, "settings.json")
        env["XDG_STATE_HOME"] = os.path.join(self.dir, "state")
        env["CODE_EXECUTOR_CACHE_DIR"] = os.path.join(self.dir, "cache")
        self.params = StdioServerParameters(
            command=exe, args=["--config", os.path.join(self.dir, "mcp.json"), "--no-discover"], env=env
        )

    def client(self, mode: str, tasks: Tasks | None = None) -> Client:
        if self.http:
            transport = streamable_http_client(self.serve_http(), http_client=httpx2.AsyncClient(timeout=120))
        else:
            transport = stdio_client(self.params)
        return Client(transport, mode=mode, read_timeout_seconds=120, extensions=[tasks] if tasks else None)

    def serve_http(self) -> str:
        """Starts `serve --http` on a loopback port once; its /mcp URL."""
        if self.url:
            return self.url
        log_path = os.path.join(self.dir, "server.log")
        self.log = open(log_path, "w+")
        self.proc = subprocess.Popen(
            [self.params.command, *self.params.args, "serve", "--http", "127.0.0.1:0"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.log, env=self.params.env,
        )
        for _ in range(300):
            self.log.seek(0)
            m = re.search(r"serving MCP on (http://\S+)", self.log.read())
            if m:
                self.url = m.group(1)
                return self.url
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        self.log.seek(0)
        raise RuntimeError("serve --http did not start: " + self.log.read()[-2000:])

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def audit_lines(self) -> list[dict[str, Any]]:
        try:
            with open(self.audit) as f:
                return [json.loads(line) for line in f if line.strip()]
        except FileNotFoundError:
            return []


def workers_of(exe: str) -> set[int]:
    """Pids of processes running our binary as a worker or sandbox helper, or CPython with
    our shim: the workers of every server this script started."""
    out = set()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().split(b"\0")
        except OSError:
            continue
        text = b" ".join(cmd)
        if b"__worker" in text or b"__sandbox" in text or b"code_executor_shim" in text:
            out.add(int(pid))
    return out


async def warm_workers(client: Client, exe: str) -> set[int]:
    """The worker processes once every pool the server started is full (health says so)."""
    for _ in range(200):
        h = (await client.call_tool("health", {})).structured_content or {}
        pools = h.get("pools") or []
        if pools and all(p.get("ready") == p.get("target") for p in pools):
            return workers_of(exe)
        await anyio.sleep(0.05)
    raise AssertionError(f"the pools did not fill: {h}")


async def eventually(pred, seconds: float = 10.0) -> bool:
    """Polls `pred` until it holds or `seconds` pass (state another process changes)."""
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        if pred():
            return True
        await anyio.sleep(0.05)
    return pred()


# ------------------------------------------------------------------------------- checks
async def yield_and_wait(server: Server, mode: str) -> None:
    async with server.client(mode) as client:
        for lang, code in (("ts", PAGE_SLOW_TS), ("py", PAGE_PY.replace("calls += 1", "calls += 1\n    tools.fx.sleep(ms=20)"))):
            r = await client.call_tool(tool(lang), {"code": code, "yieldAfterMs": 300, "timeoutMs": 120000})
            first = r.structured_content or {}
            handle = (first.get("running") or {}).get("handle")
            check(f"[{mode}] {lang}: yieldAfterMs returns early with a handle and the output so far",
                  not r.is_error and isinstance(handle, str) and handle.startswith("run-"), json.dumps(first)[:400])
            if not handle:
                continue
            lines = [l["text"] for l in first.get("logs", [])]
            answers = 0
            while True:
                w = await client.call_tool("wait", {"handle": handle, "timeoutMs": 1000})
                answers += 1
                v = w.structured_content or {}
                lines += [l["text"] for l in v.get("logs", [])]
                if "running" not in v:
                    break
                check(f"[{mode}] {lang}: a running answer carries progress", answers > 1 or
                      v["running"].get("progress") is None or v["running"]["progress"]["total"] == 10000, json.dumps(v)[:300])
            check(f"[{mode}] {lang}: wait returns the result once finished (10,000 records, 100 calls)",
                  not w.is_error and v.get("result") == EXPECTED and v.get("toolCalls") == 200, json.dumps(v)[:400])
            check(f"[{mode}] {lang}: every line arrives once, in order, across the answers",
                  lines == [f"read {n} records" for n in range(2500, 10001, 2500)], str(lines))
            again = await client.call_tool("wait", {"handle": handle})
            check(f"[{mode}] {lang}: the kept result can be read again",
                  (again.structured_content or {}).get("result") == EXPECTED, str(again.structured_content)[:300])


async def progress_in_order(server: Server, mode: str) -> None:
    async with server.client(mode) as client:
        for lang in ("ts", "py"):
            seen: list[tuple[float, float | None, str | None]] = []

            async def on_progress(p: float, total: float | None, message: str | None) -> None:
                seen.append((p, total, message))

            code = PAGE_TS if lang == "ts" else PAGE_PY
            r = await client.call_tool(tool(lang), {"code": code}, progress_callback=on_progress)
            values = [p for p, _, _ in seen]
            check(f"[{mode}] {lang}: the paging run finishes with the right totals",
                  not r.is_error and (r.structured_content or {}).get("result") == EXPECTED,
                  str(r.structured_content)[:300])
            check(f"[{mode}] {lang}: progress notifications arrive, in increasing order, rate-limited",
                  1 <= len(values) <= 100 and values == sorted(values) and len(set(values)) == len(values),
                  str(seen[:20]))
            check(f"[{mode}] {lang}: progress carries total and message",
                  all(t == 10000 and m and m.startswith("page ") for _, t, m in seen), str(seen[:5]))

        seen = []

        async def on_upstream(p: float, total: float | None, message: str | None) -> None:
            seen.append((p, total, message))

        r = await client.call_tool("execute_typescript",
                                   {"code": "return await tools.fx.progress_steps({ steps: 5 });"},
                                   progress_callback=on_upstream)
        check(f"[{mode}] the upstream was asked for progress",
              not r.is_error and "token given" in json.dumps(r.structured_content), str(r.structured_content))
        check(f"[{mode}] upstream progress is forwarded under the execution's token, in order",
              len(seen) >= 1 and all((m or "").startswith("fx.progress_steps: step ") for _, _, m in seen)
              and [p for p, _, _ in seen] == sorted({p for p, _, _ in seen}), str(seen))


async def cancel_mid_way(server: Server, mode: str, exe: str) -> None:
    async with server.client(mode) as client:
        # The run takes a pre-started worker: one of `before`. While it runs, pooled workers
        # stay as they are; after the cancel, some process of `before` must be gone.
        before = await warm_workers(client, exe)
        marker = os.path.join(server.dir, f"cancelled-{mode}")
        code = f"console.log('started'); await tools.fx.sleep_marked({{ ms: 60000, marker: {json.dumps(marker)} }}); return 1;"
        r = await client.call_tool("execute_typescript", {"code": code, "yieldAfterMs": 500, "timeoutMs": 120000})
        handle = ((r.structured_content or {}).get("running") or {}).get("handle")
        check(f"[{mode}] a held run yields", bool(handle), str(r.structured_content))
        running = before & workers_of(exe)
        w = await client.call_tool("wait", {"handle": handle, "cancel": True})
        v = w.structured_content or {}
        check(f"[{mode}] wait with cancel stops the run with a CancelledError",
              w.is_error and (v.get("error") or {}).get("name") == "CancelledError", json.dumps(v)[:300])
        check(f"[{mode}] the upstream call was cancelled (the fixture saw notifications/cancelled)",
              await eventually(lambda: os.path.exists(marker)), marker)
        check(f"[{mode}] the run's worker is gone",
              await eventually(lambda: bool(running - workers_of(exe))), f"all of {running} still in {workers_of(exe)}")
        lines = server.audit_lines()
        cancels = [l for l in lines if l.get("event") == "run.cancel" and l.get("by") == "wait"]
        check(f"[{mode}] the audit log says who cancelled it", len(cancels) >= 1, str(lines[-5:]))
        ends = [l for l in lines if l.get("event") == "run.end" and l.get("outcome") == "cancelled"
                and cancels and l.get("execution") == cancels[-1].get("execution")]
        check(f"[{mode}] and the run ended cancelled", len(ends) == 1, str(lines[-5:]))

        # A plain call the client cancels (notifications/cancelled).
        marker2 = marker + "-plain"
        code = f"await tools.fx.sleep_marked({{ ms: 60000, marker: {json.dumps(marker2)} }}); return 1;"
        with anyio.move_on_after(1.5):
            await client.call_tool("execute_typescript", {"code": code, "timeoutMs": 120000})
        check(f"[{mode}] a cancelled plain call cancels its upstream call",
              await eventually(lambda: os.path.exists(marker2)), marker2)
        check(f"[{mode}] and is audited as cancelled by notifications/cancelled",
              await eventually(lambda: any(l.get("event") == "run.cancel" and l.get("by") == "notifications/cancelled"
                                           for l in server.audit_lines())), str(server.audit_lines()[-3:]))


async def tasks_2026(server: Server, exe: str) -> None:
    tasks = Tasks()
    async with server.client("auto", tasks) as client:
        for lang, code in (("ts", PAGE_SLOW_TS), ("py", PAGE_PY.replace("calls += 1", "calls += 1\n    tools.fx.sleep(ms=20)"))):
            tasks.seen.clear()
            tasks.handles.clear()
            r = await client.call_tool(tool(lang), {"code": code, "timeoutMs": 120000})
            check(f"[auto] {lang}: the paging run became a task",
                  len(tasks.handles) == 1 and tasks.handles[0].status == "working", str(tasks.handles))
            check(f"[auto] {lang}: polled to completion with the right result",
                  not r.is_error and (r.structured_content or {}).get("result") == EXPECTED, str(r.structured_content)[:300])
            working = [s for s in tasks.seen if s["status"] == "working"]
            check(f"[auto] {lang}: a working task's status carries its progress and last lines",
                  any("progress " in (s.get("statusMessage") or "") for s in working)
                  and any((s.get("_meta") or {}).get(META_PROGRESS, {}) and (s["_meta"][META_PROGRESS] or {}).get("total") == 10000
                          for s in working)
                  and any((s.get("_meta") or {}).get(META_LOGS, {}).get("last") for s in working),
                  json.dumps(working[-1:])[:500])
            done = tasks.seen[-1]
            check(f"[auto] {lang}: the finished task has ttlMs, pollIntervalMs and timestamps",
                  done["status"] == "completed" and isinstance(done.get("ttlMs"), int)
                  and isinstance(done.get("pollIntervalMs"), int) and done.get("createdAt") and done.get("lastUpdatedAt"),
                  json.dumps(done)[:300])

        # tasks/cancel mid-way.
        tasks.seen.clear()
        tasks.handles.clear()
        tasks.cancel_after_polls = 2
        marker = os.path.join(server.dir, "cancelled-task")
        before = await warm_workers(client, exe)
        r = await client.call_tool("execute_typescript", {
            "code": f"await tools.fx.sleep_marked({{ ms: 60000, marker: {json.dumps(marker)} }}); return 1;",
            "timeoutMs": 120000})
        tasks.cancel_after_polls = None
        check("[auto] tasks/cancel ends the task as cancelled",
              r.is_error and tasks.seen and tasks.seen[-1]["status"] == "cancelled", json.dumps(tasks.seen[-1:])[:300])
        check("[auto] tasks/cancel cancels the upstream call", await eventually(lambda: os.path.exists(marker)), marker)
        check("[auto] tasks/cancel is audited",
              any(l.get("event") == "run.cancel" and l.get("by") == "tasks/cancel" for l in server.audit_lines()))
        check("[auto] the cancelled task's worker is gone",
              await eventually(lambda: bool(before - workers_of(exe))), f"all of {before} still alive")

        unknown = None
        try:
            await raw(client.session, "tasks/get", {"taskId": "run-0000"})
        except Exception as e:  # noqa: BLE001
            unknown = str(e)
        check("[auto] tasks/get of a task never issued is an invalid-params error naming it",
              unknown is not None and "run-0000" in unknown, str(unknown))


async def tasks_2025(server: Server, exe: str) -> None:
    # In this revision a client asks for a task per request (params.task); it declares nothing.
    if True:
        async with server.client("legacy") as client:
            session = client.session
            caps = client.server_capabilities.model_dump(by_alias=True, exclude_none=True)
            check("[legacy] the server declares tasks for tools/call",
                  (caps.get("tasks") or {}).get("requests", {}).get("tools", {}).get("call") == {}, str(caps))
            listed = await raw(session, "tools/list", {})
            support = {t["name"]: (t.get("execution") or {}).get("taskSupport") for t in listed["tools"]}
            check("[legacy] the execute tools say taskSupport optional",
                  support.get("execute_typescript") == "optional" and support.get("execute_python") == "optional"
                  and support.get("health") is None, str(support))
            for lang, code in (("ts", PAGE_SLOW_TS), ("py", PAGE_PY)):
                created = await raw(session, "tools/call", {"name": tool(lang), "arguments": {"code": code, "timeoutMs": 120000},
                                                            "task": {"ttl": 60000}})
                task = created.get("task") or {}
                check(f"[legacy] {lang}: a task-augmented call answers with a task at once",
                      task.get("status") in ("working", "completed") and str(task.get("taskId", "")).startswith("run-")
                      and isinstance(task.get("ttl"), int) and isinstance(task.get("pollInterval"), int), json.dumps(created)[:300])
                if not task:
                    continue
                statuses = []
                while True:
                    got = await raw(session, "tasks/get", {"taskId": task["taskId"]})
                    statuses.append(got["status"])
                    if got["status"] != "working":
                        break
                    await anyio.sleep(0.1)
                check(f"[legacy] {lang}: tasks/get polls it to completed", statuses[-1] == "completed", str(statuses))
                listed = await raw(session, "tasks/list", {})
                check(f"[legacy] {lang}: tasks/list has it",
                      any(t["taskId"] == task["taskId"] for t in listed.get("tasks", [])), json.dumps(listed)[:300])
                res = await raw(session, "tasks/result", {"taskId": task["taskId"]})
                check(f"[legacy] {lang}: tasks/result returns the tool's result, related to the task",
                      (res.get("structuredContent") or {}).get("result") == EXPECTED
                      and res.get("_meta", {}).get("io.modelcontextprotocol/related-task") == {"taskId": task["taskId"]},
                      json.dumps(res)[:300])

            # tasks/result waits for a running task; tasks/cancel stops one.
            created = await raw(session, "tools/call", {"name": "execute_typescript", "arguments": {
                "code": "await tools.fx.sleep({ ms: 300 }); return 'late';"}, "task": {"ttl": 60000}})
            res = await raw(session, "tasks/result", {"taskId": created["task"]["taskId"]})
            check("[legacy] tasks/result waits for the end",
                  (res.get("structuredContent") or {}).get("result") == "late", json.dumps(res)[:300])
            marker = os.path.join(server.dir, "cancelled-legacy-task")
            created = await raw(session, "tools/call", {"name": "execute_typescript", "arguments": {
                "code": f"await tools.fx.sleep_marked({{ ms: 60000, marker: {json.dumps(marker)} }});"}, "task": {"ttl": 60000}})
            await anyio.sleep(0.5)
            cancelled = await raw(session, "tasks/cancel", {"taskId": created["task"]["taskId"]})
            check("[legacy] tasks/cancel answers with the cancelled task", cancelled.get("status") == "cancelled",
                  json.dumps(cancelled)[:300])
            check("[legacy] tasks/cancel cancels the upstream call", await eventually(lambda: os.path.exists(marker)), marker)
            err = None
            try:
                await raw(session, "tasks/cancel", {"taskId": created["task"]["taskId"]})
            except Exception as e:  # noqa: BLE001
                err = str(e)
            check("[legacy] cancelling a finished task is an error", err is not None and "already finished" in err, str(err))
            err = None
            try:
                await raw(session, "tools/call", {"name": "health", "arguments": {}, "task": {"ttl": 1000}})
            except Exception as e:  # noqa: BLE001
                err = str(e)
            check("[legacy] a task for a tool without task support is refused", err is not None
                  and "does not run as a task" in err, str(err))


async def expired_task(exe: str, fixture: str) -> None:
    server = Server(exe, fixture, {"longRuns": {"taskAfterMs": 0, "keepResultMs": 300}})
    tasks = Tasks()
    async with server.client("auto", tasks) as client:
        r = await client.session.call_tool("execute_typescript", {"code": "return 42"}, allow_claimed=True)
        check("[auto] with taskAfterMs 0 even a trivial run is a task", isinstance(r, TaskHandle), str(r))
        if not isinstance(r, TaskHandle):
            return
        got = None
        for _ in range(100):
            got = await raw(client.session, "tasks/get", {"taskId": r.task_id})
            if got["status"] != "working":
                break
            await anyio.sleep(0.02)
        check("[auto] the trivial task completes", got and got["status"] == "completed"
              and got["result"]["structuredContent"]["result"] == 42, json.dumps(got)[:300])
        await anyio.sleep(0.6)
        err = None
        try:
            await raw(client.session, "tasks/get", {"taskId": r.task_id})
        except Exception as e:  # noqa: BLE001
            err = str(e)
        check("[auto] a task whose result expired says so", err is not None and "expired" in err
              and "keepResultMs" in err, str(err))


async def limits(exe: str, fixture: str, mode: str) -> None:
    server = Server(exe, fixture, {"longRuns": {"maxParkedPerClient": 1, "maxDurationMs": 60000}})
    async with server.client(mode) as client:
        hold = "await tools.fx.sleep({ ms: 30000 }); return 1;"
        r = await client.call_tool("execute_typescript", {"code": hold, "yieldAfterMs": 100})
        handle = ((r.structured_content or {}).get("running") or {}).get("handle")
        check(f"[{mode}] a first held run is parked", bool(handle), str(r.structured_content))
        r2 = await client.call_tool("execute_python", {"code": "1", "yieldAfterMs": 100})
        e = (r2.structured_content or {}).get("error") or {}
        check(f"[{mode}] a second long run past maxParkedPerClient is refused, naming the setting",
              r2.is_error and e.get("name") == "LimitError" and "maxParkedPerClient" in e.get("message", ""), str(e))
        r3 = await client.call_tool("execute_typescript", {"code": "1", "yieldAfterMs": 100, "timeoutMs": 90000})
        e = (r3.structured_content or {}).get("error") or {}
        check(f"[{mode}] a long run past maxDurationMs is refused, naming the setting",
              r3.is_error and "longRuns.maxDurationMs" in e.get("message", ""), str(e))
        r4 = await client.call_tool("execute_typescript", {"code": "1", "timeoutMs": 400000})
        e = (r4.structured_content or {}).get("error") or {}
        check(f"[{mode}] a plain run keeps the per-call maximum",
              r4.is_error and "timeoutMs must be between 1 and 300000 (got 400000)" in e.get("message", ""), str(e))
        r5 = await client.call_tool("wait", {"handle": "run-deadbeef"})
        e = (r5.structured_content or {}).get("error") or {}
        check(f"[{mode}] wait on a handle never issued is a HandleError",
              r5.is_error and e.get("name") == "HandleError" and "run-deadbeef" in e.get("message", ""), str(e))
        r6 = await client.call_tool("wait", {"handle": handle, "timeoutMs": 999999})
        e = (r6.structured_content or {}).get("error") or {}
        check(f"[{mode}] wait past its longest timeout is refused", r6.is_error and e.get("name") == "RangeError", str(e))
        await client.call_tool("wait", {"handle": handle, "cancel": True})
        r7 = await client.call_tool("execute_python", {"code": "1", "yieldAfterMs": 100})
        check(f"[{mode}] once the held run ended, the client may park again (its finished result makes room)",
              not r7.is_error, str(r7.structured_content))
        # progress() with values it cannot take: a clear error in both languages.
        r8 = await client.call_tool("execute_typescript", {"code": "try { await progress(NaN) } catch (e) { return e.name + ': ' + e.message }"})
        r9 = await client.call_tool("execute_python", {"code": "try:\n    progress(-1)\nexcept ValueError as e:\n    r = str(e)\nr"})
        check(f"[{mode}] progress() refuses values it cannot send",
              "RangeError: progress: done must be a finite number" in json.dumps(r8.structured_content)
              and "done must be a finite number" in json.dumps(r9.structured_content),
              f"{r8.structured_content} {r9.structured_content}")


async def main_async(args: argparse.Namespace) -> None:
    server = Server(args.exe, args.fixture, {"longRuns": {"progressPerSecond": 20}}, http=args.http)
    if args.http:
        # Over streamable HTTP: the 2025-11-25 task-augmented tools/call and tasks/* (the
        # shim on the transport session).
        try:
            await tasks_2025(server, args.exe)
        except Exception:  # noqa: BLE001
            check("tasks 2025-11-25 over HTTP ran", False, traceback.format_exc()[-3000:])
        finally:
            server.stop()
        return
    if args.only == "tasks_2025":
        await tasks_2025(server, args.exe)
        return
    for mode in ("legacy", "auto"):
        for name, step in (("yield and wait", yield_and_wait(server, mode)),
                           ("progress", progress_in_order(server, mode)),
                           ("cancel", cancel_mid_way(server, mode, args.exe)),
                           ("limits", limits(args.exe, args.fixture, mode))):
            try:
                await step
            except Exception:  # noqa: BLE001
                check(f"[{mode}] {name} ran", False, traceback.format_exc())
    for name, step in (("tasks 2026-07-28", tasks_2026(server, args.exe)),
                       ("tasks 2025-11-25", tasks_2025(server, args.exe)),
                       ("expired task", expired_task(args.exe, args.fixture))):
        try:
            await step
        except Exception:  # noqa: BLE001
            check(f"{name} ran", False, traceback.format_exc())


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--exe", required=True)
    ap.add_argument("--fixture", required=True)
    ap.add_argument("--only", help="run only the named step (debugging)")
    ap.add_argument("--http", action="store_true", help="the task steps over serve --http instead of stdio")
    args = ap.parse_args()
    asyncio.run(main_async(args))
    failed = [r for r in results if not r[1]]
    print(f"{len(results) - len(failed)} passed, {len(failed)} failed", flush=True)
    return 1 if failed or not results else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Three replicas of the server behind HAProxy, driven by the official Python MCP SDK on
protocol 2026-07-28 (stateless HTTP). tests/server/replicas.rs starts the replicas
(`serve --http --replica-id ID`, the fixture upstream) and HAProxy with the shipped
configuration (deploy/haproxy/: it routes on the affinity key, the replica id after '@' in a
handle, from the Mcp-Param-*/Mcp-Name headers or the body; the static list, or the Kubernetes
variant discovering the replicas through DNS), then runs this script:

    replicas.py --proxy http://127.0.0.1:P/mcp --replica r0=http://127.0.0.1:A=PID ... \
                --alice TOKEN --bob TOKEN

Checks: stateless calls spread over all three replicas (their /metrics); an execution session
used across calls; an approval paused (input_required) and resumed; a task polled; a handle
sent straight to the wrong replica gets an error naming its replica; another client's handle
stays unknown; a replica killed mid-run loses only its own executions.

Prints one line per check and a closing 'N passed, M failed' line; exits 1 on any failure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import traceback
import urllib.request
import warnings
from typing import Any, Literal

import anyio
import httpx2
import mcp_types
from mcp import Client, types
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.streamable_http import streamable_http_client

try:
    from mcp import MCPDeprecationWarning

    warnings.filterwarnings("ignore", category=MCPDeprecationWarning)
except ImportError:  # pragma: no cover
    pass

TASKS = "io.modelcontextprotocol/tasks"
MODE = "2026-07-28"
results: list[tuple[str, bool, str]] = []


def check(name: str, ok: bool, detail: str = "") -> None:
    results.append((name, ok, detail))
    print(f"{'PASS' if ok else 'FAIL'}  {name}{'' if ok else '  ' + detail[:600]}", flush=True)


class TaskHandle(mcp_types.Result):
    """A tools/call answered with a task (resultType "task")."""

    result_type: Literal["task"] = "task"
    task_id: str
    status: str
    poll_interval_ms: int | None = None


async def raw(session: Any, method: str, params: dict[str, Any], timeout: float = 60) -> dict[str, Any]:
    """A request the SDK has no method for, stamped as its own requests are."""
    data: dict[str, Any] = {"method": method, "params": params}
    opts: dict[str, Any] = {"timeout": timeout}
    session._stamp(data, opts)
    return await session._dispatcher.send_raw_request(method, data.get("params"), opts)


class Tasks(ClientExtension):
    """The tasks extension's client side: polls tasks/get (through the proxy) until done."""

    identifier = TASKS

    def __init__(self) -> None:
        self.handles: list[str] = []
        self.polls = 0

    def claims(self):
        return (ResultClaim(result_type="task", model=TaskHandle, resolve=self.resolve),)

    async def resolve(self, handle: TaskHandle, ctx: ClaimContext) -> types.CallToolResult:
        self.handles.append(handle.task_id)
        while True:
            await anyio.sleep(0.1)
            got = await raw(ctx.session, "tasks/get", {"taskId": handle.task_id})
            self.polls += 1
            if got["status"] == "completed":
                return types.CallToolResult.model_validate(got["result"])
            if got["status"] in ("failed", "cancelled"):
                return types.CallToolResult(content=[types.TextContent(type="text", text=json.dumps(got))],
                                            is_error=True)


class Person:
    """Approves every approval question, and counts them."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def elicit(self, context, params):  # noqa: ANN001
        self.asked.append(params.message)
        return types.ElicitResult(action="accept", content={"decision": "once"})


async def task_name_header(request: Any) -> None:
    """Mcp-Name for tasks/get, tasks/update and tasks/cancel is their taskId (SEP-2663),
    which the SDK's raw requests do not set; a proxy may route on it."""
    try:
        body = json.loads(request.content or b"{}")
    except ValueError:
        return
    if isinstance(body, dict) and body.get("method") in ("tasks/get", "tasks/update", "tasks/cancel"):
        request.headers["Mcp-Name"] = str((body.get("params") or {}).get("taskId", ""))


def client(url: str, token: str, legacy: bool = False, **kw: Any) -> Client:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=120,
                              event_hooks={"request": [task_name_header]})
    return Client(streamable_http_client(url, http_client=http), mode="legacy" if legacy else MODE,
                  read_timeout_seconds=120, **kw)


# A token of the servers': /metrics requires one on a server that requires one (set in main).
METRICS_TOKEN = ""


def metric(base: str, sample: str) -> float:
    req = urllib.request.Request(f"{base}/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"})
    text = urllib.request.urlopen(req, timeout=10).read().decode()
    for line in text.splitlines():
        if line.startswith(sample + " "):
            return float(line.split()[-1])
    return 0.0


def started(replicas: dict[str, tuple[str, int]]) -> dict[str, float]:
    return {n: metric(base, "code_executor_executions_started_total") for n, (base, _) in replicas.items()}


def owner(handle: str) -> str:
    return handle.rsplit("@", 1)[-1] if "@" in handle else ""


async def execute(c: Client, code: str, tool: str = "execute_typescript", **extra: Any) -> tuple[dict, bool]:
    r = await c.call_tool(tool, {"code": code, **extra})
    return (r.structured_content or {}), bool(r.is_error)


async def run(proxy: str, replicas: dict[str, tuple[str, int]], alice_token: str, bob_token: str) -> None:
    names = sorted(replicas)
    person = Person()
    tasks = Tasks()
    # A client that declares tasks gets them for long calls; its pauses cannot be answered by
    # input_required then (no tools/call is open), so approvals use a client without them.
    async with client(proxy, alice_token, elicitation_callback=person.elicit) as alice, \
            client(proxy, alice_token, extensions=[tasks]) as alice_tasks, \
            client(proxy, bob_token) as bob:
        # 1. Stateless calls spread over every replica: any replica answers any of them.
        before = started(replicas)
        outs = []
        for i in range(9):
            lang = "execute_python" if i % 3 == 2 else "execute_typescript"
            code = f"{i} * 2" if lang == "execute_python" else f"return {i} * 2"
            v, err = await execute(alice, code, tool=lang)
            outs.append((v.get("result"), err))
        after = started(replicas)
        spread = {n: after[n] - before[n] for n in names}
        check("nine stateless executions through the proxy all answered",
              outs == [(i * 2, False) for i in range(9)], repr(outs))
        check("stateless executions spread over all three replicas",
              all(spread[n] >= 1 for n in names) and sum(spread.values()) == 9, repr(spread))

        # 2. An execution session: its handle names its replica; state survives several calls
        #    through the proxy, and a Python session too.
        v, err = await execute(alice, "globalThis.n = 1; return n;", session="new")
        session = (v.get("session") or {}).get("id") or ""
        check("a new session's handle ends in @<replica>",
              not err and owner(session) in names and session.startswith("s_"), json.dumps(v))
        for i in range(2, 5):
            v, err = await execute(alice, "n += 1; return n;", session=session)
            check(f"the session keeps its state through the proxy (call {i})",
                  not err and v.get("result") == i, json.dumps(v))
        v, err = await execute(alice, "x = 41", tool="execute_python", session="new")
        py_session = (v.get("session") or {}).get("id") or ""
        v, err = await execute(alice, "x + 1", tool="execute_python", session=py_session)
        check("a Python session keeps its state through the proxy", not err and v.get("result") == 42, json.dumps(v))

        # 3. An approval pauses the execution (input_required with a requestState naming the
        #    replica); the SDK's retry reaches the same replica and the same worker goes on.
        v, err = await execute(alice, """
            const before = await tools.fx.tick({});
            const w = await tools.fx.write_note({ text: 'through the proxy' });
            const after = await tools.fx.tick({});
            return { before, w, after, same: after === before + 1 };
        """)
        check("a paused approval is resumed through the proxy on its own replica",
              not err and len(person.asked) == 1 and (v.get("result") or {}).get("same") is True
              and (v.get("result") or {}).get("w") == 1, json.dumps(v) + repr(person.asked))

        # 4. A task: the call outlives taskAfterMs, the SDK polls tasks/get through the proxy.
        v, err = await execute(alice_tasks, "await tools.fx.sleep({ ms: 1500 }); return 'task done';")
        check("a task is polled through the proxy until its result",
              not err and v.get("result") == "task done" and len(tasks.handles) == 1
              and owner(tasks.handles[0]) in names and tasks.polls >= 2,
              json.dumps(v) + repr(tasks.handles))

        # 5. Handles sent straight to another replica: an error naming the owner and the key.
        def misrouted() -> float:
            return sum(metric(base, "code_executor_handles_misrouted_total") for base, _ in replicas.values())
        check("the proxy routed every pinned request to its replica (no misrouted handle)",
              misrouted() == 0, repr(misrouted()))
        home = owner(session)
        other = next(n for n in names if n != home)
        async with client(replicas[other][0] + "/mcp", alice_token) as direct:
            v, err = await execute(direct, "return n;", session=session)
            msg = (v.get("error") or {}).get("message", "")
            check("a session handle at the wrong replica is refused naming its replica",
                  err and (v.get("error") or {}).get("name") == "SessionError"
                  and f'replica "{home}"' in msg and f'this is replica "{other}"' in msg
                  and "affinity key" in msg, json.dumps(v))
            state = "0123456789abcdef0123456789abcdef@" + home
            try:
                got = await raw(direct.session, "tools/call", {
                    "name": "execute_typescript", "arguments": {"code": "return 1"},
                    "requestState": state, "inputResponses": {}})
                text = json.dumps(got)
            except Exception as e:  # noqa: BLE001 - the JSON-RPC error is the expected answer
                text = str(e)
            check("a requestState at the wrong replica is refused naming its replica",
                  f'replica "{home}"' in text and f'this is replica "{other}"' in text, text)
            t_home = owner(tasks.handles[0])
            t_other = next(n for n in names if n != t_home)
        async with client(replicas[t_other][0] + "/mcp", alice_token, extensions=[Tasks()]) as direct:
            try:
                got = await raw(direct.session, "tasks/get", {"taskId": tasks.handles[0]})
                check("a task id at the wrong replica is refused naming its replica", False, json.dumps(got))
            except Exception as e:  # noqa: BLE001 - the JSON-RPC error is the expected answer
                text = str(e)
                check("a task id at the wrong replica is refused naming its replica",
                      f'replica "{t_home}"' in text and f'this is replica "{t_other}"' in text, text)

        check("the three refusals are counted in /metrics", misrouted() == 3, repr(misrouted()))

        # 6. Another client cannot use alice's session, even routed to the right replica.
        v, err = await execute(bob, "return n;", session=session)
        check("another client's session handle is unknown, even on its own replica",
              err and "unknown session" in (v.get("error") or {}).get("message", ""), json.dumps(v))

        # 7. A 2025-11-25 client: its transport session (Mcp-Session-Id) sticks to the replica
        #    that opened it, and an execution session works through it.
        async with client(proxy, alice_token, legacy=True) as old:
            v, err = await execute(old, "globalThis.m = 10; return m;", session="new")
            legacy_session = (v.get("session") or {}).get("id") or ""
            vals = []
            for _ in range(3):
                v, err = await execute(old, "m += 1; return m;", session=legacy_session)
                vals.append(None if err else v.get("result"))
            check("a 2025-11-25 client keeps its transport and execution sessions through the proxy",
                  owner(legacy_session) in names and vals == [11, 12, 13], repr((legacy_session, vals)))

        # 8. A replica killed mid-run loses only its own executions. One run parked on each
        #    replica (yieldAfterMs returns a handle at once), one replica killed, then wait.
        handles: dict[str, str] = {}
        for _ in range(12):
            if len(handles) == len(names):
                break
            v, err = await execute(alice, "await tools.fx.sleep({ ms: 2000 }); return 'finished';",
                                   yieldAfterMs=100, timeoutMs=60000)
            h = (v.get("running") or {}).get("handle") or ""
            if owner(h) in names:
                handles.setdefault(owner(h), h)
        check("a long run is parked on every replica", sorted(handles) == names, repr(handles))
        victim = names[1]
        os.kill(replicas[victim][1], signal.SIGKILL)
        for n in names:
            if n not in handles:
                continue
            r = await alice.call_tool("wait", {"handle": handles[n], "timeoutMs": 20000})
            v = r.structured_content or {}
            if n == victim:
                msg = (v.get("error") or {}).get("message", "")
                check("the killed replica's run gets an error naming its replica",
                      bool(r.is_error) and f'replica "{victim}"' in msg and "this is replica" in msg, json.dumps(v))
            else:
                check(f"replica {n}'s run finishes although {victim} died",
                      not r.is_error and v.get("result") == "finished", json.dumps(v))
        v, err = await execute(alice, "return 'still served'")
        check("stateless calls go on with two replicas", not err and v.get("result") == "still served", json.dumps(v))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--proxy", required=True)
    ap.add_argument("--replica", action="append", required=True, help="NAME=BASE_URL=PID")
    ap.add_argument("--alice", required=True)
    ap.add_argument("--bob", required=True)
    a = ap.parse_args()
    global METRICS_TOKEN
    METRICS_TOKEN = a.alice
    replicas = {}
    for r in a.replica:
        name, base, pid = r.split("=", 2)
        replicas[name] = (base, int(pid))
    try:
        asyncio.run(run(a.proxy, replicas, a.alice, a.bob))
    except BaseException:  # noqa: BLE001
        print(traceback.format_exc()[-3000:], flush=True)
        check("the script ran to its end", False, "see the traceback above")
    passed = sum(1 for _, ok, _ in results if ok)
    failed = len(results) - passed
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or not results else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""A client under load while its replicas change behind HAProxy (tests/server/replicas.rs),
driven by the official Python MCP SDK on protocol 2026-07-28:

    rolling.py --proxy http://127.0.0.1:P/mcp --token TOKEN --replicas r0,r1,r2 \
               --phase rolling|kill [--workers 4]

The test drives the replicas; this script is the client. It prints READY once its load runs
(and, in the rolling phase, once it holds a session and a long run on every replica named in
--replicas), then keeps going. A line `PIN ID` on its standard input starts long runs until
one lands on replica ID (the one about to be stopped) and keeps a `wait` open on each; it
answers `PINNED ID HANDLE`. A line DONE stops it: it collects what is pending and prints one
line `COUNTS {json}`:

- stateless: `workers` loops of trivial executions (TypeScript, every fourth one Python),
  each answer checked (`requests`, `failed`, the first errors in `errors`);
- rolling phase, pinned handles: a session per replica used over and over (its counter must
  go up by one each call) until a call is refused with the error naming its replica; a long
  run per replica (returned early, `yieldAfterMs`) whose `wait` is kept open: it finishes or
  is refused the same way. Each ends `finished`, `refused` or `wrong` (any other answer, or
  none within its deadline: a hang).

Exit status 0 unless the script itself broke (the test judges the counts).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
import traceback
import warnings
from typing import Any

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

try:
    from mcp import MCPDeprecationWarning

    warnings.filterwarnings("ignore", category=MCPDeprecationWarning)
except ImportError:  # pragma: no cover
    pass

MODE = "2026-07-28"
# A long run: it is still running when its replica gets SIGTERM (the test asks for one with
# PIN just before), and ends within the replicas' --shutdown-grace.
RUN_MS = 4000
# No answer within this long is a hang.
CALL_DEADLINE_S = 60


# Handles whose `wait` request has gone out (set by the HTTP client's request hook).
WAIT_SENT: dict[str, asyncio.Event] = {}


async def note_wait(request: Any) -> None:
    try:
        body = json.loads(request.content or b"{}")
    except ValueError:
        return
    params = body.get("params") or {} if isinstance(body, dict) else {}
    if body.get("method") == "tools/call" and params.get("name") == "wait":
        event = WAIT_SENT.get((params.get("arguments") or {}).get("handle", ""))
        if event is not None:
            event.set()


def client(url: str, token: str) -> Client:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=120,
                              event_hooks={"request": [note_wait]})
    return Client(streamable_http_client(url, http_client=http), mode=MODE, read_timeout_seconds=120)


def owner(handle: str) -> str:
    return handle.rsplit("@", 1)[-1] if "@" in handle else ""


async def execute(c: Client, code: str, tool: str = "execute_typescript", **extra: Any) -> tuple[dict, bool]:
    r = await asyncio.wait_for(c.call_tool(tool, {"code": code, **extra}), CALL_DEADLINE_S)
    return (r.structured_content or {}), bool(r.is_error)


def refused_naming(v: dict, replica: str) -> bool:
    msg = (v.get("error") or {}).get("message", "")
    return f'belongs to replica "{replica}"' in msg


class Counts:
    def __init__(self) -> None:
        self.requests = 0
        self.failed = 0
        self.errors: list[str] = []
        self.pinned: dict[str, dict[str, Any]] = {}
        # Long runs that did not start (no handle back) while pinning one on a replica.
        self.pin_errors = 0

    def fail(self, what: str) -> None:
        self.failed += 1
        if len(self.errors) < 8:
            self.errors.append(what[:400])


async def stateless(c: Client, counts: Counts, worker: int, stop: anyio.Event) -> None:
    i = 0
    while not stop.is_set():
        i += 1
        n = worker * 100_000 + i
        python = i % 4 == 0
        try:
            if python:
                v, err = await execute(c, f"{n} * 3", tool="execute_python")
            else:
                v, err = await execute(c, f"return {n} * 3")
            counts.requests += 1
            if err or v.get("result") != n * 3:
                counts.fail(json.dumps(v))
        except Exception as e:  # noqa: BLE001 - every failure is counted, with its text
            counts.requests += 1
            counts.fail(f"{type(e).__name__}: {e}")


async def pin_one_per_replica(c: Client, names: list[str], start) -> dict[str, str]:  # noqa: ANN001
    """Starts things until one handle per replica is held (bounded tries)."""
    got: dict[str, str] = {}
    for _ in range(12 * len(names)):
        if len(got) == len(names):
            break
        h = await start()
        if owner(h) in names:
            got.setdefault(owner(h), h)
    return got


async def use_session(c: Client, replica: str, handle: str, record: dict, stop: anyio.Event) -> None:
    """Uses the session until its replica refuses it; its counter must go up by one."""
    expect = 1
    while not stop.is_set():
        expect += 1
        try:
            v, err = await execute(c, "n += 1; return n;", session=handle)
        except Exception as e:  # noqa: BLE001
            record.update(outcome="wrong", detail=f"{type(e).__name__}: {e}"[:400])
            return
        if not err and v.get("result") == expect:
            record["calls"] = expect - 1
            await anyio.sleep(0.2)
            continue
        if err and refused_naming(v, replica):
            record.update(outcome="refused")
        else:
            record.update(outcome="wrong", detail=json.dumps(v)[:400])
        return
    record.setdefault("outcome", "still served")


async def wait_run(c: Client, replica: str, handle: str, record: dict) -> None:
    try:
        r = await asyncio.wait_for(c.call_tool("wait", {"handle": handle, "timeoutMs": 30000}), CALL_DEADLINE_S)
        v = r.structured_content or {}
        if not r.is_error and v.get("result") == "long run done":
            record.update(outcome="finished")
        elif r.is_error and refused_naming(v, replica):
            record.update(outcome="refused")
        else:
            record.update(outcome="wrong", detail=json.dumps(v)[:400])
    except Exception as e:  # noqa: BLE001
        record.update(outcome="wrong", detail=f"{type(e).__name__}: {e}"[:400])


async def run(a: argparse.Namespace) -> dict[str, Any]:
    names = a.replicas.split(",")
    counts = Counts()
    stop = anyio.Event()
    async with client(a.proxy, a.token) as c:
        await c.list_tools()  # the x-mcp-header annotations: Mcp-Param-* headers from now on
        pinned: list = []

        async def new_session() -> str:
            v, _ = await execute(c, "globalThis.n = 1; return n;", session="new")
            return (v.get("session") or {}).get("id") or ""

        async def new_run() -> str:
            v, _ = await execute(c, f"await tools.fx.sleep({{ ms: {RUN_MS} }}); return 'long run done';",
                                 yieldAfterMs=100, timeoutMs=60000)
            return (v.get("running") or {}).get("handle") or ""

        if a.phase == "rolling":
            sessions = await pin_one_per_replica(c, names, new_session)
            runs = await pin_one_per_replica(c, names, new_run)
            for r, h in sessions.items():
                counts.pinned[f"session@{r}"] = rec = {"kind": "session", "replica": r}
                pinned.append((use_session, r, h, rec))
            for r, h in runs.items():
                counts.pinned[f"run@{r}"] = rec = {"kind": "long run", "replica": r}
                pinned.append((wait_run, r, h, rec))
            if len(sessions) != len(names) or len(runs) != len(names):
                counts.fail(f"could not pin one of each per replica: {sessions} {runs}")
        start = time.monotonic()
        async with anyio.create_task_group() as tg:
            for w in range(a.workers):
                tg.start_soon(stateless, c, counts, w, stop)
            for fn, r, h, rec in pinned:
                if fn is use_session:
                    tg.start_soon(use_session, c, r, h, rec, stop)
                else:
                    tg.start_soon(wait_run, c, r, h, rec)
            print("READY", flush=True)
            while True:
                line = (await anyio.to_thread.run_sync(sys.stdin.readline)).strip()
                if line.startswith("PIN "):
                    # A long run on that replica (about to be stopped), its wait kept open.
                    # Runs that land on another replica are cancelled; round robin brings one
                    # to the target within a few tries.
                    target = line.split(" ", 1)[1]
                    handle = ""
                    for _ in range(40):
                        h = await new_run()
                        if not h:
                            counts.pin_errors += 1
                            continue
                        if owner(h) != target:
                            await asyncio.wait_for(c.call_tool("wait", {"handle": h, "cancel": True}),
                                                   CALL_DEADLINE_S)
                            continue
                        handle = h
                        counts.pinned[f"draining run@{target}"] = rec = {
                            "kind": "long run at SIGTERM", "replica": target, "handle": h}
                        WAIT_SENT[h] = sent = asyncio.Event()
                        tg.start_soon(wait_run, c, target, h, rec)
                        # Its wait is on its way before the test stops the replica.
                        await asyncio.wait_for(sent.wait(), CALL_DEADLINE_S)
                        break
                    print(f"PINNED {target} {handle}", flush=True)
                    continue
                if line != "DONE":
                    counts.fail(f"expected DONE on stdin, got {line!r}")
                stop.set()
                break
        elapsed = time.monotonic() - start
    outcomes: dict[str, int] = {}
    for rec in counts.pinned.values():
        outcomes[rec.get("outcome", "none")] = outcomes.get(rec.get("outcome", "none"), 0) + 1
    return {
        "phase": a.phase,
        "seconds": round(elapsed, 1),
        "requests": counts.requests,
        "failed": counts.failed,
        "errors": counts.errors,
        "pinned": counts.pinned,
        "pinned_outcomes": outcomes,
        "pin_errors": counts.pin_errors,
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--proxy", required=True)
    ap.add_argument("--token", required=True)
    ap.add_argument("--replicas", required=True)
    ap.add_argument("--phase", choices=["rolling", "kill"], required=True)
    ap.add_argument("--workers", type=int, default=4)
    a = ap.parse_args()
    try:
        out = asyncio.run(run(a))
    except BaseException:  # noqa: BLE001
        print(traceback.format_exc()[-3000:], flush=True)
        return 1
    print("COUNTS " + json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The official Python MCP SDK drives the built binary over streamable HTTP (`serve --http`),
in both protocol generations: mode="legacy" (2025-11-25, initialize + Mcp-Session-Id) and
mode="auto" (2026-07-28: server/discover, stateless). Two principals with bearer tokens;
server-everything (a reference server) upstream.

    sdk_http.py --exe target/debug/code-executor-mcp --config PREFIX/upstreams.json

Prints one line per check and a closing 'N passed, M failed' line; exits 1 on any failure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.request
import warnings

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

try:
    from mcp import MCPDeprecationWarning

    warnings.filterwarnings("ignore", category=MCPDeprecationWarning)
except ImportError:  # pragma: no cover
    pass

results: list[tuple[str, bool, str]] = []


class Recorded(logging.Handler):
    """Every warning the SDK logs, such as "Session termination failed: 202" when closing a
    transport session is answered with a status it does not take."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


warned = Recorded()
logging.getLogger("mcp").addHandler(warned)
TOKENS = {"alice": "alice-token-0123456789abcdef", "bob": "bob-token-0123456789abcdef00"}


def check(name: str, ok: bool, detail: str = "") -> None:
    results.append((name, ok, detail))
    print(f"{'PASS' if ok else 'FAIL'}  {name}{'' if ok else '  ' + detail[:400]}", flush=True)


def client(url: str, token: str | None, mode: str) -> Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    http = httpx2.AsyncClient(headers=headers, timeout=120)
    return Client(streamable_http_client(url, http_client=http), mode=mode, read_timeout_seconds=120)


def metric(base: str, sample: str) -> float | None:
    # /metrics requires a token on a server that requires one.
    req = urllib.request.Request(f"{base}/metrics", headers={"Authorization": f"Bearer {TOKENS['alice']}"})
    text = urllib.request.urlopen(req, timeout=10).read().decode()
    for line in text.splitlines():
        if line.startswith(sample + " "):
            return float(line.split()[-1])
    return None


async def execute(c: Client, code: str, **extra) -> tuple[dict, bool]:
    r = await c.call_tool("execute_typescript", {"code": code, **extra}, read_timeout_seconds=120)
    return (r.structured_content or {}), bool(r.is_error)


async def run(url: str, base: str, mode: str) -> None:
    sessions_before = metric(base, "code_executor_transport_sessions") or 0
    warned.lines.clear()
    await clients(url, base, mode, sessions_before)
    # Closing each client ends its transport session (DELETE), answered with a status the SDK
    # takes: no "Session termination failed" warning, and the sessions are gone.
    terminations = [w for w in warned.lines if "termination" in w.lower()]
    check(f"[{mode}] closing ends the session without a warning", not terminations, str(terminations))
    left = (metric(base, "code_executor_transport_sessions") or 0) - sessions_before
    check(f"[{mode}] closed sessions are gone", left == 0, str(left))


async def clients(url: str, base: str, mode: str, sessions_before: float) -> None:
    async with client(url, TOKENS["alice"], mode) as alice, client(url, TOKENS["bob"], mode) as bob:
        names = [t.name for t in (await alice.list_tools()).tools]
        check(f"[{mode}] tools are listed over HTTP", "execute_typescript" in names, str(names))
        opened = (metric(base, "code_executor_transport_sessions") or 0) - sessions_before
        if mode == "legacy":
            check(f"[{mode}] 2025-11-25 opens transport sessions", opened == 2, str(opened))
        else:
            check(f"[{mode}] 2026-07-28 is stateless (no transport session)", opened == 0, str(opened))

        v, err = await execute(alice, "return await tools.everything.echo({ message: 'over http' })")
        check(f"[{mode}] code calls a reference server upstream", not err and "over http" in json.dumps(v),
              json.dumps(v)[:300])

        r = await alice.call_tool("health", {})
        who = (r.structured_content or {}).get("principal")
        check(f"[{mode}] the bearer token names the principal", who == {"name": "alice", "via": "token"}, str(who))

        v, err = await execute(alice, "globalThis.kept = 'alice'; await store('k', 1); return 1", session="new")
        sid = (v.get("session") or {}).get("id")
        check(f"[{mode}] a session is created", not err and bool(sid), json.dumps(v)[:300])
        v, err = await execute(bob, "return globalThis.kept", session=sid)
        msg = (v.get("error") or {}).get("message", "")
        check(f"[{mode}] another principal gets 'unknown session'", err and msg.startswith("unknown session"),
              json.dumps(v)[:300])
        v, err = await execute(alice, "return [globalThis.kept, await load('k')]", session=sid)
        check(f"[{mode}] the owner keeps its state", not err and v.get("result") == ["alice", 1], json.dumps(v)[:300])

    # No token: the SDK gets 401 and fails to connect.
    try:
        async with client(url, None, mode) as anon:
            await anon.list_tools()
        check(f"[{mode}] a client without a token is refused", False, "it connected")
    except BaseException as e:  # noqa: BLE001
        text = "".join(traceback.format_exception(e))
        check(f"[{mode}] a client without a token is refused", "401" in text or "authentication required" in text,
              text[-400:])


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--exe", required=True)
    p.add_argument("--config", required=True)
    args = p.parse_args()
    tmp = tempfile.mkdtemp()
    tokens = os.path.join(tmp, "tokens")
    with open(tokens, "w") as f:
        f.write("".join(f"{k}={v}\n" for k, v in TOKENS.items()))
    os.chmod(tokens, 0o600)
    log = open(os.path.join(tmp, "server.log"), "w+")
    server = subprocess.Popen(
        [args.exe, "--config", args.config, "--no-discover", "serve", "--http", "127.0.0.1:0", "--tokens-file", tokens],
        stdout=subprocess.DEVNULL, stderr=log, env=dict(os.environ, XDG_STATE_HOME=os.path.join(tmp, "state")),
    )
    try:
        url = None
        for _ in range(300):
            log.seek(0)
            m = re.search(r"serving MCP on (http://\S+)", log.read())
            if m:
                url = m.group(1)
                break
            time.sleep(0.1)
        check("the server listens", url is not None, "no 'serving MCP on' line")
        if url:
            base = url.rsplit("/mcp", 1)[0]
            for mode in ("legacy", "auto"):
                try:
                    asyncio.run(run(url, base, mode))
                except BaseException as e:  # noqa: BLE001
                    check(f"[{mode}] ran to the end", False, "".join(traceback.format_exception(e))[-1500:])
        server.send_signal(signal.SIGTERM)
        code = server.wait(timeout=30)
        check("SIGTERM: the server exits cleanly", code == 0, f"exit {code}")
    finally:
        if server.poll() is None:
            server.kill()
        log.seek(0)
        if any(not ok for _, ok, _ in results):
            print(log.read()[-3000:])
    failed = sum(1 for _, ok, _ in results if not ok)
    print(f"{len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

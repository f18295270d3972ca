#!/usr/bin/env python3
"""Pinned direct tools (directTools), driven by the official Python MCP SDK over stdio, in its
legacy mode (protocol 2025-11-25: approvals by inline elicitation/create) or its 2026-07-28 mode
(input_required with a requestState, retried by the SDK with the answers): the pinned tools are
listed with the upstream's schemas, answer with the upstream's own result (which the SDK checks
against the listed outputSchema), and are held to the rules, approvals and audit of calls from
code.

    direct_tools.py --exe target/debug/code-executor-mcp --fixture target/debug/fixture-server \
                    --mode legacy|2026-07-28 --dir /tmp/somewhere

Prints one line per check and 'N passed, M failed'; exits 1 on any failure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import traceback
import warnings

from mcp import Client, StdioServerParameters, types
from mcp.client.stdio import stdio_client

try:
    from mcp import MCPDeprecationWarning

    warnings.filterwarnings("ignore", category=MCPDeprecationWarning)
except ImportError:  # pragma: no cover
    pass

results: list[tuple[str, bool, str]] = []


def check(name: str, ok: bool, detail: str = "") -> None:
    results.append((name, ok, detail))
    print(f"{'PASS' if ok else 'FAIL'}  {name}{'' if ok else '  ' + detail[:600]}", flush=True)


def text(r: types.CallToolResult) -> str:
    return "\n".join(c.text for c in r.content if isinstance(c, types.TextContent))


async def run(exe: str, fixture: str, mode: str, work: str) -> None:
    os.makedirs(work, exist_ok=True)
    upstreams = os.path.join(work, "upstreams.json")
    settings = os.path.join(work, "settings.json")
    audit = os.path.join(work, f"audit-{mode}.jsonl")
    with open(upstreams, "w") as f:
        json.dump({"mcpServers": {
            "fx": {"command": fixture, "args": ["fx"], "env": {"FIXTURE_PAUSE_TOOLS": "1"}},
        }}, f)
    with open(settings, "w") as f:
        json.dump({
            "directTools": ["mcp__fx__add", "mcp__fx__echo", "mcp__fx__sleep", "mcp__fx__write_*"],
            "policy": {"servers": {"fx": {"deny": ["sleep"]}}},
            "approvals": {"approve": ["mcp__fx__write_*"], "timeoutMs": 5000},
            "audit": {"path": audit},
        }, f)
    env = dict(os.environ, CODE_EXECUTOR_CONFIG_PATH=settings)
    params = StdioServerParameters(command=exe, args=["--config", upstreams, "--no-discover"], env=env)
    decisions: list[str] = []
    asked: list[str] = []

    async def elicit(context, params):  # noqa: ANN001
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"decision": decisions.pop(0) if decisions else "deny"})

    async with Client(stdio_client(params), mode=mode, read_timeout_seconds=60,
                      elicitation_callback=elicit) as client:
        listed = await client.list_tools()
        names = [t.name for t in listed.tools]
        check(f"[{mode}] pinned tools are listed beside ours (a rule-denied one is not)",
              {"fx__add", "fx__echo", "fx__write_note", "execute_typescript"} <= set(names)
              and "fx__sleep" not in names, repr(names))
        add = next((t for t in listed.tools if t.name == "fx__add"), None)
        check(f"[{mode}] a pinned tool carries the upstream's schemas, its description prefixed",
              add is not None and add.output_schema is not None
              and "a" in (add.input_schema.get("properties") or {})
              and (add.description or "").startswith("fx: "), repr(add))

        r = await client.call_tool("fx__add", {"a": 2, "b": 3})
        check(f"[{mode}] a call answers the upstream's structured result (validated by the SDK)",
              not r.is_error and r.structured_content == {"sum": 5.0}, repr(r))
        r = await client.call_tool("fx__echo", {"message": "hi"})
        check(f"[{mode}] a text result as the upstream gave it", not r.is_error and text(r) == "Echo: hi", repr(r))

        r = await client.call_tool("fx__sleep", {"ms": 1})
        check(f"[{mode}] a rule denies a pinned call as it denies code: a tool error naming the rule",
              r.is_error and text(r).startswith("PolicyError: ") and "deny: sleep" in text(r), repr(r))

        decisions[:] = ["once", "deny"]
        r = await client.call_tool("fx__write_note", {"text": "a"})
        check(f"[{mode}] an approval rule asks the person; approved, the call goes through",
              not r.is_error and text(r) == "1" and len(asked) == 1 and "write_note" in asked[0],
              repr(r) + repr(asked))
        r = await client.call_tool("fx__write_note", {"text": "b"})
        check(f"[{mode}] denied, the call is a tool error and never reaches the server",
              r.is_error and text(r).startswith("ApprovalDenied: ") and len(asked) == 2, repr(r))
        v = await client.call_tool("execute_typescript", {"code": "return await tools.fx.counts({})"})
        counts = (v.structured_content or {}).get("result") or {}
        check(f"[{mode}] the upstream saw one write_note", counts.get("write_note") == 1, json.dumps(counts))

    with open(audit) as f:
        lines = [json.loads(line) for line in f if line.strip()]
    calls = [(l["tool"], l["decision"], l.get("outcome")) for l in lines if l.get("event") == "tool.call"]
    want = [("add", "allow", "ok"), ("echo", "allow", "ok"), ("sleep", "deny", None),
            ("write_note", "allow", "ok"), ("write_note", "deny", None), ("counts", "allow", "ok")]
    check(f"[{mode}] the audit log has one tool.call line per call, as for calls from code",
          calls == want, repr(calls))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--exe", required=True)
    ap.add_argument("--fixture", required=True)
    ap.add_argument("--mode", required=True)
    ap.add_argument("--dir", required=True)
    a = ap.parse_args()
    try:
        asyncio.run(run(a.exe, a.fixture, a.mode, a.dir))
    except Exception:  # noqa: BLE001
        check(f"[{a.mode}] the run finished without an exception", False, traceback.format_exc())
    failed = sum(1 for _, ok, _ in results if not ok)
    print(f"{len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

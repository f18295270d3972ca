#!/usr/bin/env python3
"""The official Python MCP SDK drives an installed code-executor-mcp (from the wheel, uvx,
pipx, npx or cargo install) over stdio: our tools are listed, TypeScript and Python run in
their sandboxed workers started from the installed binary, and health answers.

    installed_smoke.py COMMAND [ARG...]

Prints one line per check and 'N passed, M failed'; exits 1 on any failure.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import traceback
import warnings

from mcp import Client, StdioServerParameters
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


async def run(command: str, args: list[str]) -> None:
    params = StdioServerParameters(command=command, args=[*args, "--no-discover"], env=dict(os.environ))
    async with Client(stdio_client(params), read_timeout_seconds=180) as client:
        tools = await client.list_tools()
        names = {t.name for t in tools.tools}
        check("our tools are listed", {"execute_typescript", "execute_python", "health"} <= names, str(names))
        r = await client.call_tool("execute_typescript", {"code": "const x: number = 40; return x + 2"})
        v = r.structured_content or {}
        check("TypeScript runs", not r.is_error and v.get("result") == 42, json.dumps(v)[:500])
        r = await client.call_tool("execute_python", {"code": "import sys\nsum(range(10))"})
        v = r.structured_content or {}
        check("Python runs", not r.is_error and v.get("result") == 45, json.dumps(v)[:500])
        r = await client.call_tool("health", {})
        check("health answers", not r.is_error, str(r.structured_content)[:300])


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    try:
        asyncio.run(run(sys.argv[1], sys.argv[2:]))
    except BaseException as e:  # noqa: BLE001
        check("session ran to the end", False, "".join(traceback.format_exception(e))[-1500:])
    failed = sum(1 for _, ok, _ in results if not ok)
    print(f"{len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

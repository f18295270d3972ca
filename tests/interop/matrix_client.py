#!/usr/bin/env python3
"""One cell of the settings matrix (tests/interop/matrix.py) with the official Python MCP SDK:
connects over stdio (spawning the given command with this process's environment, as clients
pass their entry's `env`) or streamable HTTP, lists the tools, runs one TypeScript and one
Python execution, and prints what it got as one `MATRIX {json}` line. The assertions are the
driver's.

    matrix_client.py '{"transport": "stdio", "command": [...], "ts": CODE, "py": CODE}'
    matrix_client.py '{"transport": "http", "url": URL, "token": T?, "ts": CODE, "py": CODE}'
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import warnings

from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

try:
    from mcp import MCPDeprecationWarning

    warnings.filterwarnings("ignore", category=MCPDeprecationWarning)
except ImportError:  # pragma: no cover
    pass


async def main(spec: dict) -> dict:
    if spec["transport"] == "stdio":
        cmd = spec["command"]
        transport = stdio_client(StdioServerParameters(command=cmd[0], args=cmd[1:], env=dict(os.environ)))
    else:
        import httpx2

        headers = {"Authorization": f"Bearer {spec['token']}"} if spec.get("token") else {}
        http = httpx2.AsyncClient(headers=headers, timeout=120)
        transport = streamable_http_client(spec["url"], http_client=http)
    async with Client(transport, read_timeout_seconds=120) as client:
        out: dict = {"tools": [t.name for t in (await client.list_tools()).tools]}
        for key, tool in (("ts", "execute_typescript"), ("py", "execute_python")):
            r = await client.call_tool(tool, {"code": spec[key]}, read_timeout_seconds=120)
            text = "\n".join(getattr(c, "text", "") for c in r.content)
            out[key] = {"isError": bool(r.is_error), "structured": r.structured_content, "text": text[:2000]}
    return out


if __name__ == "__main__":
    print("MATRIX " + json.dumps(asyncio.run(main(json.loads(sys.argv[1])))), flush=True)

"""Back to back as an agent loop calls, from the official MCP Python SDK (`mcp`): 200
sequential trivial executions in each language against 200 sequential direct `echo` calls from
the same client kind, and one direct `echo` after a pause. Run by `code-executor-mcp bench
--python-sdk PYTHON`; argv: N, then the direct server's command line as JSON, then ours."""

import asyncio
import json
import statistics
import sys
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def summary(ms):
    ms = sorted(ms)
    pick = lambda q: ms[min(len(ms) - 1, round((len(ms) - 1) * q))]
    return {"median": round(statistics.median(ms), 3), "p99": round(pick(0.99), 3),
            "max": round(ms[-1], 3), "n": len(ms)}


async def calls(command, tool, args, n, pause=0.0):
    params = StdioServerParameters(command=command[0], args=command[1:])
    async with stdio_client(params) as (r, w):
        async with ClientSession(r, w) as s:
            await s.initialize()
            await s.list_tools()
            for _ in range(10):
                await s.call_tool(tool, args)
            await asyncio.sleep(1.0)
            ms = []
            for _ in range(n):
                if pause:
                    await asyncio.sleep(pause)
                t = time.perf_counter()
                res = await s.call_tool(tool, args)
                ms.append((time.perf_counter() - t) * 1e3)
                if res.is_error:
                    raise SystemExit("%s failed: %s" % (tool, res.content))
            return ms


async def main():
    n = int(sys.argv[1])
    direct, ours = json.loads(sys.argv[2]), json.loads(sys.argv[3])
    echo = {"message": "hello"}
    out = {"direct_echo_after_pause_ms": summary(await calls(direct, "echo", echo, 30, 0.3)),
           "direct_echo_back_to_back_ms": summary(await calls(direct, "echo", echo, n))}
    for tool, code in (("execute_typescript", "return 1"), ("execute_python", "1")):
        out[tool + "_back_to_back_ms"] = summary(await calls(ours, tool, {"code": code}, n))
    print(json.dumps(out))


asyncio.run(main())

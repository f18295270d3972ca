#!/usr/bin/env python3
"""End to end with software nobody here wrote: the official Python MCP SDK drives the built
code-executor-mcp binary over stdio, with the real reference servers as its upstreams.

    sdk_e2e.py --exe target/debug/code-executor-mcp --config PREFIX/upstreams.json

Prints one line per check and a closing 'N passed, M failed' line; exits 1 on any failure.
"""

from __future__ import annotations

import argparse
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

EXPECTED_TOOLS = {"everything": 13, "filesystem": 14, "memory": 9, "time": 2, "git": 12}

results: list[tuple[str, bool, str]] = []


def check(name: str, ok: bool, detail: str = "") -> None:
    results.append((name, ok, detail))
    print(f"{'PASS' if ok else 'FAIL'}  {name}{'' if ok else '  ' + detail[:400]}", flush=True)


async def execute(client: Client, code: str, **extra) -> tuple[dict, bool]:
    r = await client.call_tool("execute_typescript", {"code": code, **extra}, read_timeout_seconds=120)
    return (r.structured_content or {}), bool(r.is_error)


async def run(exe: str, config: str, mode: str) -> None:
    params = StdioServerParameters(command=exe, args=["--config", config, "--no-discover"], env=dict(os.environ))
    async with Client(stdio_client(params), mode=mode, read_timeout_seconds=120) as client:
        tools = await client.list_tools()
        names = [t.name for t in tools.tools]
        check(f"[{mode}] our tools are listed", {"execute_typescript", "search_tools", "get_tool_schema",
                                                 "list_servers", "health"} <= set(names), str(names))
        # The execute tools declare their result; the others answer with structuredContent
        # too, without an outputSchema of {"type": "object"} that would tell a model nothing.
        check(f"[{mode}] the execute tools (only) declare an output schema",
              all(bool(t.output_schema) == t.name.startswith("execute_") for t in tools.tools),
              str([(t.name, bool(t.output_schema)) for t in tools.tools]))

        r = await client.call_tool("list_servers", {})
        servers = {s["name"]: s for s in (r.structured_content or {}).get("servers", [])}
        check(f"[{mode}] list_servers shows the five upstreams", set(servers) == set(EXPECTED_TOOLS), str(servers))

        v, err = await execute(client, """
            const all = await discoverMCPTools();
            const by = {};
            for (const t of all.tools) by[t.server] = (by[t.server] || 0) + 1;
            return { count: all.tools.length, by, unavailable: all.unavailable ?? [] };
        """)
        check(f"[{mode}] all 50 upstream tools are listed through us",
              not err and v["result"]["count"] == 50 and v["result"]["by"] == EXPECTED_TOOLS, json.dumps(v)[:400])

        r = await client.call_tool("search_tools", {"query": "current time in a timezone", "limit": 3})
        hits = [t["name"] for t in (r.structured_content or {}).get("tools", [])]
        check(f"[{mode}] search_tools finds the time tool", "mcp__time__get_current_time" in hits, str(hits))

        r = await client.call_tool("get_tool_schema", {"name": "mcp__time__convert_time"})
        schema = r.structured_content or {}
        check(f"[{mode}] get_tool_schema keeps $defs/$ref", "$defs" in json.dumps(schema.get("outputSchema", {})),
              json.dumps(schema)[:300])

        # Each reference server, called from TypeScript.
        v, err = await execute(client, """
            const echo = await tools.everything.echo({ message: 'hi from code' });
            const sum = await callMCPTool('mcp__everything__get-sum', { a: 2, b: 40 });
            return { echo, sum };
        """)
        check(f"[{mode}] everything: echo and get-sum from TypeScript",
              not err and "hi from code" in json.dumps(v["result"]) and "42" in json.dumps(v["result"]), json.dumps(v)[:400])

        v, err = await execute(client, """
            const allowed = await tools.filesystem.list_allowed_directories({});
            return await tools.filesystem.list_directory({ path: ROOT });
        """.replace("ROOT", json.dumps(os.environ.get("INTEROP_FS_ROOT", ""))))
        check(f"[{mode}] filesystem: list_directory from TypeScript",
              not err and "README.txt" in json.dumps(v["result"]), json.dumps(v)[:400])

        v, err = await execute(client, """
            await tools.memory.create_entities({ entities: [{ name: 'code-executor', entityType: 'project', observations: ['runs code'] }] });
            const graph = await tools.memory.read_graph({});
            return graph.entities.map(e => e.name);
        """)
        check(f"[{mode}] memory: create_entities and read_graph from TypeScript",
              not err and "code-executor" in v["result"], json.dumps(v)[:400])

        v, err = await execute(client, """
            const t = await tools.time.convert_time({ source_timezone: 'UTC', time: '12:00', target_timezone: 'Asia/Tokyo' });
            return t.target.timezone;
        """)
        check(f"[{mode}] time: convert_time ($defs in its output schema) from TypeScript",
              not err and v["result"] == "Asia/Tokyo", json.dumps(v)[:400])

        v, err = await execute(client, """
            const status = await tools.git.git_status({ repo_path: REPO });
            const log = await tools.git.git_log({ repo_path: REPO, max_count: 1 });
            return { status, log };
        """.replace("REPO", json.dumps(os.environ.get("INTEROP_GIT_REPO", ""))))
        check(f"[{mode}] git: git_log from TypeScript", not err and "initial commit" in json.dumps(v["result"]),
              json.dumps(v)[:400])

        v, err = await execute(client, "await tools.filesystem.read_text_file({ path: '/etc/shadow' });")
        check(f"[{mode}] an upstream error is a tool error carrying its message",
              err and v.get("error", {}).get("name") == "ToolError" and "denied" in v["error"]["message"].lower(),
              json.dumps(v)[:400])

        v, err = await execute(client, "while (true) {}", timeoutMs=500)
        check(f"[{mode}] an endless loop ends at the deadline",
              err and v.get("error", {}).get("name") == "TimeoutError", json.dumps(v)[:300])

        v, err = await execute(client, "return 1 + 1")
        check(f"[{mode}] the server still answers afterwards", not err and v.get("result") == 2, json.dumps(v)[:300])


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--exe", required=True)
    p.add_argument("--config", required=True)
    p.add_argument("--git-repo", required=True)
    p.add_argument("--fs-root", required=True)
    args = p.parse_args()
    os.environ["INTEROP_GIT_REPO"] = args.git_repo
    os.environ["INTEROP_FS_ROOT"] = args.fs_root
    for mode in ("legacy", "auto"):
        try:
            asyncio.run(run(args.exe, args.config, mode))
        except BaseException as e:  # noqa: BLE001
            check(f"[{mode}] session ran to the end", False, "".join(traceback.format_exception(e))[-1500:])
    failed = sum(1 for _, ok, _ in results if not ok)
    print(f"{len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

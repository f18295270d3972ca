#!/usr/bin/env python3
"""Skills driven by the official Python MCP SDK over stdio, in its legacy mode (2025-11-25)
and its 2026-07-28 mode: a skill saved by a client without code ({code, save}), called by a
client ({skill, args}) and from code in the other language, found by search_tools, and its
files reached as ordinary resources (the SDK has no skills-extension client: resources/list
and resources/read are how such a client reaches them).

    skills.py --exe target/debug/code-executor-mcp --fixture target/debug/fixture-server \
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

from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

results: list[tuple[str, bool, str]] = []


def check(name: str, ok: bool, detail: str = "") -> None:
    results.append((name, ok, detail))
    print(f"{'PASS' if ok else 'FAIL'}  {name}{'' if ok else '  ' + detail[:600]}", flush=True)


SKILL = """
const {sum} = await tools.fix.add({a: args.a, b: args.b});
return {sum, doubled: sum * 2};
"""


async def run(exe: str, fixture: str, mode: str, work: str) -> None:
    os.makedirs(work, exist_ok=True)
    upstreams = os.path.join(work, "upstreams.json")
    settings = os.path.join(work, "settings.json")
    skills_dir = os.path.join(work, f"skills-{mode}")
    with open(upstreams, "w") as f:
        json.dump({"mcpServers": {"fix": {"command": fixture, "args": ["fix"]}}}, f)
    with open(settings, "w") as f:
        json.dump({"skills": {"dir": skills_dir}}, f)
    env = dict(os.environ, CODE_EXECUTOR_CONFIG_PATH=settings)
    params = StdioServerParameters(command=exe, args=["--config", upstreams, "--no-discover"], env=env)
    async with Client(stdio_client(params), mode=mode, read_timeout_seconds=60) as client:
        r = await client.call_tool("execute_typescript", {
            "code": SKILL,
            "save": {"name": "add-twice", "description": "Adds two numbers upstream and doubles the sum.",
                     "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                                     "required": ["a", "b"]}},
        })
        saved = (r.structured_content or {}).get("result") or {}
        check(f"[{mode}] a client saves code as a skill without running it",
              not r.is_error and saved.get("version") == 1 and saved.get("tools") == ["fix.add"],
              json.dumps(r.structured_content))
        check(f"[{mode}] the skill is plain files: SKILL.md and skill.ts",
              os.path.isfile(os.path.join(skills_dir, "add-twice", "SKILL.md"))
              and open(os.path.join(skills_dir, "add-twice", "skill.ts")).read() == SKILL)
        r = await client.call_tool("execute_python", {"skill": "add-twice", "args": {"a": 2, "b": 3}})
        v = (r.structured_content or {}).get("result")
        check(f"[{mode}] a client runs it by name with args", not r.is_error and v == {"sum": 5, "doubled": 10},
              json.dumps(r.structured_content))
        r = await client.call_tool("execute_python", {"code": "skills.add_twice(a=1, b=1)['doubled']"})
        check(f"[{mode}] Python code calls the TypeScript skill",
              not r.is_error and (r.structured_content or {}).get("result") == 4, json.dumps(r.structured_content))
        r = await client.call_tool("execute_typescript", {"skill": "add-twice", "args": {"a": "x", "b": 1}})
        e = (r.structured_content or {}).get("error") or {}
        check(f"[{mode}] arguments outside its schema are refused, naming the field",
              r.is_error and "arguments/a" in e.get("message", ""), json.dumps(r.structured_content))
        r = await client.call_tool("search_tools", {"query": "add numbers and double", "detail": "summary"})
        hits = (r.structured_content or {}).get("tools") or []
        check(f"[{mode}] search_tools ranks the skill first, marked as a skill",
              bool(hits) and hits[0].get("kind") == "skill" and hits[0].get("name") == "add-twice",
              json.dumps(hits[:3]))
        listed = await client.list_resources()
        uris = [str(res.uri) for res in listed.resources]
        check(f"[{mode}] its files are resources", "skill://user/add-twice/SKILL.md" in uris, json.dumps(uris))
        read = await client.read_resource("skill://user/add-twice/skill.ts")
        text = getattr(read.contents[0], "text", None)
        check(f"[{mode}] a resource read gives the script", text == SKILL, repr(text)[:200])


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

#!/usr/bin/env python3
"""Our skills read back by FastMCP's skills client (SEP-2640), over stdio on 2026-07-28:
`skills/list`, then `read_skill` on each, which fetches every file, checks it against the
manifest's size and SHA-256 digest, parses the frontmatter and compares it with the entry,
and checks the skill's name against its URI. The skills: one saved from code, one in a
served directory (a folded YAML description, a file name that needs escaping), and the two
an upstream fixture serves (aggregated under skill://upstream/fx/).

    skills_fastmcp.py --exe target/debug/code-executor-mcp --fixture target/debug/fixture-server \
                      --dir /tmp/somewhere

Prints one line per check and 'N passed, M failed'; exits 1 on any failure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import traceback

from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from fastmcp.skills.client import SkillsClientExtension

results: list[tuple[str, bool, str]] = []


def check(name: str, ok: bool, detail: str = "") -> None:
    results.append((name, ok, detail))
    print(f"{'PASS' if ok else 'FAIL'}  {name}{'' if ok else '  ' + detail[:600]}", flush=True)


async def run(exe: str, fixture: str, work: str) -> None:
    served = os.path.join(work, "served", "pdf-forms")
    os.makedirs(os.path.join(served, "templates"), exist_ok=True)
    with open(os.path.join(served, "SKILL.md"), "w") as f:
        f.write("---\nname: pdf-forms\ndescription: >\n  Fill PDF forms\n  from templates.\n"
                "license: Apache-2.0\n---\n# PDF forms\nPick one in templates/.\n")
    with open(os.path.join(served, "templates", "invoice form.md"), "w") as f:
        f.write("Invoice: {{total}}\n")
    upstreams = os.path.join(work, "upstreams.json")
    settings = os.path.join(work, "settings.json")
    with open(upstreams, "w") as f:
        json.dump({"mcpServers": {"fx": {"command": fixture, "args": ["fx"], "env": {"FIXTURE_SKILLS": "1"}}}}, f)
    with open(settings, "w") as f:
        json.dump({"skills": {"dir": os.path.join(work, "skills"), "serve": [os.path.join(work, "served")]}}, f)
    env = dict(os.environ, CODE_EXECUTOR_CONFIG_PATH=settings)
    transport = StdioTransport(command=exe, args=["--config", upstreams, "--no-discover"], env=env)
    async with Client(transport, extensions=[SkillsClientExtension()]) as client:
        check("the connection is 2026-07-28", client.protocol_version == "2026-07-28", str(client.protocol_version))
        r = await client.call_tool("execute_typescript", {
            "code": "await tools.fx.add({a: 1, b: 2});\n"
                    "return await saveSkill('add-one', {code: 'return args.a + 1', description: 'Adds one.'})"})
        check("a skill is saved from code", (r.structured_content or {}).get("result", {}).get("version") == 1,
              json.dumps(r.structured_content))
        skills = await client.list_skills()
        uris = [s.uri for s in skills]
        check("skills/list has ours, the served one and the upstream's", uris == [
            "skill://user/add-one/SKILL.md",
            "skill://served/pdf-forms/SKILL.md",
            "skill://upstream/fx/release-notes/SKILL.md",
            "skill://upstream/fx/acme/triage/SKILL.md",
        ], json.dumps(uris))
        for uri in uris:
            try:
                skill = await client.read_skill(uri)
                check(f"read_skill verifies {uri}", True)
                if uri.endswith("pdf-forms/SKILL.md"):
                    check("its files, with the escaped name", sorted(skill.files) == ["SKILL.md", "templates/invoice form.md"],
                          str(sorted(skill.files)))
            except Exception:  # noqa: BLE001
                check(f"read_skill verifies {uri}", False, traceback.format_exc())


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--exe", required=True)
    ap.add_argument("--fixture", required=True)
    ap.add_argument("--dir", required=True)
    a = ap.parse_args()
    try:
        asyncio.run(run(a.exe, a.fixture, a.dir))
    except Exception:  # noqa: BLE001
        check("the run finished without an exception", False, traceback.format_exc())
    failed = sum(1 for _, ok, _ in results if not ok)
    print(f"{len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

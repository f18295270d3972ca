#!/usr/bin/env python3
"""Pauses mid-script, driven by the official Python MCP SDK over stdio: approvals of risky tool
calls (approve, deny, time out, fallback), model calls from code through the client's sampling,
in the SDK's legacy mode (inline elicitation/create and sampling/createMessage, protocol
2025-11-25) or its 2026-07-28 mode (input_required results with a requestState, retried by the
SDK with the answers).

    pauses.py --exe target/debug/code-executor-mcp --fixture target/debug/fixture-server \
              --mode legacy|2026-07-28 --dir /tmp/somewhere

The fixture upstream counts its calls per tool in its own process: nothing before a pause may
run twice. Prints one line per check and 'N passed, M failed'; exits 1 on any failure.
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

SECRET = "fixture-secret-4711-xyz"
results: list[tuple[str, bool, str]] = []


def check(name: str, ok: bool, detail: str = "") -> None:
    results.append((name, ok, detail))
    print(f"{'PASS' if ok else 'FAIL'}  {name}{'' if ok else '  ' + detail[:600]}", flush=True)


class Person:
    """Answers approval questions from a script of decisions; 'sleep' never answers in time."""

    def __init__(self) -> None:
        self.decisions: list[str] = []
        self.asked: list[str] = []
        self.prompts: list[str] = []

    async def elicit(self, context, params):  # noqa: ANN001
        if params.message.startswith("Your name"):  # an upstream's own question
            return types.ElicitResult(action="accept", content={"name": "Ada"})
        self.asked.append(params.message)
        decision = self.decisions.pop(0) if self.decisions else "deny"
        if decision == "sleep":
            await asyncio.sleep(4)
            decision = "once"
        if decision == "decline":
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action="accept", content={"decision": decision})

    async def sample(self, context, params):  # noqa: ANN001
        texts = []
        for m in params.messages:
            c = m.content
            texts.append(c.text if hasattr(c, "text") else str(c))
        if params.system_prompt:
            texts.insert(0, params.system_prompt)
        self.prompts.append("\n".join(texts))
        last = texts[-1]
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=f"echo({len(params.messages)}): {last}"),
            model="test-model",
            stop_reason="endTurn",
        )


async def run(exe: str, fixture: str, mode: str, work: str) -> None:
    os.makedirs(work, exist_ok=True)
    upstreams = os.path.join(work, "upstreams.json")
    settings = os.path.join(work, "settings.json")
    audit = os.path.join(work, f"audit-{mode}.jsonl")
    with open(upstreams, "w") as f:
        json.dump({"mcpServers": {
            "fix": {"command": fixture, "args": ["fix"], "env": {"FIXTURE_PAUSE_TOOLS": "1", "FIX_TOKEN": SECRET}},
            "other": {"command": fixture, "args": ["other"], "env": {"FIXTURE_PAUSE_TOOLS": "1"}},
        }}, f)
    with open(settings, "w") as f:
        json.dump({
            "approvals": {"approve": ["mcp__fix__write_*"], "annotations": "destructive", "timeoutMs": 1500},
            "llm": {"enabled": True, "maxCalls": 6},
            "forwardRequests": {"servers": ["fix"], "roots": ["file:///work/proj/sub", "file:///etc"]},
            "audit": {"path": audit},
        }, f)
    env = dict(os.environ, CODE_EXECUTOR_CONFIG_PATH=settings)
    params = StdioServerParameters(command=exe, args=["--config", upstreams, "--no-discover"], env=env)
    person = Person()
    async def roots(context):  # noqa: ANN001
        return types.ListRootsResult(roots=[types.Root(uri="file:///work/proj", name="proj")])

    async with Client(stdio_client(params), mode=mode, read_timeout_seconds=60,
                      elicitation_callback=person.elicit, sampling_callback=person.sample,
                      list_roots_callback=roots) as client:

        async def execute(code: str, tool: str = "execute_typescript", **extra) -> tuple[dict, bool]:
            r = await client.call_tool(tool, {"code": code, **extra})
            return (r.structured_content or {}), bool(r.is_error)

        async def counts() -> dict:
            v, _ = await execute("return await tools.fix.counts({})")
            return v.get("result") or {}

        # 1. Approved: local state survives two pauses; nothing before a pause runs twice.
        person.decisions = ["once", "once"]
        v, err = await execute("""
            let local = 10;
            const t1 = await tools.fix.tick({});
            local += 1;
            const w1 = await tools.fix.write_note({ text: 'first', token: 'hidden-value', body: 'fixture-secret-4711-xyz' });
            local += 1;
            const t2 = await tools.fix.tick({});
            const w2 = await tools.fix.write_note({ text: 'second' });
            return { t1, t2, w1, w2, local };
        """)
        check(f"[{mode}] approved twice: the script ran through with its state",
              not err and v.get("result") == {"t1": 1, "t2": 2, "w1": 1, "w2": 2, "local": 12}, json.dumps(v))
        check(f"[{mode}] the person was asked twice, with server, tool and masked arguments",
              len(person.asked) == 2 and "Server: fix" in person.asked[0] and "write_note" in person.asked[0]
              and "hidden-value" not in person.asked[0] and "[masked]" in person.asked[0]
              and SECRET not in person.asked[0] and "[redacted]" in person.asked[0], repr(person.asked))
        c = await counts()
        check(f"[{mode}] upstream counted each call once", c.get("tick") == 2 and c.get("write_note") == 2, json.dumps(c))

        # 2. Denied: ApprovalDenied (a PolicyError) is catchable; nothing went upstream.
        person.asked.clear()
        person.decisions = ["deny"]
        v, err = await execute("""
            try {
              await tools.fix.write_note({ text: 'nope' });
              return 'went through';
            } catch (e) {
              return { name: e.name, policy: e instanceof PolicyError, tool: e instanceof ToolError, msg: e.message };
            }
        """)
        r = v.get("result") or {}
        check(f"[{mode}] a denial throws ApprovalDenied, a PolicyError the script catches",
              not err and r.get("name") == "ApprovalDenied" and r.get("policy") is True and r.get("tool") is True,
              json.dumps(v))
        c = await counts()
        check(f"[{mode}] a denied call never reached the upstream", c.get("write_note") == 2, json.dumps(c))

        # 3. Approve for the execution: asked once for three calls; annotations rule asks too.
        person.asked.clear()
        person.decisions = ["execution", "once"]
        v, err = await execute("""
            const a = await tools.fix.write_note({ text: '1' });
            const b = await tools.fix.write_note({ text: '2' });
            const c = await tools.fix.write_note({ text: '3' });
            const d = await tools.fix.drop_note({ text: 'x' });
            const p = await tools.fix.peek({});
            return [a, b, c, d, p];
        """)
        check(f"[{mode}] 'approve for the execution' covers later calls; destructiveHint asks",
              not err and v.get("result") == [3, 4, 5, 1, 1] and len(person.asked) == 2,
              json.dumps(v) + repr(person.asked))

        # 4. Timeout: no answer within approvals.timeoutMs -> denied; the deadline clock did not
        #    run while waiting (timeoutMs 1000 < the 1.5 s wait).
        person.asked.clear()
        person.decisions = ["sleep"]
        v, err = await execute("""
            try { await tools.fix.write_note({ text: 'late' }); return 'went through'; }
            catch (e) { return { name: e.name, msg: e.message }; }
        """, timeoutMs=1000)
        r = v.get("result") or {}
        check(f"[{mode}] an unanswered approval times out as ApprovalDenied, not TimeoutError",
              not err and r.get("name") == "ApprovalDenied" and "within" in r.get("msg", ""), json.dumps(v))
        await asyncio.sleep(3)  # let the slow answer come back before the next questions

        # 5. Python: same gate, same class; state survives the pause.
        person.asked.clear()
        person.decisions = ["once", "deny"]
        v, err = await execute(
            "n = tools.fix.tick()\n"
            "w = tools.fix.write_note(text='py')\n"
            "try:\n"
            "    tools.fix.write_note(text='py2')\n"
            "    denied = None\n"
            "except ApprovalDenied as e:\n"
            "    denied = [type(e).__name__, isinstance(e, PolicyError)]\n"
            "{'n': n, 'w': w, 'denied': denied}\n",
            tool="execute_python")
        check(f"[{mode}] Python: approve then deny (ApprovalDenied is a PolicyError)",
              not err and v.get("result") == {"n": 3, "w": 6, "denied": ["ApprovalDenied", True]}, json.dumps(v))

        # 6. LLM calls in a loop of five, from both languages; secrets are redacted.
        person.prompts.clear()
        v, err = await execute(f"""
            const out = [];
            for (let i = 0; i < 5; i++) out.push(await llm.ask(`q${{i}} {SECRET}`, {{ system: 'be brief', maxTokens: 50 }}));
            const multi = await llm.think({{ messages: [
              {{ role: 'user', content: 'hi' }}, {{ role: 'assistant', content: 'hello' }}, {{ role: 'user', content: 'again' }}] }});
            return {{ out, multi }};
        """)
        r = v.get("result") or {}
        check(f"[{mode}] llm.ask in a loop of five, then llm.think, through the client's sampling",
              not err and r.get("out") == [f"echo(1): q{i} [redacted]" for i in range(5)]
              and r.get("multi") == "echo(3): again", json.dumps(v))
        check(f"[{mode}] the result reports llm usage",
              (v.get("llm") or {}).get("calls") == 6 and (v.get("llm") or {}).get("inputTokens", 0) > 0, json.dumps(v))
        check(f"[{mode}] no prompt carried the upstream's secret",
              len(person.prompts) == 6 and all(SECRET not in p for p in person.prompts), repr(person.prompts))
        v, err = await execute(
            "answers = [llm.ask('p%d' % i) for i in range(7)]\n", tool="execute_python")
        e = v.get("error") or {}
        check(f"[{mode}] Python: the budget (maxCalls 6) ends the seventh call with LimitError",
              err and e.get("name") == "LimitError" and "llm.maxCalls" in e.get("message", ""), json.dumps(v))

        # 7. Upstream requests, routed to this client for the execution that caused them.
        v, err = await execute("""
            const u = await tools.fix.ask_user({ text: 'Your name?' });
            const m = await tools.fix.ask_model({ text: 'model please' });
            const r = await tools.fix.ask_roots({});
            let other;
            try { other = await tools.other.ask_user({ text: 'Your name?' }); } catch (e) { other = [e.name, e.message]; }
            return { u, m, r, other };
        """)
        r = v.get("result") or {}
        check(f"[{mode}] an upstream's elicitation reaches this client and its answer goes back",
              not err and r.get("u") == {"action": "accept", "content": {"name": "Ada"}}, json.dumps(v))
        check(f"[{mode}] an upstream's sampling request reaches this client",
              (r.get("m") or {}).get("content", {}).get("text") == "echo(1): model please", json.dumps(v))
        check(f"[{mode}] roots: the configured ones within what the client granted",
              (r.get("r") or {}).get("roots") == [{"uri": "file:///work/proj/sub"}], json.dumps(v))
        check(f"[{mode}] a server not in forwardRequests gets its request refused",
              isinstance(r.get("other"), list) and r["other"][0] == "ToolError", json.dumps(v))

    with open(audit) as f:
        lines = [json.loads(line) for line in f if line.strip()]
    approvals = [x for x in lines if x.get("event") == "approval" or x.get("type") == "approval"]
    answers = sorted({a.get("answer") for a in approvals})
    check(f"[{mode}] every approval and its answer is audited",
          {"once", "deny", "execution", "timeout", "remembered"} <= set(answers) or
          {"once", "deny", "execution", "timeout", "approved"} <= set(answers), repr(answers) + repr(lines[:3]))
    llm_lines = [x for x in lines if "llm" in json.dumps(x.get("event", x.get("type", "")))]
    check(f"[{mode}] model calls are audited by hash, never the text",
          len(llm_lines) >= 6 and all(SECRET not in json.dumps(x) and "q1" not in json.dumps(x) for x in llm_lines),
          repr(llm_lines[:2]))


async def no_capabilities(exe: str, fixture: str, mode: str, work: str) -> None:
    """A client that can be asked nothing: the fallback (deny by default) says so."""
    upstreams = os.path.join(work, "upstreams.json")
    settings = os.path.join(work, "settings.json")
    env = dict(os.environ, CODE_EXECUTOR_CONFIG_PATH=settings)
    params = StdioServerParameters(command=exe, args=["--config", upstreams, "--no-discover"], env=env)
    async with Client(stdio_client(params), mode=mode, read_timeout_seconds=60) as client:
        r = await client.call_tool("execute_typescript", {"code": """
            try { await tools.fix.write_note({ text: 'x' }); return 'went through'; }
            catch (e) { return { name: e.name, msg: e.message }; }
        """})
        v = (r.structured_content or {}).get("result") or {}
        check(f"[{mode}] no elicitation capability: the fallback denies and says why",
              v.get("name") == "ApprovalDenied" and "fallback" in v.get("msg", "")
              and "capability" in v.get("msg", ""), json.dumps(r.structured_content))
        r = await client.call_tool("execute_typescript", {"code": "return await llm.ask('hi')"})
        e = (r.structured_content or {}).get("error") or {}
        check(f"[{mode}] no sampling and no provider: llm.ask fails with the reason",
              r.is_error and "sampling" in e.get("message", ""), json.dumps(r.structured_content))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--exe", required=True)
    ap.add_argument("--fixture", required=True)
    ap.add_argument("--mode", required=True)
    ap.add_argument("--dir", required=True)
    a = ap.parse_args()
    try:
        asyncio.run(run(a.exe, a.fixture, a.mode, a.dir))
        asyncio.run(no_capabilities(a.exe, a.fixture, a.mode, a.dir))
    except Exception:  # noqa: BLE001
        check(f"[{a.mode}] the run finished without an exception", False, traceback.format_exc())
    failed = sum(1 for _, ok, _ in results if not ok)
    print(f"{len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

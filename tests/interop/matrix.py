#!/usr/bin/env python3
"""The settings matrix: the built server driven by both official SDKs (TypeScript and Python,
matrix_client.mjs / matrix_client.py), over stdio and streamable HTTP, under the settings users
actually have. Every cell lists the tools and runs one TypeScript and one Python execution that
call the fixture upstream (20 + 22 through `fx.add`), and checks the answers.

Rows (each one in all four columns: {TS SDK, Python SDK} x {stdio, HTTP}):
  - RUST_LOG unset, trace, warn, error, off, code_executor_mcp=warn (as root): the full
    cross product, since a log level once stopped the server right after `initialize`;
  - then one setting at a time, at the default log level: an unprivileged user; HOME unset;
    HOME read-only (a read-only mount as root, a home it cannot write as the user); no
    `python3` on PATH (the server finds /usr/bin/python3 itself); no Python installed at all
    (hidden by a mount: Python executions fail with an error that says what to do, TypeScript
    still works);
  - with --container-stdio / --container-url instead: the container image, run with the
    documented flags (tests/cli/container.rs), over stdio (`podman run -i`) and HTTP.

Every client and server gets a clean environment, as started from a user's shell (PATH, HOME,
USER, LOGNAME; no variable of the test run). Cells run in parallel (--jobs). Prints one table
of the cells and their results, then each failure in full; exits 1 when any cell failed.

    matrix.py --exe target/debug/code-executor-mcp --fixture target/debug/fixture-server \
              --prefix /tmp/code-executor-interop [--jobs 4] [--only ROW-SUBSTRING]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# By their full paths: some rows' PATH holds nothing.
UNSHARE = shutil.which("unshare", path=SYSTEM_PATH) or "unshare"
SH = shutil.which("sh", path=SYSTEM_PATH) or "/bin/sh"
SETPRIV = shutil.which("setpriv", path=SYSTEM_PATH) or "setpriv"
MOUNT = shutil.which("mount", path=SYSTEM_PATH) or "mount"
# The unprivileged user the user rows run as (exists on every Debian and Ubuntu).
USER = "nobody"
# A cell's client gets this long for everything (connect, list, two executions).
CELL_TIMEOUT_S = 150
# A server gets this long to answer /readyz with 200.
READY_TIMEOUT_S = 60
TS_CODE = "const r = await tools.fx.add({a: 20, b: 22}); return r.sum"
PY_CODE = "r = tools.fx.add(a=20, b=22)\nint(r['sum'])"
OUR_TOOLS = {"execute_typescript", "execute_python", "search_tools", "get_tool_schema", "list_servers", "health"}
COLUMNS = [("ts", "stdio"), ("ts", "http"), ("py", "stdio"), ("py", "http")]

# Run before the server in a mount namespace of its own (root only): `$0` is the argument
# after the script, "$@" the server's command.
READ_ONLY_HOME = f'{MOUNT} --bind "$0" "$0" && {MOUNT} -o remount,bind,ro "$0" && exec "$@"'
NO_PYTHON = (
    'for p in /usr/bin/python3* /usr/local/bin/python3*; do '
    f'if [ -e "$p" ]; then {MOUNT} --bind /dev/null "$p" || exit 1; fi; done; exec "$@"'
)


@dataclasses.dataclass
class Row:
    name: str
    # RUST_LOG, or None: unset.
    log: str | None = None
    # Run client and server as the unprivileged user.
    user: bool = False
    # "own" (a fresh writable home), "unset", "ro-mount" (root), "ro-owned" (the user's home
    # is root's, mode 0555)
    home: str = "own"
    # PATH of client and server (None: the system's).
    path: str | None = None
    # Before the server's command (a mount namespace of its own).
    wrap: list[str] = dataclasses.field(default_factory=list)
    # Python executions fail with a clear error instead of answering 42.
    no_python: bool = False
    # Container: the stdio command, or the HTTP URL and token.
    container_stdio: list[str] | None = None
    container_url: str | None = None
    token: str | None = None
    needs_root: bool = False


@dataclasses.dataclass
class Result:
    row: str
    sdk: str
    transport: str
    ok: bool
    summary: str
    detail: str = ""
    seconds: float = 0.0


def rows(args: argparse.Namespace, work: str) -> list[Row]:
    if args.container_stdio or args.container_url:
        out = [Row(name, container_stdio=cmd) for name, cmd in json.loads(args.container_stdio or "{}").items()]
        if args.container_url:
            out.append(Row("container, serve --http", container_url=args.container_url, token=args.token))
        return out
    no_python_bin = os.path.join(work, "bin-without-python")
    os.makedirs(no_python_bin, exist_ok=True)
    os.chmod(no_python_bin, 0o755)
    levels = [None, "trace", "warn", "error", "off", "code_executor_mcp=warn"]
    out = [Row(f"root, RUST_LOG={lv if lv is not None else '(unset)'}", log=lv) for lv in levels]
    out += [
        Row(f"user {USER}", user=True, needs_root=True),
        Row(f"user {USER}, RUST_LOG=warn", user=True, log="warn", needs_root=True),
        Row("HOME unset", home="unset"),
        Row("HOME read-only (ro mount)", home="ro-mount", needs_root=True),
        Row(f"HOME read-only (user {USER})", home="ro-owned", user=True, needs_root=True),
        Row("no python3 on PATH", path=no_python_bin),
        Row("no Python installed", path=no_python_bin, no_python=True, needs_root=True,
            wrap=[UNSHARE, "-m", "--", SH, "-c", NO_PYTHON, "sh"]),
    ]
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ready(base: str, audit_unwritable: bool) -> bool:
    """Whether the server answers /readyz as it should: 200, or, where its home gives the audit
    log no writable place, 503 naming the audit log (a deployment is told; it serves on)."""
    try:
        with urllib.request.urlopen(f"{base}/readyz", timeout=5) as r:
            return r.status == 200 and not audit_unwritable
    except urllib.error.HTTPError as e:
        if e.code != 503 or not audit_unwritable:
            return False
        problems = json.loads(e.read() or b"{}").get("problems", [])
        return any("audit log" in p for p in problems)
    except OSError:
        return False


class Cell:
    def __init__(self, args: argparse.Namespace, work: str, row: Row, sdk: str, transport: str):
        self.args, self.row, self.sdk, self.transport = args, row, sdk, transport
        self.dir = tempfile.mkdtemp(prefix=f"{sdk}-{transport}-", dir=work)
        os.chmod(self.dir, 0o755)
        self.uid = pwd.getpwnam(USER).pw_uid if row.user else None
        self.gid = pwd.getpwnam(USER).pw_gid if row.user else None

    def env(self) -> dict[str, str]:
        user = USER if self.row.user else pwd.getpwuid(os.geteuid()).pw_name
        env = {"PATH": self.row.path or SYSTEM_PATH, "USER": user, "LOGNAME": user, "LANG": "C.UTF-8"}
        home = os.path.join(self.dir, "home")
        if self.row.home != "unset":
            os.makedirs(home, exist_ok=True)
            env["HOME"] = home
            if self.row.home == "ro-owned":
                os.chmod(home, 0o555)  # root's, and the user may not write it
            elif self.uid is not None:
                os.chown(home, self.uid, self.gid)
        if self.row.log is not None:
            env["RUST_LOG"] = self.row.log
        if self.row.container_stdio and os.environ.get("CONTAINERS_CONF"):
            env["CONTAINERS_CONF"] = os.environ["CONTAINERS_CONF"]
        return env

    def as_user(self) -> list[str]:
        if self.uid is None:
            return []
        return [SETPRIV, f"--reuid={self.uid}", f"--regid={self.gid}", "--clear-groups", "--"]

    def server_command(self) -> list[str]:
        if self.row.container_stdio:
            return self.row.container_stdio
        wrap = self.row.wrap
        if self.row.home == "ro-mount":
            wrap = [UNSHARE, "-m", "--", SH, "-c", READ_ONLY_HOME, os.path.join(self.dir, "home")]
        return wrap + [self.args.exe, "--config", self.args.config, "--no-discover"]

    def run(self) -> Result:
        started = time.monotonic()
        try:
            ok, summary, detail = self.drive()
        except Exception as e:  # noqa: BLE001
            ok, summary, detail = False, f"harness error: {e}", ""
        return Result(self.row.name, self.sdk, self.transport, ok, summary, detail, time.monotonic() - started)

    def drive(self) -> tuple[bool, str, str]:
        env = self.env()
        spec: dict = {"transport": self.transport, "ts": TS_CODE, "py": PY_CODE, "sdk": self.args.ts_sdk}
        server = None
        server_log = os.path.join(self.dir, "server.log")
        if self.transport == "stdio":
            spec["command"] = self.server_command()
        elif self.row.container_url:
            spec["url"], spec["token"] = self.row.container_url, self.row.token
        else:
            port = free_port()
            base = f"http://127.0.0.1:{port}"
            with open(server_log, "w") as log:
                server = subprocess.Popen(
                    self.as_user() + self.server_command() + ["serve", "--http", f"127.0.0.1:{port}"],
                    env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log,
                    start_new_session=True,
                )
            deadline = time.monotonic() + READY_TIMEOUT_S
            # With no home, or one it cannot write, the audit log has no place: /readyz says
            # so (503 naming it) and the server still serves.
            audit_unwritable = self.row.home in ("unset", "ro-mount", "ro-owned")
            while not ready(base, audit_unwritable):
                if server.poll() is not None or time.monotonic() > deadline:
                    return False, f"HTTP server not ready (exit {server.poll()})", tail(server_log)
                time.sleep(0.05)
            spec["url"] = f"{base}/mcp"
        try:
            client = (
                [self.args.node, os.path.join(HERE, "matrix_client.mjs")]
                if self.sdk == "ts"
                else [self.args.python, os.path.join(HERE, "matrix_client.py")]
            )
            client_log = os.path.join(self.dir, "client.log")
            with open(client_log, "w") as log:
                done = subprocess.run(
                    self.as_user() + client + [json.dumps(spec)],
                    env=env, cwd=self.dir, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log,
                    timeout=CELL_TIMEOUT_S, text=True,
                )
            line = next((ln for ln in done.stdout.splitlines() if ln.startswith("MATRIX ")), None)
            if done.returncode != 0 or line is None:
                return False, f"client exit {done.returncode}", tail(client_log) + tail(server_log)
            ok, summary = self.judge(json.loads(line[len("MATRIX "):]))
            return ok, summary, "" if ok else line[:3000] + "\n" + tail(client_log) + tail(server_log)
        finally:
            if server is not None:
                # Served until now (the client's calls were answered); SIGTERM ends it cleanly.
                alive = server.poll() is None
                if alive:
                    server.send_signal(signal.SIGTERM)
                try:
                    code = server.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    os.killpg(server.pid, signal.SIGKILL)
                    code = "killed"
                if not alive or code != 0:
                    raise RuntimeError(f"HTTP server: alive until SIGTERM {alive}, exit {code}\n{tail(server_log)}")

    def judge(self, out: dict) -> tuple[bool, str]:
        missing = OUR_TOOLS - set(out.get("tools", []))
        if missing:
            return False, f"tools missing: {sorted(missing)}"
        ts = out["ts"]
        if ts["isError"] or (ts["structured"] or {}).get("result") != 42:
            return False, "TypeScript: not 42"
        py = out["py"]
        if self.row.no_python:
            error = (py["structured"] or {}).get("error", {}).get("message", "") or py["text"]
            # The error names what is missing and the two ways to name an interpreter.
            clear = py["isError"] and all(w in error for w in ("python3", "--python", "CODE_EXECUTOR_PYTHON"))
            if not clear:
                return False, f"Python: no clear error: {error[:200]!r}"
            return True, f"{len(out['tools'])} tools, TS 42, Py error: {error[:150]!r}"
        if py["isError"] or (py["structured"] or {}).get("result") != 42:
            return False, "Python: not 42"
        return True, f"{len(out['tools'])} tools, TS 42, Py 42"


def tail(path: str, n: int = 4000) -> str:
    try:
        with open(path, errors="replace") as f:
            text = f.read()
    except OSError:
        return ""
    return f"\n--- {os.path.basename(path)} (last {n} chars) ---\n{text[-n:]}"


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--exe", default=None, help="the server (not with --container-*)")
    p.add_argument("--fixture", default=None)
    p.add_argument("--prefix", required=True)
    p.add_argument("--jobs", type=int, default=4)
    p.add_argument("--only", default=None, help="run the rows whose name contains this")
    p.add_argument("--container-stdio", default=None,
                   help='JSON {"row name": [command of a stdio server in the image]}')
    p.add_argument("--container-url", default=None)
    p.add_argument("--token", default=None)
    p.add_argument("--report", default=None, help="also write the table and results to this file")
    args = p.parse_args()
    args.node = shutil.which("node") or "node"
    args.python = os.path.join(args.prefix, "venv/bin/python")
    args.ts_sdk = os.path.join(args.prefix, "ts-sdk/node_modules/@modelcontextprotocol/sdk")
    container = bool(args.container_stdio or args.container_url)
    if not container and not (args.exe and args.fixture):
        p.error("--exe and --fixture, or --container-stdio / --container-url")
    for need in (args.python, args.ts_sdk) + (() if container else (args.exe, args.fixture)):
        if not os.path.exists(need):
            print(f"matrix: {need} is missing (scripts/setup-interop.sh installs the SDKs)", file=sys.stderr)
            return 1
    root = os.geteuid() == 0
    # One directory for every cell, readable by the unprivileged user: the binaries' copies
    # (the build's directory may not be), the config, each cell's home and logs.
    work = tempfile.mkdtemp(prefix="cem-matrix-")
    os.chmod(work, 0o755)
    try:
        for name in () if container else ("exe", "fixture"):
            copy = os.path.join(work, os.path.basename(getattr(args, name)))
            shutil.copy2(getattr(args, name), copy)
            os.chmod(copy, 0o755)
            setattr(args, name, copy)
        args.config = os.path.join(work, "mcp.json")
        with open(args.config, "w") as f:
            json.dump({"mcpServers": {"fx": {"command": args.fixture or "", "args": ["fx"]}}}, f)
        os.chmod(args.config, 0o644)
        table = [r for r in rows(args, work) if args.only is None or args.only in r.name]
        cells, skipped = [], []
        for row in table:
            if row.needs_root and not root:
                skipped.append(row.name)
                continue
            for sdk, transport in COLUMNS:
                # A container row is one transport: its stdio command, or its URL.
                if (row.container_stdio and transport != "stdio") or (row.container_url and transport != "http"):
                    continue
                cells.append(Cell(args, work, row, sdk, transport))
        started = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            results = list(pool.map(lambda c: c.run(), cells))
        text = report(table, results, skipped, time.monotonic() - started)
        print(text, flush=True)
        if args.report:
            with open(args.report, "w") as f:
                f.write(text)
        # Not being root is a fact of the machine, not of the sandbox: a loud skip (README,
        # "Tests"), never a failure; CI runs as root (the container tests need it too).
        return 0 if all(r.ok for r in results) else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


def report(table: list[Row], results: list[Result], skipped: list[str], seconds: float) -> str:
    by = {(r.row, r.sdk, r.transport): r for r in results}
    width = max(len(r.name) for r in table) if table else 10
    head = f"{'setting':<{width}} | " + " | ".join(f"{s.upper() + ' ' + t:<8}" for s, t in COLUMNS)
    lines = [f"settings matrix: {len(results)} cells in {seconds:.0f} s", head, "-" * len(head)]
    for row in table:
        if row.name in skipped:
            lines.append(f"{row.name:<{width}} | SKIP: needs root")
            continue
        marks = []
        for s, t in COLUMNS:
            r = by.get((row.name, s, t))
            marks.append(f"{'-' if r is None else ('PASS' if r.ok else 'FAIL'):<8}")
        lines.append(f"{row.name:<{width}} | " + " | ".join(marks))
    lines.append("")
    for r in results:
        lines.append(f"{'PASS' if r.ok else 'FAIL'}  {r.row} / {r.sdk} {r.transport}: {r.summary} ({r.seconds:.1f} s)")
    for r in results:
        if not r.ok:
            lines.append(f"\n==== FAIL {r.row} / {r.sdk} {r.transport}: {r.summary}\n{r.detail}")
    if skipped:
        lines.append(f"\n==================== SKIP (not root): {', '.join(skipped)} ====================")
    passed = sum(r.ok for r in results)
    lines.append(f"\n{passed} passed, {len(results) - passed} failed")
    return "\n".join(line.rstrip() for line in lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())

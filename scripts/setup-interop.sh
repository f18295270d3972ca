#!/usr/bin/env bash
# Installs what the interop tests need, offline-ready, under one PREFIX
# (default $CODE_EXECUTOR_INTEROP or /tmp/code-executor-interop), from npm and PyPI only:
#   - reference MCP servers: server-everything, -filesystem, -memory (npm);
#     mcp-server-time, mcp-server-git (PyPI)
#   - the official Python MCP SDK (the client our tests drive the server with)
#   - FastMCP's client, in a venv of its own (its skills client reads our skills over the
#     MCP skills extension: tests/interop/skills_fastmcp.py)
#   - the official TypeScript MCP SDK, at PREFIX/ts-sdk (the other real client of the
#     matrix of settings users run with: tests/interop/matrix.py)
#   - the type checkers of `check: true` (tests/execution/types.rs): TypeScript 7 (its native
#     tsc) and pyright at PREFIX/checkers (npm), ty and mypy in the venv PREFIX/checkers-venv
#   - the MCP conformance suite (0.1.13: the last release that runs on Node 20) and
#     supergateway (conformance only speaks HTTP; it bridges our stdio server)
#   - the MCP clients whose trust rules we follow (Claude Code, Gemini CLI, Codex; npm), to
#     cross-check their `mcp list` against ours (tests/cli/client_trust.rs)
#   - GitHub's OpenAPI document (@octokit/openapi) and the Prism mock server
#     (@stoplight/prism-cli) at PREFIX/openapi, for the OpenAPI sources' tests
#   - fixtures the upstreams work on, and PREFIX/upstreams.json ({"mcpServers": ...})
#   - the packaging tools of the install tests (maturin, uv, pipx; scripts/setup-dist-tools.sh)
#   - kubernetes-validate, and a check for kustomize (scripts/setup-deploy-tools.sh)
#     and tmux (the terminal `setup`'s prompts are tested in; apt when missing)
#   - HAProxy, which the replicas tests run behind (apt when missing)
#   - Debian's Chromium (apt when missing) and playwright-core at PREFIX/browser (npm), which
#     drive the approvals inbox's page in a real browser (tests/execution/inbox.rs)
# Idempotent: what is already there is kept.
set -euo pipefail

PREFIX="${1:-${CODE_EXECUTOR_INTEROP:-/tmp/code-executor-interop}}"
mkdir -p "$PREFIX"
PREFIX="$(cd "$PREFIX" && pwd)"
PY="${PYTHON:-python3}"

# Pinned versions, known to work together (bump deliberately).
EVERYTHING_VER="2026.8.31"
FILESYSTEM_VER="2026.8.31"
MEMORY_VER="2026.8.31"
CONFORMANCE_VER="0.1.13"
SUPERGATEWAY_VER="4.0.0"
MCP_PY_VER="2.3.0"
TIME_VER="2026.10.19"
CLAUDE_CODE_VER="2.1.197"
GEMINI_CLI_VER="0.61.0"
CODEX_VER="0.169.0"
GIT_VER="2026.10.19"
TS_SDK_VER="1.32.2"
FASTMCP_VER="4.2.3"
PYYAML_VER="6.0.4"
TYPESCRIPT_VER="7.0.2"
PYRIGHT_VER="1.1.414"
TY_VER="0.0.108"
MYPY_VER="2.4.1"
PLAYWRIGHT_CORE_VER="1.65.1"
OCTOKIT_OPENAPI_VER="23.0.2"
PRISM_VER="5.16.0"

log() { printf '[setup-interop] %s\n' "$*" >&2; }

mkdir -p "$PREFIX/npm"
[ -f "$PREFIX/npm/package.json" ] || printf '{"name":"code-executor-interop","private":true}\n' > "$PREFIX/npm/package.json"
if [ ! -f "$PREFIX/npm/node_modules/supergateway/package.json" ] \
   || [ ! -f "$PREFIX/npm/node_modules/@modelcontextprotocol/conformance/package.json" ]; then
  log "npm install reference servers, conformance, supergateway"
  (cd "$PREFIX/npm" && npm install --no-audit --no-fund --loglevel=error \
      "@modelcontextprotocol/server-everything@$EVERYTHING_VER" \
      "@modelcontextprotocol/server-filesystem@$FILESYSTEM_VER" \
      "@modelcontextprotocol/server-memory@$MEMORY_VER" \
      "@modelcontextprotocol/conformance@$CONFORMANCE_VER" \
      "supergateway@$SUPERGATEWAY_VER")
fi

mkdir -p "$PREFIX/clients"
[ -f "$PREFIX/clients/package.json" ] || printf '{"name":"code-executor-clients","private":true}\n' > "$PREFIX/clients/package.json"
if [ ! -x "$PREFIX/clients/node_modules/.bin/claude" ] || [ ! -x "$PREFIX/clients/node_modules/.bin/gemini" ] \
   || [ ! -x "$PREFIX/clients/node_modules/.bin/codex" ]; then
  log "npm install Claude Code, Gemini CLI, Codex (their mcp list cross-checks our trust rules)"
  (cd "$PREFIX/clients" && npm install --no-audit --no-fund --loglevel=error \
      "@anthropic-ai/claude-code@$CLAUDE_CODE_VER" \
      "@google/gemini-cli@$GEMINI_CLI_VER" \
      "@openai/codex@$CODEX_VER")
fi

mkdir -p "$PREFIX/openapi"
[ -f "$PREFIX/openapi/package.json" ] || printf '{"name":"code-executor-openapi","private":true}\n' > "$PREFIX/openapi/package.json"
if [ ! -x "$PREFIX/openapi/node_modules/.bin/prism" ] \
   || [ ! -f "$PREFIX/openapi/node_modules/@octokit/openapi/generated/api.github.com.json" ]; then
  log "npm install GitHub's OpenAPI document and the Prism mock server (OpenAPI sources' tests)"
  (cd "$PREFIX/openapi" && npm install --no-audit --no-fund --loglevel=error \
      "@octokit/openapi@$OCTOKIT_OPENAPI_VER" \
      "@stoplight/prism-cli@$PRISM_VER")
fi

mkdir -p "$PREFIX/ts-sdk"
[ -f "$PREFIX/ts-sdk/package.json" ] || printf '{"name":"code-executor-ts-sdk","private":true,"type":"module"}\n' > "$PREFIX/ts-sdk/package.json"
if ! grep -qs "\"version\": \"$TS_SDK_VER\"" "$PREFIX/ts-sdk/node_modules/@modelcontextprotocol/sdk/package.json"; then
  log "npm install @modelcontextprotocol/sdk@$TS_SDK_VER (the TypeScript client of the matrix)"
  (cd "$PREFIX/ts-sdk" && npm install --no-audit --no-fund --loglevel=error \
      "@modelcontextprotocol/sdk@$TS_SDK_VER")
fi

if [ ! -x "$PREFIX/venv/bin/python" ]; then
  log "python venv at $PREFIX/venv"
  "$PY" -m venv "$PREFIX/venv"
fi
if ! "$PREFIX/venv/bin/python" -c 'import mcp, mcp_server_time, mcp_server_git' 2>/dev/null; then
  log "pip install mcp==$MCP_PY_VER mcp-server-time mcp-server-git"
  "$PREFIX/venv/bin/pip" install -q "mcp==$MCP_PY_VER" "mcp-server-time==$TIME_VER" "mcp-server-git==$GIT_VER"
fi

# A venv of its own: FastMCP pins its own versions of what the SDK's venv holds.
if ! grep -qs "^Version: $FASTMCP_VER$" "$PREFIX"/fastmcp/lib/python3*/site-packages/fastmcp_slim-*.dist-info/METADATA; then
  log "pip install fastmcp-slim[client]==$FASTMCP_VER (its skills client) at $PREFIX/fastmcp"
  "$PY" -m venv "$PREFIX/fastmcp"
  "$PREFIX/fastmcp/bin/pip" install -q "fastmcp-slim[client]==$FASTMCP_VER" "pyyaml==$PYYAML_VER"
fi

mkdir -p "$PREFIX/checkers"
[ -f "$PREFIX/checkers/package.json" ] || printf '{"name":"code-executor-checkers","private":true}\n' > "$PREFIX/checkers/package.json"
if ! grep -qs "\"version\": \"$TYPESCRIPT_VER\"" "$PREFIX/checkers/node_modules/typescript/package.json" \
   || ! grep -qs "\"version\": \"$PYRIGHT_VER\"" "$PREFIX/checkers/node_modules/pyright/package.json"; then
  log "npm install typescript@$TYPESCRIPT_VER pyright@$PYRIGHT_VER (type checkers of check: true)"
  (cd "$PREFIX/checkers" && npm install --no-audit --no-fund --loglevel=error \
      "typescript@$TYPESCRIPT_VER" "pyright@$PYRIGHT_VER")
fi
if ! "$PREFIX/checkers-venv/bin/ty" --version 2>/dev/null | grep -q "$TY_VER" \
   || ! "$PREFIX/checkers-venv/bin/mypy" --version 2>/dev/null | grep -q "$MYPY_VER"; then
  log "pip install ty==$TY_VER mypy==$MYPY_VER at $PREFIX/checkers-venv"
  "$PY" -m venv "$PREFIX/checkers-venv"
  "$PREFIX/checkers-venv/bin/pip" install -q "ty==$TY_VER" "mypy==$MYPY_VER"
fi

mkdir -p "$PREFIX/data/fs-root/docs"
[ -f "$PREFIX/data/fs-root/README.txt" ] || printf 'fixture root for server-filesystem\n' > "$PREFIX/data/fs-root/README.txt"
[ -f "$PREFIX/data/fs-root/docs/notes.md" ] || printf '# Notes\n\nhello from the interop fixtures\n' > "$PREFIX/data/fs-root/docs/notes.md"
if [ ! -d "$PREFIX/data/git-repo/.git" ]; then
  mkdir -p "$PREFIX/data/git-repo"
  (cd "$PREFIX/data/git-repo" && git init -q -b main && printf 'hello\n' > hello.txt && git add hello.txt \
     && git -c user.name=interop -c user.email=interop@localhost commit -q -m "initial commit")
fi
touch "$PREFIX/data/memory.jsonl"

NM="$PREFIX/npm/node_modules/@modelcontextprotocol"
cat > "$PREFIX/upstreams.json" <<JSON
{
  "mcpServers": {
    "everything": {"command": "node", "args": ["$NM/server-everything/dist/index.js", "stdio"]},
    "filesystem": {"command": "node", "args": ["$NM/server-filesystem/dist/index.js", "$PREFIX/data/fs-root"]},
    "memory": {"command": "node", "args": ["$NM/server-memory/dist/index.js"], "env": {"MEMORY_FILE_PATH": "$PREFIX/data/memory.jsonl"}},
    "time": {"command": "$PREFIX/venv/bin/python", "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]},
    "git": {"command": "$PREFIX/venv/bin/python", "args": ["-m", "mcp_server_git", "--repository", "$PREFIX/data/git-repo"]}
  }
}
JSON
bash "$(dirname "$0")/setup-dist-tools.sh" "$PREFIX"
bash "$(dirname "$0")/setup-deploy-tools.sh" "$PREFIX"
if ! command -v tmux >/dev/null 2>&1; then
  log "apt-get install tmux (setup's prompts are tested in a real terminal)"
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq tmux >/dev/null
fi

# HAProxy (Debian's, 2.6 or later): the replicas tests run behind it with the shipped
# configuration (deploy/haproxy/haproxy.cfg; tests/server/replicas.rs), and
# `code-executor-mcp bench --http --via-haproxy` measures through it.
if ! command -v haproxy >/dev/null 2>&1 && [ ! -x /usr/sbin/haproxy ]; then
  log "apt-get install haproxy (the replicas tests run behind it)"
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq haproxy >/dev/null
fi

# The approvals inbox's page in a real browser: Debian's Chromium, driven headless by
# playwright-core (no browser download of its own; tests/execution/inbox_browser.cjs).
if ! command -v chromium >/dev/null 2>&1 && [ ! -x /usr/bin/chromium ]; then
  log "apt-get install chromium (the approvals page is tested in a real browser)"
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi
mkdir -p "$PREFIX/browser"
[ -f "$PREFIX/browser/package.json" ] || printf '{"name":"code-executor-browser","private":true}\n' > "$PREFIX/browser/package.json"
if ! grep -qs "\"version\": \"$PLAYWRIGHT_CORE_VER\"" "$PREFIX/browser/node_modules/playwright-core/package.json"; then
  log "npm install playwright-core@$PLAYWRIGHT_CORE_VER (drives Chromium for the approvals page's test)"
  (cd "$PREFIX/browser" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install --no-audit --no-fund --loglevel=error \
      "playwright-core@$PLAYWRIGHT_CORE_VER")
fi

touch "$PREFIX/.ready"
log "ready: $PREFIX"

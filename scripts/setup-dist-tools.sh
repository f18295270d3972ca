#!/usr/bin/env bash
# Installs the packaging tools the install tests need (tests/cli/install.rs), from PyPI only, into
# PREFIX/dist-tools (default $CODE_EXECUTOR_INTEROP/dist-tools):
#   - maturin: builds the wheel (bindings = "bin", as ruff and uv ship)
#   - uv (uvx) and pipx: the two ways users start a Python-packaged MCP server
# npm and npx come with Node.js. Idempotent; called by scripts/setup-interop.sh.
set -euo pipefail

PREFIX="${1:-${CODE_EXECUTOR_INTEROP:-/tmp/code-executor-interop}}"
mkdir -p "$PREFIX"
PREFIX="$(cd "$PREFIX" && pwd)"
PY="${PYTHON:-python3}"

# Pinned versions, known to work together (bump deliberately).
MATURIN_VER="1.16.0"
UV_VER="0.13.9"
PIPX_VER="1.18.4"

TOOLS="$PREFIX/dist-tools"
if [ ! -x "$TOOLS/bin/python" ]; then
  printf '[setup-dist-tools] python venv at %s\n' "$TOOLS" >&2
  "$PY" -m venv "$TOOLS"
fi
if [ ! -x "$TOOLS/bin/maturin" ] || [ ! -x "$TOOLS/bin/uvx" ] || [ ! -x "$TOOLS/bin/pipx" ]; then
  printf '[setup-dist-tools] pip install maturin==%s uv==%s pipx==%s\n' "$MATURIN_VER" "$UV_VER" "$PIPX_VER" >&2
  "$TOOLS/bin/pip" install -q "maturin==$MATURIN_VER" "uv==$UV_VER" "pipx==$PIPX_VER"
fi
printf '[setup-dist-tools] ready: %s/bin/{maturin,uvx,pipx}\n' "$TOOLS" >&2

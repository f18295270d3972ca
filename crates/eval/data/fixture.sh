#!/usr/bin/env bash
# Builds the data the reference eval tasks run on, the same on every machine, and a config of
# the five reference servers over it: OUT/upstreams.json (see docs/eval.md). `eval --fixture
# OUT` runs this same script (it is built into the binary), so the source tree is not needed.
#   scripts/eval-fixture.sh OUT [PREFIX]    (or: bash crates/eval/data/fixture.sh)
#   - OUT/fs-root: a small project tree (62 files: sources, docs in Markdown, data)
#   - OUT/git-repo: a repository of 12 commits by 3 authors, at fixed dates (same hashes)
#   - OUT/memory.jsonl: an empty knowledge graph
# The servers come from PREFIX (default $CODE_EXECUTOR_INTEROP, else /tmp/code-executor-interop)
# when it holds them (npm/node_modules/@modelcontextprotocol/server-{everything,filesystem,memory}
# and venv/bin/python with mcp_server_time and mcp_server_git, as scripts/setup-interop.sh
# installs them, any prefix of that layout); else from npx and uvx, at the same versions.
# Needs git, and node (with npx) and uvx unless PREFIX has the servers. OUT is replaced: it
# must be new, empty, or an earlier fixture.
set -euo pipefail
OUT="${1:?usage: eval-fixture.sh OUT [PREFIX]}"
PREFIX="${2:-${CODE_EXECUTOR_INTEROP:-/tmp/code-executor-interop}}"
# The versions scripts/setup-interop.sh installs.
EVERYTHING_VER="2026.8.31"
FILESYSTEM_VER="2026.8.31"
MEMORY_VER="2026.8.31"
TIME_VER="2026.10.19"
GIT_VER="2026.10.19"
need() {
  echo "eval-fixture: $1" >&2
  exit 1
}
if [ -e "$OUT" ] && [ -n "$(ls -A "$OUT" 2>/dev/null)" ] && ! { [ -f "$OUT/upstreams.json" ] && [ -d "$OUT/fs-root" ]; }; then
  need "$OUT is not empty and not an earlier fixture: give a new or empty directory (it is replaced)"
fi
command -v git >/dev/null || need "needs git on PATH (to build the fixture repository)"
NPM="$PREFIX/npm/node_modules/@modelcontextprotocol"
from_prefix=1
for pkg in server-everything server-filesystem server-memory; do
  [ -f "$NPM/$pkg/dist/index.js" ] || from_prefix=0
done
if [ "$from_prefix" = 1 ]; then
  "$PREFIX/venv/bin/python" -c 'import mcp_server_time, mcp_server_git' 2>/dev/null || from_prefix=0
fi
if [ "$from_prefix" = 1 ]; then
  command -v node >/dev/null || need "needs node on PATH (the npm reference servers in $PREFIX run on it)"
  echo "eval-fixture: the servers of $PREFIX" >&2
else
  missing=""
  command -v npx >/dev/null || missing="$missing node (with npx),"
  command -v uvx >/dev/null || missing="$missing uv (uvx),"
  if [ -n "$missing" ]; then
    need "needs${missing%,} on PATH to fetch the five reference servers (npm: @modelcontextprotocol/server-everything, -filesystem, -memory; PyPI: mcp-server-time, mcp-server-git), or a PREFIX that holds them (scripts/setup-interop.sh PREFIX installs them; $PREFIX does not)"
  fi
  echo "eval-fixture: no reference servers in $PREFIX: fetching them with npx and uvx (once; they are cached)" >&2
  for pkg in "server-everything@$EVERYTHING_VER" "server-filesystem@$FILESYSTEM_VER" "server-memory@$MEMORY_VER"; do
    npx -y -p "@modelcontextprotocol/$pkg" -c true >/dev/null || need "npx could not fetch @modelcontextprotocol/$pkg"
  done
  uvx "mcp-server-time==$TIME_VER" --help >/dev/null || need "uvx could not fetch mcp-server-time==$TIME_VER"
  uvx "mcp-server-git==$GIT_VER" --help >/dev/null || need "uvx could not fetch mcp-server-git==$GIT_VER"
fi
rm -rf "$OUT"
mkdir -p "$OUT/fs-root"
OUT="$(cd "$OUT" && pwd)"
FS="$OUT/fs-root"
for area in api billing search; do
  mkdir -p "$FS/src/$area" "$FS/docs/$area" "$FS/data/$area"
  for i in 1 2 3 4 5 6 7 8; do
    printf 'export function %s%d(x: number): number {\n  return x * %d;\n}\n' "$area" "$i" "$i" > "$FS/src/$area/mod$i.ts"
  done
  for i in 1 2 3 4; do
    printf '# %s guide %d\n\n' "$area" "$i" > "$FS/docs/$area/guide$i.md"
    for j in $(seq 1 $((i * 6))); do printf 'Line %d of the %s guide, about configuration and use.\n' "$j" "$area" >> "$FS/docs/$area/guide$i.md"; done
  done
  for i in 1 2 3 4 5 6 7 8; do
    printf '{"id": %d, "area": "%s", "values": [%d, %d, %d]}\n' "$i" "$area" "$i" "$((i * 2))" "$((i * 3))" > "$FS/data/$area/rec$i.json"
  done
done
printf '# Project\n\nA fixture tree for the eval tasks.\n' > "$FS/README.md"
printf 'MIT\n' > "$FS/LICENSE"

mkdir -p "$OUT/git-repo"
(
  cd "$OUT/git-repo"
  # The same repository everywhere: no user or system git configuration (signing, hooks).
  export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
  git init -q -b main
  authors=("Ada Lovelace <ada@example.com>" "Grace Hopper <grace@example.com>" "Alan Turing <alan@example.com>")
  for i in $(seq 1 12); do
    a="${authors[$((i % 3))]}"
    printf 'change %d\n' "$i" >> changes.txt
    git add changes.txt
    d="2026-01-$(printf %02d "$i")T10:00:00Z"
    GIT_AUTHOR_DATE="$d" GIT_COMMITTER_DATE="$d" git -c user.name="${a% <*}" -c user.email="$(echo "$a" | sed 's/.*<\(.*\)>/\1/')" \
      commit -q --author="$a" -m "Change $i: $(echo "tune parser fix cache docs refactor" | cut -d' ' -f$((i % 5 + 1))) step $i"
  done
)
: > "$OUT/memory.jsonl"

if [ "$from_prefix" = 1 ]; then
  cat > "$OUT/upstreams.json" <<JSON
{
  "mcpServers": {
    "everything": {"command": "node", "args": ["$NPM/server-everything/dist/index.js", "stdio"]},
    "filesystem": {"command": "node", "args": ["$NPM/server-filesystem/dist/index.js", "$FS"]},
    "memory": {"command": "node", "args": ["$NPM/server-memory/dist/index.js"], "env": {"MEMORY_FILE_PATH": "$OUT/memory.jsonl"}},
    "time": {"command": "$PREFIX/venv/bin/python", "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]},
    "git": {"command": "$PREFIX/venv/bin/python", "args": ["-m", "mcp_server_git", "--repository", "$OUT/git-repo"]}
  }
}
JSON
else
  cat > "$OUT/upstreams.json" <<JSON
{
  "mcpServers": {
    "everything": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything@$EVERYTHING_VER", "stdio"]},
    "filesystem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem@$FILESYSTEM_VER", "$FS"]},
    "memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory@$MEMORY_VER"], "env": {"MEMORY_FILE_PATH": "$OUT/memory.jsonl"}},
    "time": {"command": "uvx", "args": ["mcp-server-time==$TIME_VER", "--local-timezone", "UTC"]},
    "git": {"command": "uvx", "args": ["mcp-server-git==$GIT_VER", "--repository", "$OUT/git-repo"]}
  }
}
JSON
fi
echo "$OUT/upstreams.json"

#!/usr/bin/env bash
# Builds the data the reference eval tasks run on, the same on every machine, and a config of
# the five reference servers over it: OUT/upstreams.json (see docs/eval.md).
#   scripts/eval-fixture.sh OUT [INTEROP_PREFIX]
# Needs scripts/setup-interop.sh's prefix (default $CODE_EXECUTOR_INTEROP or
# /tmp/code-executor-interop). OUT is replaced.
#   - OUT/fs-root: a small project tree (62 files: sources, docs in Markdown, data)
#   - OUT/git-repo: a repository of 12 commits by 3 authors, at fixed dates (same hashes)
#   - OUT/memory.jsonl: an empty knowledge graph
set -euo pipefail
OUT="${1:?usage: eval-fixture.sh OUT [INTEROP_PREFIX]}"
PREFIX="${2:-${CODE_EXECUTOR_INTEROP:-/tmp/code-executor-interop}}"
[ -f "$PREFIX/.ready" ] || { echo "no interop prefix at $PREFIX: run scripts/setup-interop.sh" >&2; exit 1; }
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

NPM="$PREFIX/npm/node_modules/@modelcontextprotocol"
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
echo "$OUT/upstreams.json"

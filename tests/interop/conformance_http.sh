#!/usr/bin/env bash
# The MCP conformance suite's server scenarios against our own HTTP endpoint
# (`serve --http`, loopback, no tokens): the handshake, tools, SSE streams, and DNS
# rebinding protection (a foreign Host/Origin must be refused).
#   conformance_http.sh PREFIX EXE CONFIG
set -euo pipefail
PREFIX="$1"; EXE="$2"; CONFIG="$3"
SCENARIOS=(server-initialize ping tools-list server-sse-multiple-streams dns-rebinding-protection)
NM="$PREFIX/npm/node_modules"
out="$(mktemp -d)"
"$EXE" --config "$CONFIG" --no-discover serve --http 127.0.0.1:0 > /dev/null 2> "$out/server.log" &
server=$!
trap 'kill "$server" 2>/dev/null || true; rm -rf "$out"' EXIT
url=""
for _ in $(seq 1 300); do
  url="$(grep -o 'serving MCP on http://[^ ]*' "$out/server.log" | head -1 | sed 's/serving MCP on //')" || true
  [ -n "$url" ] && break
  sleep 0.1
done
[ -n "$url" ] || { echo "FAIL  the server did not start"; cat "$out/server.log"; exit 1; }
passed=0; failed=0
for s in "${SCENARIOS[@]}"; do
  if node "$NM/@modelcontextprotocol/conformance/dist/index.js" server --url "$url" \
       --scenario "$s" -o "$out/results" > "$out/$s.log" 2>&1; then
    echo "PASS  conformance over HTTP $s"; passed=$((passed + 1))
  else
    echo "FAIL  conformance over HTTP $s"; tail -20 "$out/$s.log"; failed=$((failed + 1))
  fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]

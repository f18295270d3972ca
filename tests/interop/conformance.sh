#!/usr/bin/env bash
# The MCP conformance suite's server scenarios that apply to our capabilities (tools only),
# against our stdio server. Conformance speaks only HTTP, so supergateway bridges stdio.
#   conformance.sh PREFIX EXE CONFIG
set -euo pipefail
PREFIX="$1"; EXE="$2"; CONFIG="$3"
SCENARIOS=(server-initialize ping tools-list)
NM="$PREFIX/npm/node_modules"
out="$(mktemp -d)"
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
node "$NM/supergateway/dist/index.js" --stdio "$EXE --config $CONFIG --no-discover" --outputTransport streamableHttp \
  --stateful --port "$port" --logLevel none > "$out/bridge.log" 2>&1 &
bridge=$!
trap 'kill "$bridge" 2>/dev/null || true; rm -rf "$out"' EXIT
for _ in $(seq 1 100); do
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  sleep 0.1
done
passed=0; failed=0
for s in "${SCENARIOS[@]}"; do
  if node "$NM/@modelcontextprotocol/conformance/dist/index.js" server --url "http://127.0.0.1:$port/mcp" \
       --scenario "$s" -o "$out/results" > "$out/$s.log" 2>&1; then
    echo "PASS  conformance $s"; passed=$((passed + 1))
  else
    echo "FAIL  conformance $s"; tail -20 "$out/$s.log"; failed=$((failed + 1))
  fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]

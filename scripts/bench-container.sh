#!/usr/bin/env bash
# The container benchmark of docs/container.md: builds the image from the release binary,
# starts it with the documented Podman flags, and runs
# `code-executor-mcp bench --container-url` (a trivial execution in the container next to the
# same binary on the host, same run). Extra arguments go to `bench` (e.g. --iterations 50).
# Needs root and podman (scripts/setup-container-tools.sh). CONTAINERS_CONF is honoured, for
# hosts that need runtime settings of their own (see docs/container.md, Tests).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=target/release/code-executor-mcp
[ -x "$bin" ] || cargo build --release -p code-executor-mcp
tag=localhost/code-executor-mcp:bench
bash scripts/build-image.sh --binary "$bin" --tag "$tag" >/dev/null
dir="$(mktemp -d)"
name="code-executor-bench-$$"
cleanup() { podman rm -f -t 2 "$name" >/dev/null 2>&1 || true; rm -rf "$dir"; }
trap cleanup EXIT
token="bench-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"
printf 'bench=%s\n' "$token" >"$dir/tokens"
chown 10001 "$dir/tokens"; chmod 600 "$dir/tokens"
podman run -d --name "$name" -p 127.0.0.1::3333 \
  --read-only --cap-drop=ALL --security-opt=no-new-privileges \
  --security-opt=seccomp=deploy/container/seccomp.json --security-opt=unmask=/proc/* \
  -v "$dir/tokens:/run/secrets/code-executor-tokens:ro" "$tag" >/dev/null
port="$(podman port "$name" 3333 | head -1 | sed 's/.*://')"
CODE_EXECUTOR_BENCH_TOKEN="$token" "$bin" bench --container-url "http://127.0.0.1:$port/mcp" "$@"

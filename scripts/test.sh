#!/usr/bin/env bash
# The project's test command (the README's second command; .ci/run calls it):
# installs the interop harness (reference MCP servers, the Python MCP SDK, the conformance
# suite; npm and PyPI only), then runs every test of the workspace.
set -euo pipefail
cd "$(dirname "$0")/.."
export CODE_EXECUTOR_INTEROP="${CODE_EXECUTOR_INTEROP:-/tmp/code-executor-interop}"
bash scripts/setup-interop.sh "$CODE_EXECUTOR_INTEROP"
# With the harness installed, an interop test that cannot run is a failure, not a skip.
export CODE_EXECUTOR_REQUIRE_INTEROP=1
# setup-interop.sh installs HAProxy: the replicas tests behind it must run, not skip.
export CODE_EXECUTOR_REQUIRE_HAPROXY=1
# The sandbox and escape suites fail, instead of skipping, when this kernel cannot sandbox.
export CODE_EXECUTOR_REQUIRE_SANDBOX=1
# A throw-away PostgreSQL (Debian's package, initdb in a temporary directory) for the store's
# suite and the durable tests: they run against it and SQLite alike, and fail without it.
PG_DIR="$(mktemp -d /tmp/cem-postgres.XXXXXX)"
trap 'bash scripts/setup-postgres.sh --stop "$PG_DIR"; rm -rf "$PG_DIR"' EXIT
PG_ENV="$(bash scripts/setup-postgres.sh "$PG_DIR")"
eval "$PG_ENV"
export CODE_EXECUTOR_REQUIRE_POSTGRES=1
cargo test --workspace "$@"
# The escape suites again (the `escape` binary holds exactly them: escape_js, escape_python,
# escape_site_packages), every execution in a session of its own: a session's worker must be
# as confined as a pooled one (test_support::IN_SESSION).
CODE_EXECUTOR_TEST_IN_SESSION=1 cargo test -p code-executor-mcp --test escape
# And with every pooled worker forked from a template (CODE_EXECUTOR_WORKER_TEMPLATE=1, off
# by default, docs/sandbox.md "Workers forked from a template"): the same escapes must fail.
CODE_EXECUTOR_WORKER_TEMPLATE=1 cargo test -p code-executor-mcp --test escape

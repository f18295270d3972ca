#!/usr/bin/env bash
# Builds the reference eval tasks' data and a config of the five reference servers over it:
#   scripts/eval-fixture.sh OUT [PREFIX]
# The script itself is crates/eval/data/fixture.sh, built into the binary as
# `code-executor-mcp eval --fixture OUT` (docs/eval.md).
exec bash "$(dirname "$0")/../crates/eval/data/fixture.sh" "$@"

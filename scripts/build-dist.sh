#!/usr/bin/env bash
# Builds every install artifact from this checkout, into OUT (default target/dist):
#   OUT/wheels/*.whl     the PyPI wheel (maturin, bindings = "bin"; manylinux for this machine)
#   OUT/npm/*.tgz        the npm launcher and this platform's binary package (`npm pack`)
#   OUT/crates/*.crate   the published crates (`cargo package`)
#   OUT/vendor/          a directory source holding those crates and every dependency of the
#                        packaged lock file, so `cargo install` can build the packaged crate
#                        offline, from local artifacts only (tests/cli/install.rs)
# One release build serves all of them: maturin runs `cargo build --release`, the npm
# package takes that binary. Tools come from scripts/setup-dist-tools.sh (PyPI).
# The release recipe for the other platforms is in packaging/README.md.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$(pwd)"
OUT="${1:-$ROOT/target/dist}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
TOOLS="${CODE_EXECUTOR_DIST_TOOLS:-${CODE_EXECUTOR_INTEROP:-/tmp/code-executor-interop}/dist-tools}"
[ -x "$TOOLS/bin/maturin" ] || { echo "build-dist: no maturin in $TOOLS; run scripts/setup-dist-tools.sh" >&2; exit 1; }
log() { printf '[build-dist] %s\n' "$*" >&2; }

case "$(uname -m)" in
  x86_64) NPM_PLATFORM=linux-x64 ;;
  aarch64 | arm64) NPM_PLATFORM=linux-arm64 ;;
  *) echo "build-dist: no npm platform for $(uname -m)" >&2; exit 1 ;;
esac

log "wheel (maturin; cargo build --release)"
rm -rf "$OUT/wheels"
(cd packaging/pypi && "$TOOLS/bin/maturin" build --release --quiet --out "$OUT/wheels" >&2)
# CARGO_TARGET_DIR may put the target directory anywhere: ask cargo where it is.
TARGET="$(cargo metadata --format-version 1 --no-deps --offline | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
BIN="$TARGET/release/code-executor-mcp"
[ -x "$BIN" ] || { echo "build-dist: $BIN was not built" >&2; exit 1; }

log "npm packages ($NPM_PLATFORM)"
rm -rf "$OUT/npm"
node packaging/npm/build.mjs --out "$OUT/npm" --binary "$NPM_PLATFORM=$BIN" >&2

log "crates (cargo package)"
rm -rf "$OUT/crates" && mkdir -p "$OUT/crates"
CRATES=(code-executor-mcp-worker-protocol code-executor-mcp-sandbox code-executor-mcp-js-worker code-executor-mcp-openapi code-executor-mcp-store code-executor-mcp-policy code-executor-mcp-tools code-executor-mcp-runtime code-executor-mcp-faces code-executor-mcp-bench code-executor-mcp-eval code-executor-mcp)
PKG_ARGS=()
for c in "${CRATES[@]}"; do PKG_ARGS+=(-p "$c"); done
# --no-verify: the install test builds the packaged crate itself; uncommitted edits are
# packaged as they are (the crate's .cargo_vcs_info.json then says "dirty").
cargo package --offline --no-verify --allow-dirty "${PKG_ARGS[@]}" 2>&1 | grep -v '^warning: ignoring test' >&2 || true
VERSION="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)"
for c in "${CRATES[@]}"; do
  cp "$TARGET/package/$c-$VERSION.crate" "$OUT/crates/"
done

log "vendor (directory source for an offline install of the packaged crate)"
rm -rf "$OUT/vendor"
cargo vendor --offline --versioned-dirs --respect-source-config -q "$OUT/vendor" >/dev/null
for c in "${CRATES[@]}"; do
  crate="$OUT/crates/$c-$VERSION.crate"
  tar -xzf "$crate" -C "$OUT/vendor"
  sum="$(sha256sum "$crate" | cut -d' ' -f1)"
  printf '{"files":{},"package":"%s"}\n' "$sum" > "$OUT/vendor/$c-$VERSION/.cargo-checksum.json"
done
log "done: $OUT"

#!/usr/bin/env bash
# Installs what tests/cli/deploy.rs needs to check deploy/kubernetes offline, under PREFIX
# (default $CODE_EXECUTOR_INTEROP or /tmp/code-executor-interop); called by setup-interop.sh.
#   - kubernetes-validate (PyPI; it bundles the Kubernetes JSON schemas, 1.25 to 1.37, so it
#     validates without a cluster or a network) in PREFIX/venv
#   - kustomize: `kubectl kustomize` (kustomize v5) is part of this machine kind's base
#     packages; without it, this script says so and the test fails in CI (no registry we can
#     reach ships kustomize v5: Debian's kubernetes-client has kustomize v2)
# Idempotent.
set -euo pipefail

PREFIX="${1:-${CODE_EXECUTOR_INTEROP:-/tmp/code-executor-interop}}"
PY="${PYTHON:-python3}"
KUBERNETES_VALIDATE_VER="1.37.0"

log() { printf '[setup-deploy-tools] %s\n' "$*" >&2; }

mkdir -p "$PREFIX"
if [ ! -x "$PREFIX/venv/bin/python" ]; then
  "$PY" -m venv "$PREFIX/venv"
fi
if ! "$PREFIX/venv/bin/kubernetes-validate" --version 2>/dev/null | grep -q "$KUBERNETES_VALIDATE_VER"; then
  log "pip install kubernetes-validate==$KUBERNETES_VALIDATE_VER"
  "$PREFIX/venv/bin/pip" install -q "kubernetes-validate==$KUBERNETES_VALIDATE_VER"
fi

if command -v kustomize >/dev/null 2>&1; then
  log "kustomize: $(command -v kustomize)"
elif command -v kubectl >/dev/null 2>&1 && kubectl kustomize --help >/dev/null 2>&1; then
  log "kustomize: kubectl kustomize ($(kubectl version --client 2>/dev/null | grep -i kustomize || echo 'version unknown'))"
else
  log "WARNING: neither kustomize nor kubectl is installed: tests/cli/deploy.rs cannot render deploy/kubernetes"
fi

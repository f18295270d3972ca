#!/usr/bin/env bash
# Installs what the container image build and tests/cli/container.rs need, from Debian packages:
# podman, buildah, debootstrap, podman-compose, and runc (Podman's default runtime crun refuses
# hosts whose cgroups are mounted in hybrid v1/v2 mode; the tests pick runc there).
# Idempotent; needs root and apt (Debian, Ubuntu). .ci/run calls it.
set -euo pipefail
need=()
for tool in podman buildah debootstrap podman-compose runc; do
  command -v "$tool" >/dev/null 2>&1 || need+=("$tool")
done
if [ ${#need[@]} -eq 0 ]; then
  echo "setup-container-tools: podman, buildah, debootstrap, podman-compose, runc present"
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "setup-container-tools: missing ${need[*]}; run as root: apt-get install -y ${need[*]}" >&2
  exit 1
fi
command -v apt-get >/dev/null || { echo "setup-container-tools: no apt-get; install ${need[*]} yourself" >&2; exit 1; }
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq "${need[@]}" >/dev/null
echo "setup-container-tools: installed ${need[*]}"

#!/usr/bin/env bash
# Builds the container image (docs/container.md): the code-executor-mcp binary and Debian's
# CPython on a base built from Debian packages, trimmed to what runs. No registry image is
# pulled: debootstrap fetches .debs from a Debian mirror, the rootfs is assembled here, and
# `podman build` (or buildah, or docker) turns deploy/container/Containerfile (FROM scratch)
# into the image.
#
#   scripts/build-image.sh [--binary PATH] [--tag TAG] [--out DIR] [--builder podman|buildah|docker]
#
#   --binary   the binary to ship (default: target/release/code-executor-mcp, built if missing)
#   --tag      image name (default: localhost/code-executor-mcp:latest)
#   --out      build context directory (default: target/container)
#   --builder  podman (default), buildah or docker; `none` only assembles the context
#
# Environment: CODE_EXECUTOR_IMAGE_SUITE (default bookworm; its glibc must be at least the
# binary's), CODE_EXECUTOR_IMAGE_MIRROR (default http://deb.debian.org/debian),
# CODE_EXECUTOR_IMAGE_CACHE (where the debootstrapped base is kept between builds, default
# /var/tmp/code-executor-mcp-image; delete it to refetch).
#
# Needs root (debootstrap and chroot), debootstrap, and the builder
# (scripts/setup-container-tools.sh installs them on Debian/Ubuntu).
set -euo pipefail
cd "$(dirname "$0")/.."
root_dir=$PWD

binary=""
tag="localhost/code-executor-mcp:latest"
out="target/container"
builder="podman"
while [ $# -gt 0 ]; do
  case "$1" in
    --binary) binary="$2"; shift 2 ;;
    --tag) tag="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --builder) builder="$2"; shift 2 ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "build-image.sh: unknown argument: $1" >&2; exit 2 ;;
  esac
done
suite="${CODE_EXECUTOR_IMAGE_SUITE:-bookworm}"
mirror="${CODE_EXECUTOR_IMAGE_MIRROR:-http://deb.debian.org/debian}"
cache="${CODE_EXECUTOR_IMAGE_CACHE:-/var/tmp/code-executor-mcp-image}"
python="python3.11"
packages="$python,ca-certificates"
uid=10001

say() { echo "build-image: $*" >&2; }
die() { echo "build-image: error: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "run as root (debootstrap and chroot need it), e.g. sudo $0 $*"
command -v debootstrap >/dev/null || die "debootstrap is not installed (scripts/setup-container-tools.sh)"
case "$builder" in
  podman|buildah|docker) command -v "$builder" >/dev/null || die "$builder is not installed (scripts/setup-container-tools.sh)" ;;
  none) ;;
  *) die "--builder must be podman, buildah, docker or none" ;;
esac

if [ -z "$binary" ]; then
  binary=target/release/code-executor-mcp
  if [ ! -x "$binary" ]; then
    say "building the release binary"
    cargo build --release -p code-executor-mcp
  fi
fi
[ -x "$binary" ] || die "$binary is not an executable"
binary="$(realpath "$binary")"

started=$(date +%s)

# 1. The Debian base, debootstrapped once per suite and package list, kept as a tarball.
mkdir -p "$cache"
base_tar="$cache/$suite-minbase-$(echo "$packages" | sha256sum | cut -c1-12).tar"
if [ ! -s "$base_tar" ]; then
  say "debootstrap $suite (minbase + $packages) from $mirror"
  tmp_base="$(mktemp -d "$cache/debootstrap.XXXXXX")"
  trap 'rm -rf "$tmp_base"' EXIT
  debootstrap --variant=minbase --include="$packages" "$suite" "$tmp_base" "$mirror" \
    >"$cache/debootstrap.log" 2>&1 || { tail -20 "$cache/debootstrap.log" >&2; die "debootstrap failed (log: $cache/debootstrap.log)"; }
  tar -C "$tmp_base" -cf "$base_tar.partial" .
  mv "$base_tar.partial" "$base_tar"
  rm -rf "$tmp_base"
  trap - EXIT
fi

# 2. The build context: an unpacked base (for ldd) and the trimmed rootfs.
mkdir -p "$out"
out="$(realpath "$out")"
base="$out/base"
rootfs="$out/rootfs"
rm -rf "$base" "$rootfs"
mkdir -p "$base" "$rootfs"
tar -C "$base" -xf "$base_tar"

# The binary must not need a newer glibc than the base has.
need_glibc=$(objdump -T "$binary" 2>/dev/null | grep -o 'GLIBC_[0-9.]*' | sort -Vu | tail -1 || true)
have_glibc=$(chroot "$base" /usr/bin/ldd --version | awk 'NR == 1 { print $NF }')
if [ -n "$need_glibc" ] && [ "$(printf '%s\n%s\n' "${need_glibc#GLIBC_}" "$have_glibc" | sort -V | tail -1)" != "$have_glibc" ]; then
  die "$binary needs $need_glibc but $suite has glibc $have_glibc: build on an older system or pick a newer suite"
fi

# Copies a path of the base into the rootfs, keeping symlinks, and the symlink's target too.
copy() {
  local p="$1"
  while :; do
    [ -e "$base$p" ] || [ -L "$base$p" ] || die "missing in the base: $p"
    mkdir -p "$rootfs$(dirname "$p")"
    cp -a "$base$p" "$rootfs$p"
    [ -L "$base$p" ] || break
    local t
    t="$(readlink "$base$p")"
    case "$t" in /*) p="$t" ;; *) p="$(dirname "$p")/$t" ;; esac
  done
}

# Merged /usr: the top-level symlinks of the base.
for l in bin sbin lib lib64; do
  if [ -L "$base/$l" ]; then
    cp -a "$base/$l" "$rootfs/$l"
    mkdir -p "$rootfs/$(dirname "/$l")/$(readlink "$base/$l")"
  fi
done

# The binary, stripped of debug info when it has any.
install -D -m 0755 "$binary" "$rootfs/usr/local/bin/code-executor-mcp"
if command -v strip >/dev/null; then strip --strip-debug "$rootfs/usr/local/bin/code-executor-mcp"; fi

# CPython: the interpreter, the standard library without what never runs in a server (tests,
# IDLE, tkinter, turtle demos, ensurepip, lib2to3), and lib-dynload.
copy "/usr/bin/$python"
ln -s "$python" "$rootfs/usr/bin/python3"
mkdir -p "$rootfs/usr/lib"
tar -C "$base/usr/lib" \
  --exclude="$python/test" --exclude="$python/idlelib" --exclude="$python/tkinter" \
  --exclude="$python/turtledemo" --exclude="$python/turtle.py" --exclude="$python/ensurepip" \
  --exclude="$python/lib2to3" --exclude="$python/config-*" --exclude="$python/site-packages" \
  --exclude="$python/dist-packages" -cf - "$python" | tar -C "$rootfs/usr/lib" -xf -

# Shared libraries of the binary, the interpreter and its extension modules, found by the base's
# own loader (ldd in a chroot), transitively.
cp "$rootfs/usr/local/bin/code-executor-mcp" "$base/tmp/code-executor-mcp"
objects=(/tmp/code-executor-mcp "/usr/bin/$python")
while IFS= read -r so; do objects+=("${so#"$base"}"); done < <(find "$base/usr/lib/$python/lib-dynload" -name '*.so')
missing=$(chroot "$base" /usr/bin/ldd "${objects[@]}" 2>/dev/null | grep 'not found' | sort -u || true)
[ -z "$missing" ] || say "warning: libraries not in the base (those modules will not import): $missing"
libs=$(chroot "$base" /usr/bin/ldd "${objects[@]}" 2>/dev/null \
  | sed -n -e 's/.*=> \(\/[^ ]*\) .*/\1/p' -e 's/^[[:space:]]*\(\/[^ ]*\) (0x.*/\1/p' | sort -u)
for lib in $libs /usr/lib/x86_64-linux-gnu/libgcc_s.so.1; do
  case "$lib" in /tmp/*) continue ;; esac
  copy "$lib"
done
rm -f "$base/tmp/code-executor-mcp"

# The C.UTF-8 locale, TLS roots, time zones for Python's zoneinfo (small), the loader cache.
copy /usr/lib/locale/C.utf8
copy /etc/ssl/certs/ca-certificates.crt
[ -d "$base/usr/share/zoneinfo" ] && copy /usr/share/zoneinfo
mkdir -p "$rootfs/etc"
printf 'passwd: files\ngroup: files\nshadow: files\nhosts: files dns\n' >"$rootfs/etc/nsswitch.conf"
cat >"$rootfs/etc/passwd" <<PASSWD
root:x:0:0:root:/root:/nonexistent
code-executor:x:$uid:$uid:code-executor-mcp:/home/code-executor:/nonexistent
nobody:x:65534:65534:nobody:/nonexistent:/nonexistent
PASSWD
printf 'root:x:0:\ncode-executor:x:%s:\nnogroup:x:65534:\n' "$uid" >"$rootfs/etc/group"
cp "$base/etc/os-release" "$rootfs/etc/os-release" 2>/dev/null || cp -L "$base/usr/lib/os-release" "$rootfs/etc/os-release"
# Mount points the runtime fills (hosts, resolv.conf, hostname) and the ones we need.
: >"$rootfs/etc/hosts"; : >"$rootfs/etc/resolv.conf"; : >"$rootfs/etc/hostname"
mkdir -p "$rootfs/tmp" "$rootfs/proc" "$rootfs/dev" "$rootfs/sys" "$rootfs/run/secrets" \
  "$rootfs/etc/code-executor-mcp" "$rootfs/home"
chmod 1777 "$rootfs/tmp"
# The home (audit log, OAuth logins): the Containerfile copies it with the user's ownership;
# with --read-only it is writable only as a volume.
rm -rf "$out/home"; mkdir -p "$out/home/code-executor"
# No upstream servers until a config is mounted over this file.
echo '{"mcpServers": {}}' >"$rootfs/etc/code-executor-mcp/mcp.json"
copy /etc/ld.so.conf
cp -a "$base/etc/ld.so.conf.d" "$rootfs/etc/"
ldconfig -r "$rootfs"
rm -rf "$base"

# No shell, no package manager, no coreutils: nothing to run but the server and Python.
for sh in sh bash dash; do [ ! -e "$rootfs/usr/bin/$sh" ] || die "a shell got into the rootfs: /usr/bin/$sh"; done

cp deploy/container/Containerfile "$out/Containerfile"
say "rootfs: $(du -sh "$rootfs" | cut -f1) in $out"

case "$builder" in
  none) say "context ready: $out (not built)"; exit 0 ;;
  podman) podman build --quiet --tag "$tag" --file "$out/Containerfile" "$out" >/dev/null ;;
  buildah) buildah build --quiet --tag "$tag" --file "$out/Containerfile" "$out" >/dev/null ;;
  docker) docker build --quiet --tag "$tag" --file "$out/Containerfile" "$out" >/dev/null ;;
esac
say "built $tag in $(( $(date +%s) - started )) s"
echo "$tag"

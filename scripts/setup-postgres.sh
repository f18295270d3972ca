#!/usr/bin/env bash
# Starts a throw-away PostgreSQL for the store's tests (crates/store/tests/suite.rs and the
# main crate's durable tests), and prints what to eval:
#
#   eval "$(bash scripts/setup-postgres.sh DIR)"     # starts one server with its data in DIR
#   bash scripts/setup-postgres.sh --stop DIR         # stops it (DIR is left for the caller)
#
# Installs Debian's `postgresql` package if its binaries are missing (needs root and apt),
# runs `initdb` in DIR/data (trust authentication, no password), and starts the server on a
# free loopback port, with its Unix socket in DIR too. PostgreSQL refuses to run as root: as
# root it runs as `nobody`. The printed line exports CODE_EXECUTOR_TEST_POSTGRES, the URL of
# the `postgres` database; each test makes its own database there. scripts/test.sh calls it.
set -euo pipefail

log() { echo "setup-postgres: $*" >&2; }

pg_bin() {
  local d
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && { echo "$d"; return 0; }
  done
  return 1
}

as_owner() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u nobody -- "$@"
  else
    "$@"
  fi
}

if [ "${1:-}" = "--stop" ]; then
  dir="${2:?usage: setup-postgres.sh --stop DIR}"
  bin="$(pg_bin)" || exit 0
  [ -f "$dir/data/postmaster.pid" ] && as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
  exit 0
fi

dir="${1:?usage: setup-postgres.sh DIR}"
if ! bin="$(pg_bin)"; then
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    log "PostgreSQL is not installed; install Debian's postgresql package (apt-get install postgresql)"
    exit 1
  fi
  log "installing Debian's postgresql package"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq postgresql >/dev/null
  bin="$(pg_bin)" || { log "postgresql installed, but no initdb under /usr/lib/postgresql"; exit 1; }
fi

mkdir -p "$dir"
chmod 0755 "$dir"
[ "$(id -u)" = 0 ] && chown nobody:nogroup "$dir"
if [ ! -f "$dir/data/PG_VERSION" ]; then
  as_owner "$bin/initdb" -D "$dir/data" -U postgres --auth=trust --no-sync -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 \
    || as_owner "$bin/initdb" -D "$dir/data" -U postgres --auth=trust --no-sync -E UTF8 --locale=C >"$dir/initdb.log" 2>&1 \
    || { log "initdb failed:"; cat "$dir/initdb.log" >&2; exit 1; }
fi

# A free loopback port: bound by the kernel, then released for PostgreSQL.
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null || echo $((20000 + RANDOM % 20000)))"
as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
  -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=off -c max_connections=200" start >/dev/null \
  || { log "the server did not start:"; tail -20 "$dir/server.log" >&2; exit 1; }
log "PostgreSQL $("$bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$port (data in $dir/data)"
echo "export CODE_EXECUTOR_TEST_POSTGRES='postgres://postgres@127.0.0.1:$port/postgres'"

#!/usr/bin/env bash
# A real PostgreSQL for knee's store tests (internal/store runs its suite on
# SQLite and, when KNEE_TEST_POSTGRES_URL is set, on PostgreSQL too).
#
#   scripts/postgres.sh start DIR   initdb in DIR, start a server on a free loopback port, create the
#                                   database "knee"; writes DIR/env (KNEE_TEST_POSTGRES_URL) and DIR/server.log
#   scripts/postgres.sh stop DIR    stop the server started in DIR
#
# Then: set -a; . DIR/env; set +a; go test ./internal/store/
#
# Uses the PostgreSQL 15 server binaries Debian installs under
# /usr/lib/postgresql/15/bin (apt-get install postgresql where missing).
# initdb refuses to run as root: as root, the cluster is made and run as the
# "postgres" user. Environment: KNEE_POSTGRES_PORT, first port to try
# (default 55432; the next free one is used).
set -euo pipefail
cd "$(dirname "$0")/.."

bin_dir=${KNEE_POSTGRES_BIN:-/usr/lib/postgresql/15/bin}

log() { echo "postgres.sh: $*" >&2; }

port_free() {
  ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# as_owner runs a command as the cluster's owner: postgres when we are root.
as_owner() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

start() {
  local dir=$1 port i
  if [ ! -x "$bin_dir/initdb" ]; then
    log "no PostgreSQL server binaries in $bin_dir: apt-get install postgresql"
    exit 1
  fi
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  if [ "$(id -u)" = 0 ]; then chown postgres "$dir"; fi
  # trust on loopback only: a throwaway cluster for tests, never a shared one.
  as_owner "$bin_dir/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 ||
    { cat "$dir/initdb.log" >&2; exit 1; }
  port=${KNEE_POSTGRES_PORT:-55432}
  while ! port_free "$port"; do port=$((port + 1)); done
  # The socket lives in DIR too, so nothing outside it is touched.
  as_owner "$bin_dir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=off -c max_connections=200" start >/dev/null ||
    { tail -40 "$dir/server.log" >&2; exit 1; }
  for i in $(seq 1 60); do
    if as_owner "$bin_dir/pg_isready" -q -h 127.0.0.1 -p "$port"; then break; fi
    sleep 0.5
  done
  as_owner "$bin_dir/createdb" -h 127.0.0.1 -p "$port" -U postgres knee
  echo "KNEE_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:$port/knee?sslmode=disable" >"$dir/env"
  log "PostgreSQL $("$bin_dir/postgres" --version | awk '{print $3}') at 127.0.0.1:$port, data $dir/data, log $dir/server.log"
}

stop() {
  local dir=$1
  [ -f "$dir/data/postmaster.pid" ] || return 0
  as_owner "$bin_dir/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
}

case ${1:-} in
  start) start "${2:?usage: postgres.sh start DIR}" ;;
  stop) stop "${2:?usage: postgres.sh stop DIR}" ;;
  *) echo "usage: scripts/postgres.sh start DIR | stop DIR" >&2; exit 2 ;;
esac

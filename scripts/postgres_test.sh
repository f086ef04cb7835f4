#!/bin/sh
# SPDX-License-Identifier: MIT
# A private PostgreSQL for the tests and benchmarks: its own data directory, unix socket
# directory and free TCP port under DIR, a user with a password (so URLs with USER:PASS and
# percent-decoding are exercised, over scram-sha-256 on TCP), and a database "roost_test"
# owned by it (tests create their own databases or schemas next to it).
#
#   postgres_test.sh start DIR   start (or reuse a running one) and print the store URL
#   postgres_test.sh url DIR     print the URL of the running server
#   postgres_test.sh psql DIR [ARGS...]  psql as the superuser over the unix socket
#   postgres_test.sh stop DIR    stop it and delete DIR
#   postgres_test.sh pause DIR   stop it (fast shutdown), keeping its data (a database outage)
#   postgres_test.sh kill DIR    SIGKILL the postmaster and its backends, keeping the data
#   postgres_test.sh resume DIR  start it again on the same data and port (crash recovery
#                                after `kill`)
#
# PostgreSQL refuses to run as root: as root the server runs as the `postgres` user (made by
# Debian's postgresql-common) and DIR is given to it. Failing to start is an error, never a
# skip: CI must not pass without PostgreSQL.
set -eu

usage() {
    echo "usage: $0 start|stop|url|psql|pause|kill|resume DIR" >&2
    exit 2
}
[ $# -ge 2 ] || usage
cmd=$1
dir=$2
shift 2

# The same awkward password as the MariaDB fixture: '@', ':', '/' and '%', percent-encoded in
# the URL.
DB_USER=roost
DB_PASS='r00st@p:w/d%x'
DB_PASS_URL='r00st%40p%3Aw%2Fd%25x'
SUPERUSER=postgres

# The newest installed server's bin directory (Debian keeps them in /usr/lib/postgresql/V/bin).
pg_bindir() {
    for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k5 -n -r); do
        if [ -x "$d/postgres" ] && [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then
            echo "$d"
            return 0
        fi
    done
    if command -v pg_ctl >/dev/null 2>&1; then
        dirname "$(command -v pg_ctl)"
        return 0
    fi
    echo "postgres_test.sh: no PostgreSQL server found (scripts/deps.sh installs postgresql)" >&2
    return 1
}

# Runs a server program as the user that owns the cluster.
as_owner() {
    if [ "$(id -u)" = 0 ]; then
        (cd / && runuser -u postgres -- env TMPDIR="$dir/tmp" "$@")
    else
        TMPDIR="$dir/tmp" "$@"
    fi
}

running() {
    [ -f "$dir/data/postmaster.pid" ] && kill -0 "$(head -n1 "$dir/data/postmaster.pid")" 2>/dev/null
}

client() {
    PGPASSWORD= psql -X -q -v ON_ERROR_STOP=1 -h "$dir" -p "$(cat "$dir/port")" -U "$SUPERUSER" \
        -d postgres "$@"
}

# Starts the server on $dir/data and the port in $dir/port, and waits until it answers.
# fsync and synchronous_commit stay on: the tests are about durability.
launch() {
    BIN=$(pg_bindir)
    port=$(cat "$dir/port")
    if ! as_owner "$BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 120 \
        -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c max_connections=300 \
-c shared_buffers=128MB -c fsync=on -c synchronous_commit=on \
-c lock_timeout=10s -c unix_socket_permissions=0777" start >"$dir/pg_ctl.log" 2>&1; then
        echo "postgres_test.sh: the server did not become ready:" >&2
        tail -n 30 "$dir/server.log" >&2 || true
        exit 1
    fi
}

# Stops the server (fast shutdown: sessions are cut, nothing committed is lost) and keeps its
# data.
halt() {
    if running; then
        as_owner "$(pg_bindir)/pg_ctl" -D "$dir/data" -m fast -w -t 60 stop >/dev/null 2>&1 ||
            crash
    fi
}

# SIGKILL to the postmaster and every backend: a crash, recovered from the WAL on the next start.
crash() {
    if [ -f "$dir/data/postmaster.pid" ]; then
        pid=$(head -n1 "$dir/data/postmaster.pid")
        pkill -9 -P "$pid" 2>/dev/null || true
        kill -9 "$pid" 2>/dev/null || true
        i=0
        while kill -0 "$pid" 2>/dev/null && [ $i -lt 600 ]; do
            i=$((i + 1))
            sleep 0.1
        done
    fi
}

case $cmd in
start)
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    if running && [ -f "$dir/url" ]; then
        cat "$dir/url"
        exit 0
    fi
    BIN=$(pg_bindir)
    # A unix socket path ($dir/.s.PGSQL.PORT) is limited to ~107 bytes.
    if [ ${#dir} -gt 80 ]; then
        echo "postgres_test.sh: DIR path too long for a unix socket: $dir" >&2
        exit 1
    fi
    rm -rf "$dir/data" "$dir/tmp" "$dir/url"
    mkdir -p "$dir/data" "$dir/tmp"
    chmod 0700 "$dir/data"
    if [ "$(id -u)" = 0 ]; then
        chown postgres "$dir" "$dir/data" "$dir/tmp"
    fi
    SUPERUSER=$(id -un)
    [ "$(id -u)" = 0 ] && SUPERUSER=postgres
    echo "$SUPERUSER" >"$dir/superuser"
    # Local (socket) connections trust the OS user; TCP ones need the password (scram).
    if ! as_owner "$BIN/initdb" -D "$dir/data" -U "$SUPERUSER" -E UTF8 --locale=C.UTF-8 \
        --auth-local=trust --auth-host=scram-sha-256 >"$dir/initdb.log" 2>&1; then
        echo "postgres_test.sh: initdb failed:" >&2
        cat "$dir/initdb.log" >&2
        exit 1
    fi
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    echo "$port" >"$dir/port"
    launch
    # The password goes in as a psql variable, quoted by psql (:'pass'), never by the shell.
    client -v pass="$DB_PASS" <<EOF
CREATE ROLE $DB_USER LOGIN PASSWORD :'pass';
CREATE DATABASE roost_test OWNER $DB_USER;
EOF
    echo "postgres://$DB_USER:$DB_PASS_URL@127.0.0.1:$port/roost_test" >"$dir/url"
    echo "postgres://$DB_USER:$DB_PASS_URL@/roost_test?host=$dir&port=$port" >"$dir/url_socket"
    cat "$dir/url"
    ;;
url)
    if ! running || [ ! -f "$dir/url" ]; then
        echo "postgres_test.sh: no server running under $dir" >&2
        exit 1
    fi
    cat "$dir/url"
    ;;
psql)
    SUPERUSER=$(cat "$dir/superuser")
    client "$@"
    ;;
stop)
    halt
    rm -rf "$dir"
    ;;
pause)
    halt
    ;;
kill)
    crash
    ;;
resume)
    if running; then
        echo "postgres_test.sh: already running under $dir" >&2
        exit 1
    fi
    dir=$(cd "$dir" && pwd)
    launch
    cat "$dir/url"
    ;;
*)
    usage
    ;;
esac

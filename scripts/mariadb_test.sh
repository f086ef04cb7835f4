#!/bin/sh
# SPDX-License-Identifier: MIT
# A private MariaDB for the tests: its own datadir, unix socket and free TCP port under DIR, a
# user with a password (so URLs with USER:PASS and percent-decoding are exercised), and a
# database "roost_test" (tests create their own roost_t_* databases next to it).
#
#   mariadb_test.sh start DIR   start (or reuse a running one) and print the store URL
#   mariadb_test.sh url DIR     print the URL of the running server
#   mariadb_test.sh stop DIR    stop it and delete DIR
#   mariadb_test.sh pause DIR   stop it, keeping its data (a database outage)
#   mariadb_test.sh resume DIR  start it again on the same data and port
#
# Works as root (mariadbd then needs --user=root) and as any other user. Failing to start is an
# error, never a skip: CI must not pass without MariaDB.
set -eu

usage() {
    echo "usage: $0 start|stop|url|pause|resume DIR" >&2
    exit 2
}
[ $# -eq 2 ] || usage
cmd=$1
dir=$2

# The password has '@', ':', '/' and '%' on purpose; the URL carries it percent-encoded.
DB_USER=roost
DB_PASS='r00st@p:w/d%x'
DB_PASS_URL='r00st%40p%3Aw%2Fd%25x'

find_bin() {
    for b in "$@"; do
        if command -v "$b" >/dev/null 2>&1; then
            command -v "$b"
            return 0
        fi
        for d in /usr/sbin /usr/bin /usr/local/sbin /usr/local/bin; do
            if [ -x "$d/$b" ]; then
                echo "$d/$b"
                return 0
            fi
        done
    done
    echo "mariadb_test.sh: none of $* found (scripts/deps.sh installs mariadb-server)" >&2
    return 1
}

running() {
    [ -f "$dir/mysqld.pid" ] && kill -0 "$(cat "$dir/mysqld.pid")" 2>/dev/null
}

client() {
    "$MARIADB" --no-defaults --protocol=socket --socket="$dir/mysqld.sock" -uroot "$@"
}

# Starts mariadbd on $dir/data and the port in $dir/port, and waits until it answers.
launch() {
    MARIADBD=$(find_bin mariadbd mysqld)
    MARIADB=$(find_bin mariadb mysql)
    port=$(cat "$dir/port")
    user_opt=
    if [ "$(id -u)" = 0 ]; then
        user_opt=--user=root
    fi
    # Lock waits are short so a test that deadlocks fails fast instead of hanging. Temporary
    # files go to the instance's own tmp (--tmpdir and TMPDIR): never the shared /tmp, where
    # another instance starting at the same moment can take or remove them.
    TMPDIR="$dir/tmp" "$MARIADBD" --no-defaults $user_opt --datadir="$dir/data" --tmpdir="$dir/tmp" \
        --socket="$dir/mysqld.sock" --pid-file="$dir/mysqld.pid" --log-error="$dir/error.log" \
        --skip-networking=0 --bind-address=127.0.0.1 --port="$port" \
        --innodb-flush-log-at-trx-commit=1 --innodb-buffer-pool-size=128M \
        --innodb-log-file-size=64M --max-connections=300 --skip-name-resolve \
        --innodb-lock-wait-timeout=10 </dev/null >/dev/null 2>&1 &
    i=0
    until client -e 'SELECT 1' >/dev/null 2>&1; do
        i=$((i + 1))
        if [ $i -gt 600 ] || ! kill -0 $! 2>/dev/null; then
            echo "mariadb_test.sh: mariadbd did not become ready:" >&2
            tail -n 30 "$dir/error.log" >&2 || true
            exit 1
        fi
        sleep 0.1
    done
}

# Stops the server (SIGTERM, then SIGKILL after 60 s) and keeps its data.
halt() {
    if running; then
        pid=$(cat "$dir/mysqld.pid")
        kill "$pid"
        i=0
        while kill -0 "$pid" 2>/dev/null; do
            i=$((i + 1))
            if [ $i -gt 600 ]; then
                kill -9 "$pid" 2>/dev/null || true
                break
            fi
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
    MARIADBD=$(find_bin mariadbd mysqld)
    INSTALL_DB=$(find_bin mariadb-install-db mysql_install_db)
    MARIADB=$(find_bin mariadb mysql)
    # A unix socket path is limited to ~107 bytes: keep it short when DIR is deep.
    if [ ${#dir} -gt 80 ]; then
        echo "mariadb_test.sh: DIR path too long for a unix socket: $dir" >&2
        exit 1
    fi
    rm -rf "$dir/data" "$dir/tmp" "$dir/url"
    mkdir -p "$dir/data" "$dir/tmp"
    user_opt=
    if [ "$(id -u)" = 0 ]; then
        user_opt=--user=root
    fi
    # The bootstrap server gets the private tmp too: with the shared /tmp, two installs at once
    # failed with "Could not remove temporary table '/tmp/#sql-temptable-…'".
    if ! TMPDIR="$dir/tmp" "$INSTALL_DB" --no-defaults --datadir="$dir/data" \
        --tmpdir="$dir/tmp" --auth-root-authentication-method=normal --skip-test-db $user_opt \
        >"$dir/install.log" 2>&1; then
        echo "mariadb_test.sh: mariadb-install-db failed:" >&2
        cat "$dir/install.log" >&2
        exit 1
    fi
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    echo "$port" >"$dir/port"
    launch
    client -e "CREATE USER '$DB_USER'@'localhost' IDENTIFIED BY '$DB_PASS';
        CREATE USER '$DB_USER'@'127.0.0.1' IDENTIFIED BY '$DB_PASS';
        GRANT ALL PRIVILEGES ON *.* TO '$DB_USER'@'localhost';
        GRANT ALL PRIVILEGES ON *.* TO '$DB_USER'@'127.0.0.1';
        CREATE DATABASE roost_test CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;"
    echo "mysql://$DB_USER:$DB_PASS_URL@127.0.0.1:$port/roost_test" >"$dir/url"
    echo "mysql://$DB_USER:$DB_PASS_URL@localhost/roost_test?socket=$dir/mysqld.sock" >"$dir/url_socket"
    cat "$dir/url"
    ;;
url)
    if ! running || [ ! -f "$dir/url" ]; then
        echo "mariadb_test.sh: no server running under $dir" >&2
        exit 1
    fi
    cat "$dir/url"
    ;;
stop)
    halt
    rm -rf "$dir"
    ;;
pause)
    halt
    ;;
resume)
    if running; then
        echo "mariadb_test.sh: already running under $dir" >&2
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

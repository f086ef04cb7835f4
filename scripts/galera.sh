#!/bin/sh
# SPDX-License-Identifier: MIT
# A private 3-node MariaDB Galera cluster on loopback for the HA tests (issue 16): each node has
# its own datadir, unix socket and four free TCP ports (SQL, gcomm, IST, SST) under DIR/nN, the
# same user, password and database "roost_test" as scripts/mariadb_test.sh, and the settings
# doc/MYSQL.md asks for (binlog_format=ROW, innodb_flush_log_at_trx_commit=1, autoinc lock mode 2,
# wsrep_auto_increment_control=OFF).
#
#   galera.sh start DIR        start (or reuse) the cluster; prints the multi-host store URL
#   galera.sh url DIR          the multi-host URL: mysql://roost:…@127.0.0.1:P1,…:P2,…:P3/roost_test
#   galera.sh stop DIR         stop every node and delete DIR
#   galera.sh status DIR       one line per node: N pid port state (running/stopped/down) wsrep state
#   galera.sh port DIR N       node N's SQL port (N = 1, 2, 3)
#   galera.sh pid DIR N        node N's mariadbd pid (fails when it is down)
#   galera.sh node-url DIR N   a single-host URL of node N
#   galera.sh kill DIR N       SIGKILL node N (a crash)
#   galera.sh pause DIR N      SIGSTOP node N (a stall)
#   galera.sh cont DIR N       SIGCONT node N
#   galera.sh stop-node DIR N  shut node N down cleanly (SIGTERM), keeping its data
#   galera.sh restart DIR N    start node N again on its data and ports, wait until Synced
#   galera.sh wait DIR N       wait until node N says Synced (at most 180 s)
#
# Nodes run as user mysql when started as root: rsync state transfer started as root fails on the
# joiner (rsync code 23). Failing to start is an error, never a skip.
set -eu

usage() {
    echo "usage: $0 start|stop|url|status DIR | port|pid|node-url|kill|pause|cont|stop-node|restart|wait DIR N" >&2
    exit 2
}
[ $# -ge 2 ] || usage
cmd=$1
dir=$2
node=${3:-}

DB_USER=roost
DB_PASS='r00st@p:w/d%x'
DB_PASS_URL='r00st%40p%3Aw%2Fd%25x'
CLUSTER=roost_galera
PROVIDER=/usr/lib/galera/libgalera_smm.so

find_bin() {
    for b in "$@"; do
        for d in /usr/sbin /usr/bin /usr/local/sbin /usr/local/bin; do
            if [ -x "$d/$b" ]; then
                echo "$d/$b"
                return 0
            fi
        done
    done
    echo "galera.sh: none of $* found (scripts/deps.sh installs mariadb-server and galera-4)" >&2
    return 1
}

need_node() {
    case $node in
    1 | 2 | 3) ;;
    *) usage ;;
    esac
}

ndir() { echo "$dir/n$1"; }
nport() { cat "$(ndir "$1")/port"; }

# mariadbd writes its pid file late (after InnoDB starts): the pid launch() saw counts too.
pid_of() {
    for f in "$(ndir "$1")/mysqld.pid" "$(ndir "$1")/launch.pid"; do
        if [ -f "$f" ] && p=$(cat "$f") && [ -n "$p" ] && kill -0 "$p" 2>/dev/null; then
            echo "$p"
            return 0
        fi
    done
    return 1
}

client() {
    n=$1
    shift
    "$MARIADB" --no-defaults --protocol=socket --socket="$(ndir "$n")/mysqld.sock" -uroot \
        --connect-timeout=2 "$@"
}

state_of() {
    client "$1" -N -B -e "SHOW STATUS LIKE 'wsrep_local_state_comment'" 2>/dev/null |
        cut -f2
}

# Waits until node $1 is Synced; its process must stay alive meanwhile.
wait_synced() {
    i=0
    while [ "$(state_of "$1")" != Synced ]; do
        i=$((i + 1))
        if [ $i -gt 900 ] || [ -z "$(pid_of "$1" || true)" ]; then
            echo "galera.sh: node $1 did not reach Synced:" >&2
            tail -n 40 "$(ndir "$1")/error.log" >&2 || true
            exit 1
        fi
        sleep 0.2
    done
}

# Starts node $1 in the background; $2 = "new" bootstraps a new cluster from it.
launch() {
    n=$1
    d=$(ndir "$n")
    g1=$(cat "$dir/n1/gport") g2=$(cat "$dir/n2/gport") g3=$(cat "$dir/n3/gport")
    gport=$(cat "$d/gport") iport=$(cat "$d/iport") sport=$(cat "$d/sport")
    new=
    if [ "${2:-}" = new ]; then
        new=--wsrep-new-cluster
        # A node that crashed last is not marked safe to bootstrap; this one is the only one up.
        if [ -f "$d/data/grastate.dat" ]; then
            sed -i 's/^safe_to_bootstrap: 0/safe_to_bootstrap: 1/' "$d/data/grastate.dat"
        fi
    fi
    # Short EVS timeouts so a stalled or killed node leaves the primary component in seconds.
    TMPDIR="$d/tmp" "$MARIADBD" --no-defaults $user_opt --datadir="$d/data" --tmpdir="$d/tmp" \
        --socket="$d/mysqld.sock" --pid-file="$d/mysqld.pid" --log-error="$d/error.log" \
        --skip-networking=0 --bind-address=127.0.0.1 --port="$(cat "$d/port")" \
        --innodb-flush-log-at-trx-commit=1 --innodb-buffer-pool-size=64M \
        --innodb-log-file-size=48M --max-connections=300 --skip-name-resolve \
        --innodb-lock-wait-timeout=10 --binlog-format=ROW --innodb-autoinc-lock-mode=2 \
        --wsrep-on=ON --wsrep-provider="$PROVIDER" --wsrep-cluster-name="$CLUSTER" \
        --wsrep-auto-increment-control=OFF \
        --wsrep-cluster-address="gcomm://127.0.0.1:$g1,127.0.0.1:$g2,127.0.0.1:$g3" \
        --wsrep-node-address="127.0.0.1:$gport" --wsrep-node-name="n$n" \
        --wsrep-sst-method=rsync --wsrep-sst-receive-address="127.0.0.1:$sport" \
        --wsrep-provider-options="base_port=$gport;gmcast.listen_addr=tcp://127.0.0.1:$gport;ist.recv_addr=127.0.0.1:$iport;gcache.size=32M;evs.suspect_timeout=PT3S;evs.inactive_timeout=PT6S;pc.wait_prim_timeout=PT10S" \
        $new </dev/null >>"$d/stdout.log" 2>&1 &
    echo $! >"$d/launch.pid"
}

halt_node() {
    p=$(pid_of "$1" || true)
    if [ -n "$p" ]; then
        kill -CONT "$p" 2>/dev/null || true
        kill "$p" 2>/dev/null || true
        i=0
        while kill -0 "$p" 2>/dev/null; do
            i=$((i + 1))
            if [ $i -gt 300 ]; then
                kill -9 "$p" 2>/dev/null || true
                break
            fi
            sleep 0.1
        done
    fi
}

any_other_up() {
    for m in 1 2 3; do
        if [ "$m" != "$1" ] && [ -n "$(pid_of "$m" || true)" ]; then
            return 0
        fi
    done
    return 1
}

url() {
    echo "mysql://$DB_USER:$DB_PASS_URL@127.0.0.1:$(nport 1),127.0.0.1:$(nport 2),127.0.0.1:$(nport 3)/roost_test"
}

MARIADB=$(find_bin mariadb mysql)
user_opt=
if [ "$(id -u)" = 0 ]; then
    user_opt=--user=mysql
fi

case $cmd in
start)
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    if [ -f "$dir/url" ] && [ -n "$(pid_of 1 || true)" ] && [ -n "$(pid_of 2 || true)" ] &&
        [ -n "$(pid_of 3 || true)" ]; then
        cat "$dir/url"
        exit 0
    fi
    MARIADBD=$(find_bin mariadbd mysqld)
    INSTALL_DB=$(find_bin mariadb-install-db mysql_install_db)
    [ -r "$PROVIDER" ] || {
        echo "galera.sh: $PROVIDER missing (scripts/deps.sh installs galera-4)" >&2
        exit 1
    }
    if [ ${#dir} -gt 80 ]; then
        echo "galera.sh: DIR path too long for a unix socket: $dir" >&2
        exit 1
    fi
    for n in 1 2 3; do
        halt_node "$n" 2>/dev/null || true
    done
    rm -rf "$dir/n1" "$dir/n2" "$dir/n3" "$dir/url"
    ports=$(python3 -c '
import socket
ss = [socket.socket() for _ in range(12)]
for s in ss: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in ss))')
    set -- $ports
    for n in 1 2 3; do
        d=$(ndir "$n")
        mkdir -p "$d/data" "$d/tmp"
        echo "$1" >"$d/port"
        echo "$2" >"$d/gport"
        echo "$3" >"$d/iport"
        echo "$4" >"$d/sport"
        shift 4
    done
    if [ "$(id -u)" = 0 ]; then
        # mysql must reach its files through DIR.
        chmod 755 "$dir"
        chown -R mysql:mysql "$dir/n1" "$dir/n2" "$dir/n3"
    fi
    # The bootstrap server gets node 1's private tmp: never the shared /tmp, where another
    # instance installing at the same moment can take or remove its temporary tables.
    if ! TMPDIR="$dir/n1/tmp" "$INSTALL_DB" --no-defaults --datadir="$dir/n1/data" \
        --tmpdir="$dir/n1/tmp" --auth-root-authentication-method=normal --skip-test-db $user_opt \
        >"$dir/install.log" 2>&1; then
        echo "galera.sh: mariadb-install-db failed:" >&2
        cat "$dir/install.log" >&2
        exit 1
    fi
    launch 1 new
    wait_synced 1
    client 1 -e "CREATE USER '$DB_USER'@'localhost' IDENTIFIED BY '$DB_PASS';
        CREATE USER '$DB_USER'@'127.0.0.1' IDENTIFIED BY '$DB_PASS';
        GRANT ALL PRIVILEGES ON *.* TO '$DB_USER'@'localhost';
        GRANT ALL PRIVILEGES ON *.* TO '$DB_USER'@'127.0.0.1';
        CREATE DATABASE roost_test CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;"
    # The joiners get everything (system tables included) by rsync state transfer.
    for n in 2 3; do
        if [ "$(id -u)" = 0 ]; then
            chown -R mysql:mysql "$(ndir "$n")"
        fi
        launch "$n"
        wait_synced "$n"
    done
    url >"$dir/url"
    cat "$dir/url"
    ;;
url)
    [ -f "$dir/url" ] || {
        echo "galera.sh: no cluster under $dir" >&2
        exit 1
    }
    cat "$dir/url"
    ;;
stop)
    if [ -d "$dir" ]; then
        for n in 3 2 1; do
            [ -d "$(ndir "$n")" ] && halt_node "$n"
        done
        rm -rf "$dir"
    fi
    ;;
status)
    for n in 1 2 3; do
        p=$(pid_of "$n" || true)
        if [ -z "$p" ]; then
            echo "$n - $(nport "$n") down -"
            continue
        fi
        run=running
        if grep -q '^State:.*T' "/proc/$p/status" 2>/dev/null; then
            run=stopped
        fi
        st=-
        if [ $run = running ]; then
            st=$(state_of "$n")
            st=${st:--}
        fi
        echo "$n $p $(nport "$n") $run $st"
    done
    ;;
port)
    need_node
    nport "$node"
    ;;
pid)
    need_node
    pid_of "$node"
    ;;
node-url)
    need_node
    echo "mysql://$DB_USER:$DB_PASS_URL@127.0.0.1:$(nport "$node")/roost_test"
    ;;
kill | pause | cont)
    need_node
    p=$(pid_of "$node") || {
        echo "galera.sh: node $node is down" >&2
        exit 1
    }
    case $cmd in
    kill) kill -KILL "$p" ;;
    pause) kill -STOP "$p" ;;
    cont) kill -CONT "$p" ;;
    esac
    ;;
stop-node)
    need_node
    halt_node "$node"
    ;;
restart)
    need_node
    dir=$(cd "$dir" && pwd)
    if [ -n "$(pid_of "$node" || true)" ]; then
        echo "galera.sh: node $node is already running" >&2
        exit 1
    fi
    MARIADBD=$(find_bin mariadbd mysqld)
    rm -f "$(ndir "$node")/mysqld.pid" "$(ndir "$node")/launch.pid"
    if any_other_up "$node"; then
        launch "$node"
    else
        launch "$node" new
    fi
    wait_synced "$node"
    ;;
wait)
    need_node
    wait_synced "$node"
    ;;
*)
    usage
    ;;
esac

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The ideal durable server beside roostd and the reference (doc/BENCHMARKS.md, "The ideal
# durable server"): bench/null_server with --durable answers each request only once a group
# write covers it, with roostd's HTTP front and no store work at all. Whatever it makes is the
# most any durable server with this front can make of the disk; a target above it is out of
# reach whatever the store does. Per round, alternating, each on a fresh server:
#
#   P2 C2: sqlite_direct (the reference), null_server --durable inline:FILE and thread:FILE,
#          roostd (store.synchronous=full)
#   P8 C8: null_server (no durability: the ceiling), null_server --durable thread:FILE, roostd
#   MYSQL=1, P2 C2 on a private MariaDB (scripts/mariadb_test.sh): mysql_direct (the plain
#          loop), mysql_direct --hop (the loop with one HTTP round trip to a null_server before
#          each request: the loop's own work behind this HTTP front), null_server --durable
#          mysql:URL --syncers 2 (one autocommit row per group), roostd on MySQL (defaults)
#
# Each measurement goes through bench_lib.sh's bench_measure (raw lines in BENCH_DIR/raw.txt,
# with CPU per cycle, and on MariaDB statements and commits per cycle); the table gives medians
# and the medians (min–max) of the per-round ratios to the reference.
#
#   scripts/bench_ideal.sh [BUILD_DIR]   (default build; `make bench-ideal` runs it with MYSQL=1)
#   ROUNDS=3 SECONDS_RUN=6 WARMUP=1 MYSQL=0 BENCH_DIR=BUILD_DIR/bench-ideal (on the disk under test)
#
# Nothing else may run: every side here shares the same two cores and the same disk.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
BIN=$BUILD/bin
RUNS=${ROUNDS:-3}
SECS=${SECONDS_RUN:-6}
WARMUP=${WARMUP:-1}
MYSQL=${MYSQL:-0}
WORK=${BENCH_DIR:-$BUILD/bench-ideal}
for b in roostd roost_load null_server sqlite_direct mysql_direct; do
    [ -x "$BIN/$b" ] || { echo "bench-ideal: $BIN/$b is missing (build first)" >&2; exit 2; }
done
rm -rf "$WORK" && mkdir -p "$WORK/runs"
WORK=$(cd "$WORK" && pwd)
RAW=$WORK/raw.txt
: >"$RAW"
DBDIR=$WORK/mariadb
BENCH_NAME=bench-ideal
. "$ROOT/scripts/bench_lib.sh"
BENCH_DB_SOCKET=$DBDIR/mysqld.sock
BENCH_DB_PIDFILE=$DBDIR/mysqld.pid
cleanup() {
    bench_stop_all
    [ "$MYSQL" != 1 ] || "$ROOT/scripts/mariadb_test.sh" stop "$DBDIR" >/dev/null 2>&1 || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM
if [ "$MYSQL" = 1 ]; then
    BASE_URL=$("$ROOT/scripts/mariadb_test.sh" start "$DBDIR")
fi

# serve NAME ARGV...: a fresh server that writes WORK/run/ready (SERVER_PID); TO says how
# roost_load reaches it (roostd also writes its token key there, which --data-dir signs with).
serve() {
    local name=$1
    shift
    rm -rf "$WORK/run" && mkdir -p "$WORK/run"
    start_server "$WORK/run/ready" "$WORK/runs/$name.log" "$@" --ready-file "$WORK/run/ready"
    TO=(--url "$(head -n 1 "$WORK/run/ready")")
    [ ! -e "$WORK/run/token_ed25519.pem" ] || TO=(--data-dir "$WORK/run")
}

# load SCENARIO RUN P SERVER-ARGV...: one roost_load run at P = C against a fresh server.
load() {
    local s=$1 run=$2 p=$3
    shift 3
    serve "$s" "$@"
    [ "$(basename "$1")" != roostd ] || COUNTERS_URLS=$(head -n 1 "$WORK/run/ready")
    bench_measure "$s" "$run" "$BIN/roost_load" "${TO[@]}" --target "$s" --seconds "$SECS" \
        --warmup "$WARMUP" --producers "$p" --consumers "$p"
    COUNTERS_URLS=""
    stop_server "$s" "$WORK/runs/$s.log"
}

ARGS=(--seconds "$SECS" --warmup "$WARMUP" --producers 2 --consumers 2)
for run in $(seq 1 "$RUNS"); do
    echo "round $run/$RUNS"
    rm -rf "$WORK/run" && mkdir -p "$WORK/run"
    bench_measure p2_direct "$run" "$BIN/sqlite_direct" --db "$WORK/run/direct.db" --fresh \
        --synchronous full "${ARGS[@]}"
    load p2_ideal_inline "$run" 2 "$BIN/null_server" --listen 127.0.0.1:0 \
        --durable "inline:$WORK/run/durable"
    load p2_ideal_thread "$run" 2 "$BIN/null_server" --listen 127.0.0.1:0 \
        --durable "thread:$WORK/run/durable"
    load p2_roostd "$run" 2 "$BIN/roostd" --data-dir "$WORK/run" --listen 127.0.0.1:0 \
        --set store.synchronous=full
    load p8_null "$run" 8 "$BIN/null_server" --listen 127.0.0.1:0
    load p8_ideal_thread "$run" 8 "$BIN/null_server" --listen 127.0.0.1:0 \
        --durable "thread:$WORK/run/durable"
    load p8_roostd "$run" 8 "$BIN/roostd" --data-dir "$WORK/run" --listen 127.0.0.1:0 \
        --set store.synchronous=full
    if [ "$MYSQL" = 1 ]; then
        COUNTERS_DB=1
        bench_measure my_loop "$run" "$BIN/mysql_direct" --url "$(fresh_db "ideal_loop_$run")" \
            --fresh "${ARGS[@]}"
        serve my_loop_hop "$BIN/null_server" --listen 127.0.0.1:0
        bench_measure my_loop_hop "$run" "$BIN/mysql_direct" --url "$(fresh_db "ideal_hop_$run")" \
            --fresh --hop "$(head -n 1 "$WORK/run/ready")" "${ARGS[@]}"
        stop_server my_loop_hop "$WORK/runs/my_loop_hop.log"
        load my_ideal "$run" 2 "$BIN/null_server" --listen 127.0.0.1:0 \
            --durable "mysql:$(fresh_db "ideal_null_$run")" --syncers 2
        load my_roostd "$run" 2 "$BIN/roostd" --data-dir "$WORK/run" --listen 127.0.0.1:0 \
            --set "store.url=$(fresh_db "ideal_roostd_$run")"
        COUNTERS_DB=""
    fi
done

echo
echo "| scenario | full cycles/s, median | range | × reference, median (min–max) of the per-round ratios | reference |"
echo "|---|---|---|---|---|"
row() { # row SCENARIO REFERENCE
    printf '| %s | %s | %s | %s | %s |\n' "$1" "$(median "$1" cycles_per_s)" \
        "$(range "$1" cycles_per_s)" "$(ratio "$1" "$2")" "$2"
}
row p2_direct -
row p2_ideal_inline p2_direct
row p2_ideal_thread p2_direct
row p2_roostd p2_direct
row p8_null -
row p8_ideal_thread p8_null
row p8_roostd p8_null
if [ "$MYSQL" = 1 ]; then
    row my_loop -
    row my_loop_hop my_loop
    row my_ideal my_loop
    row my_roostd my_loop
fi
echo
echo "bench-ideal: raw results in $RAW"

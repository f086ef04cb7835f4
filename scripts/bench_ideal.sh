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
# then the medians over the rounds and of the per-round ratios to the reference.
#
#   scripts/bench_ideal.sh [BUILD_DIR]   (default build)
#   ROUNDS=3 SECONDS_RUN=6 WARMUP=1 MYSQL=0 BENCH_DIR=BUILD_DIR/bench-ideal (on the disk under test)
#
# Nothing else may run: every side here shares the same two cores and the same disk.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
BIN=$BUILD/bin
ROUNDS=${ROUNDS:-3}
SECS=${SECONDS_RUN:-6}
WARMUP=${WARMUP:-1}
MYSQL=${MYSQL:-0}
WORK=${BENCH_DIR:-$BUILD/bench-ideal}
for b in roostd roost_load null_server sqlite_direct mysql_direct; do
    [ -x "$BIN/$b" ] || { echo "bench-ideal: $BIN/$b is missing (build first)" >&2; exit 2; }
done
rm -rf "$WORK" && mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
DBDIR=$WORK/mariadb
BENCH_NAME=bench-ideal
. "$ROOT/scripts/bench_lib.sh"
BENCH_DB_SOCKET=$DBDIR/mysqld.sock
cleanup() {
    bench_stop_all
    [ "$MYSQL" != 1 ] || "$ROOT/scripts/mariadb_test.sh" stop "$DBDIR" >/dev/null 2>&1 || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM
if [ "$MYSQL" = 1 ]; then
    BASE_URL=$("$ROOT/scripts/mariadb_test.sh" start "$DBDIR")
fi

RESULTS=$WORK/results
: >"$RESULTS"
# record ROUND SHAPE NAME TOOL-OUTPUT
record() {
    local cps
    cps=$(grep -o 'cycles_per_s=[0-9]*' <<<"$4" | cut -d= -f2 || true)
    [ -n "$cps" ] || { echo "bench-ideal: no result for $3 at $2: $4" >&2; exit 1; }
    printf 'round %d %-5s %-14s %6s cycles/s\n' "$1" "$2" "$3" "$cps"
    echo "$1 $2 $3 $cps" >>"$RESULTS"
}

# server_run ROUND P NAME SERVER-ARGV...: one roost_load run at P = C against a fresh server,
# which writes WORK/run/ready (roostd also its token key, which roost_load --data-dir signs with).
server_run() {
    local round=$1 p=$2 name=$3 out
    shift 3
    rm -rf "$WORK/run" && mkdir -p "$WORK/run"
    start_server "$WORK/run/ready" "$WORK/run/$name.log" "$@" --ready-file "$WORK/run/ready"
    local to=(--url "$(head -n 1 "$WORK/run/ready")")
    [ ! -e "$WORK/run/token_ed25519.pem" ] || to=(--data-dir "$WORK/run")
    out=$("$BIN/roost_load" "${to[@]}" --target "$name" --seconds "$SECS" --warmup "$WARMUP" \
        --producers "$p" --consumers "$p" 2>&1)
    stop_server "$name" "$WORK/run/$name.log"
    record "$round" "P${p}C$p" "$name" "$out"
}

for round in $(seq 1 "$ROUNDS"); do
    rm -rf "$WORK/run" && mkdir -p "$WORK/run"
    record "$round" P2C2 sqlite_direct "$("$BIN/sqlite_direct" --db "$WORK/run/direct.db" --fresh \
        --synchronous full --seconds "$SECS" --warmup "$WARMUP" --producers 2 --consumers 2 2>&1)"
    server_run "$round" 2 ideal_inline "$BIN/null_server" --listen 127.0.0.1:0 \
        --durable "inline:$WORK/run/durable"
    server_run "$round" 2 ideal_thread "$BIN/null_server" --listen 127.0.0.1:0 \
        --durable "thread:$WORK/run/durable"
    server_run "$round" 2 roostd "$BIN/roostd" --data-dir "$WORK/run" --listen 127.0.0.1:0 \
        --set store.synchronous=full
    server_run "$round" 8 null "$BIN/null_server" --listen 127.0.0.1:0
    server_run "$round" 8 ideal_thread "$BIN/null_server" --listen 127.0.0.1:0 \
        --durable "thread:$WORK/run/durable"
    server_run "$round" 8 roostd "$BIN/roostd" --data-dir "$WORK/run" --listen 127.0.0.1:0 \
        --set store.synchronous=full
    if [ "$MYSQL" = 1 ]; then
        murl=$(fresh_db "ideal_loop_$round")
        record "$round" P2C2 mysql_loop "$("$BIN/mysql_direct" --url "$murl" --fresh \
            --seconds "$SECS" --warmup "$WARMUP" --producers 2 --consumers 2 2>&1)"
        murl=$(fresh_db "ideal_hop_$round")
        rm -rf "$WORK/run" && mkdir -p "$WORK/run"
        start_server "$WORK/run/ready" "$WORK/run/hop.log" "$BIN/null_server" --listen 127.0.0.1:0 \
            --ready-file "$WORK/run/ready"
        out=$("$BIN/mysql_direct" --url "$murl" --fresh --hop "$(head -n 1 "$WORK/run/ready")" \
            --seconds "$SECS" --warmup "$WARMUP" --producers 2 --consumers 2 2>&1)
        stop_server null_server "$WORK/run/hop.log"
        record "$round" P2C2 mysql_loop_hop "$out"
        murl=$(fresh_db "ideal_null_$round")
        server_run "$round" 2 mysql_ideal "$BIN/null_server" --listen 127.0.0.1:0 \
            --durable "mysql:$murl" --syncers 2
        murl=$(fresh_db "ideal_roostd_$round")
        server_run "$round" 2 mysql_roostd "$BIN/roostd" --data-dir "$WORK/run" \
            --listen 127.0.0.1:0 --set "store.url=$murl"
    fi
done

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) printf "%.2f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# ratios SHAPE NAME REF: the median of the per-round ratios NAME / REF
ratios() {
    awk -v s="$1" -v n="$2" -v r="$3" '$2 == s && $3 == n { a[$1] = $4 } $2 == s && $3 == r { b[$1] = $4 }
        END { for (k in a) if (b[k] > 0) print a[k] / b[k] }' "$RESULTS" | median
}
echo "medians over $ROUNDS rounds (cycles/s; ratios are medians of the per-round ratios):"
show() { # show SHAPE NAME REF
    local cps
    cps=$(awk -v s="$1" -v n="$2" '$2 == s && $3 == n { print $4 }' "$RESULTS" | median)
    printf "  %-5s %-14s %6.0f cycles/s  × %s %s\n" "$1" "$2" "$cps" "$3" "$(ratios "$1" "$2" "$3")"
}
show P2C2 ideal_inline sqlite_direct
show P2C2 ideal_thread sqlite_direct
show P2C2 roostd sqlite_direct
show P8C8 ideal_thread null
show P8C8 roostd null
if [ "$MYSQL" = 1 ]; then
    show P2C2 mysql_loop_hop mysql_loop
    show P2C2 mysql_ideal mysql_loop
    show P2C2 mysql_roostd mysql_loop
fi

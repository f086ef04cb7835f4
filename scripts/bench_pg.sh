#!/usr/bin/env bash
# `make bench-pg`: roostd on PostgreSQL beside the plain SKIP LOCKED loop and pgmq's queue shape
# (bench/pg_direct) on the same private server in the same run (issue 32, doc/BENCHMARKS.md).
#
# Starts a private PostgreSQL (scripts/postgres_test.sh: fsync and synchronous_commit on, data
# under BENCH_DIR, on the disk under test) and per run:
#   loop_p2c2 / loop_p8c8     bench/pg_direct --mode loop, the plain SKIP LOCKED loop (the peer)
#   pgmq_p2c2 / pgmq_p8c8     bench/pg_direct --mode pgmq, pgmq's queue shape
#   roostd1_p2c2 / _p8c8      one roostd on the database, driven by bench/roost_load
#   roostd2_p2c2 / _p8c8      2 roostd nodes on one schema, roost_load's producer and consumer i
#                             on node i % n (all nodes share one token key)
#   base1_p2c2 / _p8c8        with BENCH_BASE_ROOSTD: one node of another build's roostd (the
#                             build before a change), run next to roostd1_* in alternating order
# Every roostd scenario gets a schema of its own and fresh nodes. Each node's /metrics
# (roost_store_write_retries_total, group commits), the CPU of roostd and of every PostgreSQL
# process, and the load average are sampled as the load tool's window opens and closes
# (bench_lib.sh bench_measure).
#
# Environment (all optional): BUILD_DIR (default build), BENCH_RUNS (3), BENCH_SECONDS (8),
# BENCH_WARMUP (2), BENCH_TAIL_MS (roostd tail.interval_ms, default 100), BENCH_ROOSTD_ARGS,
# BENCH_DIR (default BUILD_DIR/bench-pg; on the disk under test, path short enough for a unix
# socket), BENCH_KEEP=1 (keep the server's data), BENCH_ONLY (space-separated scenario names),
# BENCH_BASE_ROOSTD (a base build's roostd binary: adds the base1_* scenarios).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-build}
case $BUILD_DIR in /*) ;; *) BUILD_DIR=$ROOT/$BUILD_DIR ;; esac
BIN=$BUILD_DIR/bin
RUNS=${BENCH_RUNS:-3}
SECS=${BENCH_SECONDS:-8}
WARMUP=${BENCH_WARMUP:-2}
TAIL_MS=${BENCH_TAIL_MS:-100}
WORK=${BENCH_DIR:-$BUILD_DIR/bench-pg}
read -r -a ROOSTD_ARGS <<<"${BENCH_ROOSTD_ARGS:-}"
ONLY=${BENCH_ONLY:-}
want() { [ -z "$ONLY" ] || [[ " $ONLY " == *" $1 "* ]]; }

for b in roostd roost_load pg_direct; do
    if [ ! -x "$BIN/$b" ]; then
        echo "bench-pg: $BIN/$b is missing; build first (make build, or BUILD_DIR=… for another tree)" >&2
        exit 2
    fi
done

mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
DBDIR=$WORK/db
rm -rf "$WORK/runs"
mkdir -p "$WORK/runs"
RAW=$WORK/raw.txt
: >"$RAW"
BENCH_NAME=bench-pg
. "$ROOT/scripts/bench_lib.sh"

cleanup() {
    bench_stop_all
    if [ "${BENCH_KEEP:-0}" != 1 ]; then
        "$ROOT/scripts/postgres_test.sh" stop "$DBDIR" >/dev/null 2>&1 || true
        rm -rf "$WORK/runs"
    else
        "$ROOT/scripts/postgres_test.sh" pause "$DBDIR" >/dev/null 2>&1 || true
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

COUNTERS_DB=""
BENCH_PG_PIDFILE=$DBDIR/data/postmaster.pid
COUNTERS_PG=1
BASE_ROOSTD=${BENCH_BASE_ROOSTD:-}

# A roostd scenario: a fresh schema, N nodes, one roost_load, nodes stopped. Scenarios named
# base* run BASE_ROOSTD.
roostd_scenario() { # SCENARIO RUN NODES P C
    local s=$1 run=$2 n=$3 p=$4 c=$5 d url
    want "$s" || return 0
    case $s in base*) [ -n "$BASE_ROOSTD" ] || return 0 ;; esac
    d=$WORK/runs/$s.$run
    url="$BASE_URL?schema=rb_${s}_$run"
    case $s in base*) ROOSTD_BIN=$BASE_ROOSTD ;; *) ROOSTD_BIN="" ;; esac
    start_nodes "$n" "$url" "$d"
    ROOSTD_BIN=""
    COUNTERS_URLS=$NODE_URLS
    bench_measure "$s" "$run" "$BIN/roost_load" --url "$NODE_URLS" --key-file "$KEY" \
        --seconds "$SECS" --warmup "$WARMUP" --producers "$p" --consumers "$c"
    COUNTERS_URLS=""
    bench_stop_all
}

START=$(date +%s)
CPU=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || echo unknown)
FSTYPE=$(df --output=fstype "$WORK" 2>/dev/null | tail -1 || true)
FSTYPE=${FSTYPE:-unknown}
COMMIT=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
"$ROOT/scripts/postgres_test.sh" stop "$DBDIR" >/dev/null 2>&1 || true
BASE_URL=$("$ROOT/scripts/postgres_test.sh" start "$DBDIR")
DBVER=$("$ROOT/scripts/postgres_test.sh" psql "$DBDIR" -At -c "SHOW server_version")
echo "bench-pg: $RUNS runs × ${SECS}s (+${WARMUP}s warm-up) per scenario; $(nproc) CPUs ($CPU); $FSTYPE at $WORK"
echo "bench-pg: PostgreSQL $DBVER, fsync=on, synchronous_commit=on; tail.interval_ms=$TAIL_MS"

for run in $(seq 1 "$RUNS"); do
    echo "run $run/$RUNS"
    ! want loop_p2c2 || bench_measure loop_p2c2 "$run" "$BIN/pg_direct" --url "$BASE_URL" \
        --mode loop --fresh --seconds "$SECS" --warmup "$WARMUP" --producers 2 --consumers 2
    ! want loop_p8c8 || bench_measure loop_p8c8 "$run" "$BIN/pg_direct" --url "$BASE_URL" \
        --mode loop --fresh --seconds "$SECS" --warmup "$WARMUP" --producers 8 --consumers 8
    ! want pgmq_p2c2 || bench_measure pgmq_p2c2 "$run" "$BIN/pg_direct" --url "$BASE_URL" \
        --mode pgmq --fresh --seconds "$SECS" --warmup "$WARMUP" --producers 2 --consumers 2
    ! want pgmq_p8c8 || bench_measure pgmq_p8c8 "$run" "$BIN/pg_direct" --url "$BASE_URL" \
        --mode pgmq --fresh --seconds "$SECS" --warmup "$WARMUP" --producers 8 --consumers 8
    # This build and the base build in turn, the first of the pair alternating between runs.
    for shape in "p2c2 2 2" "p8c8 8 8"; do
        read -r sh p c <<<"$shape"
        if [ $((run % 2)) = 1 ]; then
            roostd_scenario "roostd1_$sh" "$run" 1 "$p" "$c"
            roostd_scenario "base1_$sh" "$run" 1 "$p" "$c"
        else
            roostd_scenario "base1_$sh" "$run" 1 "$p" "$c"
            roostd_scenario "roostd1_$sh" "$run" 1 "$p" "$c"
        fi
    done
    roostd_scenario roostd2_p2c2 "$run" 2 2 2
    roostd_scenario roostd2_p8c8 "$run" 2 8 8
done
ELAPSED=$(($(date +%s) - START))

row() { # scenario, description
    local s=$1 x=- xb=-
    grep -q "^scenario=$s " "$RAW" || return 0
    case $s in roostd* | base* | pgmq*) x=$(ratio "$s" "loop_${s##*_}") ;; esac
    case $s in roostd1*) xb=$(ratio "$s" "base${s#roostd}") ;; esac
    printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$s" "$2" \
        "$(median "$s" cycles_per_s)" "$(range "$s" cycles_per_s)" "$x" "$xb" "$(median "$s" loadavg)" \
        "$(median "$s" publish_per_s)" "$(median "$s" publish_p50_ms)" "$(median "$s" ack_p50_ms)" \
        "$(median "$s" roostd_commits_per_cycle)" "$(median "$s" roostd_cpu_ms_per_cycle)" \
        "$(median "$s" db_cpu_ms_per_cycle)" "$(median "$s" load_cpu_ms_per_cycle)" "$(total "$s" errors)"
}
R2=$(ratio roostd1_p2c2 loop_p2c2)
R8=$(ratio roostd1_p8c8 loop_p8c8)
RESULTS=$WORK/results.md
{
    echo "Run $(date -u +%Y-%m-%dT%H:%MZ), commit $COMMIT, $(nproc) CPUs ($CPU), Linux $(uname -r), data on"
    echo "$FSTYPE. PostgreSQL $DBVER (private server of scripts/postgres_test.sh, TCP on loopback, fsync and"
    echo "synchronous_commit on, shared_buffers 128MB). roostd: \`tail.interval_ms=$TAIL_MS\`${BENCH_ROOSTD_ARGS:+, \`$BENCH_ROOSTD_ARGS\`}${BASE_ROOSTD:+; base build: $BASE_ROOSTD}."
    echo "$RUNS runs × ${SECS} s windows after ${WARMUP} s warm-up; medians (min–max over runs); $ELAPSED s in all."
    echo "Command: \`make bench-pg\` (\`BENCH_RUNS=$RUNS BENCH_SECONDS=$SECS BENCH_WARMUP=$WARMUP scripts/bench_pg.sh\`)."
    echo
    echo "| scenario | what | full cycles/s | range | × loop, same shape | × base build | load avg | publishes/s | publish RTT p50 ms | ack RTT p50 ms | roostd commits / cycle | roostd CPU ms / cycle | PostgreSQL CPU ms / cycle | load tool CPU ms / cycle | errors |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    row loop_p2c2 "plain SKIP LOCKED loop (pg_direct), P2 C2"
    row loop_p8c8 "plain SKIP LOCKED loop (pg_direct), P8 C8"
    row pgmq_p2c2 "pgmq's queue shape (pg_direct --mode pgmq), P2 C2"
    row pgmq_p8c8 "pgmq's queue shape (pg_direct --mode pgmq), P8 C8"
    row roostd1_p2c2 "roostd, 1 node, P2 C2"
    row base1_p2c2 "base build's roostd, 1 node, P2 C2"
    row roostd1_p8c8 "roostd, 1 node, P8 C8"
    row base1_p8c8 "base build's roostd, 1 node, P8 C8"
    row roostd2_p2c2 "roostd, 2 nodes, P2 C2"
    row roostd2_p8c8 "roostd, 2 nodes, P8 C8"
    echo
    echo "| target (issue 32) | measured, median (min–max) of per-run ratios | |"
    echo "|---|---|---|"
    echo "| roostd 1 node P8C8 ≥ 1.0× the plain SKIP LOCKED loop | $R8 | $(check "$R8" ">=" 1) |"
    echo "| (roostd 1 node P2C2 / plain loop, for reference) | $R2 | |"
} >"$RESULTS"
echo
cat "$RESULTS"
echo
echo "bench-pg: raw results in $RAW, table in $RESULTS"

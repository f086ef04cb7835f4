#!/usr/bin/env bash
# `make bench-sweep`: scenario 1 of BENCHMARKS.md (full cycle at full durability) swept over the
# shape P = C ∈ BENCH_SHAPES for roostd on SQLite, roostd on MariaDB with 1, 2 and 4 nodes, and
# the references measured in the same run: direct SQLite (bench/sqlite_direct), the plain SKIP
# LOCKED loop (bench/mysql_direct) and the in-memory ceiling (bench/null_server). See
# doc/BENCHMARKS.md ("The sweep").
#
# Per run, for each shape, every system in turn (so a shape's systems are measured within about a
# minute of each other): a fresh server (data dir, database, nodes), one load tool, the server's
# counters sampled as the tool's window opens and closes (bench_lib.sh bench_measure). Then
# scripts/bench_sweep_report.sh BENCH_DIR makes the files below from raw.txt and meta.env (run it
# again to redo them, e.g. BENCH_WRITE_DOC=1 after a run without). Output:
#   BENCH_DIR/raw.txt        one key=value line per measurement
#   BENCH_DIR/meta.env       the run's settings and machine (shell assignments)
#   BENCH_DIR/sweep.tsv      one row per system, shape and run (the tab-separated columns below)
#   BENCH_DIR/medians.tsv    one row per system and shape: medians over runs, ratios to the
#                            references; the plot is made from it (scripts/bench_plot.sh)
#   BENCH_DIR/results.md     the Markdown table
#   BENCH_DIR/bench-cycles.png
#
# Environment (all optional):
#   BUILD_DIR          build tree with bin/roostd, bin/roost_load, … (default: build)
#   BENCH_RUNS         runs, the tables show medians (default 3)
#   BENCH_SECONDS      measurement window per point (default 5)
#   BENCH_WARMUP       warm-up before each window (default 1)
#   BENCH_SHAPES       P = C values (default "1 2 4 8 16")
#   BENCH_SYSTEMS      systems to run (default all: sqlite_direct null roostd_sqlite mysql_direct
#                      roostd_mysql1 roostd_mysql2 roostd_mysql4)
#   BENCH_TAIL_MS      roostd tail.interval_ms on the MariaDB nodes (default 100)
#   BENCH_ROOSTD_ARGS  extra roostd arguments for every roostd, e.g. "--set store.writers=2"
#   BENCH_DIR          scratch and results directory (default BUILD_DIR/bench-sweep); on the disk
#                      under test (not tmpfs), and short: the MariaDB socket lives there
#   BENCH_KEEP         1: keep data directories, logs and the MariaDB data
#   BENCH_WRITE_DOC    1: copy medians.tsv to doc/bench-sweep.tsv, the plot to
#                      doc/bench-cycles.png and the table between the bench:sweep markers of
#                      doc/BENCHMARKS.md
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-build}
case $BUILD_DIR in /*) ;; *) BUILD_DIR=$ROOT/$BUILD_DIR ;; esac
BIN=$BUILD_DIR/bin
RUNS=${BENCH_RUNS:-3}
SECS=${BENCH_SECONDS:-5}
WARMUP=${BENCH_WARMUP:-1}
SHAPES=${BENCH_SHAPES:-1 2 4 8 16}
ALL_SYSTEMS="sqlite_direct null roostd_sqlite mysql_direct roostd_mysql1 roostd_mysql2 roostd_mysql4"
SYSTEMS=${BENCH_SYSTEMS:-$ALL_SYSTEMS}
TAIL_MS=${BENCH_TAIL_MS:-100}
WORK=${BENCH_DIR:-$BUILD_DIR/bench-sweep}
read -r -a ROOSTD_ARGS <<<"${BENCH_ROOSTD_ARGS:-}"
BENCH_NAME=bench-sweep

for s in $SYSTEMS; do
    [[ " $ALL_SYSTEMS " == *" $s "* ]] || {
        echo "$BENCH_NAME: unknown system $s (known: $ALL_SYSTEMS)" >&2
        exit 2
    }
done
for b in roostd roost_load sqlite_direct null_server mysql_direct; do
    if [ ! -x "$BIN/$b" ]; then
        echo "$BENCH_NAME: $BIN/$b is missing; build first (make build, or BUILD_DIR=… for another tree)" >&2
        exit 2
    fi
done
MYSQL=0
[[ " $SYSTEMS " == *" mysql_direct "* || " $SYSTEMS " == *" roostd_mysql"* ]] && MYSQL=1
MARIADB=$(command -v mariadb || command -v mysql || true)
if [ "$MYSQL" = 1 ] && [ -z "$MARIADB" ]; then
    echo "$BENCH_NAME: the mariadb client is missing (scripts/deps.sh installs mariadb-server)" >&2
    exit 2
fi

mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
DBDIR=$WORK/db
BENCH_DB_SOCKET=$DBDIR/mysqld.sock
rm -rf "$WORK/runs"
mkdir -p "$WORK/runs"
RAW=$WORK/raw.txt
: >"$RAW"
. "$ROOT/scripts/bench_lib.sh"

cleanup() {
    bench_stop_all
    if [ "$MYSQL" = 1 ]; then
        if [ "${BENCH_KEEP:-0}" != 1 ]; then
            "$ROOT/scripts/mariadb_test.sh" stop "$DBDIR" >/dev/null 2>&1 || true
        else
            "$ROOT/scripts/mariadb_test.sh" pause "$DBDIR" >/dev/null 2>&1 || true
        fi
    fi
    [ "${BENCH_KEEP:-0}" = 1 ] || rm -rf "$WORK/runs"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

START=$(date +%s)
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
CPU=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || echo unknown)
FSTYPE=$(df --output=fstype "$WORK" 2>/dev/null | tail -1 || true)
FSTYPE=${FSTYPE:-unknown}
if [ "$FSTYPE" = tmpfs ] || [ "$FSTYPE" = ramfs ]; then
    echo "$BENCH_NAME: WARNING: $WORK is on $FSTYPE: fsync costs nothing there, the figures mean little" >&2
fi
COMMIT=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git -C "$ROOT" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
    COMMIT="$COMMIT+dirty"
fi
DBVER=-
if [ "$MYSQL" = 1 ]; then
    "$ROOT/scripts/mariadb_test.sh" stop "$DBDIR" >/dev/null 2>&1 || true
    BASE_URL=$("$ROOT/scripts/mariadb_test.sh" start "$DBDIR")
    DBVER=$(bench_sql -e "SELECT VERSION()")
    FLUSH=$(bench_sql -e "SELECT @@innodb_flush_log_at_trx_commit")
fi
LOAD=("$BIN/roost_load" --seconds "$SECS" --warmup "$WARMUP")
n_points=$(($(wc -w <<<"$SHAPES") * $(wc -w <<<"$SYSTEMS") * RUNS))
echo "$BENCH_NAME: $RUNS runs × shapes P=C ∈ {$SHAPES} × {$SYSTEMS}: $n_points points of ${SECS}s (+${WARMUP}s warm-up)"
echo "$BENCH_NAME: $(nproc) CPUs ($CPU); $FSTYPE at $WORK; load average $LOAD0${DBVER:+; MariaDB $DBVER}"

# point SYSTEM N RUN: one measurement of SYSTEM at P = C = N (scenario SYSTEM_pN). The 1-minute
# load average before each point goes to LOADS: the table reports how busy the machine was.
LOADS=$WORK/loadavg.txt
: >"$LOADS"
point() {
    local sys=$1 n=$2 run=$3 s=$1_p$2 d url
    cut -d' ' -f1 /proc/loadavg >>"$LOADS"
    d=$WORK/runs/$s.$run
    mkdir -p "$d"
    COUNTERS_DB=""
    COUNTERS_URLS=""
    case $sys in
    sqlite_direct)
        bench_measure "$s" "$run" "$BIN/sqlite_direct" --db "$d/direct.db" --fresh \
            --synchronous full --seconds "$SECS" --warmup "$WARMUP" --producers "$n" --consumers "$n"
        ;;
    null)
        start_server "$d/ready" "$d/null_server.log" "$BIN/null_server" --listen 127.0.0.1:0 \
            --ready-file "$d/ready"
        bench_measure "$s" "$run" "${LOAD[@]}" --url "$(cat "$d/ready")" --target null \
            --producers "$n" --consumers "$n"
        stop_server null_server "$d/null_server.log"
        ;;
    roostd_sqlite)
        start_server "$d/ready" "$d/roostd.log" "$BIN/roostd" --data-dir "$d" \
            --listen 127.0.0.1:0 --ready-file "$d/ready" --set store.synchronous=full \
            "${ROOSTD_ARGS[@]}"
        COUNTERS_URLS=$(cat "$d/ready")
        bench_measure "$s" "$run" "${LOAD[@]}" --data-dir "$d" --producers "$n" --consumers "$n"
        stop_server roostd "$d/roostd.log"
        ;;
    mysql_direct)
        url=$(fresh_db "sw_direct_${n}_$run")
        COUNTERS_DB=1
        bench_measure "$s" "$run" "$BIN/mysql_direct" --url "$url" --fresh \
            --seconds "$SECS" --warmup "$WARMUP" --producers "$n" --consumers "$n"
        bench_sql -e "DROP DATABASE IF EXISTS sw_direct_${n}_$run"
        ;;
    roostd_mysql*)
        url=$(fresh_db "sw_${sys}_${n}_$run")
        start_nodes "${sys#roostd_mysql}" "$url" "$d"
        COUNTERS_DB=1
        COUNTERS_URLS=$NODE_URLS
        bench_measure "$s" "$run" "${LOAD[@]}" --url "$NODE_URLS" --key-file "$KEY" \
            --producers "$n" --consumers "$n"
        bench_stop_all
        bench_sql -e "DROP DATABASE IF EXISTS sw_${sys}_${n}_$run"
        ;;
    esac
    [ "${BENCH_KEEP:-0}" = 1 ] || rm -f "$d"/*.db "$d"/*.db-wal "$d"/*.db-shm
}

for run in $(seq 1 "$RUNS"); do
    echo "run $run/$RUNS"
    for n in $SHAPES; do
        for sys in $SYSTEMS; do
            point "$sys" "$n" "$run"
        done
    done
done
ELAPSED=$(($(date +%s) - START))
LOAD1=$(cut -d' ' -f1-3 /proc/loadavg)
# "median M, max X" of the 1-minute load average sampled before every point.
LOADS_RUN=$(sort -g "$LOADS" | awk '{ v[NR] = $1 } END { if (NR) printf "median %s, max %s, sampled before each point", v[int((NR + 1) / 2)], v[NR]; else printf "-" }')

# What the report needs besides raw.txt, so scripts/bench_sweep_report.sh can redo it later.
{
    for v in RUNS SECS WARMUP SHAPES SYSTEMS TAIL_MS COMMIT CPU FSTYPE DBVER LOAD0 LOAD1 LOADS_RUN \
        ELAPSED MYSQL; do
        printf '%s=%q\n' "$v" "${!v}"
    done
    printf 'FLUSH=%q\nRUN_DATE=%q\nNPROC=%q\nKERNEL=%q\nBUILD_REL=%q\nROOSTD_ARGS_TEXT=%q\n' "${FLUSH:-?}" \
        "$(date -u +%Y-%m-%dT%H:%MZ)" "$(nproc)" "$(uname -r)" "${BUILD_DIR#"$ROOT"/}" \
        "${BENCH_ROOSTD_ARGS:-}"
} >"$WORK/meta.env"
"$ROOT/scripts/bench_sweep_report.sh" "$WORK"


#!/usr/bin/env bash
# `make bench-mysql`: scenarios 1 and 6 of BENCHMARKS.md on MariaDB, see doc/BENCHMARKS.md.
#
# Starts a private MariaDB (scripts/mariadb_test.sh: innodb_flush_log_at_trx_commit=1, data under
# BENCH_DIR, on the disk under test) and per run:
#   mysql_p2c2 / mysql_p8c8   bench/mysql_direct, the plain SKIP LOCKED loop (the peer)
#   mysql_paced               the loop, paced at BENCH_RATE events/s: its publish → ack
#                             latency (three autocommits in turn, consumers woken in-process) is
#                             the floor of roostd1_paced's on the same server and disk
#   roostd1_p2c2 / _p8c8      one roostd on the database, driven by bench/roost_load
#   roostd1a_p2c2 / _p8c8     the same with one agent shared by every producer and consumer
#   roostd1_paced             one roostd, publishes paced at BENCH_RATE events/s: the
#                             latency figure (publish → ack p99) and whether the rate is held
#   base1_…, base1a_…         with BENCH_BASE_ROOSTD: the same shapes (the paced one too) on another
#                             build's roostd, alternating with the build under test within a run
#   roostd2_p8c8, roostd4_p8c8  2 and 4 roostd nodes on one database, roost_load's producer and
#                             consumer i on node i % n (all nodes share one token key)
#   ping_2n                   scenario 6: bench/sse_bench subscribers on node 1, paced publishes
#                             on node 2, publish sent → ping received (the other node's tailer)
# Every scenario gets a fresh database and fresh nodes. As each tool's measurement window opens
# and closes (it marks both in BENCH_WINDOW_FILE) the server's SHOW GLOBAL STATUS (Questions,
# Handler_commit, Com_commit, Innodb_deadlocks, Innodb_row_lock_waits) and every node's /metrics
# (roost_store_write_retries_total, group commits) are sampled: the deltas over the window,
# divided by the full cycles of that window (bench_lib.sh bench_measure). Each paced scenario also
# writes its events' stage times (bench_peer.c BENCH_EVENT_TRACE, runs/SCENARIO.RUN.events) and
# prints where their publish → ack latency went (bench/event_stages.py, kept as ….events.stages).
# Every roostd scenario keeps the first node's /metrics as the run ends (runs/SCENARIO.RUN.metrics,
# kept with BENCH_KEEP=1): its store's time per op, queue waits and COMMITs, warm-up included.
#
# Environment (all optional):
#   BUILD_DIR          build tree with bin/roostd, bin/roost_load, … (default: build)
#   BENCH_RUNS         runs, the table shows medians (default 3)
#   BENCH_SECONDS      measurement window per scenario (default 8)
#   BENCH_WARMUP       warm-up before each window (default 2)
#   BENCH_TAIL_MS      roostd tail.interval_ms on every node (default 100, roostd's default)
#   BENCH_PING_SAMPLES cross-node publish→ping samples per run (default 100)
#   BENCH_PING_PERIOD  ms between sample starts (default 237: longer than a ping takes, so samples
#                      do not queue behind each other, and not a multiple of the tail interval,
#                      so publishes fall at every phase of the other node's tail timer)
#   BENCH_RATE         events/s of roostd1_paced (default 1000)
#   BENCH_PACED_CLIENTS producers and consumers of the paced scenarios, the rate shared among them
#                      (default 2: each producer publishes every 2 ms at 1,000/s, in turn)
#   BENCH_ROOSTD_ARGS  extra roostd arguments, e.g. "--set store.group_commit_max=64"
#   BENCH_DIR          scratch and results directory (default BUILD_DIR/bench-mysql); it must be on
#                      the disk under test (not tmpfs); the MariaDB socket path must stay short
#   BENCH_KEEP         1: keep data directories, logs and the MariaDB data
#   BENCH_WRITE_DOC    1: replace the MariaDB results section of doc/BENCHMARKS.md with this run's
#   BENCH_ONLY         space-separated scenario names to run (default: all), for quick looks
#   BENCH_BASE_ROOSTD  a base build's roostd binary: adds the base1_… and base1a_… scenarios and
#                      the new/base ratios
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-build}
case $BUILD_DIR in /*) ;; *) BUILD_DIR=$ROOT/$BUILD_DIR ;; esac
BIN=$BUILD_DIR/bin
RUNS=${BENCH_RUNS:-3}
SECS=${BENCH_SECONDS:-8}
WARMUP=${BENCH_WARMUP:-2}
TAIL_MS=${BENCH_TAIL_MS:-100}
PING_SAMPLES=${BENCH_PING_SAMPLES:-100}
PING_PERIOD=${BENCH_PING_PERIOD:-237}
RATE=${BENCH_RATE:-1000}
PACED=${BENCH_PACED_CLIENTS:-2}
WORK=${BENCH_DIR:-$BUILD_DIR/bench-mysql}
read -r -a ROOSTD_ARGS <<<"${BENCH_ROOSTD_ARGS:-}"
ONLY=${BENCH_ONLY:-}
want() { [ -z "$ONLY" ] || [[ " $ONLY " == *" $1 "* ]]; }

for b in roostd roost_load mysql_direct sse_bench; do
    if [ ! -x "$BIN/$b" ]; then
        echo "bench-mysql: $BIN/$b is missing; build first (make build, or BUILD_DIR=… for another tree)" >&2
        exit 2
    fi
done
MARIADB=$(command -v mariadb || command -v mysql || true)
if [ -z "$MARIADB" ]; then
    echo "bench-mysql: the mariadb client is missing (scripts/deps.sh installs mariadb-server)" >&2
    exit 2
fi

mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
DBDIR=$WORK/db
rm -rf "$WORK/runs"
mkdir -p "$WORK/runs"
RAW=$WORK/raw.txt
: >"$RAW"
BENCH_NAME=bench-mysql
. "$ROOT/scripts/bench_lib.sh"

cleanup() {
    bench_stop_all
    if [ "${BENCH_KEEP:-0}" != 1 ]; then
        "$ROOT/scripts/mariadb_test.sh" stop "$DBDIR" >/dev/null 2>&1 || true
        rm -rf "$WORK/runs"
    else
        "$ROOT/scripts/mariadb_test.sh" pause "$DBDIR" >/dev/null 2>&1 || true
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

BENCH_DB_SOCKET=$DBDIR/mysqld.sock
BENCH_DB_PIDFILE=$DBDIR/mysqld.pid
COUNTERS_DB=1
sql() { bench_sql "$@"; }

BASE_ROOSTD=${BENCH_BASE_ROOSTD:-}

# A paced scenario's per-event trace file (bench_peer.c BENCH_EVENT_TRACE), "" for the others.
event_trace() { # SCENARIO RUN
    case $1 in *_paced) echo "$WORK/runs/$1.$2.events" ;; esac
}
# Where its events' latency went (bench/event_stages.py), kept beside it and printed.
event_stages() { # SCENARIO RUN
    local f=$WORK/runs/$1.$2.events
    [ -s "$f" ] || return 0
    python3 "$ROOT/bench/event_stages.py" "$f" >"$f.stages" 2>&1 || true
    sed 's/^/      /' "$f.stages"
}

# A roostd scenario: fresh database, N nodes, one roost_load, nodes stopped. Scenarios named
# base* run BASE_ROOSTD; *1a_* share one agent among every producer and consumer (default: one
# agent per consumer).
roostd_scenario() { # SCENARIO RUN NODES P C
    local s=$1 run=$2 n=$3 p=$4 c=$5 d url agents=()
    want "$s" || return 0
    case $s in base*) [ -n "$BASE_ROOSTD" ] || return 0 ;; esac
    case $s in *1a_*) agents=(--agents 1) ;; *_paced) agents=(--rate "$RATE") ;; esac
    d=$WORK/runs/$s.$run
    url=$(fresh_db "rb_${s}_$run")
    case $s in base*) ROOSTD_BIN=$BASE_ROOSTD ;; *) ROOSTD_BIN="" ;; esac
    start_nodes "$n" "$url" "$d"
    ROOSTD_BIN=""
    COUNTERS_URLS=$NODE_URLS
    BENCH_EVENT_TRACE=$(event_trace "$s" "$run") bench_measure "$s" "$run" "$BIN/roost_load" \
        --url "$NODE_URLS" --key-file "$KEY" --seconds "$SECS" --warmup "$WARMUP" \
        --producers "$p" --consumers "$c" "${agents[@]}"
    event_stages "$s" "$run"
    curl -s --max-time 10 "${NODE_URLS%%,*}/metrics" >"$d.metrics" || true
    COUNTERS_URLS=""
    bench_stop_all
}

START=$(date +%s)
CPU=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || echo unknown)
FSTYPE=$(df --output=fstype "$WORK" 2>/dev/null | tail -1 || true)
FSTYPE=${FSTYPE:-unknown}
if [ "$FSTYPE" = tmpfs ] || [ "$FSTYPE" = ramfs ]; then
    echo "bench-mysql: WARNING: $WORK is on $FSTYPE: fsync costs nothing there, the figures mean little" >&2
fi
COMMIT=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git -C "$ROOT" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
    COMMIT="$COMMIT+dirty"
fi

"$ROOT/scripts/mariadb_test.sh" stop "$DBDIR" >/dev/null 2>&1 || true
BASE_URL=$("$ROOT/scripts/mariadb_test.sh" start "$DBDIR")
DBVER=$(sql -e "SELECT VERSION()")
FLUSH=$(sql -e "SELECT @@innodb_flush_log_at_trx_commit")
BINLOG=$(sql -e "SELECT @@log_bin")
echo "bench-mysql: $RUNS runs × ${SECS}s (+${WARMUP}s warm-up) per scenario; $(nproc) CPUs ($CPU); $FSTYPE at $WORK"
echo "bench-mysql: MariaDB $DBVER, innodb_flush_log_at_trx_commit=$FLUSH, log_bin=$BINLOG; tail.interval_ms=$TAIL_MS"

for run in $(seq 1 "$RUNS"); do
    echo "run $run/$RUNS"
    url=$(fresh_db "rb_direct_$run")
    ! want mysql_p2c2 || bench_measure mysql_p2c2 "$run" "$BIN/mysql_direct" --url "$url" --fresh \
        --seconds "$SECS" --warmup "$WARMUP" --producers 2 --consumers 2
    ! want mysql_p8c8 || bench_measure mysql_p8c8 "$run" "$BIN/mysql_direct" --url "$url" --fresh \
        --seconds "$SECS" --warmup "$WARMUP" --producers 8 --consumers 8
    if want mysql_paced; then
        BENCH_EVENT_TRACE=$(event_trace mysql_paced "$run") bench_measure mysql_paced "$run" \
            "$BIN/mysql_direct" --url "$url" --fresh --seconds "$SECS" --warmup "$WARMUP" \
            --producers "$PACED" --consumers "$PACED" --rate "$RATE"
        event_stages mysql_paced "$run"
    fi
    for shape in 1_p2c2 1_p8c8 1a_p2c2 1a_p8c8 1_paced; do
        # The base build first in odd runs, second in even ones.
        if [ $((run % 2)) = 1 ]; then order="base roostd"; else order="roostd base"; fi
        for who in $order; do
            case $shape in *p8c8) pc="8 8" ;; *_paced) pc="$PACED $PACED" ;; *) pc="2 2" ;; esac
            # shellcheck disable=SC2086
            roostd_scenario "$who$shape" "$run" 1 $pc
        done
    done
    roostd_scenario roostd2_p8c8 "$run" 2 8 8
    roostd_scenario roostd4_p8c8 "$run" 4 8 8

    # Scenario 6: subscribers on node 1, publishes on node 2.
    want ping_2n || continue
    d=$WORK/runs/ping.$run
    url=$(fresh_db "rb_ping_$run")
    start_nodes 2 "$url" "$d"
    n1=${NODE_URLS%%,*}
    n2=${NODE_URLS#*,}
    perr=$d/sse_bench.err
    pline=$("$BIN/sse_bench" --url "$n1" --publish-url "$n2" --key-file "$KEY" --subscribers 20 \
        --source-base none --settle 0 --idle-seconds 0 --fanouts 0 --samples "$PING_SAMPLES" \
        --sample-period-ms "$PING_PERIOD" 2>"$perr" | grep '^RESULT ' || true)
    bench_stop_all
    if [ -n "$pline" ]; then
        echo "scenario=ping_2n run=$run ${pline#RESULT }" >>"$RAW"
        printf '  %-14s run %d: ping p50 %s ms  p99 %s ms  max %s ms  lost %s  errors %s\n' ping_2n \
            "$run" "$(kv "$pline" ping_p50_ms)" "$(kv "$pline" ping_p99_ms)" \
            "$(kv "$pline" ping_max_ms)" "$(kv "$pline" ping_lost)" "$(kv "$pline" errors)"
    else
        echo "bench-mysql: ping_2n (run $run) produced no result; stderr:" >&2
        tail -10 "$perr" >&2
    fi
done
ELAPSED=$(($(date +%s) - START))

# ---- the tables ----
# Retries per run: roostd's transactions run again (/metrics, over the window), or the loop's own
# count of transactions rolled back and retried (deadlock or lock wait timeout, whole run).
retries_total() {
    { grep "^scenario=$1 " "$RAW" || true; } | tr ' ' '\n' | awk -F= '$1 == "roostd_retries" { r += $2; seen = 1 }
        $1 == "deadlocks" || $1 == "lock_wait_timeouts" { r += $2; seen = 1 }
        END { if (seen) print r + 0; else print "-" }'
}
row() { # scenario, description
    local s=$1
    grep -q "^scenario=$s " "$RAW" || return 0
    local x=-
    case $s in roostd* | base*) x=$(ratio "$s" "mysql_${s##*_}") ;; esac
    local xb=-
    case $s in roostd1*) xb=$(ratio "$s" "base${s#roostd}") ;; esac
    printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$s" "$2" \
        "$(median "$s" cycles_per_s)" "$(range "$s" cycles_per_s)" "$x" "$xb" "$(median "$s" loadavg)" \
        "$(median "$s" publish_per_s)" \
        "$(median "$s" publish_p50_ms)" "$(median "$s" ack_p50_ms)" \
        "$(median "$s" db_questions_per_cycle)" "$(median "$s" db_commits_per_cycle)" \
        "$(median "$s" db_commit_stmts_per_cycle)" \
        "$(total "$s" db_deadlocks)" "$(total "$s" db_lock_waits)" "$(retries_total "$s")" \
        "$(total "$s" errors)" "$(median "$s" db_cpu_ms_per_cycle)" \
        "$(median "$s" roostd_cpu_ms_per_cycle)"
}
R_DIRECT=$(ratio roostd1_p2c2 mysql_p2c2)
R_DIRECT8=$(ratio roostd1_p8c8 mysql_p8c8)
R_2=$(ratio roostd2_p8c8 roostd1_p8c8)
R_4=$(ratio roostd4_p8c8 roostd1_p8c8)
P50=$(median ping_2n ping_p50_ms)
P99=$(median ping_2n ping_p99_ms)
PMAX=$({ grep "^scenario=ping_2n " "$RAW" || true; } | tr ' ' '\n' | awk -F= '$1 == "ping_max_ms" && $2 > m { m = $2 } END { print m + 0 }')
TARGET_P99=$(awk -v t="$TAIL_MS" 'BEGIN { printf "%g", 1.5 * t }')
RESULTS=$WORK/results.md
{
    echo "Run $(date -u +%Y-%m-%dT%H:%MZ), commit $COMMIT, $(nproc) CPUs ($CPU), Linux $(uname -r),"
    echo "data on $FSTYPE. MariaDB $DBVER (private server of scripts/mariadb_test.sh, TCP on loopback),"
    echo "\`innodb_flush_log_at_trx_commit=$FLUSH\`, log_bin=$BINLOG, buffer pool 128M; every reply waits for its commit's"
    echo "redo-log fsync. roostd: \`tail.interval_ms=$TAIL_MS\`${BENCH_ROOSTD_ARGS:+, \`$BENCH_ROOSTD_ARGS\`}, defaults otherwise."
    echo "$RUNS runs × ${SECS} s windows after ${WARMUP} s warm-up; medians (min–max over runs); $ELAPSED s in all."
    echo "Command: \`make bench-mysql\` (\`BUILD_DIR=${BUILD_DIR#"$ROOT"/} BENCH_RUNS=$RUNS BENCH_SECONDS=$SECS BENCH_WARMUP=$WARMUP BENCH_TAIL_MS=$TAIL_MS BENCH_PING_SAMPLES=$PING_SAMPLES BENCH_PING_PERIOD=$PING_PERIOD scripts/bench_mysql.sh\`)."
    echo
    echo "| scenario | what | full cycles/s | range | × loop, same shape | × base build | load avg | publishes/s | publish RTT p50 ms | ack RTT p50 ms | SQL statements / cycle | Handler_commit / cycle | COMMIT statements / cycle | Innodb deadlocks | row lock waits | retries | errors | mysqld CPU ms / cycle | roostd CPU ms / cycle |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    row mysql_p2c2 "plain SKIP LOCKED loop (mysql_direct), P2 C2"
    row mysql_p8c8 "plain SKIP LOCKED loop (mysql_direct), P8 C8"
    row mysql_paced "plain SKIP LOCKED loop (mysql_direct), P$PACED C$PACED, paced $RATE ev/s"
    row roostd1_p2c2 "roostd, 1 node, P2 C2"
    row roostd1_p8c8 "roostd, 1 node, P8 C8"
    row roostd1a_p2c2 "roostd, 1 node, P2 C2, one agent"
    row roostd1a_p8c8 "roostd, 1 node, P8 C8, one agent"
    row roostd1_paced "roostd, 1 node, P$PACED C$PACED, paced $RATE ev/s"
    row base1_p2c2 "base build, 1 node, P2 C2"
    row base1_p8c8 "base build, 1 node, P8 C8"
    row base1a_p2c2 "base build, 1 node, P2 C2, one agent"
    row base1a_p8c8 "base build, 1 node, P8 C8, one agent"
    row base1_paced "base build, 1 node, P$PACED C$PACED, paced $RATE ev/s"
    row roostd2_p8c8 "roostd, 2 nodes, P8 C8"
    row roostd4_p8c8 "roostd, 4 nodes, P8 C8"
    echo
    echo "Full cycles/s = events acknowledged per second (ack each); × loop = median (min–max) of the"
    echo "per-run ratios to the plain loop at the same P and C. SQL statements (Questions, each"
    echo "statement of a multi-statement round trip counted), Handler_commit (engine commits, which"
    echo "MariaDB also counts per statement, read-only ones included) and COMMIT statements (Com_commit:"
    echo "roostd's write transactions; the loop's inserts and acks are autocommit and not in it) per cycle,"
    echo "deadlocks and row lock waits are SHOW GLOBAL STATUS deltas over the measurement window"
    echo "(sampled as the tool opens and closes it), summed over runs for the counts; retries = write"
    echo "transactions run again after a deadlock or lock wait timeout: roostd's"
    echo "\`roost_store_write_retries_total\` over the window (all nodes), or the loop's own count over"
    echo "the whole run; summed over runs. CPU per cycle: utime + stime (/proc) of mysqld and of every"
    echo "roostd node over the window, per event acknowledged; medians."
    echo
    echo "| target (BENCHMARKS.md) | measured, median (min–max) of per-run ratios | |"
    echo "|---|---|---|"
    echo "| roostd 1 node P2C2 ≥ 1.0× the plain SKIP LOCKED loop | $R_DIRECT | $(check "$R_DIRECT" ">=" 1) |"
    echo "| roostd 1 node P8C8 ≥ 1.5× the plain SKIP LOCKED loop | $R_DIRECT8 | $(check "$R_DIRECT8" ">=" 1.5) |"
    echo "| 2 nodes ≥ 1.5× 1 node (P8C8) | $R_2 | $(check "$R_2" ">=" 1.5) |"
    echo "| throughput grows with nodes: 4 nodes / 1 node (P8C8) | $R_4 | $(check "$R_4" ">=" 1) |"
    echo "| paced $RATE events/s held with publish → ack p99 ≤ 10 ms, no failed request (issue 35) | p99 $(median roostd1_paced lat_p99_ms) ms (runs $(range roostd1_paced lat_p99_ms)), p50 $(median roostd1_paced lat_p50_ms) ms, $(median roostd1_paced publish_per_s) publishes/s, $(total roostd1_paced errors) errors | $(check "$(median roostd1_paced lat_p99_ms)" "<=" 10) |"
    if grep -q '^scenario=mysql_paced ' "$RAW"; then
        echo "| the plain loop paced the same (its floor: three autocommits in turn) | p99 $(median mysql_paced lat_p99_ms) ms (runs $(range mysql_paced lat_p99_ms)), p50 $(median mysql_paced lat_p50_ms) ms, $(median mysql_paced publish_per_s) publishes/s, $(total mysql_paced errors) errors | $(check "$(median mysql_paced lat_p99_ms)" "<=" 10) |"
    fi
    if grep -q '^scenario=base1_paced ' "$RAW"; then
        echo "| the same on the base build (BENCH_BASE_ROOSTD) | p99 $(median base1_paced lat_p99_ms) ms (runs $(range base1_paced lat_p99_ms)), p50 $(median base1_paced lat_p50_ms) ms, $(median base1_paced publish_per_s) publishes/s, $(total base1_paced errors) errors | $(check "$(median base1_paced lat_p99_ms)" "<=" 10) |"
    fi
    echo "| cross-node ping p99 ≤ 1.5 × tail.interval_ms = $TARGET_P99 ms | p99 $P99 ms (runs $(range ping_2n ping_p99_ms)), p50 $P50 ms, max over all samples $PMAX ms; $(total ping_2n samples) samples, $(total ping_2n ping_lost) lost | $(check "$P99" "<=" "$TARGET_P99") |"
} >"$RESULTS"
echo
cat "$RESULTS"
echo
echo "bench-mysql: raw results in $RAW, table in $RESULTS"

if [ "${BENCH_WRITE_DOC:-0}" = 1 ]; then
    DOC=$ROOT/doc/BENCHMARKS.md
    if grep -q '<!-- bench:mysql:begin -->' "$DOC" && grep -q '<!-- bench:mysql:end -->' "$DOC"; then
        awk -v f="$RESULTS" '
            /<!-- bench:mysql:begin -->/ { print; while ((getline l < f) > 0) print l; skip = 1; next }
            /<!-- bench:mysql:end -->/ { skip = 0 }
            !skip { print }' "$DOC" >"$DOC.tmp" && mv "$DOC.tmp" "$DOC"
        echo "bench-mysql: results written into $DOC"
    else
        echo "bench-mysql: $DOC has no bench:mysql markers; not written" >&2
    fi
fi

#!/usr/bin/env bash
# `make bench-mysql`: scenarios 1 and 6 of BENCHMARKS.md on MariaDB, see doc/BENCHMARKS.md.
#
# Starts a private MariaDB (scripts/mariadb_test.sh: innodb_flush_log_at_trx_commit=1, data under
# BENCH_DIR, on the disk under test) and per run:
#   mysql_p2c2 / mysql_p8c8   bench/mysql_direct, the plain SKIP LOCKED loop (the peer)
#   roostd1_p2c2 / _p8c8      one roostd on the database, driven by bench/roost_load
#   roostd2_p8c8, roostd4_p8c8  2 and 4 roostd nodes on one database, roost_load's producer and
#                             consumer i on node i % n (all nodes share one token key)
#   ping_2n                   scenario 6: bench/sse_bench subscribers on node 1, paced publishes
#                             on node 2, publish sent → ping received (the other node's tailer)
# Every scenario gets a fresh database and fresh nodes. Around each measurement window the
# server's SHOW GLOBAL STATUS is sampled (Innodb_deadlocks, Innodb_row_lock_waits, Questions,
# Handler_commit; the window is approximate: sampled after the warm-up by this script), and
# roostd's "store writes … retries=" log lines (deadlock / lock-wait retries) are summed over the
# nodes at shutdown.
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
#   BENCH_ROOSTD_ARGS  extra roostd arguments, e.g. "--set store.group_commit_max=64"
#   BENCH_DIR          scratch and results directory (default BUILD_DIR/bench-mysql); it must be on
#                      the disk under test (not tmpfs); the MariaDB socket path must stay short
#   BENCH_KEEP         1: keep data directories, logs and the MariaDB data
#   BENCH_WRITE_DOC    1: replace the MariaDB results section of doc/BENCHMARKS.md with this run's
#   BENCH_ONLY         space-separated scenario names to run (default: all), for quick looks
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

sql() { "$MARIADB" --no-defaults --protocol=socket --socket="$DBDIR/mysqld.sock" -uroot -N -B "$@"; }

# "deadlocks lock_waits questions handler_commits com_commits" from SHOW GLOBAL STATUS.
status_snap() {
    sql -e "SHOW GLOBAL STATUS WHERE Variable_name IN ('Innodb_deadlocks', 'Innodb_row_lock_waits',
        'Questions', 'Handler_commit', 'Com_commit')" |
        awk '{ v[$1] = $2 } END { printf "%s %s %s %s %s\n", v["Innodb_deadlocks"] + 0,
            v["Innodb_row_lock_waits"] + 0, v["Questions"] + 0, v["Handler_commit"] + 0,
            v["Com_commit"] + 0 }'
}

fresh_db() { # fresh_db NAME → URL of a new, empty database NAME
    sql -e "DROP DATABASE IF EXISTS $1; CREATE DATABASE $1 CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
    echo "${BASE_URL%/*}/$1"
}

# start_nodes N URL DIR: N roostd nodes on database URL, data dirs DIR/n1…; node 1's token key
# signs for all of them. Sets NODE_URLS (comma list) and KEY.
start_nodes() {
    local n=$1 url=$2 dir=$3 i d
    NODE_URLS=""
    KEY=$dir/n1/token_ed25519.pem
    for i in $(seq 1 "$n"); do
        d=$dir/n$i
        mkdir -p "$d"
        local keyopt=()
        [ "$i" -gt 1 ] && keyopt=(--set "auth.key_file=$KEY")
        "$BIN/roostd" --data-dir "$d" --listen 127.0.0.1:0 --ready-file "$d/ready" --store "$url" \
            --set "tail.interval_ms=$TAIL_MS" "${keyopt[@]}" "${ROOSTD_ARGS[@]}" >"$d/roostd.log" 2>&1 &
        SERVER_PIDS+=($!)
        bench_wait_ready "${SERVER_PIDS[-1]}" "$d/ready" "$d/roostd.log"
        NODE_URLS+="${NODE_URLS:+,}$(cat "$d/ready")"
    done
}

retries_of() { # sum of retries= over the nodes' "store writes" lines under DIR
    cat "$1"/n*/roostd.log 2>/dev/null | grep 'msg="store writes"' |
        sed -n 's/.*retries=\([0-9]*\).*/\1/p' | awk '{ n += $1 } END { print n + 0 }'
}

kv() { # kv "line" key → value
    tr ' ' '\n' <<<"$1" | awk -F= -v k="$2" '$1 == k { print $2; exit }'
}

# measure SCENARIO RUN argv…: runs one load tool, samples the server status after the warm-up and
# at the end, appends "scenario=… run=… <RESULT keys> db_*=…" to the raw file (the roostd
# retries are appended later by add_retries).
measure() {
    local scenario=$1 run=$2 err out
    shift 2
    err=$WORK/runs/$scenario.$run.err
    out=$WORK/runs/$scenario.$run.out
    "$@" >"$out" 2>"$err" &
    local load=$!
    sleep "$WARMUP"
    local s0 s1
    s0=$(status_snap)
    local lrc=0
    wait "$load" || lrc=$?
    s1=$(status_snap)
    local line
    line=$(grep '^RESULT ' "$out" | head -1 || true)
    if [ -z "$line" ]; then
        echo "bench-mysql: $scenario (run $run) produced no result (exit $lrc); stderr:" >&2
        tail -10 "$err" >&2
        return 0
    fi
    local d
    d=$(awk -v a="$s0" -v b="$s1" -v acked="$(kv "$line" acked)" 'BEGIN {
        split(a, x, " "); split(b, y, " ");
        printf "db_deadlocks=%d db_lock_waits=%d db_questions_per_cycle=%.2f db_commits_per_cycle=%.2f db_commit_stmts_per_cycle=%.2f",
            y[1] - x[1], y[2] - x[2], (acked > 0 ? (y[3] - x[3]) / acked : 0),
            (acked > 0 ? (y[4] - x[4]) / acked : 0), (acked > 0 ? (y[5] - x[5]) / acked : 0) }')
    echo "scenario=$scenario run=$run ${line#RESULT } $d" >>"$RAW"
    local errors
    errors=$(kv "$line" errors)
    printf '  %-14s run %d: %8s cycles/s  publish p50 %7s ms  %s  errors %s\n' "$scenario" "$run" \
        "$(kv "$line" cycles_per_s)" "$(kv "$line" publish_p50_ms)" "$d" "$errors"
    if [ "$errors" != 0 ]; then
        echo "  WARNING: $scenario run $run had $errors unexpected answers; first ones:" >&2
        head -5 "$err" | sed 's/^/    /' >&2
    fi
}

add_retries() { # add_retries SCENARIO RUN DIR: append roostd_retries= to that raw line
    local r
    r=$(retries_of "$3")
    sed -i "s/^\(scenario=$1 run=$2 .*\)\$/\1 roostd_retries=$r/" "$RAW"
}

# A roostd scenario: fresh database, N nodes, one roost_load, nodes stopped, retries read.
roostd_scenario() { # SCENARIO RUN NODES P C
    local s=$1 run=$2 n=$3 p=$4 c=$5 d url
    d=$WORK/runs/$s.$run
    url=$(fresh_db "rb_${s}_$run")
    start_nodes "$n" "$url" "$d"
    measure "$s" "$run" "$BIN/roost_load" --url "$NODE_URLS" --key-file "$KEY" \
        --seconds "$SECS" --warmup "$WARMUP" --producers "$p" --consumers "$c"
    bench_stop_all
    add_retries "$s" "$run" "$d"
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
    ! want mysql_p2c2 || measure mysql_p2c2 "$run" "$BIN/mysql_direct" --url "$url" --fresh \
        --seconds "$SECS" --warmup "$WARMUP" --producers 2 --consumers 2
    ! want mysql_p8c8 || measure mysql_p8c8 "$run" "$BIN/mysql_direct" --url "$url" --fresh \
        --seconds "$SECS" --warmup "$WARMUP" --producers 8 --consumers 8
    ! want roostd1_p2c2 || roostd_scenario roostd1_p2c2 "$run" 1 2 2
    ! want roostd1_p8c8 || roostd_scenario roostd1_p8c8 "$run" 1 8 8
    ! want roostd2_p8c8 || roostd_scenario roostd2_p8c8 "$run" 2 8 8
    ! want roostd4_p8c8 || roostd_scenario roostd4_p8c8 "$run" 4 8 8

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
median() { # median SCENARIO KEY
    grep "^scenario=$1 " "$RAW" | tr ' ' '\n' | awk -F= -v k="$2" '$1 == k { print $2 }' |
        sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
range() { # "min–max" of a key over the runs of one scenario
    grep "^scenario=$1 " "$RAW" | tr ' ' '\n' | awk -F= -v k="$2" '$1 == k { print $2 }' |
        sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { if (NR) printf "%s–%s", lo, hi; else printf "-" }'
}
total() { # sum of a key over the runs
    grep "^scenario=$1 " "$RAW" | tr ' ' '\n' | awk -F= -v k="$2" '$1 == k { n += $2 } END { print n + 0 }'
}
ratio() { # median over runs of A/B cycles_per_s, each pair from the same run: "median (min–max)"
    local a=$1 b=$2 run va vb out=""
    for run in $(seq 1 "$RUNS"); do
        va=$(grep "^scenario=$a run=$run " "$RAW" | head -1 || true)
        vb=$(grep "^scenario=$b run=$run " "$RAW" | head -1 || true)
        [ -n "$va" ] && [ -n "$vb" ] || continue
        out+="$(awk -v x="$(kv "$va" cycles_per_s)" -v y="$(kv "$vb" cycles_per_s)" 'BEGIN { if (y > 0) printf "%.3f", x / y }') "
    done
    tr ' ' '\n' <<<"$out" | grep . | sort -g |
        awk '{ v[NR] = $1 } END { if (NR == 0) { print "-"; exit } m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.2f (%.2f–%.2f)\n", m, v[1], v[NR] }'
}
check() { # value, op, target → "met" / "**not met**"
    awk -v v="${1%% *}" -v op="$2" -v t="$3" 'BEGIN { if (v == "-" || v == "") { print "n/a"; exit }
        ok = (op == ">=") ? (v + 0 >= t + 0) : (v + 0 <= t + 0); print ok ? "met" : "**not met**" }'
}
row() { # scenario, description
    local s=$1
    grep -q "^scenario=$s " "$RAW" || return 0
    local retries=-
    grep "^scenario=$s " "$RAW" | grep -q roostd_retries= && retries=$(total "$s" roostd_retries)
    printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$s" "$2" \
        "$(median "$s" cycles_per_s)" "$(range "$s" cycles_per_s)" "$(median "$s" publish_per_s)" \
        "$(median "$s" publish_p50_ms)" "$(median "$s" ack_p50_ms)" \
        "$(median "$s" db_questions_per_cycle)" "$(median "$s" db_commits_per_cycle)" \
        "$(median "$s" db_commit_stmts_per_cycle)" \
        "$(total "$s" db_deadlocks)" "$(total "$s" db_lock_waits)" "$retries" \
        "$(total "$s" errors)"
}
R_DIRECT=$(ratio roostd1_p2c2 mysql_p2c2)
R_DIRECT8=$(ratio roostd1_p8c8 mysql_p8c8)
R_2=$(ratio roostd2_p8c8 roostd1_p8c8)
R_4=$(ratio roostd4_p8c8 roostd1_p8c8)
P50=$(median ping_2n ping_p50_ms)
P99=$(median ping_2n ping_p99_ms)
PMAX=$(grep "^scenario=ping_2n " "$RAW" | tr ' ' '\n' | awk -F= '$1 == "ping_max_ms" && $2 > m { m = $2 } END { print m + 0 }')
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
    echo "| scenario | what | full cycles/s | range | publishes/s | publish RTT p50 ms | ack RTT p50 ms | SQL statements / cycle | Handler_commit / cycle | COMMIT statements / cycle | Innodb deadlocks | row lock waits | roostd retries | errors |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    row mysql_p2c2 "plain SKIP LOCKED loop (mysql_direct), P2 C2"
    row mysql_p8c8 "plain SKIP LOCKED loop (mysql_direct), P8 C8"
    row roostd1_p2c2 "roostd, 1 node, P2 C2"
    row roostd1_p8c8 "roostd, 1 node, P8 C8"
    row roostd2_p8c8 "roostd, 2 nodes, P8 C8"
    row roostd4_p8c8 "roostd, 4 nodes, P8 C8"
    echo
    echo "Full cycles/s = events acknowledged per second (ack each). SQL statements (Questions, each"
    echo "statement of a multi-statement round trip counted), Handler_commit (engine commits, which"
    echo "MariaDB also counts per statement, read-only ones included) and COMMIT statements (Com_commit:"
    echo "roostd's write transactions; the loop's inserts and acks are autocommit and not in it) per cycle,"
    echo "deadlocks and row lock waits are SHOW GLOBAL STATUS deltas over (about) the window,"
    echo "summed over runs for the counts; roostd retries = the nodes' \"store writes … retries=\" lines at"
    echo "shutdown (transactions retried after a deadlock or lock wait timeout), summed over runs."
    echo
    echo "| target (BENCHMARKS.md) | measured, median (min–max) of per-run ratios | |"
    echo "|---|---|---|"
    echo "| roostd 1 node P2C2 ≥ 1.0× the plain SKIP LOCKED loop | $R_DIRECT | $(check "$R_DIRECT" ">=" 1) |"
    echo "| roostd 1 node P8C8 ≥ 1.5× the plain SKIP LOCKED loop | $R_DIRECT8 | $(check "$R_DIRECT8" ">=" 1.5) |"
    echo "| 2 nodes ≥ 1.5× 1 node (P8C8) | $R_2 | $(check "$R_2" ">=" 1.5) |"
    echo "| throughput grows with nodes: 4 nodes / 1 node (P8C8) | $R_4 | $(check "$R_4" ">=" 1) |"
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

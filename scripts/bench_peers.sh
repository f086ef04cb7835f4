#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `make bench-peers` (issue 35): roostd beside the systems users compare it with, in one run, one
# driver for all (bench/roost_load and the direct peers share bench/bench_peer.c: the same
# producer and consumer loops, payload, durable-ack semantics and counting; each system is a
# backend of it). Per round, at P2 C2 and P8 C8, each on fresh state:
#
#   roostd_sqlite        roostd on SQLite (store.synchronous=full), one agent per consumer
#   roostd_sqlite_1a     the same, one agent shared by every producer and consumer
#   roostd_mysql1        roostd on the private MariaDB (flush_log_at_trx_commit=1), one node
#   roostd_mysql1_1a     the same, one agent
#   sqlite_direct        direct SQLite, one row per transaction, synchronous=FULL (bench/sqlite_direct)
#   mysql_direct         the plain SKIP LOCKED loop on the same MariaDB (bench/mysql_direct)
#   pg_pgmq              pgmq's queue shape on a private PostgreSQL (bench/pg_direct --mode pgmq;
#                        fsync and synchronous_commit on)
#   redis_aof            Redis Streams, appendonly yes, appendfsync always (XADD / XREADGROUP /
#                        XACK; roost_load --url redis://)
#   beanstalkd           beanstalkd -f 0, an fsync per write (put / reserve / delete;
#                        roost_load --url beanstalk://)
#   base_sqlite, base_mysql1   with BENCH_BASE_BUILD: that build's roostd at P8 C8, for roostd's
#                        CPU per cycle beside today's in the same run
#
# Rounds alternate the order (even rounds run the list backwards). Redis and beanstalkd are the
# Debian packages (scripts/deps.sh peers), started per measurement on a free loopback port with
# their data in the measurement's own directory; MariaDB and PostgreSQL are the test scripts'
# private servers (scripts/mariadb_test.sh, scripts/postgres_test.sh). Every measurement records
# the 1-minute load average as its window closes (bench_lib.sh bench_measure) and the CPU per
# cycle of the server process (roostd, redis-server, beanstalkd) and of the database server
# (mysqld; PostgreSQL's postmaster and its children).
#
# Environment (all optional):
#   BUILD_DIR          build tree (default build)
#   BENCH_RUNS         rounds, the table shows medians (default 3)
#   BENCH_SECONDS      measurement window (default 6)
#   BENCH_WARMUP       warm-up before each window (default 1.5)
#   BENCH_SHAPES       P = C values (default "2 8")
#   BENCH_SYSTEMS      systems to run (default all but base_*; base_* join with BENCH_BASE_BUILD)
#   BENCH_BASE_BUILD   another build tree (e.g. the issue's base a449621): adds base_sqlite and
#                      base_mysql1 at P8 C8 and the CPU-per-cycle comparison
#   BENCH_DIR          scratch and results (default BUILD_DIR/bench-peers); on the disk under test
#                      and short (the MariaDB and PostgreSQL sockets live there)
#   BENCH_WRITE_DOC    1: the table between the bench:peers markers of doc/BENCHMARKS.md, the plot
#                      to doc/bench-peers.png and the medians to doc/bench-peers.tsv
# Output: BENCH_DIR/raw.txt, medians.tsv, results.md, bench-peers.png. About 9 minutes with the
# defaults and a base build on 2 cores.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-build}
case $BUILD_DIR in /*) ;; *) BUILD_DIR=$ROOT/$BUILD_DIR ;; esac
BIN=$BUILD_DIR/bin
RUNS=${BENCH_RUNS:-3}
SECS=${BENCH_SECONDS:-6}
WARMUP=${BENCH_WARMUP:-1.5}
SHAPES=${BENCH_SHAPES:-2 8}
BASE_BUILD=${BENCH_BASE_BUILD:-}
ALL_SYSTEMS="roostd_sqlite roostd_sqlite_1a roostd_mysql1 roostd_mysql1_1a sqlite_direct mysql_direct pg_pgmq redis_aof beanstalkd base_sqlite base_mysql1"
DEFAULT_SYSTEMS=${ALL_SYSTEMS% base_sqlite base_mysql1}
[ -z "$BASE_BUILD" ] || DEFAULT_SYSTEMS=$ALL_SYSTEMS
SYSTEMS=${BENCH_SYSTEMS:-$DEFAULT_SYSTEMS}
WORK=${BENCH_DIR:-$BUILD_DIR/bench-peers}
BENCH_NAME=bench-peers

for s in $SYSTEMS; do
    [[ " $ALL_SYSTEMS " == *" $s "* ]] || {
        echo "$BENCH_NAME: unknown system $s (known: $ALL_SYSTEMS)" >&2
        exit 2
    }
done
has() { [[ " $SYSTEMS " == *" $1"* ]]; } # has PREFIX: a system of SYSTEMS starts with PREFIX
for b in roostd roost_load sqlite_direct mysql_direct pg_direct; do
    [ -x "$BIN/$b" ] || { echo "$BENCH_NAME: $BIN/$b is missing; build first" >&2; exit 2; }
done
if has base_; then
    [ -n "$BASE_BUILD" ] && [ -x "$BASE_BUILD/bin/roostd" ] ||
        { echo "$BENCH_NAME: base_* need BENCH_BASE_BUILD with bin/roostd" >&2; exit 2; }
    BASE_BUILD=$(cd "$BASE_BUILD" && pwd)
fi
need() { command -v "$1" >/dev/null || { echo "$BENCH_NAME: $1 is missing (scripts/deps.sh peers)" >&2; exit 2; }; }
! has redis || { need redis-server; need redis-cli; }
! has beanstalkd || need beanstalkd
MYSQL=0
PG=0
{ has mysql_direct || has roostd_mysql || has base_mysql; } && MYSQL=1 && { command -v mariadb >/dev/null || need mysql; }
! has pg_ || PG=1

mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
# As root the PostgreSQL server runs as postgres, which must reach its directory (and so must
# every directory above it: a caller's private temp dir is its to open).
[ "$PG" = 0 ] || chmod 0755 "$WORK"
rm -rf "$WORK/runs"
mkdir -p "$WORK/runs"
RAW=$WORK/raw.txt
: >"$RAW"
DBDIR=$WORK/my
PGDIR=$WORK/pg
. "$ROOT/scripts/bench_lib.sh"
BENCH_DB_SOCKET=$DBDIR/mysqld.sock
BENCH_DB_PIDFILE=$DBDIR/mysqld.pid
BENCH_PG_PIDFILE=$PGDIR/data/postmaster.pid

cleanup() {
    bench_stop_all
    [ "$MYSQL" = 0 ] || "$ROOT/scripts/mariadb_test.sh" stop "$DBDIR" >/dev/null 2>&1 || true
    [ "$PG" = 0 ] || "$ROOT/scripts/postgres_test.sh" stop "$PGDIR" >/dev/null 2>&1 || true
    [ "${BENCH_KEEP:-0}" = 1 ] || rm -rf "$WORK/runs"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# start_peer NAME PORT LOG ARGV...: a peer server in the background (SERVER_PID), waited for until
# its loopback port accepts (up to 15 s).
start_peer() {
    local name=$1 port=$2 log=$3
    shift 3
    "$@" >"$log" 2>&1 &
    SERVER_PID=$!
    for _ in $(seq 1 300); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            return 0
        fi
        kill -0 "$SERVER_PID" 2>/dev/null || break
        sleep 0.05
    done
    echo "$BENCH_NAME: $name did not listen on 127.0.0.1:$port; log $log:" >&2
    tail -5 "$log" >&2
    exit 1
}

# stop_peer NAME LOG: SIGTERM to SERVER_PID; beanstalkd has no handler for it, so death by
# SIGTERM (status 143) is its clean exit too.
stop_peer() {
    local rc=0
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || rc=$?
    [ "$rc" -eq 0 ] || [ "$rc" -eq 143 ] || echo "$BENCH_NAME: WARNING: $1 exited with status $rc; log: $2" >&2
    SERVER_PID=""
}

# point SYSTEM N RUN: one measurement of SYSTEM at P = C = N (scenario SYSTEM_pN).
point() {
    local sys=$1 n=$2 run=$3 s=$1_p$2 d url port tree=$BUILD_DIR agents=()
    d=$WORK/runs/$s.$run
    mkdir -p "$d"
    COUNTERS_DB=""
    COUNTERS_PG=""
    COUNTERS_URLS=""
    local load=("$BIN/roost_load" --seconds "$SECS" --warmup "$WARMUP" --producers "$n" --consumers "$n")
    case $sys in *_1a) agents=(--agents 1) ;; esac
    case $sys in base_*) tree=$BASE_BUILD ;; esac
    case $sys in
    roostd_sqlite* | base_sqlite)
        start_server "$d/ready" "$d/roostd.log" "$tree/bin/roostd" --data-dir "$d" \
            --listen 127.0.0.1:0 --ready-file "$d/ready" --set store.synchronous=full
        COUNTERS_URLS=$(cat "$d/ready")
        bench_measure "$s" "$run" "${load[@]}" --data-dir "$d" "${agents[@]}"
        stop_server roostd "$d/roostd.log"
        ;;
    roostd_mysql1* | base_mysql1)
        url=$(fresh_db "pe_${sys}_${n}_$run")
        start_server "$d/ready" "$d/roostd.log" "$tree/bin/roostd" --data-dir "$d" \
            --listen 127.0.0.1:0 --ready-file "$d/ready" --store "$url"
        COUNTERS_URLS=$(cat "$d/ready")
        COUNTERS_DB=1
        bench_measure "$s" "$run" "${load[@]}" --data-dir "$d" "${agents[@]}"
        stop_server roostd "$d/roostd.log"
        bench_sql -e "DROP DATABASE IF EXISTS pe_${sys}_${n}_$run"
        ;;
    sqlite_direct)
        bench_measure "$s" "$run" "$BIN/sqlite_direct" --db "$d/direct.db" --fresh \
            --synchronous full --seconds "$SECS" --warmup "$WARMUP" --producers "$n" --consumers "$n"
        ;;
    mysql_direct)
        url=$(fresh_db "pe_loop_${n}_$run")
        COUNTERS_DB=1
        bench_measure "$s" "$run" "$BIN/mysql_direct" --url "$url" --fresh \
            --seconds "$SECS" --warmup "$WARMUP" --producers "$n" --consumers "$n"
        bench_sql -e "DROP DATABASE IF EXISTS pe_loop_${n}_$run"
        ;;
    pg_pgmq)
        COUNTERS_PG=1
        bench_measure "$s" "$run" "$BIN/pg_direct" --url "$PG_URL" --mode pgmq --fresh \
            --seconds "$SECS" --warmup "$WARMUP" --producers "$n" --consumers "$n"
        ;;
    redis_aof)
        port=$(free_port)
        start_peer redis "$port" "$d/redis.log" redis-server --bind 127.0.0.1 --port "$port" \
            --protected-mode yes --dir "$d" --appendonly yes --appendfsync always --save '' \
            --daemonize no
        bench_measure "$s" "$run" "${load[@]}" --url "redis://127.0.0.1:$port" --target redis
        stop_peer redis-server "$d/redis.log"
        ;;
    beanstalkd)
        port=$(free_port)
        mkdir -p "$d/binlog"
        start_peer beanstalkd "$port" "$d/beanstalkd.log" beanstalkd -l 127.0.0.1 -p "$port" \
            -b "$d/binlog" -f 0
        bench_measure "$s" "$run" "${load[@]}" --url "beanstalk://127.0.0.1:$port" --target beanstalkd
        stop_peer beanstalkd "$d/beanstalkd.log"
        ;;
    esac
    [ "${BENCH_KEEP:-0}" = 1 ] || rm -rf "$d"
}

START=$(date +%s)
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
CPU=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || echo unknown)
FSTYPE=$(df --output=fstype "$WORK" 2>/dev/null | tail -1 || true)
COMMIT=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
[ -z "$(git -C "$ROOT" status --porcelain --untracked-files=no 2>/dev/null)" ] || COMMIT="$COMMIT+dirty"
BASE_COMMIT=-
[ -z "$BASE_BUILD" ] || BASE_COMMIT=$(git -C "$BASE_BUILD/.." rev-parse --short HEAD 2>/dev/null || echo "$BASE_BUILD")
VERSIONS="SQLite $(sqlite3 --version 2>/dev/null | cut -d' ' -f1)"
if [ "$MYSQL" = 1 ]; then
    "$ROOT/scripts/mariadb_test.sh" stop "$DBDIR" >/dev/null 2>&1 || true
    BASE_URL=$("$ROOT/scripts/mariadb_test.sh" start "$DBDIR")
    VERSIONS+=", MariaDB $(bench_sql -e "SELECT VERSION()") (flush_log_at_trx_commit=$(bench_sql -e "SELECT @@innodb_flush_log_at_trx_commit"))"
fi
if [ "$PG" = 1 ]; then
    "$ROOT/scripts/postgres_test.sh" stop "$PGDIR" >/dev/null 2>&1 || true
    PG_URL=$("$ROOT/scripts/postgres_test.sh" start "$PGDIR")
    VERSIONS+=", PostgreSQL $("$ROOT/scripts/postgres_test.sh" psql "$PGDIR" -At -c "SHOW server_version")"
fi
! has redis || VERSIONS+=", Redis $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/')"
! has beanstalkd || VERSIONS+=", beanstalkd $(beanstalkd -v 2>&1 | awk '{ print $2 }')"
echo "$BENCH_NAME: $RUNS rounds × P=C ∈ {$SHAPES} × {$SYSTEMS}; ${SECS}s windows (+${WARMUP}s warm-up)"
echo "$BENCH_NAME: $(nproc) CPUs ($CPU); ${FSTYPE:-?} at $WORK; load average $LOAD0; $VERSIONS"

for run in $(seq 1 "$RUNS"); do
    echo "round $run/$RUNS"
    order=$SYSTEMS
    [ $((run % 2)) -eq 1 ] || order=$(tr ' ' '\n' <<<"$SYSTEMS" | tac | tr '\n' ' ')
    for n in $SHAPES; do
        for sys in $order; do
            case $sys in base_*) [ "$n" = 8 ] || continue ;; esac
            point "$sys" "$n" "$run"
        done
    done
done
ELAPSED=$(($(date +%s) - START))

# ---- the report ----
# ratio_of A B KEY: the median (min–max) of the per-round ratios of KEY, A over B.
ratio_of() {
    local run va vb
    for run in $(seq 1 "$RUNS"); do
        va=$(grep "^scenario=$1 run=$run " "$RAW" | head -1 || true)
        vb=$(grep "^scenario=$2 run=$run " "$RAW" | head -1 || true)
        [ -n "$va" ] && [ -n "$vb" ] || continue
        awk -v x="$(kv "$va" "$3")" -v y="$(kv "$vb" "$3")" 'BEGIN { if (x != "" && y + 0 > 0) printf "%.3f\n", x / y }'
    done | sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) { print "-"; exit }
        m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.2f (%.2f–%.2f)\n", m, v[1], v[NR] }'
}
loads() { values "$1" loadavg | paste -sd/ -; }
# cpu_all LINE: the CPU per cycle of everything the measurement ran (driver, server, mysqld), ms.
cpu_all() {
    tr ' ' '\n' <<<"$1" | awk -F= '$1 ~ /^(load|server|db)_cpu_ms_per_cycle$/ { t += $2; n++ }
        END { if (n) printf "%.3f\n", t }'
}
cpu_all_median() { # cpu_all_median SCENARIO
    { grep "^scenario=$1 " "$RAW" || true; } | while read -r l; do cpu_all "$l"; done | sort -g |
        awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
# cpu_bound A B: per round, B's CPU per cycle in all over A's: the ratio A/B would reach were both
# bound by the machine's CPU alone (each needs that much of it per cycle). Median (min–max).
cpu_bound() {
    local run va vb
    for run in $(seq 1 "$RUNS"); do
        va=$(grep "^scenario=$1 run=$run " "$RAW" | head -1 || true)
        vb=$(grep "^scenario=$2 run=$run " "$RAW" | head -1 || true)
        [ -n "$va" ] && [ -n "$vb" ] || continue
        awk -v x="$(cpu_all "$va")" -v y="$(cpu_all "$vb")" 'BEGIN { if (x + 0 > 0 && y != "") printf "%.3f\n", y / x }'
    done | sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) { print "-"; exit }
        m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.2f (%.2f–%.2f)\n", m, v[1], v[NR] }'
}
label() {
    case $1 in
    roostd_sqlite) echo "roostd, SQLite, agent per consumer" ;;
    roostd_sqlite_1a) echo "roostd, SQLite, one agent" ;;
    roostd_mysql1) echo "roostd, MariaDB, agent per consumer" ;;
    roostd_mysql1_1a) echo "roostd, MariaDB, one agent" ;;
    sqlite_direct) echo "direct SQLite, 1 row/txn" ;;
    mysql_direct) echo "MariaDB, plain SKIP LOCKED loop" ;;
    pg_pgmq) echo "PostgreSQL, pgmq shape" ;;
    redis_aof) echo "Redis Streams, appendfsync always" ;;
    beanstalkd) echo "beanstalkd -f 0" ;;
    base_sqlite) echo "roostd $BASE_COMMIT (base), SQLite" ;;
    base_mysql1) echo "roostd $BASE_COMMIT (base), MariaDB" ;;
    esac
}
MEDIANS=$WORK/medians.tsv
printf 'system\tp\tcycles_per_s\tcycles_min\tcycles_max\tserver_cpu_ms_per_cycle\tdb_cpu_ms_per_cycle\tloadavg\n' >"$MEDIANS"
for sys in $SYSTEMS; do
    for n in $SHAPES; do
        s=${sys}_p$n
        grep -q "^scenario=$s " "$RAW" || continue
        r=$(range "$s" cycles_per_s)
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$sys" "$n" "$(median "$s" cycles_per_s)" "${r%–*}" \
            "${r#*–}" "$(median "$s" server_cpu_ms_per_cycle)" "$(median "$s" db_cpu_ms_per_cycle)" \
            "$(loads "$s")" >>"$MEDIANS"
    done
done
PNG=$WORK/bench-peers.png
"$ROOT/scripts/bench_plot.sh" "$MEDIANS" "$PNG" \
    "roostd beside its peers: full cycles/s at P2 C2 and P8 C8 (medians of $RUNS rounds, bars min–max)\n$COMMIT, $(date -u +%Y-%m-%d), $(nproc) CPUs, load average $LOAD0 at the start" >/dev/null ||
    echo "$BENCH_NAME: WARNING: no plot (gnuplot?)" >&2

target() { # target TEXT RATIO OP GOAL [BOUND]
    printf '| %s | %s | %s | %s |\n' "$1" "$2" "$(check "$2" "$3" "$4")" "${5:-}"
}
RESULTS=$WORK/results.md
{
    echo "Run $(date -u +%Y-%m-%dT%H:%MZ), commit $COMMIT, $(nproc) CPUs ($CPU), Linux $(uname -r), data on ${FSTYPE:-?}."
    echo "$VERSIONS. $RUNS alternating rounds × ${SECS} s windows after ${WARMUP} s warm-up; medians (min–max"
    echo "over rounds); ratios are medians of the per-round ratios. Load average at the start $LOAD0; $ELAPSED s in all."
    echo "Command: \`make bench-peers\` (\`BENCH_RUNS=$RUNS BENCH_SECONDS=$SECS BENCH_WARMUP=$WARMUP${BASE_BUILD:+ BENCH_BASE_BUILD=…} scripts/bench_peers.sh\`)."
    echo
    echo "| system | P C | full cycles/s | range | × MariaDB loop | × Redis AOF | server CPU ms/cycle | DB server CPU ms/cycle | events/claim | latency p50 ms | load avg per round | errors | CPU ms/cycle, all |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    for n in $SHAPES; do
        for sys in $SYSTEMS; do
            s=${sys}_p$n
            grep -q "^scenario=$s " "$RAW" || continue
            xl=-
            xr=-
            [ "$sys" = mysql_direct ] || xl=$(ratio_of "$s" "mysql_direct_p$n" cycles_per_s)
            [ "$sys" = redis_aof ] || xr=$(ratio_of "$s" "redis_aof_p$n" cycles_per_s)
            printf '| %s | P%s C%s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$(label "$sys")" \
                "$n" "$n" "$(median "$s" cycles_per_s)" "$(range "$s" cycles_per_s)" "$xl" "$xr" \
                "$(median "$s" server_cpu_ms_per_cycle)" "$(median "$s" db_cpu_ms_per_cycle)" \
                "$(median "$s" events_per_claim)" "$(median "$s" lat_p50_ms)" "$(loads "$s")" \
                "$(total "$s" errors)" "$(cpu_all_median "$s")"
        done
    done
    echo
    echo "| target (issue 35) | measured: median (min–max) of per-round ratios | | CPU bound: the reference's CPU per cycle in all over roostd's |"
    echo "|---|---|---|---|"
    target "MariaDB P8 C8, agent per consumer: roostd ≥ 1.0× the loop" "$(ratio_of roostd_mysql1_p8 mysql_direct_p8 cycles_per_s)" ">=" 1 "$(cpu_bound roostd_mysql1_p8 mysql_direct_p8)"
    target "MariaDB P8 C8, one agent: roostd ≥ 1.0× the loop" "$(ratio_of roostd_mysql1_1a_p8 mysql_direct_p8 cycles_per_s)" ">=" 1 "$(cpu_bound roostd_mysql1_1a_p8 mysql_direct_p8)"
    target "MariaDB P2 C2, agent per consumer: roostd ≥ 0.75× the loop" "$(ratio_of roostd_mysql1_p2 mysql_direct_p2 cycles_per_s)" ">=" 0.75 "$(cpu_bound roostd_mysql1_p2 mysql_direct_p2)"
    target "MariaDB P2 C2, one agent: roostd ≥ 0.75× the loop" "$(ratio_of roostd_mysql1_1a_p2 mysql_direct_p2 cycles_per_s)" ">=" 0.75 "$(cpu_bound roostd_mysql1_1a_p2 mysql_direct_p2)"
    target "SQLite P8 C8: roostd ≥ 0.9× Redis Streams AOF always" "$(ratio_of roostd_sqlite_p8 redis_aof_p8 cycles_per_s)" ">=" 0.9 "$(cpu_bound roostd_sqlite_p8 redis_aof_p8)"
    if has base_; then
        target "SQLite P8 C8: roostd CPU per cycle ≤ 0.6× $BASE_COMMIT's" "$(ratio_of roostd_sqlite_p8 base_sqlite_p8 server_cpu_ms_per_cycle)" "<=" 0.6
        target "MariaDB P8 C8: roostd CPU per cycle ≤ 0.6× $BASE_COMMIT's" "$(ratio_of roostd_mysql1_p8 base_mysql1_p8 server_cpu_ms_per_cycle)" "<=" 0.6
    fi
} >"$RESULTS"
echo
cat "$RESULTS"
if [ "${BENCH_WRITE_DOC:-0}" = 1 ]; then
    DOC=$ROOT/doc/BENCHMARKS.md
    cp "$MEDIANS" "$ROOT/doc/bench-peers.tsv"
    [ ! -s "$PNG" ] || cp "$PNG" "$ROOT/doc/bench-peers.png"
    awk -v f="$RESULTS" '/<!-- bench:peers:begin -->/ { print; while ((getline l < f) > 0) print l; skip = 1; next }
        /<!-- bench:peers:end -->/ { skip = 0 } !skip' "$DOC" >"$DOC.tmp" && mv "$DOC.tmp" "$DOC"
    echo "$BENCH_NAME: doc/BENCHMARKS.md, doc/bench-peers.png and doc/bench-peers.tsv updated"
fi
echo "$BENCH_NAME: raw results in $RAW, table in $RESULTS, plot $PNG"

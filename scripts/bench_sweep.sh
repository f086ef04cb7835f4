#!/usr/bin/env bash
# `make bench-sweep`: scenario 1 of BENCHMARKS.md (full cycle at full durability) swept over the
# shape P = C ∈ BENCH_SHAPES for roostd on SQLite, roostd on MariaDB with 1, 2 and 4 nodes, and
# the references measured in the same run: direct SQLite (bench/sqlite_direct), the plain SKIP
# LOCKED loop (bench/mysql_direct) and the in-memory ceiling (bench/null_server). See
# doc/BENCHMARKS.md ("The sweep").
#
# Per run, for each shape, every system in turn (so a shape's systems are measured within about a
# minute of each other): a fresh server (data dir, database, nodes), one load tool, the server's
# counters sampled as the tool's window opens and closes (bench_lib.sh bench_measure). Output:
#   BENCH_DIR/raw.txt        one key=value line per measurement
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

# point SYSTEM N RUN: one measurement of SYSTEM at P = C = N (scenario SYSTEM_pN).
point() {
    local sys=$1 n=$2 run=$3 s=$1_p$2 d url
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

# ---- the TSV files ----
# The reference a system's ratio is taken against (same shape, same run).
reference() {
    case $1 in
    roostd_sqlite) echo sqlite_direct ;;
    roostd_mysql*) echo mysql_direct ;;
    *) echo - ;;
    esac
}
# The per-cycle columns, whichever source the system has: MariaDB's counters, roostd's /metrics,
# or sqlite_direct's own counts. "-" where a system has no such figure.
COLS="cycles_per_s publish_per_s stmts_per_cycle commits_per_cycle commit_stmts_per_cycle roostd_txns_per_cycle deadlocks lock_waits retries errors"
tsv_row() { # tsv_row LINE → the COLS of one raw line
    tr ' ' '\n' <<<"$1" | awk -F= '{ v[$1] = $2 } END {
        st = ("db_questions_per_cycle" in v) ? v["db_questions_per_cycle"] : (("stmts_per_cycle" in v) ? v["stmts_per_cycle"] : "-")
        cm = ("db_commits_per_cycle" in v) ? v["db_commits_per_cycle"] : (("commits_per_cycle" in v) ? v["commits_per_cycle"] : "-")
        cs = ("db_commit_stmts_per_cycle" in v) ? v["db_commit_stmts_per_cycle"] : "-"
        tx = ("roostd_commits_per_cycle" in v) ? v["roostd_commits_per_cycle"] : "-"
        dl = ("db_deadlocks" in v) ? v["db_deadlocks"] : "-"
        lw = ("db_lock_waits" in v) ? v["db_lock_waits"] : "-"
        rt = ("roostd_retries" in v) ? v["roostd_retries"] : (("deadlocks" in v) ? v["deadlocks"] + v["lock_wait_timeouts"] : "-")
        printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", v["cycles_per_s"], v["publish_per_s"], st, cm, cs, tx, dl, lw, rt, v["errors"] }'
}
SWEEP=$WORK/sweep.tsv
{
    printf 'system\tp\tc\trun\t%s\n' "${COLS// /$'\t'}"
    while read -r line; do
        s=$(kv "$line" scenario)
        printf '%s\t%s\t%s\t%s\t%s\n' "${s%_p*}" "$(kv "$line" producers)" "$(kv "$line" consumers)" \
            "$(kv "$line" run)" "$(tsv_row "$line")"
    done <"$RAW"
} >"$SWEEP"

# Medians over the runs of one system and shape (columns of sweep.tsv), the per-run ratio to the
# reference and to the ceiling, as median (min, max).
MEDIANS=$WORK/medians.tsv
col_median() { # SYSTEM P COLUMN → median over runs ("-" when none); sums for the count columns
    local sum=0
    case $3 in deadlocks | lock_waits | retries | errors) sum=1 ;; esac
    awk -F'\t' -v s="$1" -v p="$2" -v col="$3" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == col) c = i; next }
        $1 == s && $2 == p && $c != "-" { print $c }' "$SWEEP" | sort -g |
        awk -v sum="$sum" '{ v[NR] = $1; t += $1 } END { if (!NR) { print "-"; exit } if (sum) { print t; exit }
            if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
col_range() { # SYSTEM P COLUMN → "min<TAB>max"
    awk -F'\t' -v s="$1" -v p="$2" -v col="$3" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == col) c = i; next }
        $1 == s && $2 == p { if (!n++ || $c < lo) lo = $c; if ($c > hi) hi = $c }
        END { if (n) printf "%s\t%s\n", lo, hi; else printf "-\t-\n" }' "$SWEEP"
}
ratio_cols() { # A B → "median<TAB>min<TAB>max" of the per-run cycles/s ratios A/B (same shape)
    local r
    r=$(ratios "$1" "$2" | sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) { printf "-\t-\t-"; exit }
        m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.3f\t%.3f\t%.3f", m, v[1], v[NR] }')
    echo "$r"
}
{
    printf 'system\tp\tcycles_per_s\tcycles_min\tcycles_max\tpublish_per_s\tstmts_per_cycle\tcommits_per_cycle\tcommit_stmts_per_cycle\troostd_txns_per_cycle\tdeadlocks\tlock_waits\tretries\terrors\treference\tx_reference\tx_reference_min\tx_reference_max\tx_null\tx_null_min\tx_null_max\n'
    for sys in $SYSTEMS; do
        for n in $SHAPES; do
            grep -q "^scenario=${sys}_p$n " "$RAW" || continue
            ref=$(reference "$sys")
            rr=$'-\t-\t-'
            [ "$ref" = - ] || rr=$(ratio_cols "${sys}_p$n" "${ref}_p$n")
            rn=$'-\t-\t-'
            [ "$sys" = null ] || rn=$(ratio_cols "${sys}_p$n" "null_p$n")
            printf '%s\t%s\t%s\t%s' "$sys" "$n" "$(col_median "$sys" "$n" cycles_per_s)" \
                "$(col_range "$sys" "$n" cycles_per_s)"
            for c in publish_per_s stmts_per_cycle commits_per_cycle commit_stmts_per_cycle \
                roostd_txns_per_cycle deadlocks lock_waits retries errors; do
                printf '\t%s' "$(col_median "$sys" "$n" "$c")"
            done
            printf '\t%s\t%s\t%s\n' "$ref" "$rr" "$rn"
        done
    done
} >"$MEDIANS"

# ---- the plot and the table ----
PNG=$WORK/bench-cycles.png
TITLE="Full cycles/s at full durability against P = C (medians of $RUNS runs × ${SECS} s)\\n$(date -u +%Y-%m-%dT%H:%MZ), commit $COMMIT, $(nproc) CPUs, load average $LOAD0 at the start"
"$ROOT/scripts/bench_plot.sh" "$MEDIANS" "$PNG" "$TITLE" || echo "$BENCH_NAME: the plot failed" >&2

describe() {
    case $1 in
    sqlite_direct) echo "direct SQLite, 1 row/txn (reference)" ;;
    null) echo "null server, in-memory (ceiling)" ;;
    roostd_sqlite) echo "roostd, SQLite FULL" ;;
    mysql_direct) echo "plain SKIP LOCKED loop (reference)" ;;
    roostd_mysql*) echo "roostd, MariaDB, ${1#roostd_mysql} node(s)" ;;
    esac
}
RESULTS=$WORK/results.md
{
    echo "Run $(date -u +%Y-%m-%dT%H:%MZ), commit $COMMIT, $(nproc) CPUs ($CPU), Linux $(uname -r), data on $FSTYPE;"
    echo "load average $LOAD0 at the start, $LOAD1 at the end. SQLite \`synchronous=FULL\` (WAL) for roostd and"
    [ "$MYSQL" = 1 ] && echo "sqlite_direct; MariaDB $DBVER \`innodb_flush_log_at_trx_commit=${FLUSH:-?}\` for roostd (\`tail.interval_ms=$TAIL_MS\`) and mysql_direct." ||
        echo "sqlite_direct."
    echo "$RUNS runs × ${SECS} s windows after ${WARMUP} s warm-up per point; medians over runs; $ELAPSED s in all."
    echo "Command: \`make bench-sweep\` (\`BUILD_DIR=${BUILD_DIR#"$ROOT"/} BENCH_RUNS=$RUNS BENCH_SECONDS=$SECS BENCH_WARMUP=$WARMUP BENCH_SHAPES=\"$SHAPES\"${BENCH_ROOSTD_ARGS:+ BENCH_ROOSTD_ARGS=\"$BENCH_ROOSTD_ARGS\"} scripts/bench_sweep.sh\`)."
    echo
    echo "| system | P = C | full cycles/s | range | × reference (min–max) | × null server | statements / cycle | commits / cycle | COMMIT stmts / cycle | roostd txns / cycle | deadlocks | lock waits | retries | errors |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    tail -n +2 "$MEDIANS" | while IFS=$'\t' read -r sys p cyc lo hi _pub st cm cs tx dl lw rt er ref xr xrl xrh xn _xnl _xnh; do
        xref=-
        [ "$xr" = - ] || xref="$xr ($xrl–$xrh) × $ref"
        printf '| %s | %s | %s | %s–%s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' \
            "$(describe "$sys")" "$p" "$cyc" "$lo" "$hi" "$xref" "$xn" "$st" "$cm" "$cs" "$tx" "$dl" "$lw" "$rt" "$er"
    done
    echo
    echo "Per cycle = per event acknowledged inside the window. MariaDB rows: statements = \`Questions\`,"
    echo "commits = \`Handler_commit\` (also one per autocommit statement), COMMIT stmts = \`Com_commit\`,"
    echo "deadlocks = \`Innodb_deadlocks\`, lock waits = \`Innodb_row_lock_waits\`: SHOW GLOBAL STATUS deltas"
    echo "over the window. roostd txns = group transactions committed (\`roost_group_commit_batch_size_count\`),"
    echo "retries = \`roost_store_write_retries_total\`, both /metrics deltas over the window, summed over"
    echo "the nodes; the loop's retries are its own count over the whole run; sqlite_direct counts its"
    echo "own statements and transactions. Counts (deadlocks, lock waits, retries, errors) are summed"
    echo "over the runs; the other columns are medians."
} >"$RESULTS"
echo
cat "$RESULTS"
echo
echo "$BENCH_NAME: per-run rows in $SWEEP, medians in $MEDIANS, plot $PNG, table $RESULTS"

if [ "${BENCH_WRITE_DOC:-0}" = 1 ]; then
    DOC=$ROOT/doc/BENCHMARKS.md
    cp "$MEDIANS" "$ROOT/doc/bench-sweep.tsv"
    [ -s "$PNG" ] && cp "$PNG" "$ROOT/doc/bench-cycles.png"
    if grep -q '<!-- bench:sweep:begin -->' "$DOC" && grep -q '<!-- bench:sweep:end -->' "$DOC"; then
        awk -v f="$RESULTS" '
            /<!-- bench:sweep:begin -->/ { print; while ((getline l < f) > 0) print l; skip = 1; next }
            /<!-- bench:sweep:end -->/ { skip = 0 }
            !skip { print }' "$DOC" >"$DOC.tmp" && mv "$DOC.tmp" "$DOC"
        echo "$BENCH_NAME: results written into $DOC, doc/bench-sweep.tsv and doc/bench-cycles.png"
    else
        echo "$BENCH_NAME: $DOC has no bench:sweep markers; the table was not written" >&2
    fi
fi

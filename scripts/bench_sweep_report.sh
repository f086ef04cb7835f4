#!/usr/bin/env bash
# The report of scripts/bench_sweep.sh, from a sweep directory's raw.txt and meta.env:
#   scripts/bench_sweep_report.sh [BENCH_DIR]      (default build/bench-sweep)
# writes BENCH_DIR/sweep.tsv, medians.tsv, bench-cycles.png (scripts/bench_plot.sh) and
# results.md, and prints the table; with BENCH_WRITE_DOC=1 also doc/bench-sweep.tsv,
# doc/bench-cycles.png and the table between the bench:sweep markers of doc/BENCHMARKS.md.
# bench_sweep.sh runs it at the end; run it by hand to redo the report without measuring again.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${1:-$ROOT/build/bench-sweep}
WORK=$(cd "$WORK" && pwd)
RAW=$WORK/raw.txt
BENCH_NAME=bench-sweep
if [ ! -s "$RAW" ] || [ ! -f "$WORK/meta.env" ]; then
    echo "$BENCH_NAME: no raw.txt or meta.env in $WORK (run scripts/bench_sweep.sh first)" >&2
    exit 2
fi
. "$WORK/meta.env"

# ---- the TSV files ----
# sweep.tsv: the per-cycle columns of each raw line, whichever source the system has (MariaDB's
# counters, roostd's /metrics, sqlite_direct's own counts); "-" where a system has no such figure.
SWEEP=$WORK/sweep.tsv
awk 'BEGIN { OFS = "\t"; print "system", "p", "c", "run", "cycles_per_s", "publish_per_s", "stmts_per_cycle",
        "commits_per_cycle", "commit_stmts_per_cycle", "roostd_txns_per_cycle", "deadlocks", "lock_waits",
        "retries", "errors" }
    function get(k, alt) { return (k in v) ? v[k] : ((alt != "" && alt in v) ? v[alt] : "-") }
    {
        delete v
        for (i = 1; i <= NF; i++) { e = index($i, "="); v[substr($i, 1, e - 1)] = substr($i, e + 1) }
        sys = v["scenario"]; sub(/_p[0-9]+$/, "", sys)
        rt = ("roostd_retries" in v) ? v["roostd_retries"] : (("deadlocks" in v) ? v["deadlocks"] + v["lock_wait_timeouts"] : "-")
        print sys, v["producers"], v["consumers"], v["run"], v["cycles_per_s"], v["publish_per_s"],
            get("db_questions_per_cycle", "stmts_per_cycle"), get("db_commits_per_cycle", "commits_per_cycle"),
            get("db_commit_stmts_per_cycle", ""), get("roostd_commits_per_cycle", ""), get("db_deadlocks", ""),
            get("db_lock_waits", ""), rt, v["errors"]
    }' "$RAW" >"$SWEEP"

# medians.tsv: per system and shape, the medians over the runs (sums for the counts), the min–max
# of cycles/s, and the median, min and max of the per-run cycles/s ratios to the reference of
# that system (roostd_sqlite: sqlite_direct; roostd_mysql*: mysql_direct) and to the null server,
# each ratio between two points of the same shape and the same run.
MEDIANS=$WORK/medians.tsv
awk -F'\t' -v systems="$SYSTEMS" -v shapes="$SHAPES" '
    function sortv(a, n,    i, j, t) { for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t } }
    function med(a, n) { sortv(a, n); return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
    function stat(s, p, c,    i, n, t, a) {  # median (or sum for counts) of column c, "-" when none
        n = 0; t = 0
        for (i = 1; i <= nr; i++) if (sy[i] == s && sp[i] == p && val[i, c] != "-") { a[++n] = val[i, c] + 0; t += val[i, c] }
        if (!n) return "-"
        if (c in counts) return t
        return med(a, n)
    }
    function ratio(s, r, p,    run, n, a, x) {  # "median<TAB>min<TAB>max" of the per-run ratios s/r
        n = 0
        for (run in runs) if ((s, p, run) in cyc && (r, p, run) in cyc && cyc[r, p, run] > 0) a[++n] = cyc[s, p, run] / cyc[r, p, run]
        if (!n) return "-\t-\t-"
        x = sprintf("%.3f", med(a, n))
        return x "\t" sprintf("%.3f", a[1]) "\t" sprintf("%.3f", a[n])
    }
    function ref(s) { return s == "roostd_sqlite" ? "sqlite_direct" : (s ~ /^roostd_mysql/ ? "mysql_direct" : "-") }
    NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
    { nr++; sy[nr] = $1; sp[nr] = $2; for (i = 5; i <= NF; i++) val[nr, i] = $i
      cyc[$1, $2, $4] = $5; runs[$4] = 1; have[$1, $2] = 1 }
    END {
        counts[col["deadlocks"]]; counts[col["lock_waits"]]; counts[col["retries"]]; counts[col["errors"]]
        OFS = "\t"
        print "system", "p", "cycles_per_s", "cycles_min", "cycles_max", "publish_per_s", "stmts_per_cycle",
            "commits_per_cycle", "commit_stmts_per_cycle", "roostd_txns_per_cycle", "deadlocks", "lock_waits",
            "retries", "errors", "reference", "x_reference", "x_reference_min", "x_reference_max", "x_null",
            "x_null_min", "x_null_max"
        ns = split(systems, S, " "); np = split(shapes, P, " ")
        for (a = 1; a <= ns; a++) for (b = 1; b <= np; b++) {
            s = S[a]; p = P[b]
            if (!((s, p) in have)) continue
            n = 0; lo = ""; hi = ""
            for (i = 1; i <= nr; i++) if (sy[i] == s && sp[i] == p) { v = val[i, 5] + 0; if (lo == "" || v < lo) lo = v; if (hi == "" || v > hi) hi = v }
            line = s OFS p OFS stat(s, p, 5) OFS lo OFS hi
            for (c = 6; c <= 14; c++) line = line OFS stat(s, p, c)
            r = ref(s)
            line = line OFS r OFS (r == "-" ? "-\t-\t-" : ratio(s, r, p)) OFS (s == "null" ? "-\t-\t-" : ratio(s, "null", p))
            print line
        }
    }' "$SWEEP" >"$MEDIANS"

# ---- the plot and the table ----
PNG=$WORK/bench-cycles.png
TITLE="Full cycles/s at full durability against P = C (medians of $RUNS runs × ${SECS} s)\\n$RUN_DATE, commit $COMMIT, $NPROC CPUs; 1-min load average ${LOADS_RUN%%, sampled*}"
"$ROOT/scripts/bench_plot.sh" "$MEDIANS" "$PNG" "$TITLE" || echo "$BENCH_NAME: the plot failed" >&2

describe() {
    case $1 in
    sqlite_direct) echo "direct SQLite, 1 row/txn (reference)" ;;
    null) echo "null server, in-memory (ceiling)" ;;
    roostd_sqlite) echo "roostd, SQLite FULL" ;;
    mysql_direct) echo "plain SKIP LOCKED loop (reference)" ;;
    roostd_mysql1) echo "roostd, MariaDB, 1 node" ;;
    roostd_mysql*) echo "roostd, MariaDB, ${1#roostd_mysql} nodes" ;;
    esac
}
RESULTS=$WORK/results.md
{
    echo "Run $RUN_DATE, commit $COMMIT, $NPROC CPUs ($CPU), Linux $KERNEL, data on $FSTYPE;"
    echo "Machine load (1-minute load average): $LOADS_RUN; $LOAD0 at the start, $LOAD1 at the end."
    echo "SQLite \`synchronous=FULL\` (WAL) for roostd and"
    [ "$MYSQL" = 1 ] && echo "sqlite_direct; MariaDB $DBVER \`innodb_flush_log_at_trx_commit=${FLUSH:-?}\` for roostd (\`tail.interval_ms=$TAIL_MS\`) and mysql_direct." ||
        echo "sqlite_direct."
    echo "$RUNS runs × ${SECS} s windows after ${WARMUP} s warm-up per point; medians over runs; $ELAPSED s in all."
    echo "Command: \`make bench-sweep\` (\`BUILD_DIR=$BUILD_REL BENCH_RUNS=$RUNS BENCH_SECONDS=$SECS BENCH_WARMUP=$WARMUP BENCH_SHAPES=\"$SHAPES\"${ROOSTD_ARGS_TEXT:+ BENCH_ROOSTD_ARGS=\"$ROOSTD_ARGS_TEXT\"} scripts/bench_sweep.sh\`)."
    echo
    echo "| system | P = C | full cycles/s | range | × reference, median (min–max) of per-run ratios | × null server | statements / cycle | commits / cycle | COMMIT stmts / cycle | roostd txns / cycle | deadlocks | lock waits | retries | errors |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    tail -n +2 "$MEDIANS" | while IFS=$'\t' read -r sys p cyc lo hi _pub st cm cs tx dl lw rt er ref xr xrl xrh xn _xnl _xnh; do
        xref=-
        [ "$xr" = - ] || xref=$(printf '%.2f (%.2f–%.2f) × %s' "$xr" "$xrl" "$xrh" "$ref")
        [ "$xn" = - ] || xn=$(printf '%.2f' "$xn")
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

#!/usr/bin/env bash
# The sweep's plot: full cycles/s against P = C, one line per system, from the medians file of
# scripts/bench_sweep.sh (or of scripts/bench_peers.sh) (columns system, p, cycles_per_s, cycles_min, cycles_max, …; the bars
# span the runs' min–max). Both axes are logarithmic: the ceiling is ~10× the durable systems, and
# on a log axis equal ratios are equal distances, which is how the figures are meant to be read.
# TITLE may hold "\n" for a second line. Redraw the committed plot with
#   scripts/bench_plot.sh doc/bench-sweep.tsv doc/bench-cycles.png
# Usage: bench_plot.sh MEDIANS.tsv OUT.png [TITLE]. Needs gnuplot (scripts/deps.sh: gnuplot-nox).
set -euo pipefail

if [ $# -lt 2 ]; then
    echo "usage: $0 MEDIANS.tsv OUT.png [TITLE]" >&2
    exit 2
fi
IN=$1
OUT=$2
TITLE=${3:-full cycles/s against P = C}
if ! command -v gnuplot >/dev/null; then
    echo "bench_plot: gnuplot is missing (scripts/deps.sh installs gnuplot-nox)" >&2
    exit 2
fi

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# One data file per system, in the medians file's order: gnuplot draws each as a line.
label() {
    case $1 in
    roostd_sqlite) echo "roostd, SQLite" ;;
    roostd_mysql1) echo "roostd, MariaDB, 1 node" ;;
    roostd_mysql2) echo "roostd, MariaDB, 2 nodes" ;;
    roostd_mysql4) echo "roostd, MariaDB, 4 nodes" ;;
    sqlite_direct) echo "direct SQLite, 1 row/txn (ref.)" ;;
    mysql_direct) echo "plain SKIP LOCKED loop, MariaDB (ref.)" ;;
    null) echo "null server, in-memory (ceiling)" ;;
    roostd_sqlite_1a) echo "roostd, SQLite, one agent" ;;
    roostd_mysql1_1a) echo "roostd, MariaDB, 1 node, one agent" ;;
    pg_pgmq) echo "PostgreSQL, pgmq shape" ;;
    redis_aof) echo "Redis Streams, appendfsync always" ;;
    beanstalkd) echo "beanstalkd -f 0" ;;
    base_sqlite) echo "roostd base build, SQLite" ;;
    base_mysql1) echo "roostd base build, MariaDB" ;;
    *) echo "$1" ;;
    esac
}
style() { # line style: SQLite blue, MariaDB red/orange, references dashed, ceiling grey
    case $1 in
    roostd_sqlite) echo "lc rgb '#1f60c0' lw 2 pt 7" ;;
    roostd_mysql1) echo "lc rgb '#c01f1f' lw 2 pt 7" ;;
    roostd_mysql2) echo "lc rgb '#e07010' lw 2 pt 5" ;;
    roostd_mysql4) echo "lc rgb '#b08000' lw 2 pt 9" ;;
    sqlite_direct) echo "lc rgb '#1f60c0' lw 2 dt 2 pt 6" ;;
    mysql_direct) echo "lc rgb '#c01f1f' lw 2 dt 2 pt 6" ;;
    null) echo "lc rgb '#606060' lw 2 dt 3 pt 4" ;;
    roostd_sqlite_1a) echo "lc rgb '#1f60c0' lw 1 pt 5" ;;
    roostd_mysql1_1a) echo "lc rgb '#c01f1f' lw 1 pt 5" ;;
    pg_pgmq) echo "lc rgb '#3a8a3a' lw 2 dt 2 pt 8" ;;
    redis_aof) echo "lc rgb '#8a2be2' lw 2 dt 2 pt 12" ;;
    beanstalkd) echo "lc rgb '#806040' lw 2 dt 2 pt 10" ;;
    base_sqlite) echo "lc rgb '#80a0e0' lw 1 dt 4 pt 7" ;;
    base_mysql1) echo "lc rgb '#e08080' lw 1 dt 4 pt 7" ;;
    *) echo "lw 2" ;;
    esac
}
PLOTS=()
for sys in $(awk -F'\t' 'NR > 1 && !seen[$1]++ { print $1 }' "$IN"); do
    awk -F'\t' -v s="$sys" 'NR > 1 && $1 == s && $3 != "-" { print $2, $3, $4, $5 }' "$IN" |
        sort -n >"$TMP/$sys.dat"
    [ -s "$TMP/$sys.dat" ] || continue
    PLOTS+=("'$TMP/$sys.dat' using 1:2:3:4 with yerrorlines title '$(label "$sys")' $(style "$sys")")
done
if [ ${#PLOTS[@]} -eq 0 ]; then
    echo "bench_plot: no data in $IN" >&2
    exit 1
fi
plot=$(printf '%s, ' "${PLOTS[@]}")
gnuplot <<EOF
set terminal pngcairo size 1000,720 noenhanced font ",11"
set output '$OUT'
set title "${TITLE//\"/\'}"
set xlabel 'P = C (producers = consumers)'
set ylabel 'full cycles/s (events acknowledged per second, log scale)'
set logscale x 2
set logscale y 10
set xtics (1, 2, 4, 8, 16, 32, 64)
set ytics (50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000)
set xrange [0.8:20]
set autoscale yfix
set offsets 0, 0, graph 0.08, graph 0.08
set grid xtics ytics mytics
set key outside below center maxrows 4 width 2 height 1.5
plot ${plot%, }
EOF
echo "bench_plot: $OUT"

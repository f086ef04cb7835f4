#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The benchmark scripts still run and still measure what doc/BENCHMARKS.md says, in a few
# seconds (never a speed check): `bench_scripts.sh BUILD_DIR SOURCE_DIR`.
#  * scripts/bench_sweep.sh at P = C = 1, one run of 0.5 s per system: every system answers
#    without errors, medians.tsv has one row per system with cycles/s, the MariaDB rows carry the
#    server's statements and commits per cycle (SHOW GLOBAL STATUS over the window) and deadlock
#    and lock-wait counts, the roostd rows the /metrics retries and transactions per cycle, the
#    roostd rows a ratio to their reference; the PNG is drawn, and bench_plot.sh redraws it from
#    the TSV alone.
#  * scripts/bench_mysql.sh with one loop and one 2-node roostd point: its table has the
#    retries and the × loop ratio.
# Starts its own private MariaDB (as the scripts do). Ends with the line "N passed, N failed".
set -uo pipefail

build=${1:?build dir}
src=${2:?source dir}

. "$(dirname "$0")/../harness/preamble.sh" bench

need() { command -v "$1" >/dev/null || abort "missing tool: $1"; }
need gnuplot
need curl

col() { # col FILE SYSTEM COLUMN → that cell of the medians file
  awk -F'\t' -v s="$2" -v col="$3" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == col) c = i; next }
    $1 == s { print $c; exit }' "$1"
}
positive() { awk -v v="$1" 'BEGIN { exit !(v + 0 > 0) }'; }
number() { [[ $1 =~ ^[0-9]+(\.[0-9]+)?$ ]]; }

sw=$dir/sw
BUILD_DIR=$build BENCH_DIR=$sw BENCH_RUNS=1 BENCH_SECONDS=0.5 BENCH_WARMUP=0.2 BENCH_SHAPES=1 \
  "$src/scripts/bench_sweep.sh" >"$dir/sweep.log" 2>&1
check "bench_sweep.sh exits 0 ($dir/sweep.log)" test $? -eq 0
m=$sw/medians.tsv
check "medians.tsv has a header and 7 rows" test "$(wc -l <"$m")" -eq 8
for s in sqlite_direct null roostd_sqlite mysql_direct roostd_mysql1 roostd_mysql2 roostd_mysql4; do
  check "$s: cycles/s > 0" positive "$(col "$m" "$s" cycles_per_s)"
  check "$s: no errors" test "$(col "$m" "$s" errors)" = 0
done
for s in mysql_direct roostd_mysql1 roostd_mysql4; do
  check "$s: statements per cycle from the server" positive "$(col "$m" "$s" stmts_per_cycle)"
  check "$s: commits per cycle from the server" positive "$(col "$m" "$s" commits_per_cycle)"
  check "$s: deadlocks counted" number "$(col "$m" "$s" deadlocks)"
  check "$s: lock waits counted" number "$(col "$m" "$s" lock_waits)"
done
for s in roostd_sqlite roostd_mysql1 roostd_mysql2; do
  check "$s: retries from /metrics" number "$(col "$m" "$s" retries)"
  check "$s: transactions per cycle from /metrics" positive "$(col "$m" "$s" roostd_txns_per_cycle)"
  check "$s: a ratio to the null server" positive "$(col "$m" "$s" x_null)"
done
check "roostd_sqlite is compared with sqlite_direct" test "$(col "$m" roostd_sqlite reference)" = sqlite_direct
check "roostd_mysql2 is compared with mysql_direct" test "$(col "$m" roostd_mysql2 reference)" = mysql_direct
check "roostd_mysql2 has that ratio" positive "$(col "$m" roostd_mysql2 x_reference)"
check "sqlite_direct counts its own statements" positive "$(col "$m" sqlite_direct stmts_per_cycle)"
check "sweep.tsv has one row per point" test "$(wc -l <"$sw/sweep.tsv")" -eq 8
png() { [ "$(head -c 4 "$1" 2>/dev/null | tail -c 3)" = PNG ]; }
check "the plot is a PNG" png "$sw/bench-cycles.png"
"$src/scripts/bench_plot.sh" "$m" "$dir/again.png" >/dev/null 2>&1
check "bench_plot.sh redraws it from the TSV" png "$dir/again.png"
check "the table has a header and a row per system" test "$(grep -c '^| ' "$sw/results.md")" -eq 8

bm=$dir/bm
BUILD_DIR=$build BENCH_DIR=$bm BENCH_RUNS=1 BENCH_SECONDS=0.5 BENCH_WARMUP=0.2 \
  BENCH_ONLY="mysql_p8c8 roostd2_p8c8" "$src/scripts/bench_mysql.sh" >"$dir/mysql.log" 2>&1
check "bench_mysql.sh exits 0 ($dir/mysql.log)" test $? -eq 0
row=$(grep '^| roostd2_p8c8 ' "$bm/results.md")
check "bench_mysql.sh: the 2-node row has a × loop ratio" \
  sh -c "echo '$row' | awk -F' [|] ' '{ exit !(\$5 ~ /^[0-9.]+ [(]/) }'"
check "bench_mysql.sh: and a retries count" \
  sh -c "echo '$row' | awk -F' [|] ' '{ exit !(\$14 ~ /^[0-9]+\$/) }'"
check "bench_mysql.sh: the loop's statements per cycle" \
  sh -c "grep '^| mysql_p8c8 ' '$bm/results.md' | awk -F' [|] ' '{ exit !(\$9 + 0 > 0) }'"

summary

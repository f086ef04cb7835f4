#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The paced scenario of scripts/bench_mysql.sh (publish → claim → ack at a fixed rate, MariaDB,
# full durability) swept over rates, the plain SKIP LOCKED loop beside roostd at each: where each
# one's p99 leaves 10 ms, and how busy the whole machine was then (issue 35; doc/BENCHMARKS.md,
# "The paced target over rates"). Never gates CI.
#
#   scripts/bench_paced_rates.sh [RATE…]        (default: 400 600 800 1000 1200)
#
# Each rate is one bench_mysql.sh run (its own MariaDB, BENCH_RUNS alternating rounds) into
# BENCH_DIR/rate-RATE; BENCH_PACED_CLIENTS, BENCH_RUNS, BENCH_SECONDS, BENCH_ROOSTD_ARGS and
# BENCH_BASE_ROOSTD (adds the base build's column) pass through. Prints one Markdown row per rate
# and system: publish → ack p50 and p99 (medians over the rounds, and the p99's range), the
# machine's busy share over the window (/proc/stat: all but idle and iowait), the CPU per cycle of
# MariaDB, roostd and the load tool, and their threads' time slices (wake-ups and preemptions: the
# hand-offs of a cycle) and run-queue wait per cycle, summed (bench_lib.sh bench_sched).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-build}
case $BUILD_DIR in /*) ;; *) BUILD_DIR=$ROOT/$BUILD_DIR ;; esac
OUT=${BENCH_DIR:-$BUILD_DIR/bench-paced-rates}
RATES=("$@")
[ ${#RATES[@]} -gt 0 ] || RATES=(400 600 800 1000 1200)
ONLY="mysql_paced roostd1_paced"
[ -z "${BENCH_BASE_ROOSTD:-}" ] || ONLY+=" base1_paced"

for rate in "${RATES[@]}"; do
    echo "bench-paced-rates: $rate events/s" >&2
    BENCH_RATE=$rate BENCH_ONLY=$ONLY BENCH_DIR=$OUT/rate-$rate "$ROOT/scripts/bench_mysql.sh" \
        >"$OUT-$rate.log" 2>&1 || { echo "bench_mysql.sh failed at $rate/s: $OUT-$rate.log" >&2; exit 1; }
done

. "$ROOT/scripts/bench_lib.sh"
echo "| rate ev/s | system | p50 ms | p99 ms | p99 range | machine busy % | MariaDB CPU ms / cycle | roostd CPU ms / cycle | load tool CPU ms / cycle | time slices / cycle | run-queue wait ms / cycle | errors |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
for rate in "${RATES[@]}"; do
    RAW=$OUT/rate-$rate/raw.txt
    for s in $ONLY; do
        grep -q "^scenario=$s " "$RAW" || continue
        printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$rate" "$s" \
            "$(median "$s" lat_p50_ms)" "$(median "$s" lat_p99_ms)" "$(range "$s" lat_p99_ms)" \
            "$(median "$s" host_busy_pct)" "$(median "$s" db_cpu_ms_per_cycle)" \
            "$(median "$s" roostd_cpu_ms_per_cycle)" "$(median "$s" load_cpu_ms_per_cycle)" \
            "$(median "$s" slices_per_cycle)" "$(median "$s" runq_ms_per_cycle)" "$(total "$s" errors)"
    done
done

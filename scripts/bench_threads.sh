#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A/B of roostd builds on the embedded SQLite store, thread by thread: for each round and each
# build, a fresh roostd (store.synchronous=full) and one roost_load run at P = C, then full
# cycles/s and the CPU (utime + stime from /proc/PID/task, over SAMPLE seconds inside the load's
# window) of the loop thread (the main one) and of the busiest other thread (the store's writer),
# in µs per full cycle. The builds alternate so that a drifting machine hits both alike; the last
# lines are medians per build and shape.
#
#   scripts/bench_threads.sh BUILD_DIR_A BUILD_DIR_B [...]
#   ROUNDS=3 SHAPES="2 8" SECONDS_RUN=7 SAMPLE=4 (defaults)
#
# roost_load comes from the first build. Used for the writer-thread figures of doc/BENCHMARKS.md
# ("WAL frames in one write"); nothing else may run, or the figures mean little.
set -euo pipefail

[ $# -ge 2 ] || { echo "usage: $0 BUILD_DIR_A BUILD_DIR_B [...]" >&2; exit 2; }
ROUNDS=${ROUNDS:-3}
SHAPES=${SHAPES:-2 8}
SECONDS_RUN=${SECONDS_RUN:-7}
SAMPLE=${SAMPLE:-4}
LOAD=$1/bin/roost_load
for b in "$@"; do
    [ -x "$b/bin/roostd" ] || { echo "bench-threads: $b/bin/roostd is missing" >&2; exit 2; }
done
WORK=$(mktemp -d /tmp/roost-bench-threads-XXXXXX)
PID=""
cleanup() {
    [ -z "$PID" ] || kill "$PID" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

cpu_ticks() { # cpu_ticks PID → "tid ticks" per thread
    for t in /proc/"$1"/task/*; do
        awk -v t="${t##*/}" '{ sub(/^.*\) /, ""); print t, $12 + $13 }' "$t/stat" 2>/dev/null || true
    done
}

RESULTS=$WORK/results
: >"$RESULTS"
for round in $(seq 1 "$ROUNDS"); do
    for shape in $SHAPES; do
        for b in "$@"; do
            d=$WORK/run
            rm -rf "$d" && mkdir -p "$d"
            "$b/bin/roostd" --data-dir "$d" --listen 127.0.0.1:0 --ready-file "$d/ready" \
                --set store.synchronous=full >"$d/roostd.log" 2>&1 &
            PID=$!
            for _ in $(seq 100); do [ -s "$d/ready" ] && break; sleep 0.1; done
            "$LOAD" --seconds "$SECONDS_RUN" --warmup 1 --data-dir "$d" --producers "$shape" \
                --consumers "$shape" >"$d/load.txt" 2>&1 &
            lp=$!
            sleep 2.5
            cpu_ticks "$PID" >"$d/t1"
            sleep "$SAMPLE"
            cpu_ticks "$PID" >"$d/t2"
            wait "$lp"
            cps=$(grep -o 'cycles_per_s=[0-9]*' "$d/load.txt" | cut -d= -f2)
            hz=$(getconf CLK_TCK)
            # loop = the main thread (tid == pid); writer = the busiest other thread.
            read -r loop writer < <(join <(sort "$d/t1") <(sort "$d/t2") | awk -v pid="$PID" '
                { delta[$1] = $3 - $2 } END {
                    w = 0; for (t in delta) if (t != pid && delta[t] > w) w = delta[t]
                    print delta[pid], w }')
            kill "$PID" && wait "$PID" 2>/dev/null || true
            PID=""
            us() { awk -v t="$1" -v hz="$hz" -v s="$SAMPLE" -v c="$cps" 'BEGIN { printf "%.0f", t / hz / s / c * 1e6 }'; }
            printf 'round %d P%-2s %-40s cycles/s %6s  writer µs/cycle %4s  loop µs/cycle %4s\n' \
                "$round" "$shape" "$b" "$cps" "$(us "$writer")" "$(us "$loop")"
            echo "$b $shape $cps $(us "$writer") $(us "$loop")" >>"$RESULTS"
        done
    done
done
echo "medians over $ROUNDS rounds:"
for shape in $SHAPES; do
    for b in "$@"; do
        for col in 3 4 5; do
            awk -v b="$b" -v s="$shape" -v c="$col" '$1 == b && $2 == s { print $c }' "$RESULTS" |
                sort -g | awk '{ v[NR] = $1 } END { printf "%s ", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
        done | awk -v b="$b" -v s="$shape" '{ printf "  P%-2s %-40s cycles/s %6s  writer µs/cycle %4s  loop µs/cycle %4s\n", s, b, $1, $2, $3 }'
    done
done

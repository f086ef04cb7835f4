#!/usr/bin/env bash
# roostd's own cost per request, two builds side by side in one run (issue 35): CPU per full
# cycle (utime + stime of roostd over the load tool's window, /proc) and system calls per HTTP
# request (strace -c over a second, shorter window: strace slows the server, so its window is
# never the one CPU is measured in). Rounds alternate the builds; the table gives medians.
#
#   scripts/bench_syscalls.sh BASE_BUILD_DIR NEW_BUILD_DIR
#
# One driver for both: NEW_BUILD_DIR/bin/roost_load, P and C from BENCH_SHAPE. Each round starts a
# fresh roostd on an embedded SQLite data dir (store.synchronous=full) of each build.
# Environment (all optional):
#   BENCH_RUNS      rounds (default 3)       BENCH_SECONDS  CPU window (default 8)
#   BENCH_WARMUP    warm-up (default 2)      BENCH_SHAPE    P = C (default 8)
#   BENCH_STRACE_SECONDS  the strace window (default 3)
#   BENCH_DIR       scratch and results (default NEW_BUILD_DIR/bench-syscalls): the table is
#                   BENCH_DIR/results.md
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
[ $# -eq 2 ] || { echo "usage: $0 BASE_BUILD_DIR NEW_BUILD_DIR" >&2; exit 2; }
BASE=$(cd "$1" && pwd)
NEW=$(cd "$2" && pwd)
BIN=$NEW/bin
RUNS=${BENCH_RUNS:-3}
SECS=${BENCH_SECONDS:-8}
WARMUP=${BENCH_WARMUP:-2}
SHAPE=${BENCH_SHAPE:-8}
STRACE_SECS=${BENCH_STRACE_SECONDS:-3}
WORK=${BENCH_DIR:-$NEW/bench-syscalls}
command -v strace >/dev/null || { echo "bench-syscalls: strace is missing (apt install strace)" >&2; exit 2; }
for b in "$BASE/bin/roostd" "$NEW/bin/roostd" "$BIN/roost_load"; do
    [ -x "$b" ] || { echo "bench-syscalls: $b is missing; build both trees first" >&2; exit 2; }
done

rm -rf "$WORK/runs"
mkdir -p "$WORK/runs"
RAW=$WORK/raw.txt
: >"$RAW"
BENCH_NAME=bench-syscalls
. "$ROOT/scripts/bench_lib.sh"
trap bench_stop_all EXIT
trap 'exit 130' INT TERM

requests() { # requests URL → roostd's answered requests so far
    curl -s --max-time 10 "$1/metrics" | awk '$1 ~ /^roost_http_requests_total/ { n += $2 } END { print n + 0 }'
}

# syscalls LABEL RUN DATA_DIR URL: strace -c on the server for a short load; one RAW line with
# the calls per request of each system call and in all.
syscalls() {
    local label=$1 run=$2 d=$3 url=$4 out=$WORK/runs/$1.$2.strace r0 r1
    r0=$(requests "$url")
    strace -c -f -q -p "$SERVER_PID" -o "$out" &
    local tracer=$!
    sleep 0.5 # strace attaches to every thread before the load starts
    "$BIN/roost_load" --data-dir "$d" --producers "$SHAPE" --consumers "$SHAPE" \
        --seconds "$STRACE_SECS" --warmup 0 >/dev/null 2>&1 || true
    kill -INT "$tracer" && wait "$tracer" || true
    r1=$(requests "$url")
    awk -v label="$label" -v run="$run" -v req=$((r1 - r0)) '
        $1 ~ /^[0-9.]+$/ && NF >= 5 && $NF != "total" { calls[$NF] = $4; total += $4 }
        END {
            if (req <= 0) exit
            printf "scenario=%s_sys run=%d requests=%d sys_per_request=%.2f", label, run, req, total / req
            for (c in calls) printf " %s=%.2f", c, calls[c] / req
            printf "\n"
        }' "$out" >>"$RAW"
}

echo "bench-syscalls: $RUNS rounds; P$SHAPE C$SHAPE; ${SECS}s CPU windows, ${STRACE_SECS}s strace windows"
echo "  base: $BASE"
echo "  new:  $NEW"
for run in $(seq 1 "$RUNS"); do
    order="base new"
    [ $((run % 2)) -eq 0 ] && order="new base"
    for label in $order; do
        tree=$BASE
        [ "$label" = new ] && tree=$NEW
        d=$WORK/runs/$label.$run
        mkdir -p "$d"
        start_server "$d/ready" "$d/roostd.log" "$tree/bin/roostd" --data-dir "$d" \
            --listen 127.0.0.1:0 --ready-file "$d/ready" --set store.synchronous=full
        url=$(cat "$d/ready")
        COUNTERS_URLS=$url
        bench_measure "$label" "$run" "$BIN/roost_load" --data-dir "$d" --seconds "$SECS" \
            --warmup "$WARMUP" --producers "$SHAPE" --consumers "$SHAPE"
        COUNTERS_URLS=""
        syscalls "$label" "$run" "$d" "$url"
        stop_server roostd "$d/roostd.log"
        rm -f "$d"/roost.db*
    done
done

RESULTS=$WORK/results.md
{
    echo "| build | cycles/s | roostd CPU ms/cycle | syscalls/request | epoll_ctl | epoll_wait | write | writev | read | readv | ioctl | futex |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
    for label in base new; do
        printf '| %s | %s | %s | %s |' "$label" "$(median "$label" cycles_per_s)" \
            "$(median "$label" server_cpu_ms_per_cycle)" "$(median "${label}_sys" sys_per_request)"
        for c in epoll_ctl epoll_wait write writev read readv ioctl futex; do
            printf ' %s |' "$(median "${label}_sys" "$c")"
        done
        echo
    done
    b=$(median base server_cpu_ms_per_cycle)
    n=$(median new server_cpu_ms_per_cycle)
    awk -v b="$b" -v n="$n" 'BEGIN { if (b + 0 > 0 && n != "-") printf "\nroostd CPU per cycle, new against base: %+.0f %%\n", (n / b - 1) * 100 }'
} >"$RESULTS"
cat "$RESULTS"

#!/usr/bin/env bash
# roostd's own cost per request, two builds side by side in one run (issue 35): CPU per full
# cycle (utime and stime of roostd over the load tool's window, /proc) and system calls per HTTP
# request by kind, for the loop thread and for the other threads (store writers and readers) apart
# (`perf trace -s` over a second, shorter window: tracing slows the server, so its window is never
# the one CPU is measured in; `strace -c -f`, all threads together, where perf is missing).
# Rounds alternate the builds; the table gives medians.
#
#   scripts/bench_syscalls.sh BASE_BUILD_DIR NEW_BUILD_DIR
#
# One driver for both: NEW_BUILD_DIR/bin/roost_load, P and C from BENCH_SHAPE. Each round starts a
# fresh roostd of each build on each store of BENCH_STORES: `sqlite` (an embedded data dir,
# store.synchronous=full) and `mysql` (a fresh database on the private MariaDB of
# scripts/mariadb_test.sh, innodb_flush_log_at_trx_commit=1).
# Environment (all optional):
#   BENCH_RUNS      rounds (default 3)       BENCH_SECONDS  CPU window (default 8)
#   BENCH_WARMUP    warm-up (default 2)      BENCH_SHAPE    P = C (default 8)
#   BENCH_STORES    stores (default "sqlite"; "sqlite mysql" for both)
#   BENCH_STRACE_SECONDS  the syscall window (default 3)
#   BENCH_TRACER    perf or strace (default: perf when `perf trace` works, else strace)
#   BENCH_PERF_SECONDS  > 0: a third window, `perf record --call-graph dwarf` of roostd, split by
#                   scripts/perf_split.py into system calls, libraries and roostd's own code
#                   (default 0: none)
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
STORES=${BENCH_STORES:-sqlite}
STRACE_SECS=${BENCH_STRACE_SECONDS:-3}
PERF_SECS=${BENCH_PERF_SECONDS:-0}
WORK=${BENCH_DIR:-$NEW/bench-syscalls}
TRACER=${BENCH_TRACER:-}
if [ -z "$TRACER" ]; then
    TRACER=strace
    perf trace -s -o /dev/null -- true >/dev/null 2>&1 && TRACER=perf
fi
command -v "$TRACER" >/dev/null || { echo "bench-syscalls: $TRACER is missing (apt install strace)" >&2; exit 2; }
for b in "$BASE/bin/roostd" "$NEW/bin/roostd" "$BIN/roost_load"; do
    [ -x "$b" ] || { echo "bench-syscalls: $b is missing; build both trees first" >&2; exit 2; }
done
for s in $STORES; do
    case $s in sqlite | mysql) ;; *) echo "bench-syscalls: unknown store '$s' (sqlite, mysql)" >&2; exit 2 ;; esac
done

rm -rf "$WORK/runs"
mkdir -p "$WORK/runs"
RAW=$WORK/raw.txt
: >"$RAW"
BENCH_NAME=bench-syscalls
. "$ROOT/scripts/bench_lib.sh"
DBDIR=$WORK/mariadb
cleanup() {
    bench_stop_all
    case " $STORES " in *" mysql "*) "$ROOT/scripts/mariadb_test.sh" stop "$DBDIR" >/dev/null 2>&1 || true ;; esac
}
trap cleanup EXIT
trap 'exit 130' INT TERM

requests() { # requests URL → roostd's answered requests so far
    curl -s --max-time 10 "$1/metrics" | awk '$1 ~ /^roost_http_requests_total/ { n += $2 } END { print n + 0 }'
}

# syscalls SCENARIO RUN DATA_DIR URL: the system calls of SERVER_PID over a short load; one RAW
# line with the calls per request of each kind, prefixed loop_ (the thread running the event loop,
# whose id is the process id) and other_ (every other thread), or all_ (strace: not split), and in
# all.
syscalls() {
    local s=$1 run=$2 d=$3 url=$4 out=$WORK/runs/$1.$2.trace r0 r1 tracer
    r0=$(requests "$url")
    if [ "$TRACER" = perf ]; then
        perf trace -s -p "$SERVER_PID" -o "$out" >/dev/null 2>&1 &
    else
        strace -c -f -q -p "$SERVER_PID" -o "$out" &
    fi
    tracer=$!
    sleep 0.5 # the tracer attaches to every thread before the load starts
    "$BIN/roost_load" --data-dir "$d" --producers "$SHAPE" --consumers "$SHAPE" \
        --seconds "$STRACE_SECS" --warmup 0 >/dev/null 2>&1 || true
    kill -INT "$tracer" && wait "$tracer" || true
    r1=$(requests "$url")
    awk -v s="$s" -v run="$run" -v req=$((r1 - r0)) -v pid="$SERVER_PID" -v tracer="$TRACER" '
        # perf trace -s: "roostd (TID), N events, P%" opens a thread; rows are "name calls errors …"
        tracer == "perf" && / \([0-9]+\), [0-9]+ events/ {
            tid = $0; sub(/^.*\(/, "", tid); sub(/\).*$/, "", tid)
            part = (tid == pid) ? "loop" : "other"
        }
        tracer == "perf" && part != "" && NF >= 8 && $2 ~ /^[0-9]+$/ { calls[part "_" $1] += $2; total += $2 }
        # strace -c: "% time seconds usecs/call calls [errors] syscall", then a "total" row
        tracer == "strace" && $1 ~ /^[0-9.]+$/ && NF >= 5 && $NF != "total" { calls["all_" $NF] += $4; total += $4 }
        END {
            if (req <= 0) exit
            printf "scenario=%s_sys run=%d requests=%d sys_per_request=%.2f", s, run, req, total / req
            for (c in calls) printf " %s=%.3f", c, calls[c] / req
            printf "\n"
        }' "$out" >>"$RAW"
}

# profile SCENARIO RUN DATA_DIR: where roostd's CPU goes over a load (perf_split.py): one RAW
# line of shares of its samples, "loop:sys:writev=0.31 …".
profile() {
    local s=$1 run=$2 d=$3 out=$WORK/runs/$1.$2.perf load
    "$BIN/roost_load" --data-dir "$d" --producers "$SHAPE" --consumers "$SHAPE" \
        --seconds "$PERF_SECS" --warmup 0.5 >/dev/null 2>&1 &
    load=$!
    sleep 0.5
    perf record -q -F 999 --call-graph dwarf,16384 -p "$SERVER_PID" -o "$out" -- sleep "$PERF_SECS" >/dev/null 2>&1 || true
    wait "$load" || true
    python3 "$ROOT/scripts/perf_split.py" "$out" "$SERVER_PID" 2>/dev/null |
        awk -v s="$s" -v run="$run" 'NR == 1 { printf "scenario=%s_perf run=%d %s=%s", s, run, $1, $2; next }
            { printf " %s=%s", $1, $2 } END { if (NR) printf "\n" }' >>"$RAW"
    rm -f "$out"
}

# One roostd of BUILD on STORE, measured: CPU over a window, then its system calls.
round() { # round STORE LABEL RUN
    local store=$1 label=$2 run=$3 tree=$BASE s d url extra=()
    [ "$label" = new ] && tree=$NEW
    s=${store}_$label
    d=$WORK/runs/$s.$run
    mkdir -p "$d"
    if [ "$store" = mysql ]; then
        extra=(--store "$(fresh_db "rb_sys_${label}_$run")")
    else
        extra=(--set store.synchronous=full)
    fi
    start_server "$d/ready" "$d/roostd.log" "$tree/bin/roostd" --data-dir "$d" \
        --listen 127.0.0.1:0 --ready-file "$d/ready" "${extra[@]}"
    url=$(cat "$d/ready")
    COUNTERS_URLS=$url
    bench_measure "$s" "$run" "$BIN/roost_load" --data-dir "$d" --seconds "$SECS" \
        --warmup "$WARMUP" --producers "$SHAPE" --consumers "$SHAPE"
    COUNTERS_URLS=""
    syscalls "$s" "$run" "$d" "$url"
    [ "$PERF_SECS" = 0 ] || profile "$s" "$run" "$d"
    stop_server roostd "$d/roostd.log"
    rm -f "$d"/roost.db*
}

case " $STORES " in
*" mysql "*)
    "$ROOT/scripts/mariadb_test.sh" stop "$DBDIR" >/dev/null 2>&1 || true
    BASE_URL=$("$ROOT/scripts/mariadb_test.sh" start "$DBDIR")
    BENCH_DB_SOCKET=$DBDIR/mysqld.sock
    ;;
esac

LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
echo "bench-syscalls: $RUNS rounds; stores: $STORES; P$SHAPE C$SHAPE; ${SECS}s CPU windows, ${STRACE_SECS}s $TRACER windows; load $LOAD0"
echo "  base: $BASE"
echo "  new:  $NEW"
for run in $(seq 1 "$RUNS"); do
    order="base new"
    [ $((run % 2)) -eq 0 ] && order="new base"
    for store in $STORES; do
        for label in $order; do
            round "$store" "$label" "$run"
        done
    done
done

# The kinds seen, most calls per request first (medians of the new build, then of the base).
kinds() { # kinds SCENARIO PREFIX [SEPARATOR, default _]
    local p=$2${3:-_}
    grep "^scenario=$1 " "$RAW" | tr ' ' '\n' | awk -F= -v p="$p" 'index($1, p) == 1 { print substr($1, length(p) + 1) }' | sort -u |
        while read -r k; do printf '%s %s\n' "$(median "$1" "$p$k")" "$k"; done | sort -gr | awk '$1 + 0 >= 0.005 { print $2 }'
}

# µs of roostd's CPU per cycle: a median share of the samples (SCENARIO_perf KEY) × the median
# CPU per cycle of SCENARIO.
us_per_cycle() { # us_per_cycle SCENARIO KEY
    awk -v f="$(median "$1_perf" "$2")" -v c="$(median "$1" server_cpu_ms_per_cycle)" \
        'BEGIN { if (f == "-" || c == "-") print "-"; else printf "%.1f", f * c * 1000 }'
}

perf_table() {
    echo
    echo "roostd's CPU per cycle by where it goes (perf_split.py: median share of the samples × the median"
    echo "CPU per cycle above, µs; sys:NAME = in the kernel under that system call; loop = the event"
    echo "loop's thread, other = the store's threads):"
    echo
    echo "| build | store | thread (µs) | µs per cycle by part |"
    echo "|---|---|---|---|"
    local store label part k line
    for store in $STORES; do
        for label in base new; do
            for part in loop other; do
                line=""
                for k in $(kinds "${store}_new_perf" "$part" :); do
                    line+="$k $(us_per_cycle "${store}_$label" "$part:$k"), "
                done
                if [ -n "$line" ]; then
                    echo "| $label | $store | $part ($(us_per_cycle "${store}_$label" "$part")) | ${line%, } |"
                fi
            done
        done
    done
}

RESULTS=$WORK/results.md
{
    echo "Load average at the start $LOAD0; as each window closed: see the loadavg column. Syscalls: $TRACER."
    echo
    echo "| build | store | cycles/s | roostd CPU ms/cycle | user | system | syscalls/request | load avg per round |"
    echo "|---|---|---|---|---|---|---|---|"
    for store in $STORES; do
        for label in base new; do
            s=${store}_$label
            printf '| %s | %s | %s | %s (%s) | %s | %s | %s | %s |\n' "$label" "$store" "$(median "$s" cycles_per_s)" \
                "$(median "$s" server_cpu_ms_per_cycle)" "$(range "$s" server_cpu_ms_per_cycle)" \
                "$(median "$s" server_user_ms_per_cycle)" "$(median "$s" server_sys_ms_per_cycle)" \
                "$(median "${s}_sys" sys_per_request)" "$(values "$s" loadavg | paste -sd/)"
        done
        b=$(median "${store}_base" server_cpu_ms_per_cycle)
        n=$(median "${store}_new" server_cpu_ms_per_cycle)
        awk -v st="$store" -v b="$b" -v n="$n" 'BEGIN { if (b + 0 > 0 && n != "-") printf "\n%s: roostd CPU per cycle, new against base: %+.0f %%\n\n", st, (n / b - 1) * 100 }'
    done
    echo "System calls per request by kind (medians):"
    echo
    echo "| build | store | thread | calls per request by kind |"
    echo "|---|---|---|---|"
    for store in $STORES; do
        for label in base new; do
            s=${store}_${label}_sys
            for part in loop other all; do
                line=""
                for k in $(kinds "${store}_new_sys" "$part") $(kinds "${store}_base_sys" "$part"); do
                    case " $line " in *" $k "*) continue ;; esac
                    line+="$k $(median "$s" "${part}_$k"), "
                done
                if [ -n "$line" ]; then echo "| $label | $store | $part | ${line%, } |"; fi
            done
        done
    done
    [ "$PERF_SECS" = 0 ] || perf_table
} >"$RESULTS"
cat "$RESULTS"

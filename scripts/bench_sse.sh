#!/usr/bin/env bash
# `make bench-sse`: scenario 5 of BENCHMARKS.md (SSE), see doc/BENCHMARKS.md.
#
# Per run: a fresh roostd (port 0, ready file, log.level=warn) and bench/sse_bench against it:
# N idle subscribers to N agents, roostd's VmRSS growth per subscriber, roostd's idle CPU, targeted
# publish→ping latency, and the fan-out of one publish to all N agents. BENCH_SSE_RUNS runs at
# BENCH_SSE_N (10k) subscribers, the table shows medians; then BENCH_SSE_LARGE_RUNS runs at
# BENCH_SSE_LARGE (50k): does one node hold them?
#
# Environment (all optional):
#   BUILD_DIR              build tree with bin/roostd and bin/sse_bench (default: build)
#   BENCH_SSE_N            subscribers of the main runs (default 10000)
#   BENCH_SSE_RUNS         runs at BENCH_SSE_N (default 3)
#   BENCH_SSE_LARGE        subscribers of the large runs (default 50000; 0 skips them)
#   BENCH_SSE_LARGE_RUNS   runs at BENCH_SSE_LARGE (default 1)
#   BENCH_SSE_HEARTBEAT    roostd sse.heartbeat_s (default 30, roostd's default)
#   BENCH_SSE_IDLE         idle CPU window, s (default: one heartbeat period)
#   BENCH_SSE_SAMPLES      targeted publish→ping samples, paced evenly over one heartbeat period
#                          (default 1000)
#   BENCH_SSE_FANOUTS      fan-out publishes per run (default 3)
#   BENCH_SYNC             roostd store.synchronous: full | normal (default full)
#   BENCH_ROOSTD_ARGS      extra roostd arguments
#   BENCH_DIR              scratch and results directory (default BUILD_DIR/bench-sse)
#   BENCH_KEEP             1: keep data directories and logs
#   BENCH_WRITE_DOC        1: replace the SSE results section of doc/BENCHMARKS.md with this run's
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-build}
case $BUILD_DIR in /*) ;; *) BUILD_DIR=$ROOT/$BUILD_DIR ;; esac
BIN=$BUILD_DIR/bin
N=${BENCH_SSE_N:-10000}
RUNS=${BENCH_SSE_RUNS:-3}
LARGE=${BENCH_SSE_LARGE:-50000}
LARGE_RUNS=${BENCH_SSE_LARGE_RUNS:-1}
HB=${BENCH_SSE_HEARTBEAT:-30}
IDLE=${BENCH_SSE_IDLE:-$HB}
SAMPLES=${BENCH_SSE_SAMPLES:-1000}
PERIOD_MS=$(awk -v hb="$HB" -v n="$SAMPLES" 'BEGIN { printf "%.3f", (n > 0) ? hb * 1000 / n : 0 }')
FANOUTS=${BENCH_SSE_FANOUTS:-3}
SYNC=${BENCH_SYNC:-full}
WORK=${BENCH_DIR:-$BUILD_DIR/bench-sse}
read -r -a ROOSTD_ARGS <<<"${BENCH_ROOSTD_ARGS:-}"

for b in roostd sse_bench; do
    if [ ! -x "$BIN/$b" ]; then
        echo "bench-sse: $BIN/$b is missing; build first (make build, or BUILD_DIR=… for another tree)" >&2
        exit 2
    fi
done
case $SYNC in full | normal) ;; *) echo "bench-sse: BENCH_SYNC must be full or normal" >&2; exit 2 ;; esac

# File descriptors: roostd and sse_bench each hold one per subscriber (roostd raises its soft limit
# to the hard one itself; sse_bench too). Raising the hard limit needs CAP_SYS_RESOURCE.
FD_MARGIN=512
WANT=$((LARGE > N ? LARGE : N))
WANT=$((WANT + FD_MARGIN))
if [ "$(ulimit -Hn)" != unlimited ] && [ "$(ulimit -Hn)" -lt "$WANT" ]; then
    ulimit -Hn "$WANT" 2>/dev/null || true
fi
ulimit -Sn "$(ulimit -Hn)"
HARD=$(ulimit -Hn)
[ "$HARD" = unlimited ] && HARD=$((WANT * 2))
LARGE_NOTE=""
if [ "$LARGE" -gt 0 ] && [ $((LARGE + FD_MARGIN)) -gt "$HARD" ]; then
    fit=$(((HARD - FD_MARGIN) / 1000 * 1000))
    LARGE_NOTE="$LARGE subscribers need $((LARGE + FD_MARGIN)) file descriptors per process, the hard RLIMIT_NOFILE is $HARD and cannot be raised here (no CAP_SYS_RESOURCE); ran $fit instead"
    echo "bench-sse: WARNING: $LARGE_NOTE" >&2
    LARGE_REQUESTED=$LARGE
    LARGE=$fit
fi
if [ "$N" -gt $((HARD - FD_MARGIN)) ]; then
    echo "bench-sse: $N subscribers need more file descriptors than the hard limit $HARD allows" >&2
    exit 2
fi

rm -rf "$WORK/runs"
mkdir -p "$WORK/runs"
RAW=$WORK/raw.txt
: >"$RAW"
BENCH_NAME=bench-sse
. "$ROOT/scripts/bench_lib.sh"

cleanup() {
    bench_stop_all
    if [ "${BENCH_KEEP:-0}" != 1 ]; then
        rm -rf "$WORK/runs"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

kv() { # kv "line" key → value
    tr ' ' '\n' <<<"$1" | awk -F= -v k="$2" '$1 == k { print $2; exit }'
}

median() { # median of a key over the runs of one scenario ("-" when none)
    { grep "^scenario=$1 " "$RAW" || true; } | tr ' ' '\n' | awk -F= -v k="$2" '$1 == k && $2 != "-" { print $2 }' |
        sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) { print "-"; exit }
            if (NR % 2) { print v[(NR + 1) / 2]; exit }
            m = sprintf("%.3f", (v[NR / 2] + v[NR / 2 + 1]) / 2); sub(/\.?0+$/, "", m); print m }'
}

range() { # "min–max" of a key over the runs of one scenario
    { grep "^scenario=$1 " "$RAW" || true; } | tr ' ' '\n' | awk -F= -v k="$2" '$1 == k && $2 != "-" { print $2 }' |
        sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { if (NR) printf "%s–%s", lo, hi; else printf "-" }'
}

total() { # sum of a key over the runs of one scenario
    { grep "^scenario=$1 " "$RAW" || true; } | tr ' ' '\n' | awk -F= -v k="$2" '$1 == k { n += $2 } END { print n + 0 }'
}

all_held() { # "yes" when every run of the scenario held all its subscribers, "no", or "-"
    { grep "^scenario=$1 " "$RAW" || true; } | tr ' ' '\n' | awk -F= '$1 == "held" { n++; ok += $2 } END { if (!n) print "-"; else print (ok == n) ? "yes" : "no" }'
}

# One run: fresh roostd, sse_bench, clean stop. $1 = scenario, $2 = run, $3 = subscribers.
run_one() {
    local scenario=$1 run=$2 subs=$3 d err line logn
    d=$WORK/runs/$scenario.$run
    mkdir -p "$d"
    err=$d/sse_bench.err
    local maxr=$((subs > 10000 ? subs : 10000))
    start_server "$d/ready" "$d/roostd.log" "$BIN/roostd" --data-dir "$d" --listen 127.0.0.1:0 \
        --ready-file "$d/ready" --set log.level=warn --set "store.synchronous=$SYNC" \
        --set "sse.heartbeat_s=$HB" --set "limits.max_recipients=$maxr" \
        --set http.max_conns_per_addr=0 --set "sse.max_per_tenant=$maxr" "${ROOSTD_ARGS[@]}"
    line=$("$BIN/sse_bench" --data-dir "$d" --pid "$SERVER_PID" --subscribers "$subs" \
        --fanout-max "$maxr" --idle-seconds "$IDLE" --samples "$SAMPLES" \
        --sample-period-ms "$PERIOD_MS" --fanouts "$FANOUTS" \
        2>"$err" | grep '^RESULT ' || true)
    stop_server roostd "$d/roostd.log"
    logn=$(wc -l <"$d/roostd.log")
    if [ "$logn" -gt 0 ]; then
        echo "  WARNING: roostd logged $logn lines at warn or above; first ones:" >&2
        head -3 "$d/roostd.log" | cut -c1-200 | sed 's/^/    /' >&2
    fi
    if [ -z "$line" ]; then
        echo "bench-sse: $scenario (run $run) produced no result; stderr:" >&2
        tail -10 "$err" >&2
        return 0
    fi
    echo "scenario=$scenario run=$run roostd_log_lines=$logn ${line#RESULT }" >>"$RAW"
    printf '  %-6s run %d: %6s/%s ready  %5s/%5s B/sub  idle CPU %6s %%  ping p50 %6s p99 %6s ms  fan-out %7s ms (spread %6s)  lost %s+%s  held %s  errors %s\n' \
        "$scenario" "$run" "$(kv "$line" ready)" "$subs" "$(kv "$line" rss_per_sub_b)" \
        "$(kv "$line" rss_idle_per_sub_b)" \
        "$(kv "$line" idle_cpu_pct)" "$(kv "$line" ping_p50_ms)" "$(kv "$line" ping_p99_ms)" \
        "$(kv "$line" fanout_ms)" "$(kv "$line" fanout_spread_ms)" "$(kv "$line" ping_lost)" \
        "$(kv "$line" fanout_lost)" "$(kv "$line" held)" "$(kv "$line" errors)"
    if [ "$(kv "$line" errors)" != 0 ]; then
        echo "  WARNING: $scenario run $run: $(kv "$line" errors) errors; first ones:" >&2
        grep -v '^sse_bench: \(opening\|idle\|targeted\|fan-out\|[0-9]* subscribers ready\)' "$err" |
            head -5 | sed 's/^/    /' >&2
    fi
    [ "${BENCH_KEEP:-0}" = 1 ] || rm -f "$d"/roost.db*
}

START=$(date +%s)
CPU=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || echo unknown)
COMMIT=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git -C "$ROOT" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
    COMMIT="$COMMIT+dirty"
fi
echo "bench-sse: $RUNS runs × $N subscribers, $([ "$LARGE" -gt 0 ] && echo "$LARGE_RUNS × $LARGE" || echo "no large runs"); $(nproc) CPUs ($CPU); RLIMIT_NOFILE $HARD; store.synchronous=$SYNC, sse.heartbeat_s=$HB"
for run in $(seq 1 "$RUNS"); do
    run_one main "$run" "$N"
done
if [ "$LARGE" -gt 0 ]; then
    for run in $(seq 1 "$LARGE_RUNS"); do
        run_one large "$run" "$LARGE"
    done
fi
ELAPSED=$(($(date +%s) - START))

# ---- the table ----
RESULTS=$WORK/results.md
row() { # scenario
    local s=$1
    grep -q "^scenario=$s " "$RAW" || return 0
    printf '| %s | %s | %s | %s (%s) | %s (%s) | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' \
        "$(median "$s" subscribers)" "$(grep -c "^scenario=$s " "$RAW")" "$(median "$s" ready)" \
        "$(median "$s" rss_per_sub_b)" "$(range "$s" rss_per_sub_b)" \
        "$(median "$s" rss_idle_per_sub_b)" "$(range "$s" rss_idle_per_sub_b)" "$(median "$s" idle_cpu_pct)" \
        "$(median "$s" ping_p50_ms)" "$(median "$s" ping_p99_ms)" "$(median "$s" publish_p50_ms)" \
        "$(median "$s" fanout_ms)" "$(median "$s" fanout_first_ms)" \
        "$(median "$s" fanout_spread_ms)" "$(median "$s" fanout_reply_ms)" \
        "$(($(total "$s" ping_lost) + $(total "$s" fanout_lost)))" "$(all_held "$s")"
}
check() { # value, op, target → "met" / "not met"
    awk -v v="${1%% *}" -v op="$2" -v t="$3" 'BEGIN { if (v == "-" || v == "") { print "n/a"; exit }
        ok = (op == ">=") ? (v + 0 >= t + 0) : (v + 0 <= t + 0); print ok ? "met" : "**not met**" }'
}
RSS=$(median main rss_per_sub_b)
RSS_HB=$(median main rss_idle_per_sub_b)
RSS_L=$(median large rss_per_sub_b)
RSS_L_HB=$(median large rss_idle_per_sub_b)
RSS_MAX=$(printf '%s\n' "$RSS" "$RSS_HB" "$RSS_L" "$RSS_L_HB" | grep -v '^-$' | sort -g | tail -1)
P99=$(median main ping_p99_ms)
FAN=$(median main fanout_ms)
SPREAD=$(median main fanout_spread_ms)
HELD=$(all_held large)
if [ -n "$LARGE_NOTE" ]; then
    HELD_TEXT="not tested at ${LARGE_REQUESTED}: $LARGE_NOTE; $LARGE held: $HELD"
    HELD_CHECK="n/a"
else
    HELD_TEXT="$LARGE subscribers held: $HELD"
    HELD_CHECK=$([ "$HELD" = yes ] && echo met || echo "**not met**")
    [ "$LARGE" -ge 50000 ] || HELD_CHECK="n/a (fewer than 50k)"
    [ "$LARGE" -gt 0 ] || { HELD_TEXT="not run (BENCH_SSE_LARGE=0)"; HELD_CHECK="n/a"; }
fi
RSS_LARGE_TEXT=""
[ "$LARGE" -gt 0 ] && RSS_LARGE_TEXT=", $RSS_L B at $LARGE ($RSS_L_HB B)"
{
    echo "Run $(date -u +%Y-%m-%dT%H:%MZ), commit $COMMIT, $(nproc) CPUs ($CPU), Linux $(uname -r),"
    echo "RLIMIT_NOFILE $HARD. roostd: \`--set log.level=warn --set store.synchronous=$SYNC --set sse.heartbeat_s=$HB --set limits.max_recipients=max(N,10000) --set http.max_conns_per_addr=0 --set sse.max_per_tenant=max(N,10000)\`${BENCH_ROOSTD_ARGS:+ \`$BENCH_ROOSTD_ARGS\`}, a fresh data directory per run."
    echo "Medians (range) over runs; idle window ${IDLE} s; $SAMPLES targeted samples (one every $PERIOD_MS ms) and $FANOUTS fan-outs per run; $ELAPSED s in all."
    echo "Command: \`make bench-sse\` (\`BUILD_DIR=${BUILD_DIR#"$ROOT"/} BENCH_SSE_N=$N BENCH_SSE_RUNS=$RUNS BENCH_SSE_LARGE=${LARGE_REQUESTED:-$LARGE} BENCH_SSE_LARGE_RUNS=$LARGE_RUNS BENCH_SYNC=$SYNC scripts/bench_sse.sh\`)."
    echo
    echo "| subscribers | runs | ready | RSS B/subscriber, opened | after a heartbeat round | idle CPU % | ping p50 ms | ping p99 ms | publish RTT p50 ms | fan-out ms | first ping ms | ping spread ms | publish reply ms | pings lost | all held |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    row main
    row large
    echo
    echo "RSS = growth of roostd's VmRSS from before the first subscriber to all open and idle, per"
    echo "subscriber; again after the idle window, in which every stream got a heartbeat."
    echo "Idle CPU = roostd's utime+stime over the idle window, % of one core (a heartbeat every"
    echo "$HB s on every stream). Ping = publish sent → the agent's subscriber has the matching"
    echo "cursor_hint, one publish at a time, paced evenly over ${HB} s so that the samples meet the"
    echo "heartbeats as real traffic would (a sample held up by the one before it counts from its"
    echo "scheduled time); the publish commits (store.synchronous=$SYNC) before the ping goes out, so"
    echo "ping ≈ publish RTT. Fan-out = one publish to all N agents sent → last subscriber pinged;"
    echo "first ping = the commit done (pings leave before the reply is built); spread = first → last"
    echo "ping, the SSE part alone."
    echo
    echo "| target (BENCHMARKS.md) | measured (medians) | |"
    echo "|---|---|---|"
    echo "| ≤ 8 KiB roostd RSS per idle subscriber | $RSS B at $N ($RSS_HB B after a heartbeat round)$RSS_LARGE_TEXT | $(check "${RSS_MAX:--}" "<=" 8192) |"
    echo "| 50k subscribers on one node | $HELD_TEXT | $HELD_CHECK |"
    echo "| targeted ping p99 ≤ 2 ms at 10k | p99 $P99 ms, p50 $(median main ping_p50_ms) ms (publish RTT p99 $(median main publish_p99_ms) ms) | $(check "$P99" "<=" 2) |"
    echo "| fan-out to 10k ≤ 100 ms | $FAN ms send → last ping; $SPREAD ms first → last ping | $(check "$FAN" "<=" 100) |"
} >"$RESULTS"
echo
cat "$RESULTS"
echo
echo "bench-sse: raw results in $RAW, table in $RESULTS"

if [ "${BENCH_WRITE_DOC:-0}" = 1 ]; then
    DOC=$ROOT/doc/BENCHMARKS.md
    if grep -q '<!-- bench-sse:results:begin -->' "$DOC" && grep -q '<!-- bench-sse:results:end -->' "$DOC"; then
        awk -v f="$RESULTS" '
            /<!-- bench-sse:results:begin -->/ { print; while ((getline l < f) > 0) print l; skip = 1; next }
            /<!-- bench-sse:results:end -->/ { skip = 0 }
            !skip { print }' "$DOC" >"$DOC.tmp" && mv "$DOC.tmp" "$DOC"
        echo "bench-sse: results written into $DOC"
    else
        echo "bench-sse: $DOC has no bench-sse:results markers; not written" >&2
    fi
fi

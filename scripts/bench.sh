#!/usr/bin/env bash
# `make bench`: scenario 1 of BENCHMARKS.md ("full cycle at full durability") with its peers,
# measured in the same run, medians of BENCH_RUNS runs. See doc/BENCHMARKS.md.
#
# Per run: a fresh roostd (port 0, ready file) driven by bench/roost_load at P2C2, P8C8, P8C8 with
# batch acks and paced at BENCH_RATE events/s (P2C2); then the peers: bench/sqlite_direct P2C2
# (direct SQLite, one row per transaction) and bench/null_server (in-memory, no durability)
# driven by the same roost_load at P8C8 (and with batch acks). roostd's /metrics is sampled as
# each window opens and closes (bench_lib.sh bench_measure): commits and retries per cycle.
# The sweep over P = C for both stores is scripts/bench_sweep.sh (make bench-sweep).
#
# Environment (all optional):
#   BUILD_DIR          build tree with bin/roostd, bin/roost_load, … (default: build)
#   BENCH_RUNS         runs, the table shows medians (default 3)
#   BENCH_SECONDS      measurement window per scenario (default 8)
#   BENCH_WARMUP       warm-up before each window (default 2)
#   BENCH_RATE         paced rate for the latency figure, events/s (default 1000)
#   BENCH_SYNC         full | normal: roostd store.synchronous and sqlite_direct (default full)
#   BENCH_ROOSTD_ARGS  extra roostd arguments, e.g. "--set store.group_commit_max=64"
#   BENCH_EXTRA        1: also P2C2 with batch acks for roostd, sqlite_direct and null_server
#   BENCH_DIR          scratch and results directory (default BUILD_DIR/bench); it must be on
#                      the disk under test (not tmpfs): fsync is what is measured
#   BENCH_KEEP         1: keep data directories and logs
#   BENCH_FSYNC_SECONDS  seconds of each bench/fsync_probe run, once per run (default 3): the
#                      disk's durable commit rate for the fsync bound of P8C8
#   BENCH_WRITE_DOC    1: replace the results section of doc/BENCHMARKS.md with this run's
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-build}
case $BUILD_DIR in /*) ;; *) BUILD_DIR=$ROOT/$BUILD_DIR ;; esac
BIN=$BUILD_DIR/bin
RUNS=${BENCH_RUNS:-3}
SECS=${BENCH_SECONDS:-8}
WARMUP=${BENCH_WARMUP:-2}
RATE=${BENCH_RATE:-1000}
FSYNC_SECS=${BENCH_FSYNC_SECONDS:-3}
SYNC=${BENCH_SYNC:-full}
EXTRA=${BENCH_EXTRA:-0}
WORK=${BENCH_DIR:-$BUILD_DIR/bench}
read -r -a ROOSTD_ARGS <<<"${BENCH_ROOSTD_ARGS:-}"

for b in roostd roost_load sqlite_direct null_server fsync_probe; do
    if [ ! -x "$BIN/$b" ]; then
        echo "bench: $BIN/$b is missing; build first (make build, or BUILD_DIR=… for another tree)" >&2
        exit 2
    fi
done
case $SYNC in full | normal) ;; *) echo "bench: BENCH_SYNC must be full or normal" >&2; exit 2 ;; esac

rm -rf "$WORK/runs"
mkdir -p "$WORK/runs"
RAW=$WORK/raw.txt
: >"$RAW"
BENCH_NAME=bench
. "$ROOT/scripts/bench_lib.sh"

cleanup() {
    bench_stop_all
    if [ "${BENCH_KEEP:-0}" != 1 ]; then
        rm -rf "$WORK/runs"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

START=$(date +%s)
CPU=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || echo unknown)
FSTYPE=$(df --output=fstype "$WORK" 2>/dev/null | tail -1 || true)
FSTYPE=${FSTYPE:-$(stat -f -c %T "$WORK" 2>/dev/null || echo unknown)}
if [ "$FSTYPE" = tmpfs ] || [ "$FSTYPE" = ramfs ]; then
    echo "bench: WARNING: $WORK is on $FSTYPE: fsync costs nothing there, the figures mean little" >&2
fi
GROUP_MAX=$("$BIN/roostd" --data-dir "$WORK/runs/cfg" "${ROOSTD_ARGS[@]}" --print-config 2>/dev/null |
    awk -F' = ' '$1 == "store.group_commit_max" { print $2 }')
COMMIT=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git -C "$ROOT" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
    COMMIT="$COMMIT+dirty"
fi
LOAD=("$BIN/roost_load" --seconds "$SECS" --warmup "$WARMUP")

echo "bench: $RUNS runs × ${SECS}s (+${WARMUP}s warm-up) per scenario; $(nproc) CPUs ($CPU); $FSTYPE at $WORK; durability synchronous=$SYNC"
for run in $(seq 1 "$RUNS"); do
    echo "run $run/$RUNS"
    d=$WORK/runs/roostd.$run
    mkdir -p "$d"
    start_server "$d/ready" "$d/roostd.log" "$BIN/roostd" --data-dir "$d" --listen 127.0.0.1:0 \
        --ready-file "$d/ready" --set "store.synchronous=$SYNC" "${ROOSTD_ARGS[@]}"
    COUNTERS_URLS=$(cat "$d/ready")
    bench_measure roostd_p2c2 "$run" "${LOAD[@]}" --data-dir "$d" --producers 2 --consumers 2
    [ "$EXTRA" = 1 ] && bench_measure roostd_p2c2_batch "$run" "${LOAD[@]}" --data-dir "$d" \
        --producers 2 --consumers 2 --batch-ack
    bench_measure roostd_p8c8 "$run" "${LOAD[@]}" --data-dir "$d" --producers 8 --consumers 8
    bench_measure roostd_p8c8_batch "$run" "${LOAD[@]}" --data-dir "$d" --producers 8 --consumers 8 \
        --batch-ack
    bench_measure roostd_paced "$run" "${LOAD[@]}" --data-dir "$d" --producers 2 --consumers 2 \
        --rate "$RATE"
    COUNTERS_URLS=""
    stop_server roostd "$d/roostd.log"
    [ "${BENCH_KEEP:-0}" = 1 ] || rm -f "$d"/roost.db*

    db=$WORK/runs/sqlite_direct.$run.db
    bench_measure sqlite_p2c2 "$run" "$BIN/sqlite_direct" --db "$db" --fresh --synchronous "$SYNC" \
        --seconds "$SECS" --warmup "$WARMUP" --producers 2 --consumers 2
    [ "$EXTRA" = 1 ] && bench_measure sqlite_p2c2_batch "$run" "$BIN/sqlite_direct" --db "$db" --fresh \
        --synchronous "$SYNC" --seconds "$SECS" --warmup "$WARMUP" --producers 2 --consumers 2 \
        --batch-ack
    [ "${BENCH_KEEP:-0}" = 1 ] || rm -f "$db" "$db"-wal "$db"-shm

    n=$WORK/runs/null.$run
    mkdir -p "$n"
    start_server "$n/ready" "$n/null_server.log" "$BIN/null_server" --listen 127.0.0.1:0 \
        --ready-file "$n/ready"
    url=$(cat "$n/ready")
    [ "$EXTRA" = 1 ] && bench_measure null_p2c2 "$run" "${LOAD[@]}" --url "$url" --target null \
        --producers 2 --consumers 2
    [ "$EXTRA" = 1 ] && bench_measure null_p2c2_batch "$run" "${LOAD[@]}" --url "$url" --target null \
        --producers 2 --consumers 2 --batch-ack
    bench_measure null_p8c8 "$run" "${LOAD[@]}" --url "$url" --target null --producers 8 --consumers 8
    bench_measure null_p8c8_batch "$run" "${LOAD[@]}" --url "$url" --target null --producers 8 \
        --consumers 8 --batch-ack
    stop_server null_server "$n/null_server.log"

    # The disk's durable commit rate in this run, for the fsync bound below.
    line=$("$BIN/fsync_probe" "$WORK/runs" "$FSYNC_SECS" 2>/dev/null | grep '^RESULT ' || true)
    if [ -n "$line" ]; then
        echo "scenario=fsync run=$run ${line#RESULT }" >>"$RAW"
        printf '  %-18s run %d: %8s commits/s  commit p50 %s µs  fdatasync %s/s\n' fsync_probe "$run" \
            "$(kv "$line" commit_per_s)" "$(kv "$line" commit_p50_us)" "$(kv "$line" fdatasync_per_s)"
    fi
done
ELAPSED=$(($(date +%s) - START))

# ---- the table ----
RESULTS=$WORK/results.md
# Commits per cycle: roostd's group transactions (/metrics) or sqlite_direct's own transactions.
commits() {
    local m
    m=$(median "$1" roostd_commits_per_cycle)
    [ "$m" != - ] || m=$(median "$1" commits_per_cycle)
    echo "$m"
}
# The per-run ratio of a roostd row to a peer of the same shape ("-" when that peer did not run).
xpeer() { # SCENARIO PEER_PREFIX
    local peer=$2_${1#roostd_}
    case $1 in roostd_paced | null_* | sqlite_*) echo - ; return ;; esac
    grep -q "^scenario=$peer " "$RAW" && ratio "$1" "$peer" || echo -
}
row() { # scenario, description
    local s=$1
    grep -q "^scenario=$s " "$RAW" || return 0
    printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$s" "$2" \
        "$(median "$s" cycles_per_s)" "$(range "$s" cycles_per_s)" "$(xpeer "$s" sqlite)" \
        "$(xpeer "$s" null)" "$(median "$s" publish_per_s)" \
        "$(median "$s" publish_p50_ms)" "$(median "$s" lat_p50_ms)" "$(median "$s" lat_p99_ms)" \
        "$(median "$s" stmts_per_cycle)" "$(commits "$s")" "$(total "$s" roostd_retries)" \
        "$(total "$s" errors)"
}
# The fsync bound of P8 C8 against the null server, per run: one writer and at most 16 requests
# in flight put at most 16 write jobs in one commit, and a full cycle takes 2 + 1/(events per
# claim) write jobs, so cycles/s ≤ commits/s × 16 / (2 + 1/epc), with commits/s the disk's
# one-row FULL commit rate (fsync_probe): an upper bound, as it counts no CPU and no round trip.
fsync_bound() {
    local r c e n
    for r in $(seq 1 "$RUNS"); do
        c=$(grep "^scenario=fsync run=$r " "$RAW" | head -1 || true)
        e=$(grep "^scenario=roostd_p8c8 run=$r " "$RAW" | head -1 || true)
        n=$(grep "^scenario=null_p8c8 run=$r " "$RAW" | head -1 || true)
        [ -n "$c" ] && [ -n "$e" ] && [ -n "$n" ] || continue
        awk -v c="$(kv "$c" commit_per_s)" -v e="$(kv "$e" events_per_claim)" \
            -v n="$(kv "$n" cycles_per_s)" \
            'BEGIN { if (e > 0 && n > 0) printf "%.3f\n", c * 16 / (2 + 1 / e) / n }'
    done | sort -g |
        awk '{ v[NR] = $1 } END { if (NR == 0) { print "-"; exit } m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.2f (%.2f–%.2f)\n", m, v[1], v[NR] }'
}
R_BOUND=$(fsync_bound)
R_SQL=$(ratio roostd_p2c2 sqlite_p2c2)
R_NULL=$(ratio roostd_p8c8 null_p8c8)
R_NULL_B=$(ratio roostd_p8c8_batch null_p8c8_batch)
P99=$(median roostd_paced lat_p99_ms)
P50=$(median roostd_paced lat_p50_ms)
PACED_RATE=$(median roostd_paced publish_per_s)
{
    echo "Run $(date -u +%Y-%m-%dT%H:%MZ), commit $COMMIT, $(nproc) CPUs ($CPU), Linux $(uname -r),"
    echo "data on $FSTYPE. Durability: SQLite \`synchronous=${SYNC^^}\`, WAL, for roostd"
    echo "(\`store.synchronous=$SYNC\`, \`store.group_commit_max=${GROUP_MAX:-?}\`${BENCH_ROOSTD_ARGS:+, \`$BENCH_ROOSTD_ARGS\`}) and sqlite_direct alike."
    echo "$RUNS runs × ${SECS} s windows after ${WARMUP} s warm-up; medians (min–max over runs); $ELAPSED s in all."
    echo "Command: \`make bench\` (\`BUILD_DIR=${BUILD_DIR#"$ROOT"/} BENCH_RUNS=$RUNS BENCH_SECONDS=$SECS BENCH_WARMUP=$WARMUP BENCH_RATE=$RATE BENCH_SYNC=$SYNC scripts/bench.sh\`)."
    echo
    echo "| scenario | what | full cycles/s | range | × direct SQLite | × null server | publishes/s | publish RTT p50 ms | latency p50 ms | latency p99 ms | statements / cycle | commits / cycle | retries | errors |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    row roostd_p2c2 "roostd, P2 C2, ack each"
    row roostd_p2c2_batch "roostd, P2 C2, batch ack"
    row roostd_p8c8 "roostd, P8 C8, ack each"
    row roostd_p8c8_batch "roostd, P8 C8, batch ack"
    row roostd_paced "roostd, P2 C2, paced $RATE ev/s"
    row sqlite_p2c2 "direct SQLite, 1 row/txn, P2 C2"
    row sqlite_p2c2_batch "direct SQLite, P2 C2, batch done"
    row null_p2c2 "null server, P2 C2"
    row null_p2c2_batch "null server, P2 C2, batch ack"
    row null_p8c8 "null server, P8 C8, ack each"
    row null_p8c8_batch "null server, P8 C8, batch ack"
    echo
    echo "Full cycles/s = events acknowledged per second; × direct SQLite and × null server = median"
    echo "(min–max) of the per-run ratios to that peer at the same shape (the peers run the shapes above)."
    echo "Latency = publish start → ack success; in the"
    echo "closed-loop rows it mostly measures the backlog the producers build, only the paced row is a"
    echo "latency figure. Publish RTT = one publish call, reply after the fsync. Commits / cycle: roostd's"
    echo "group transactions (\`roost_group_commit_batch_size_count\` on /metrics) or sqlite_direct's own"
    echo "transactions; statements / cycle: sqlite_direct's own count (roostd does not count its SQLite"
    echo "statements); retries: \`roost_store_write_retries_total\` (a busy store); all over the window,"
    echo "per event acknowledged in it (summed over runs for retries and errors)."
    echo
    echo "| target (BENCHMARKS.md) | measured, median (min–max) of per-run ratios | |"
    echo "|---|---|---|"
    echo "| roostd P2C2 ≥ 2× direct SQLite | $R_SQL | $(check "$R_SQL" ">=" 2) |"
    echo "| roostd P8C8 ≥ 0.5× null server | $R_NULL | $(check "$R_NULL" ">=" 0.5) |"
    echo "| (batch ack) roostd P8C8 / null server | $R_NULL_B | |"
    echo "| fsync bound of roostd P8C8 / null server (disk: $(median fsync commit_per_s) FULL commits/s, p50 $(median fsync commit_p50_us) µs) | $R_BOUND | an upper bound |"
    echo "| p99 ≤ 5 ms at $RATE ev/s (P2C2) | p99 $P99 ms, p50 $P50 ms, achieved $PACED_RATE publishes/s | $(check "$P99" "<=" 5) |"
} >"$RESULTS"
echo
cat "$RESULTS"
echo
echo "bench: raw results in $RAW, table in $RESULTS"

if [ "${BENCH_WRITE_DOC:-0}" = 1 ]; then
    DOC=$ROOT/doc/BENCHMARKS.md
    if grep -q '<!-- bench:results:begin -->' "$DOC" && grep -q '<!-- bench:results:end -->' "$DOC"; then
        awk -v f="$RESULTS" '
            /<!-- bench:results:begin -->/ { print; while ((getline l < f) > 0) print l; skip = 1; next }
            /<!-- bench:results:end -->/ { skip = 0 }
            !skip { print }' "$DOC" >"$DOC.tmp" && mv "$DOC.tmp" "$DOC"
        echo "bench: results written into $DOC"
    else
        echo "bench: $DOC has no bench:results markers; not written" >&2
    fi
fi

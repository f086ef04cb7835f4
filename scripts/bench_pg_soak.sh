#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `make bench-pg-soak`: roostd on a private PostgreSQL for SOAK_MINUTES (10) at a steady offered
# rate, with retention deleting completed rows as a busy queue would configure it, to show how
# PostgreSQL's MVCC holds up (issue 32, doc/BENCHMARKS.md "PostgreSQL soak"): claims and acks
# update rows and retention deletes them, so dead tuples and bloat are what decays a SKIP LOCKED
# queue on PostgreSQL.
#
# One roostd (schema soak) driven by bench/roost_load --rate SOAK_RATE for the whole soak; every
# SOAK_SAMPLE_S (10) seconds the sampler records roostd's counters (roost_publish_total, acks
# and their summed delivery latency from roost_delivery_latency_seconds) and, from
# pg_stat_user_tables, each queue table's live and dead tuples, table and index size, autovacuum
# runs, updates and HOT updates; and the load average and the CPU used so far by roostd and by
# every PostgreSQL process (what tells a slower minute of the machine from decay). Writes WORK/soak.tsv (one line per sample), WORK/minutes.md (per
# minute: acks/s, publishes/s, mean delivery latency, dead tuples, sizes, the targets) and
# WORK/soak.png (gnuplot). BENCH_WRITE_DOC=1 copies the plot to doc/bench-pg-soak.png.
#
# Environment (all optional): BUILD_DIR (build), SOAK_MINUTES (10), SOAK_RATE (events/s offered,
# 150), SOAK_PRODUCERS / SOAK_CONSUMERS (4 / 4), SOAK_RETENTION_S (retention.completed_s, 60),
# SOAK_SAMPLE_S (10), BENCH_ROOSTD_ARGS, BENCH_DIR (BUILD_DIR/bench-pg-soak), BENCH_KEEP=1.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-build}
case $BUILD_DIR in /*) ;; *) BUILD_DIR=$ROOT/$BUILD_DIR ;; esac
BIN=$BUILD_DIR/bin
MINUTES=${SOAK_MINUTES:-10}
RATE=${SOAK_RATE:-150}
PRODUCERS=${SOAK_PRODUCERS:-4}
CONSUMERS=${SOAK_CONSUMERS:-4}
RETENTION_S=${SOAK_RETENTION_S:-60}
SAMPLE_S=${SOAK_SAMPLE_S:-10}
TAIL_MS=100
WORK=${BENCH_DIR:-$BUILD_DIR/bench-pg-soak}
read -r -a ROOSTD_ARGS <<<"${BENCH_ROOSTD_ARGS:-}"
# Retention runs every 5 s (default a minute) so completed rows leave in small steady batches.
ROOSTD_ARGS+=(--set "retention.completed_s=$RETENTION_S" --set retention.interval_ms=5000)

for b in roostd roost_load; do
    if [ ! -x "$BIN/$b" ]; then
        echo "bench-pg-soak: $BIN/$b is missing; build first" >&2
        exit 2
    fi
done
command -v gnuplot >/dev/null || { echo "bench-pg-soak: gnuplot is missing (scripts/deps.sh)" >&2; exit 2; }

mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
DBDIR=$WORK/db
rm -rf "$WORK/runs"
mkdir -p "$WORK/runs"
BENCH_NAME=bench-pg-soak
. "$ROOT/scripts/bench_lib.sh"
PG=$ROOT/scripts/postgres_test.sh
LOAD_PID=""

cleanup() {
    [ -z "$LOAD_PID" ] || kill "$LOAD_PID" 2>/dev/null || true
    bench_stop_all
    if [ "${BENCH_KEEP:-0}" != 1 ]; then
        "$PG" stop "$DBDIR" >/dev/null 2>&1 || true
    else
        "$PG" pause "$DBDIR" >/dev/null 2>&1 || true
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"$PG" stop "$DBDIR" >/dev/null 2>&1 || true
BASE_URL=$("$PG" start "$DBDIR")
DBVER=$("$PG" psql "$DBDIR" -At -c "SHOW server_version")
NAPTIME=$("$PG" psql "$DBDIR" -At -c "SHOW autovacuum_naptime")
start_nodes 1 "$BASE_URL?schema=soak" "$WORK/runs"
METRICS=$NODE_URLS/metrics

# utime + stime (clock ticks) of a process and its children (PostgreSQL: the postmaster and
# every backend).
cpu_ticks() { # PID
    { echo "$1"; pgrep -P "$1" || true; } | while read -r p; do
        sed 's/^.*) //' "/proc/$p/stat" 2>/dev/null || true
    done | awk '{ t += $12 + $13 } END { printf "%d", t }'
}

# One sample: the time, roostd's counters, then per table live dead table_bytes index_bytes
# autovacuums updates hot_updates (inbox, agents, roost_changes, in that order), then the load
# average and the CPU ticks of roostd and of PostgreSQL.
sample() {
    local t m
    t=$(date +%s.%N)
    m=$(curl -s --max-time 10 "$METRICS" | awk '
        $1 ~ /^roost_publish_total/ { p += $2 }
        $1 ~ /^roost_delivery_latency_seconds_count/ { n += $2 }
        $1 ~ /^roost_delivery_latency_seconds_sum/ { s += $2 }
        END { printf "%d\t%d\t%.3f", p, n, s }')
    "$PG" psql "$DBDIR" -d roost_test -At -F $'\t' -c "
        SELECT string_agg(v, E'\t' ORDER BY o) FROM (
          SELECT array_position(ARRAY['inbox','agents','roost_changes'], relname::text) AS o,
                 concat_ws(E'\t', n_live_tup, n_dead_tup, pg_table_size(relid),
                           pg_indexes_size(relid), autovacuum_count, n_tup_upd, n_tup_hot_upd) AS v
          FROM pg_stat_user_tables
          WHERE schemaname = 'soak' AND relname IN ('inbox', 'agents', 'roost_changes')) s" |
        awk -v t="$t" -v m="$m" -v t0="$T0" -v x="$(cut -d' ' -f1 /proc/loadavg)	$(cpu_ticks "${SERVER_PIDS[0]}")	$(cpu_ticks "$(head -n1 "$DBDIR/data/postmaster.pid")")" \
            '{ printf "%.1f\t%s\t%s\t%s\n", t - t0, m, $0, x }'
}

TSV=$WORK/soak.tsv
printf 't_s\tpublished\tacked\tlatency_sum_s' >"$TSV"
for tb in inbox agents changes; do
    printf '\t%s_live\t%s_dead\t%s_table_bytes\t%s_index_bytes\t%s_autovacuums\t%s_updates\t%s_hot_updates' \
        "$tb" "$tb" "$tb" "$tb" "$tb" "$tb" "$tb" >>"$TSV"
done
printf '\tloadavg\troostd_cpu_ticks\tpg_cpu_ticks\n' >>"$TSV"

SECS=$((MINUTES * 60))
START=$(date -u +%Y-%m-%dT%H:%MZ)
echo "bench-pg-soak: PostgreSQL $DBVER, $MINUTES min at $RATE events/s offered (P$PRODUCERS C$CONSUMERS)," \
    "retention.completed_s=$RETENTION_S, a sample every ${SAMPLE_S}s"
LOADS=()
T0=$(date +%s.%N)
"$BIN/roost_load" --url "$NODE_URLS" --key-file "$KEY" --seconds "$SECS" --warmup 0 \
    --rate "$RATE" --producers "$PRODUCERS" --consumers "$CONSUMERS" \
    >"$WORK/runs/load.out" 2>"$WORK/runs/load.err" &
LOAD_PID=$!
sample >>"$TSV"
next=$SAMPLE_S
while kill -0 "$LOAD_PID" 2>/dev/null; do
    now=$(awk -v t0="$T0" -v t="$(date +%s.%N)" 'BEGIN { printf "%d", t - t0 }')
    if [ "$now" -ge "$next" ]; then
        sample >>"$TSV"
        LOADS+=("$(cut -d' ' -f1 /proc/loadavg)")
        [ $((next % 60)) -ne 0 ] ||
            echo "  minute $((next / 60)): t_s published acked latency_sum_s inbox_live inbox_dead: $(tail -1 "$TSV" | cut -f1-6)"
        next=$((next + SAMPLE_S))
    fi
    sleep 0.5
done
wait "$LOAD_PID" || true
LOAD_PID=""
RESULT=$(grep '^RESULT ' "$WORK/runs/load.out" || true)
[ -n "$RESULT" ] || { echo "bench-pg-soak: roost_load gave no result:" >&2; tail "$WORK/runs/load.err" >&2; exit 1; }
LOADAVG=$(printf '%s\n' "${LOADS[@]}" | sort -g | awk '{ v[NR] = $1 } END { printf "%s–%s (median %s)", v[1], v[NR], v[int((NR + 1) / 2)] }')

# Per minute, from the samples closest to each minute's bounds (columns as printed above:
# 2 published 3 acked 4 latency_sum; inbox 5-11, agents 12-18, roost_changes 19-25; 26 load
# average, 27 roostd and 28 PostgreSQL CPU ticks).
MIN=$WORK/minutes.md
awk -F'\t' -v mins="$MINUTES" -v hz="$(getconf CLK_TCK)" 'NR > 1 {
        n++; t[n] = $1; for (i = 2; i <= NF; i++) v[n, i] = $i
    }
    function at(m,   i, b) { b = 1; for (i = 1; i <= n; i++) if (t[i] <= m * 60 + 1) b = i; return b }
    function maxin(a, b, col,   i, x) { x = 0; for (i = a; i <= b; i++) if (v[i, col] > x) x = v[i, col]; return x }
    END {
        print "| minute | acks/s | publishes/s | mean delivery latency ms | roostd CPU ms / ack | PostgreSQL CPU ms / ack | load avg (max) | inbox dead tuples (max) | inbox live | inbox table MB | inbox indexes MB | inbox autovacuums | inbox HOT updates % | agents HOT updates % | agents dead (max) | agents MB | roost_changes dead (max) | roost_changes MB (table + indexes) |"
        print "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
        for (m = 1; m <= mins; m++) {
            a = at(m - 1); b = at(m); dt = t[b] - t[a]; if (dt <= 0) continue
            acks = v[b, 3] - v[a, 3]; lat = acks > 0 ? (v[b, 4] - v[a, 4]) * 1000 / acks : 0
            upd = v[b, 10] - v[a, 10]; hot = upd > 0 ? 100 * (v[b, 11] - v[a, 11]) / upd : 0
            aupd = v[b, 17] - v[a, 17]; ahot = aupd > 0 ? 100 * (v[b, 18] - v[a, 18]) / aupd : 0
            rate[m] = acks / dt; dead[m] = maxin(a, b, 6)
            ms = 1000 / hz / (acks > 0 ? acks : 1)
            printf "| %d | %.0f | %.0f | %.1f | %.2f | %.2f | %.1f | %d | %d | %.1f | %.1f | %d | %.0f | %.0f | %d | %.2f | %d | %.2f |\n", m, acks / dt,
                (v[b, 2] - v[a, 2]) / dt, lat, (v[b, 27] - v[a, 27]) * ms, (v[b, 28] - v[a, 28]) * ms,
                maxin(a + 1, b, 26), dead[m], v[b, 5], v[b, 7] / 1048576, v[b, 8] / 1048576,
                v[b, 9], hot, ahot, maxin(a, b, 13), (v[b, 14] + v[b, 15]) / 1048576, maxin(a, b, 20),
                (v[b, 21] + v[b, 22]) / 1048576
        }
        first = rate[1]; last = rate[mins]; half = int(mins / 2)
        d1 = 0; d2 = 0; for (m = 1; m <= mins; m++) { if (m <= half) { if (dead[m] > d1) d1 = dead[m] } else if (dead[m] > d2) d2 = dead[m] }
        print ""
        print "| target (issue 32) | measured | |"
        print "|---|---|---|"
        r = first > 0 ? last / first : 0
        printf "| last minute ≥ 90 %% of the first (acks/s) | %.0f / %.0f = %.0f %% | %s |\n", last, first, 100 * r, r >= 0.9 ? "met" : "**not met**"
        printf "| inbox dead tuples bounded: max of the second half ≤ max of the first | %d ≤ %d | %s |\n", d2, d1, d2 <= d1 ? "met" : "**not met**"
    }' "$TSV" >"$MIN"

# The plot: acks/s and publishes/s per sample interval (RATES: t, acks/s, publishes/s); dead
# tuples; sizes.
RATES=$WORK/rates.tsv
awk -F'\t' 'NR > 2 && $1 > t { printf "%s\t%.1f\t%.1f\n", $1, ($3 - a) / ($1 - t), ($2 - p) / ($1 - t) }
    NR > 1 { t = $1; a = $3; p = $2 }' "$TSV" >"$RATES"
PNG=$WORK/soak.png
gnuplot <<EOF
set terminal pngcairo size 900,900 font ",10" noenhanced
set output "$PNG"
set datafile separator "\t"
set multiplot layout 3,1 title "roostd on PostgreSQL $DBVER: $MINUTES min at $RATE events/s offered, retention.completed_s=$RETENTION_S\n$START, load average $LOADAVG"
set xlabel "seconds"
set grid
set key top left
set ylabel "events/s"
set yrange [0:*]
set y2range [0:*]
set y2tics
set y2label "load average"
plot "$RATES" using 1:2 with lines lw 2 title "acks/s", "$RATES" using 1:3 with lines title "publishes/s", \
     "$TSV" using 1:26 every ::1 axes x1y2 with lines dt 2 lc "gray" title "load average (right)"
unset y2tics
unset y2label
set ylabel "dead tuples"
plot "$TSV" using 1:6 every ::1 with lines lw 2 title "inbox", "$TSV" using 1:13 every ::1 with lines title "agents", \
     "$TSV" using 1:20 every ::1 with lines title "roost_changes"
set ylabel "MB"
plot "$TSV" using 1:(\$7 / 1048576) every ::1 with lines lw 2 title "inbox table", \
     "$TSV" using 1:(\$8 / 1048576) every ::1 with lines lw 2 title "inbox indexes", \
     "$TSV" using 1:((\$14 + \$15) / 1048576) every ::1 with lines title "agents", \
     "$TSV" using 1:((\$21 + \$22) / 1048576) every ::1 with lines title "roost_changes"
unset multiplot
EOF

{
    echo "Run $START, commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown), $(nproc) CPUs, PostgreSQL $DBVER"
    echo "(private server of scripts/postgres_test.sh: fsync and synchronous_commit on, autovacuum at its defaults,"
    echo "autovacuum_naptime $NAPTIME), one roostd, \`retention.completed_s=$RETENTION_S retention.interval_ms=5000\`."
    echo "bench/roost_load --rate $RATE --producers $PRODUCERS --consumers $CONSUMERS for $MINUTES min; load average $LOADAVG."
    echo "Command: \`make bench-pg-soak\` (\`SOAK_MINUTES=$MINUTES SOAK_RATE=$RATE scripts/bench_pg_soak.sh\`)."
    echo "roost_load over the whole soak: $(kv "$RESULT" cycles_per_s) cycles/s, delivery latency p50 $(kv "$RESULT" lat_p50_ms) ms," \
        "p99 $(kv "$RESULT" lat_p99_ms) ms, errors $(kv "$RESULT" errors)."
    echo
    cat "$MIN"
} >"$WORK/results.md"
cat "$WORK/results.md"
if [ "${BENCH_WRITE_DOC:-0}" = 1 ]; then
    cp "$PNG" "$ROOT/doc/bench-pg-soak.png"
    echo "bench-pg-soak: wrote doc/bench-pg-soak.png"
fi
echo "bench-pg-soak: samples in $TSV, plot $PNG, table $WORK/results.md"

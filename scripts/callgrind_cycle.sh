#!/bin/sh
# SPDX-License-Identifier: MIT
# Instructions per full cycle of roostd on SQLite, counted by callgrind: robust to the load of a
# shared machine, unlike cycles/s. Starts roostd under callgrind (one output per thread), zeroes
# the counters once it is ready, drives it with roost_load, dumps, and prints per thread (loop =
# the I/O thread running event_base_dispatch, writer = writer_main, other = readers, scheduler
# helpers) the instructions, and in all per acknowledged event (doc/BENCHMARKS.md).
#
#   scripts/callgrind_cycle.sh [BUILD_DIR] [OUT_DIR]
#   CG_P, CG_C (2, 2), CG_RATE (200 events/s), CG_SECONDS (10), CG_ARGS (extra roostd flags),
#   CG_LOAD_ARGS (extra roost_load flags, e.g. "--agents 1"),
#   CG_FANOUT=N: instead of the cycle, one publish to N new recipients (the fan-out cost per
#   recipient), with limits.max_recipients raised to N.
set -eu
BUILD_DIR=${1:-build}
OUT=${2:-$BUILD_DIR/callgrind}
P=${CG_P:-2}
C=${CG_C:-2}
RATE=${CG_RATE:-200}
SECONDS_=${CG_SECONDS:-10}
FANOUT=${CG_FANOUT:-0}
BIN=$BUILD_DIR/bin
rm -rf "$OUT"
mkdir -p "$OUT/data"
OUT=$(cd "$OUT" && pwd)
extra=""
if [ "$FANOUT" -gt 0 ]; then
    extra="--set limits.max_recipients=$FANOUT"
fi
# shellcheck disable=SC2086 # CG_ARGS and extra are lists of flags
valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$OUT/cg.out.%p" \
    "$BIN/roostd" --data-dir "$OUT/data" --listen 127.0.0.1:0 --ready-file "$OUT/data/ready" \
    --set store.synchronous=full $extra ${CG_ARGS:-} >"$OUT/roostd.log" 2>&1 &
PID=$!
i=0
while [ ! -s "$OUT/data/ready" ]; do
    i=$((i + 1))
    if [ $i -gt 600 ] || ! kill -0 $PID 2>/dev/null; then
        echo "callgrind_cycle: roostd did not start" >&2
        cat "$OUT/roostd.log" >&2
        exit 1
    fi
    sleep 0.1
done
callgrind_control -z $PID >/dev/null
if [ "$FANOUT" -gt 0 ]; then
    URL=$(cat "$OUT/data/ready")
    TOKEN=$("$BIN/roost" token mint --data-dir "$OUT/data" --tenant bench --scope 'agent:*:publish')
    python3 - "$URL" "$FANOUT" "$OUT/body.json" <<'EOF'
import json, sys
n = int(sys.argv[2])
json.dump({"recipients": [f"fan-{i}" for i in range(n)], "payload": {"p": "x" * 80}},
          open(sys.argv[3], "w"))
EOF
    curl -s -o "$OUT/fanout.json" -w 'fanout status=%{http_code} time_s=%{time_total}\n' \
        -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
        --data-binary @"$OUT/body.json" "$URL/api/v1/events" | tee "$OUT/load.txt"
    ACKED=$FANOUT
else
    "$BIN/roost_load" --data-dir "$OUT/data" --producers "$P" --consumers "$C" ${CG_LOAD_ARGS:-} --rate "$RATE" \
        --seconds "$SECONDS_" --warmup 0 >"$OUT/load.txt" 2>&1
    ACKED=$(sed -n 's/^RESULT .* acked=\([0-9]*\) .*/\1/p' "$OUT/load.txt")
fi
callgrind_control -d $PID >/dev/null
kill -TERM $PID
wait $PID || true
loop=0
writer=0
other=0
for f in "$OUT"/cg.out.$PID.1-*; do
    ir=$(sed -n 's/^summary: *//p;s/^totals: *//p' "$f" | head -1)
    ir=${ir:-0}
    if grep -q 'writer_main' "$f"; then
        writer=$((writer + ir))
    elif grep -q 'event_base_dispatch' "$f" && grep -q 'fn=.*request_new' "$f"; then
        loop=$((loop + ir))
    else
        other=$((other + ir))
    fi
done
requests=$(grep -c 'msg="request"' "$OUT/roostd.log" || true)
claims=$(grep -c 'route=claim status=200' "$OUT/roostd.log" || true)
writes=$(sed -n 's/.*msg="store writes".* commits=\([0-9]*\) write_jobs=\([0-9]*\).*/commits=\1 write_jobs=\2/p' "$OUT/roostd.log" | tail -1)
echo "$(sed -n 's/^RESULT //p;s/^fanout //p' "$OUT/load.txt")"
echo "acked=$ACKED requests=$requests claims=$claims $writes loop_ir=$loop writer_ir=$writer other_ir=$other"
if [ "${ACKED:-0}" -gt 0 ]; then
    echo "per_cycle: loop=$((loop / ACKED)) writer=$((writer / ACKED)) other=$((other / ACKED))" \
        "all=$(((loop + writer + other) / ACKED))"
fi

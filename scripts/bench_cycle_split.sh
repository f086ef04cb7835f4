#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Where a full cycle's time goes, thread by thread: roostd on SQLite (store.synchronous=full) beside
# Redis Streams with appendfsync always, at P = C (issue 35's "SQLite P8 C8: roostd ≥ 0.9× Redis").
# Per round and system (rounds alternate the order), a fresh server and one roost_load run, then
# three windows inside the load's window, one after the other, so that tracing never slows the
# window the rates come from:
#
#   1. SAMPLE s, nothing traced: full cycles/s (acks answered: roostd's /metrics, Redis' INFO
#      cmdstats), per thread the time on a CPU and the time runnable but waiting for one
#      (/proc/PID/task/TID/schedstat), bytes the server wrote (/proc/PID/io write_bytes: the WAL
#      or the AOF), and roostd's store metrics (commits, jobs per group, the writer's statement and
#      COMMIT time);
#   2. 2 s of `perf trace -s` on the server: fdatasync calls and requests read per fdatasync;
#   3. 1 s of `perf sched record`: each thread's time off the CPU split by the state it left in,
#      D (waiting for the disk: fdatasync) or S (sleeping: no work, or a lock).
#
#   scripts/bench_cycle_split.sh [BUILD_DIR]       (default build; needs perf and redis-server)
#   BENCH_RUNS=3 BENCH_SHAPE=8 BENCH_SECONDS=11 BENCH_SAMPLE=3 BENCH_DIR=… (defaults)
#
# Output: BENCH_DIR/raw.txt (one line per run and thread), and the medians per system and thread
# on stdout. Run it under the bench lock on a shared machine; the load average is recorded.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
BUILD=$(cd "$BUILD" && pwd)
RUNS=${BENCH_RUNS:-3}
SHAPE=${BENCH_SHAPE:-8}
SECS=${BENCH_SECONDS:-11}
SAMPLE=${BENCH_SAMPLE:-3}
WORK=${BENCH_DIR:-$BUILD/bench-cycle-split}
for b in roostd roost_load; do
    [ -x "$BUILD/bin/$b" ] || { echo "bench-cycle-split: $BUILD/bin/$b is missing" >&2; exit 2; }
done
for c in perf redis-server redis-cli curl python3; do
    command -v "$c" >/dev/null || { echo "bench-cycle-split: $c is missing" >&2; exit 2; }
done
[ "$SECS" -ge $((SAMPLE + 6)) ] || { echo "bench-cycle-split: BENCH_SECONDS must be >= BENCH_SAMPLE + 6" >&2; exit 2; }
rm -rf "$WORK/runs"
mkdir -p "$WORK/runs"
RAW=$WORK/raw.txt
: >"$RAW"
SPID=""
LPID=""
cleanup() {
    [ -z "$LPID" ] || kill "$LPID" 2>/dev/null || true
    [ -z "$SPID" ] || kill "$SPID" 2>/dev/null || true
    wait 2>/dev/null || true
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# snap DIR NAME: per thread "tid run_ns wait_ns", the server's write_bytes, its counters.
snap() {
    local t
    for t in /proc/"$SPID"/task/*; do
        echo "task ${t##*/} $(cut -d' ' -f1-2 "$t/schedstat" 2>/dev/null || echo 0 0)"
    done >"$1/$2.tasks"
    awk '$1 == "write_bytes:" { print $2 }' "/proc/$SPID/io" >"$1/$2.io"
    if [ "$SYS" = roostd ]; then
        curl -s --max-time 10 "$URL/metrics" >"$1/$2.counters"
    else
        redis-cli -p "$PORT" info commandstats >"$1/$2.counters"
    fi
    date +%s.%N >"$1/$2.time"
}

# run SYSTEM ROUND: one measurement into WORK/runs/SYSTEM.ROUND.
run() {
    SYS=$1
    local r=$2 d=$WORK/runs/$1.$2 load=()
    mkdir -p "$d/data"
    load=("$BUILD/bin/roost_load" --seconds "$SECS" --warmup 1.5 --producers "$SHAPE" --consumers "$SHAPE")
    if [ "$SYS" = roostd ]; then
        "$BUILD/bin/roostd" --data-dir "$d/data" --listen 127.0.0.1:0 --ready-file "$d/data/ready" \
            --set store.synchronous=full >"$d/server.log" 2>&1 &
        SPID=$!
        for _ in $(seq 300); do [ -s "$d/data/ready" ] && break; sleep 0.05; done
        URL=$(cat "$d/data/ready")
        load+=(--data-dir "$d/data")
    else
        PORT=$(free_port)
        redis-server --bind 127.0.0.1 --port "$PORT" --protected-mode yes --dir "$d/data" \
            --appendonly yes --appendfsync always --save '' --daemonize no >"$d/server.log" 2>&1 &
        SPID=$!
        for _ in $(seq 300); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.05; done
        load+=(--url "redis://127.0.0.1:$PORT" --target redis)
    fi
    "${load[@]}" >"$d/load.out" 2>"$d/load.err" &
    LPID=$!
    sleep 3
    snap "$d" s0
    sleep "$SAMPLE"
    snap "$d" s1
    cut -d' ' -f1 /proc/loadavg >"$d/loadavg"
    perf trace -s -p "$SPID" -o "$d/trace.txt" -- sleep 2 >/dev/null 2>&1 || true
    perf sched record -o "$d/sched.data" -- sleep 1 >/dev/null 2>&1 || true
    wait "$LPID" || true
    LPID=""
    kill -TERM "$SPID" 2>/dev/null || true
    wait "$SPID" || true
    SPID=""
    perf sched timehist -i "$d/sched.data" --state >"$d/sched.txt" 2>/dev/null || true
    rm -rf "$d/data" "$d/sched.data"
    python3 - "$d" "$SYS" "$r" "$(cut -d' ' -f1 /proc/loadavg)" >>"$RAW" <<'EOF' ||
import collections, re, sys
d, system, rnd, load_end = sys.argv[1:5]
def read(p):
    return open(f"{d}/{p}").read()
dt = float(read("s1.time")) - float(read("s0.time"))
def counters(name):
    out = {}
    for line in read(name).splitlines():
        if system == "roostd":
            if line.startswith("#") or "_bucket" in line:
                continue
            k, _, v = line.rpartition(" ")
        else:
            m = re.match(r"cmdstat_(\w+):calls=(\d+)", line)
            if not m:
                continue
            k, v = m.group(1), m.group(2)
        try:
            out[k] = float(v)
        except ValueError:
            pass
    return out
c0, c1 = counters("s0.counters"), counters("s1.counters")
delta = lambda k: c1.get(k, 0) - c0.get(k, 0)
acks = delta('roost_http_requests_total{route="ack",status="200"}') if system == "roostd" else delta("xack")
cycles = acks / dt
wbytes = (int(read("s1.io")) - int(read("s0.io"))) / dt
head = f"system={system} round={rnd} loadavg={read('loadavg').strip()}/{load_end} cycles_per_s={cycles:.0f} write_bytes_per_cycle={wbytes / cycles:.0f}"
if system == "roostd":
    commits = delta("roost_group_commit_batch_size_count")
    jobs = delta("roost_group_commit_batch_size_sum")
    stmts = sum(delta(f'roost_store_op_duration_seconds_sum{{op="{o}"}}') for o in ("publish", "claim", "ack"))
    commit_s = delta('roost_store_op_duration_seconds_sum{op="commit"}')
    head += (f" commits_per_cycle={commits / acks:.3f} jobs_per_group={jobs / commits:.2f}"
             f" writer_statements_us_per_cycle={stmts * 1e6 / acks:.1f} writer_commit_us_per_cycle={commit_s * 1e6 / acks:.1f}"
             f" commit_us={commit_s * 1e6 / commits:.0f}")
# perf trace: fdatasync calls per second of trace and requests read per fdatasync
tr = read("trace.txt") if __import__("os").path.exists(f"{d}/trace.txt") else ""
calls = collections.Counter()
for m in re.finditer(r"^\s+(\w+)\s+(\d+)\s+\d+\s+[\d.]+", tr, re.M):
    calls[m.group(1)] += int(m.group(2))
if calls["fdatasync"]:
    reads = calls["readv"] or calls["read"]
    head += f" traced_fdatasync_per_s={calls['fdatasync'] / 2:.0f} traced_requests_per_fdatasync={reads / calls['fdatasync']:.1f}"
print(head)
# schedstat: per thread run and runnable-but-waiting, µs per cycle over the clean window
def tasks(name):
    return {p[1]: (int(p[2]), int(p[3])) for p in (l.split() for l in read(name).splitlines())}
t0, t1 = tasks("s0.tasks"), tasks("s1.tasks")
# perf sched: off-CPU time by the state the thread left in (D disk, S sleep), ms over its 1 s
last, off = {}, collections.defaultdict(collections.Counter)
for line in read("sched.txt").splitlines()[3:]:
    p = line.split()
    if len(p) < 7:
        continue
    name, (wait, delay, run, state) = " ".join(p[2:-4]), (p[-4], p[-3], p[-2], p[-1])
    m = re.search(r"\[(\d+)(?:/\d+)?\]$", name)
    if not m:
        continue
    tid = m.group(1)
    if tid in last:
        off[tid][last[tid]] += float(wait)
    off[tid]["delay"] += float(delay)
    last[tid] = state
busy = sorted(t1, key=lambda t: -(t1[t][0] - t0.get(t, (0, 0))[0]))
pid = min(t1, key=int)  # the main thread: roostd's loop
for tid in busy[: 2 if system == "roostd" else 1]:
    run = (t1[tid][0] - t0.get(tid, (0, 0))[0]) / 1e3 / dt
    wait = (t1[tid][1] - t0.get(tid, (0, 0))[1]) / 1e3 / dt
    role = ("loop" if tid == pid else "writer") if system == "roostd" else "main"
    o = off[tid]
    print(f"system={system} round={rnd} thread={role} run_us_per_cycle={run / cycles:.1f}"
          f" runnable_wait_us_per_cycle={wait / cycles:.1f} sched_disk_ms={o['D']:.0f}"
          f" sched_sleep_ms={o['S']:.0f} sched_runq_ms={o['delay']:.0f}")
EOF
        echo "bench-cycle-split: WARNING: $SYS round $r could not be read (kept in $d)" >&2 && BENCH_KEEP=1
    [ "${BENCH_KEEP:-0}" = 1 ] || rm -rf "$d"
}

echo "bench-cycle-split: $RUNS rounds at P$SHAPE C$SHAPE, $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq 1 "$RUNS"); do
    order="roostd redis"
    [ $((r % 2)) -eq 1 ] || order="redis roostd"
    for s in $order; do
        run "$s" "$r"
    done
done
cat "$RAW"
echo "medians:"
python3 - "$RAW" <<'EOF'
import collections, statistics, sys
rows = collections.defaultdict(lambda: collections.defaultdict(list))
for line in open(sys.argv[1]):
    kv = dict(f.split("=", 1) for f in line.split())
    key = kv.pop("system") + (" " + kv["thread"] if "thread" in kv else "")
    kv.pop("thread", None)
    kv.pop("round")
    for k, v in kv.items():
        try:
            rows[key][k].append(float(v))
        except ValueError:
            rows[key][k].append(v)
for key, cols in rows.items():
    print(key + ": " + " ".join(
        f"{k}={statistics.median(v):g}" if not isinstance(v[0], str) else f"{k}={','.join(v)}"
        for k, v in cols.items()))
EOF
echo "bench-cycle-split: load average at the end $(cut -d' ' -f1-3 /proc/loadavg); raw results in $RAW"

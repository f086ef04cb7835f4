# SPDX-License-Identifier: MIT
# The servers' lifecycle for the benchmark scripts (bench.sh, bench_sse.sh, bench_mysql.sh),
# sourced after BENCH_NAME is set (the prefix of every message):
#   bench_wait_ready PID READY LOG   waits up to 15 s for READY; exits 1 with LOG's tail if the
#                                    server dies first or never gets ready
#   bench_stop PID NAME LOG          SIGTERM, then bench_reap; warns when it had already exited
#   bench_reap PID NAME LOG          up to 10 s for a clean exit, then SIGKILL; warns on a kill
#                                    or a non-zero exit
#   start_server READY LOG ARGV...   starts one server in the background (SERVER_PID) and waits
#   stop_server NAME LOG             bench_stop of SERVER_PID
#   bench_stop_all                   SIGTERM to every pid of SERVER_PIDS (and SERVER_PID) at
#                                    once, then bench_reap each
# The scripts' exit traps call bench_stop_all, which also covers SERVER_PID.
#
# And the measurement and its statistics, over the raw file RAW (one "scenario=S run=N key=value …"
# line per measurement) and RUNS:
#   bench_measure SCENARIO RUN ARGV…  runs one load tool (roost_load, sqlite_direct, mysql_direct),
#                                    samples the server's counters (bench_counters) and the CPU of
#                                    the tool and of SERVER_PID (bench_cpu_sample) as the tool's
#                                    measurement window opens and closes, appends the tool's
#                                    RESULT keys and the counters per full cycle to RAW
#   kv LINE KEY, median S KEY, range S KEY, total S KEY, ratio A B, check V OP T
# and for MariaDB (BENCH_DB_SOCKET, BASE_URL): bench_sql, fresh_db NAME, start_nodes N URL DIR.

SERVER_PID=""
SERVER_PIDS=()

bench_wait_ready() {
    local pid=$1 ready=$2 log=$3
    for _ in $(seq 1 300); do
        [ -s "$ready" ] && return 0
        if ! kill -0 "$pid" 2>/dev/null; then
            echo "$BENCH_NAME: the server writing $ready exited before it was ready; its log ($log):" >&2
            tail -20 "$log" >&2
            exit 1
        fi
        sleep 0.05
    done
    echo "$BENCH_NAME: $ready not written after 15 s; log: $log" >&2
    exit 1
}

bench_stop() {
    local pid=$1 name=$2 log=$3 rc=0
    if ! kill -0 "$pid" 2>/dev/null; then
        wait "$pid" 2>/dev/null || rc=$?
        echo "$BENCH_NAME: WARNING: $name had already exited (status $rc) before SIGTERM; log: $log" >&2
        tail -5 "$log" >&2
        return
    fi
    kill -TERM "$pid"
    bench_reap "$pid" "$name" "$log"
}

# After SIGTERM: up to 10 s for a clean exit, then SIGKILL; warns on a kill or a non-zero exit.
bench_reap() {
    local pid=$1 name=$2 log=$3 rc=0
    for _ in $(seq 1 100); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
        echo "$BENCH_NAME: WARNING: $name ignored SIGTERM for 10 s; killing it" >&2
        kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || rc=$?
    [ "$rc" -eq 0 ] || echo "$BENCH_NAME: WARNING: $name exited with status $rc after SIGTERM; log: $log" >&2
}

start_server() {
    local ready=$1 log=$2
    shift 2
    rm -f "$ready"
    "$@" >"$log" 2>&1 &
    SERVER_PID=$!
    bench_wait_ready "$SERVER_PID" "$ready" "$log"
}

stop_server() {
    bench_stop "$SERVER_PID" "$1" "$2"
    SERVER_PID=""
}

bench_stop_all() {
    local pid
    [ -n "$SERVER_PID" ] && SERVER_PIDS+=("$SERVER_PID")
    for pid in "${SERVER_PIDS[@]}"; do
        kill -TERM "$pid" 2>/dev/null || true
    done
    for pid in "${SERVER_PIDS[@]}"; do
        bench_reap "$pid" "server $pid" "its data dir's log"
    done
    SERVER_PID=""
    SERVER_PIDS=()
}

# ---- counters and measurement ----

# Where bench_counters reads: COUNTERS_DB=1 samples the MariaDB of BENCH_DB_SOCKET (SHOW GLOBAL
# STATUS), COUNTERS_PG=1 the CPU of the PostgreSQL whose postmaster.pid is BENCH_PG_PIDFILE,
# COUNTERS_URLS (comma list) the /metrics of those roostd nodes (loopback peers may read it
# without a token). They are set by the scripts before each bench_measure.
COUNTERS_DB=""
COUNTERS_PG=""
COUNTERS_URLS=""

bench_sql() {
    "${MARIADB:-mariadb}" --no-defaults --protocol=socket --socket="$BENCH_DB_SOCKET" -uroot -N -B "$@"
}

# One line of "name=value": the server-wide counters the per-cycle figures are made of.
#   Questions (statements, each of a multi-statement round trip and each prepared-statement
#   execution counted), Handler_commit (engine commits, also one per autocommit statement),
#   Com_commit (COMMIT statements), Innodb_deadlocks, Innodb_row_lock_waits;
#   roostd_retries (roost_store_write_retries_total), roostd_commits (group transactions
#   committed: roost_group_commit_batch_size_count), summed over the nodes.
bench_counters() {
    if [ "$COUNTERS_DB" = 1 ]; then
        bench_sql -e "SHOW GLOBAL STATUS WHERE Variable_name IN ('Questions', 'Handler_commit',
            'Com_commit', 'Innodb_deadlocks', 'Innodb_row_lock_waits')" |
            awk '{ printf "%s=%s ", $1, $2 }'
        # mysqld's CPU (utime + stime, clock ticks) from /proc: what decides throughput on a
        # saturated machine, and steady where cycles/s swings with the other jobs' load.
        if [ -n "${BENCH_DB_PIDFILE:-}" ] && [ -r "/proc/$(cat "$BENCH_DB_PIDFILE" 2>/dev/null)/stat" ]; then
            awk '{ printf "db_cpu_ticks=%d ", $14 + $15 }' "/proc/$(cat "$BENCH_DB_PIDFILE")/stat"
            bench_sched db "$(cat "$BENCH_DB_PIDFILE")"
        fi
    fi
    # PostgreSQL's CPU: the postmaster and its children (a backend per connection, the WAL writer,
    # the checkpointer), all alive across a window whose load tool keeps its connections.
    if [ "$COUNTERS_PG" = 1 ] && [ -r "${BENCH_PG_PIDFILE:-}" ]; then
        local pm c t=0 procs
        pm=$(head -n 1 "$BENCH_PG_PIDFILE")
        read -r -a procs <<<"$pm $(pgrep -P "$pm" | tr '\n' ' ' || true)"
        for p in "${procs[@]}"; do
            c=$(bench_cpu_ticks "$p")
            t=$((t + ${c:-0}))
        done
        printf "db_cpu_ticks=%d " "$t"
        bench_sched db "${procs[@]}"
    fi
    if [ -n "$COUNTERS_URLS" ] && [ ${#SERVER_PIDS[@]} -gt 0 ]; then
        local p t=0
        for p in "${SERVER_PIDS[@]}"; do
            [ -r "/proc/$p/stat" ] && t=$((t + $(awk '{ print $14 + $15 }' "/proc/$p/stat")))
        done
        printf "roostd_cpu_ticks=%d " "$t"
        bench_sched roostd "${SERVER_PIDS[@]}"
    fi
    if [ -n "$COUNTERS_URLS" ]; then
        local u
        for u in ${COUNTERS_URLS//,/ }; do
            curl -s --max-time 10 --retry 1 "$u/metrics" || echo "roost_metrics_unreadable 1"
        done | awk '$1 == "roost_store_write_retries_total" { r += $2 }
            $1 == "roost_group_commit_batch_size_count" { c += $2 }
            $1 == "roost_store_write_overlaps_total" { o += $2 }
            $1 == "roost_metrics_unreadable" { bad = 1 }
            END { if (bad) printf "roostd_unreadable=1 "; printf "roostd_retries=%d roostd_commits=%d roostd_overlaps=%d", r, c, o }'
    fi
    echo
}

# bench_cpu_ticks PID: utime + stime of the process, all its threads, in clock ticks ("" when it
# is gone). The fields are counted after the command name, which may hold spaces.
bench_cpu_ticks() {
    [ -n "$1" ] && [ -r "/proc/$1/stat" ] || return 0
    sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | awk '{ print $12 + $13 }'
}

# bench_sched PREFIX PID…: the run-queue wait (ns) and time slices of every thread of the PIDs,
# summed (/proc/PID/task/TID/schedstat: on-CPU ns, waiting-for-a-CPU ns, slices), as PREFIX_wait_ns=
# and PREFIX_slices=. A slice begins at each wake-up or preemption: per cycle, it counts the thread
# hand-offs, and the wait says what they cost on a busy machine.
bench_sched() {
    local prefix=$1 p
    shift
    for p in "$@"; do
        [ -n "$p" ] && [ -d "/proc/$p/task" ] && cat /proc/"$p"/task/*/schedstat 2>/dev/null
    done | awk -v k="$prefix" '{ w += $2; n += $3 } END { printf "%s_wait_ns=%d %s_slices=%d ", k, w, k, n }'
}

# bench_cpu_sample LOAD_PID: the CPU of the machine, of the load tool and of the server SERVER_PID (when one is
# set; in all, and its user and system parts) as keys for bench_counter_deltas.
bench_cpu_sample() {
    local t
    t=$(bench_cpu_ticks "$1")
    [ -z "$t" ] || printf "load_cpu_ticks=%d " "$t"
    bench_sched load "$1"
    # The whole machine (/proc/stat's first line): busy is all but idle and iowait. Where the CPU,
    # not a wait, is what a paced scenario's tail queues on, this says so.
    awk '$1 == "cpu" { b = $2 + $3 + $4 + $7 + $8 + $9; printf "host_busy_ticks=%d host_ticks=%d ", b, b + $5 + $6 }' /proc/stat
    [ -n "$SERVER_PID" ] && [ -r "/proc/$SERVER_PID/stat" ] || return 0
    sed 's/^.*) //' "/proc/$SERVER_PID/stat" 2>/dev/null |
        awk '{ printf "server_cpu_ticks=%d server_user_ticks=%d server_sys_ticks=%d ", $12 + $13, $12, $13 }'
}

# Per-cycle keys from two bench_counters lines and the acknowledged events of the window.
bench_counter_deltas() { # BEFORE AFTER ACKED
    awk -v a="$1" -v b="$2" -v acked="$3" -v hz="$(getconf CLK_TCK 2>/dev/null || echo 100)" 'BEGIN {
        n = split(a, x, " "); for (i = 1; i <= n; i++) { split(x[i], kvp, "="); v0[kvp[1]] = kvp[2] }
        n = split(b, y, " "); for (i = 1; i <= n; i++) { split(y[i], kvp, "="); v1[kvp[1]] = kvp[2] }
        c = acked > 0 ? acked : 1
        if ("Questions" in v1)
            printf "db_questions_per_cycle=%.2f db_commits_per_cycle=%.2f db_commit_stmts_per_cycle=%.2f db_deadlocks=%d db_lock_waits=%d ",
                (v1["Questions"] - v0["Questions"]) / c, (v1["Handler_commit"] - v0["Handler_commit"]) / c,
                (v1["Com_commit"] - v0["Com_commit"]) / c, v1["Innodb_deadlocks"] - v0["Innodb_deadlocks"],
                v1["Innodb_row_lock_waits"] - v0["Innodb_row_lock_waits"]
        tick = 1000 / (hz > 0 ? hz : 100)
        if ("db_cpu_ticks" in v1)
            printf "db_cpu_ms_per_cycle=%.3f ", (v1["db_cpu_ticks"] - v0["db_cpu_ticks"]) * tick / c
        if ("host_ticks" in v0 && "host_ticks" in v1 && v1["host_ticks"] > v0["host_ticks"])
            printf "host_busy_pct=%.0f ", 100 * (v1["host_busy_ticks"] - v0["host_busy_ticks"]) / (v1["host_ticks"] - v0["host_ticks"])
        if ("load_cpu_ticks" in v0 && "load_cpu_ticks" in v1)
            printf "load_cpu_ms_per_cycle=%.4f ", (v1["load_cpu_ticks"] - v0["load_cpu_ticks"]) * tick / c
        if ("server_cpu_ticks" in v0 && "server_cpu_ticks" in v1)
            printf "server_cpu_ms_per_cycle=%.4f ", (v1["server_cpu_ticks"] - v0["server_cpu_ticks"]) * tick / c
        if ("server_user_ticks" in v0 && "server_user_ticks" in v1)
            printf "server_user_ms_per_cycle=%.4f server_sys_ms_per_cycle=%.4f ",
                (v1["server_user_ticks"] - v0["server_user_ticks"]) * tick / c,
                (v1["server_sys_ticks"] - v0["server_sys_ticks"]) * tick / c
        if ("roostd_cpu_ticks" in v1)
            printf "roostd_cpu_ms_per_cycle=%.3f ", (v1["roostd_cpu_ticks"] - v0["roostd_cpu_ticks"]) * tick / c
        # Run-queue wait and slices per cycle, each process and in all (what the hand-offs cost).
        split("db roostd load", procs, " ")
        for (i = 1; i <= 3; i++) {
            k = procs[i]
            if ((k "_slices") in v0 && (k "_slices") in v1) {
                wt = (v1[k "_wait_ns"] - v0[k "_wait_ns"]) / 1e6 / c; sl = (v1[k "_slices"] - v0[k "_slices"]) / c
                printf "%s_runq_ms_per_cycle=%.3f %s_slices_per_cycle=%.1f ", k, wt, k, sl
                all_wait += wt; all_sl += sl; have_sched = 1
            }
        }
        if (have_sched)
            printf "runq_ms_per_cycle=%.3f slices_per_cycle=%.1f ", all_wait, all_sl
        if ("roostd_retries" in v1 && !("roostd_unreadable" in v0) && !("roostd_unreadable" in v1))
            printf "roostd_retries=%d roostd_commits_per_cycle=%.2f roostd_overlaps_per_commit=%.2f ",
                v1["roostd_retries"] - v0["roostd_retries"], (v1["roostd_commits"] - v0["roostd_commits"]) / c,
                (v1["roostd_overlaps"] - v0["roostd_overlaps"]) / (v1["roostd_commits"] > v0["roostd_commits"] ? v1["roostd_commits"] - v0["roostd_commits"] : 1)
    }' | sed 's/ $//'
}

# bench_wait_mark FD PID MARK: reads FD until the line MARK; fails once PID has exited without
# writing it. A read that times out keeps what it got of a line (bash reads a FIFO byte by byte,
# and a timeout between two bytes returns the first part): it is the start of the next read's
# line. Dropping it lost a mark once on a loaded machine, and the tool waited 300 s per mark.
bench_wait_mark() {
    local m part=""
    while :; do
        if read -r -t 1 -u "$1" m; then
            m=$part$m
            part=""
            [ "$m" = "$3" ] && return 0
            continue
        fi
        part+=$m
        kill -0 "$2" 2>/dev/null && continue
        read -r -t 0.2 -u "$1" m && [ "$part$m" = "$3" ] && return 0
        return 1
    done
}

# bench_measure SCENARIO RUN ARGV…: the tool writes "begin" and "end" into a FIFO
# (BENCH_WINDOW_FILE) as its window is due to open and close, and waits for a line on a second
# FIFO (BENCH_WINDOW_ACK) before it opens or closes it: the counters are sampled in between, so
# they cover the window the tool counts its cycles in however long a sample takes (a sample is
# several processes and an HTTP request: 0.3 s of a 0.5 s window on a busy 2-core machine, where
# without the wait the first sample once came after the window and counted no commit at all).
# Prints one summary line; a tool without a RESULT line is reported and skipped.
bench_measure() {
    local scenario=$1 run=$2
    shift 2
    local err=$WORK/runs/$scenario.$run.err out=$WORK/runs/$scenario.$run.out
    local fifo=$WORK/runs/$scenario.$run.window ack=$WORK/runs/$scenario.$run.ack
    local mark s0="" s1="" lrc=0
    rm -f "$fifo" "$ack"
    mkfifo "$fifo" "$ack"
    exec {wfd}<>"$fifo" # read-write: the tool's open never blocks, the reads wait for its marks
    exec {afd}<>"$ack"  # read-write: our answers wait in the FIFO until the tool reads them
    BENCH_WINDOW_FILE=$fifo BENCH_WINDOW_ACK=$ack "$@" >"$out" 2>"$err" &
    local load=$!
    if bench_wait_mark "$wfd" "$load" begin; then
        s0="$(bench_cpu_sample "$load")$(bench_counters)"
        echo sampled >&"$afd"
        if bench_wait_mark "$wfd" "$load" end; then
            s1="$(bench_cpu_sample "$load")$(bench_counters)"
            echo sampled >&"$afd"
        fi
    fi
    wait "$load" || lrc=$?
    exec {wfd}<&- {afd}<&-
    rm -f "$fifo" "$ack"
    local line
    line=$(grep '^RESULT ' "$out" | head -1 || true)
    if [ -z "$line" ]; then
        echo "$BENCH_NAME: $scenario (run $run) produced no result (exit $lrc); stderr:" >&2
        tail -10 "$err" >&2
        return 0
    fi
    local d=""
    [ -z "$s0" ] || [ -z "$s1" ] || d=$(bench_counter_deltas "$s0" "$s1" "$(kv "$line" acked)")
    if { [ "$COUNTERS_DB" = 1 ] && [[ $d != *db_questions_per_cycle=* ]]; } ||
        { [ -n "$COUNTERS_URLS" ] && [[ $d != *roostd_retries=* ]]; }; then
        echo "$BENCH_NAME: WARNING: $scenario (run $run): the server counters were not sampled over" \
            "the whole window (a mark missed, or /metrics or MariaDB did not answer); its per-cycle" \
            "columns stay empty" >&2
    fi
    # The load average as the window closed: on a shared machine it says what else was running.
    d+="${d:+ }loadavg=$(cut -d' ' -f1 /proc/loadavg)"
    echo "scenario=$scenario run=$run ${line#RESULT }${d:+ $d}" >>"$RAW"
    local errors
    errors=$(kv "$line" errors)
    printf '  %-18s run %d: %8s cycles/s  publish p50 %7s ms  %s  errors %s\n' "$scenario" "$run" \
        "$(kv "$line" cycles_per_s)" "$(kv "$line" publish_p50_ms)" "$d" "$errors"
    if [ "$errors" != 0 ]; then
        echo "  WARNING: $scenario run $run had $errors unexpected answers; first ones:" >&2
        head -5 "$err" | sed 's/^/    /' >&2
    fi
}

# ---- roostd on MariaDB ----

fresh_db() { # fresh_db NAME → URL of a new, empty database NAME on the MariaDB at BASE_URL
    bench_sql -e "DROP DATABASE IF EXISTS $1; CREATE DATABASE $1 CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
    echo "${BASE_URL%/*}/$1"
}

# start_nodes N URL DIR: N roostd nodes on database URL (ROOSTD_BIN, default BIN/roostd, tail.interval_ms=TAIL_MS,
# ROOSTD_ARGS), data dirs DIR/n1…; node 1's token key signs for all of them. Sets NODE_URLS (comma
# list) and KEY; the nodes join SERVER_PIDS (bench_stop_all stops them).
start_nodes() {
    local n=$1 url=$2 dir=$3 i d
    NODE_URLS=""
    KEY=$dir/n1/token_ed25519.pem
    for i in $(seq 1 "$n"); do
        d=$dir/n$i
        mkdir -p "$d"
        local keyopt=()
        [ "$i" -gt 1 ] && keyopt=(--set "auth.key_file=$KEY")
        "${ROOSTD_BIN:-$BIN/roostd}" --data-dir "$d" --listen 127.0.0.1:0 --ready-file "$d/ready" --store "$url" \
            --set "tail.interval_ms=$TAIL_MS" "${keyopt[@]}" "${ROOSTD_ARGS[@]}" >"$d/roostd.log" 2>&1 &
        SERVER_PIDS+=($!)
        bench_wait_ready "${SERVER_PIDS[-1]}" "$d/ready" "$d/roostd.log"
        NODE_URLS+="${NODE_URLS:+,}$(cat "$d/ready")"
    done
}

# ---- statistics over RAW ----

kv() { # kv "line" key → value
    tr ' ' '\n' <<<"$1" | awk -F= -v k="$2" '$1 == k { print $2; exit }'
}

values() { # values SCENARIO KEY: one value per run (none when the scenario did not run)
    { grep "^scenario=$1 " "$RAW" || true; } | tr ' ' '\n' | awk -F= -v k="$2" '$1 == k { print $2 }'
}

median() { # median SCENARIO KEY ("-" when none)
    values "$1" "$2" | sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

range() { # "min–max" of a key over the runs of one scenario
    values "$1" "$2" | sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { if (NR) printf "%s–%s", lo, hi; else printf "-" }'
}

total() { # sum of a key over the runs ("-" when no run has it)
    values "$1" "$2" | awk '{ n += $1 } END { if (NR) print n + 0; else print "-" }'
}

# Per-run cycles/s ratios A/B (each pair from the same run), one per line.
ratios() {
    local a=$1 b=$2 run va vb
    for run in $(seq 1 "$RUNS"); do
        va=$(grep "^scenario=$a run=$run " "$RAW" | head -1 || true)
        vb=$(grep "^scenario=$b run=$run " "$RAW" | head -1 || true)
        [ -n "$va" ] && [ -n "$vb" ] || continue
        awk -v x="$(kv "$va" cycles_per_s)" -v y="$(kv "$vb" cycles_per_s)" 'BEGIN { if (y > 0) printf "%.3f\n", x / y }'
    done
}

ratio() { # median of the per-run ratios A/B: "median (min–max)"
    ratios "$1" "$2" | sort -g |
        awk '{ v[NR] = $1 } END { if (NR == 0) { print "-"; exit } m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.2f (%.2f–%.2f)\n", m, v[1], v[NR] }'
}

check() { # value, op, target → "met" / "**not met**"
    awk -v v="${1%% *}" -v op="$2" -v t="$3" 'BEGIN { if (v == "-" || v == "") { print "n/a"; exit }
        ok = (op == ">=") ? (v + 0 >= t + 0) : (v + 0 <= t + 0); print ok ? "met" : "**not met**" }'
}

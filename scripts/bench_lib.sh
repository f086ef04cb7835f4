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

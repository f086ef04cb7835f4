#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# README.md's agent example, run as written (issue 33 rough edge 8): `readme_agent.sh ROOSTD
# ROOST_CLI SOURCE_DIR`. The `roost agent run … --concurrency 4` line is taken from README.md
# (only build/bin/roost replaced by the CLI under test; the server and token come from
# ROOST_SERVER/ROOST_TOKEN), 40 events of a few KiB are waiting, and tasks.log must end with
# one whole JSON line per event: four handlers appending at once must not interleave (the example
# once wrote with two unlocked appends per event, and lines came out merged).
# Ends with "N passed, N failed".
set -uo pipefail

roostd=${1:?roostd binary}
roost=${2:?roost binary}
src=${3:?source dir}

. "$(dirname "$0")/../harness/preamble.sh" readme-agent
need jq flock

cmd=$(awk '/^build\/bin\/roost agent run / { line = $0; if (line ~ /\\$/) { sub(/\\$/, "", line);
  getline nxt; line = line nxt } print line; exit }' "$src/README.md")
has_concurrency() { case "$cmd" in *"--concurrency 4"*) return 0 ;; *) return 1 ;; esac; }
check "README.md has the agent run example with --concurrency 4 ($cmd)" has_concurrency
cmd=${cmd/build\/bin\/roost/\"$roost\"}

roostd_start "$roostd" "$dir/data" --set store.synchronous=normal ||
  abort "roostd did not start: $(cat "$dir/roostd.log")"
tok=$("$roost" token mint --data-dir "$dir/data" --tenant t1 \
  --scope 'agent:agent-1:consume agent:agent-1:publish')
check "token minted" test -n "$tok"
export ROOST_SERVER=$url ROOST_TOKEN=$tok

# 40 events whose payloads are a few KiB each: big enough that a line is several writes' worth.
pad=$(head -c 3000 /dev/zero | tr '\0' x)
n=40
for i in $(seq 1 $n); do
  "$roost" publish --agent agent-1 --payload "{\"i\":$i,\"pad\":\"$pad\"}" >/dev/null ||
    abort "publish $i failed"
done

mkdir -p "$dir/work"
(cd "$dir/work" && exec sh -c "exec $cmd") >"$dir/agent.out" 2>"$dir/agent.log" &
client_pid=$!
lines() { [ -f "$dir/work/tasks.log" ] && wc -l <"$dir/work/tasks.log" || echo 0; }
done_all() { [ "$(lines)" -ge $n ]; }
check "the agent handled all $n events (tasks.log has $(lines) lines)" wait_until 120 done_all
kill -TERM "$client_pid"
wait_until 30 eval '! kill -0 "$client_pid" 2>/dev/null'
wait "$client_pid"
check "the agent stopped with exit 0 on SIGTERM" test $? = 0
client_pid=
check "tasks.log has exactly $n lines ($(lines))" test "$(lines)" = $n
whole_lines() { # each line parses alone as one event (two merged events on a line do not)
  jq -R -c 'fromjson? | select(type == "object" and (.pad | length) == 3000) | .i' \
    "$dir/work/tasks.log" 2>/dev/null | sort -n | uniq | wc -l
}
check "every line is one whole event ($(whole_lines) of $n)" test "$(whole_lines)" = $n
summary

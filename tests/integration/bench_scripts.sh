#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The benchmark scripts still run and still measure what doc/BENCHMARKS.md says, in a few
# seconds (never a speed check): `bench_scripts.sh BUILD_DIR SOURCE_DIR`.
#  * scripts/bench_sweep.sh at P = C = 1, one run of 0.5 s per system: every system answers
#    without errors, medians.tsv has one row per system with cycles/s, the MariaDB rows carry the
#    server's statements and commits per cycle (SHOW GLOBAL STATUS over the window) and deadlock
#    and lock-wait counts, the roostd rows the /metrics retries and transactions per cycle, the
#    roostd rows a ratio to their reference; the PNG is drawn, and bench_plot.sh redraws it from
#    the TSV alone.
#  * scripts/bench_mysql.sh with one loop and one 2-node roostd point: its table has the
#    retries and the × loop ratio.
#  * scripts/bench_paced_rates.sh at one rate: the loop's and roostd's p99, the machine's busy
#    share and their time slices per cycle.
#  * scripts/bench_pg.sh with the loop, one and two roostd nodes and a base build at P2 C2: the
#    ratios, the load average and roostd's and PostgreSQL's CPU per cycle are in its table.
#  * bench/null_server --durable, the ideal durable server: in each shape (inline:FILE,
#    thread:FILE, mysql:URL) an answer comes only once its bytes are in the file or the table,
#    and groups of answers share a write; mysql_direct --hop sends its hops; scripts/bench_ideal.sh
#    gives every line of its table.
#  * scripts/bench_peers.sh, one round of 0.5 s per system at P2 C2: every system answers without errors through the one driver (Redis and beanstalkd
#    started on loopback in the run's directory), the table has its ratios, load averages and
#    target rows, the plot is drawn. A missing redis-server or beanstalkd fails the test
#    (scripts/deps.sh installs them).
#  * scripts/bench_syscalls.sh, one round: CPU per cycle and system calls per request by kind.
#  * scripts/bench_cycle_split.sh, one round at P2 C2: roostd's rate, commits per cycle and writer
#    time, and each thread's time on the CPU, waiting for it, for the disk and asleep (roostd's
#    loop and writer, Redis' main thread); run where redis-server and `perf sched` work.
# Starts its own private MariaDB and PostgreSQL (as the scripts do). Ends with the line "N passed, N failed".
set -uo pipefail

build=${1:?build dir}
src=${2:?source dir}

. "$(dirname "$0")/../harness/preamble.sh" bench

need() { command -v "$1" >/dev/null || abort "missing tool: $1"; }
need gnuplot
need curl

col() { # col FILE SYSTEM COLUMN → that cell of the medians file
  awk -F'\t' -v s="$2" -v col="$3" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == col) c = i; next }
    $1 == s { print $c; exit }' "$1"
}
positive() { awk -v v="$1" 'BEGIN { exit !(v + 0 > 0) }'; }
number() { [[ $1 =~ ^[0-9]+(\.[0-9]+)?$ ]]; }

sw=$dir/sw
BUILD_DIR=$build BENCH_DIR=$sw BENCH_RUNS=1 BENCH_SECONDS=0.5 BENCH_WARMUP=0.2 BENCH_SHAPES=1 \
  "$src/scripts/bench_sweep.sh" >"$dir/sweep.log" 2>&1
check "bench_sweep.sh exits 0 ($dir/sweep.log)" test $? -eq 0
m=$sw/medians.tsv
check "medians.tsv has a header and 7 rows" test "$(wc -l <"$m")" -eq 8
for s in sqlite_direct null roostd_sqlite mysql_direct roostd_mysql1 roostd_mysql2 roostd_mysql4; do
  check "$s: cycles/s > 0" positive "$(col "$m" "$s" cycles_per_s)"
  check "$s: no errors" test "$(col "$m" "$s" errors)" = 0
done
for s in mysql_direct roostd_mysql1 roostd_mysql4; do
  check "$s: statements per cycle from the server" positive "$(col "$m" "$s" stmts_per_cycle)"
  check "$s: commits per cycle from the server" positive "$(col "$m" "$s" commits_per_cycle)"
  check "$s: deadlocks counted" number "$(col "$m" "$s" deadlocks)"
  check "$s: lock waits counted" number "$(col "$m" "$s" lock_waits)"
done
# Transactions per cycle: the /metrics samples are taken while the tool holds its window shut
# (BENCH_WINDOW_ACK), so they bracket the cycles it counts however slow a sample is; before that
# handshake a first sample that came after the 0.5 s window counted 0 commits on a busy machine.
for s in roostd_sqlite roostd_mysql1 roostd_mysql2; do
  check "$s: retries from /metrics" number "$(col "$m" "$s" retries)"
  check "$s: transactions per cycle from /metrics" positive "$(col "$m" "$s" roostd_txns_per_cycle)"
  check "$s: a ratio to the null server" positive "$(col "$m" "$s" x_null)"
done
check "roostd_sqlite is compared with sqlite_direct" test "$(col "$m" roostd_sqlite reference)" = sqlite_direct
check "roostd_mysql2 is compared with mysql_direct" test "$(col "$m" roostd_mysql2 reference)" = mysql_direct
check "roostd_mysql2 has that ratio" positive "$(col "$m" roostd_mysql2 x_reference)"
check "sqlite_direct counts its own statements" positive "$(col "$m" sqlite_direct stmts_per_cycle)"
check "sweep.tsv has one row per point" test "$(wc -l <"$sw/sweep.tsv")" -eq 8
png() { [ "$(head -c 4 "$1" 2>/dev/null | tail -c 3)" = PNG ]; }
check "the plot is a PNG" png "$sw/bench-cycles.png"
"$src/scripts/bench_plot.sh" "$m" "$dir/again.png" >/dev/null 2>&1
check "bench_plot.sh redraws it from the TSV" png "$dir/again.png"
check "the table has a header and a row per system" test "$(grep -c '^| ' "$sw/results.md")" -eq 8

bm=$dir/bm
BUILD_DIR=$build BENCH_DIR=$bm BENCH_RUNS=1 BENCH_SECONDS=0.5 BENCH_WARMUP=0.2 \
  BENCH_ONLY="mysql_p8c8 roostd2_p8c8" "$src/scripts/bench_mysql.sh" >"$dir/mysql.log" 2>&1
check "bench_mysql.sh exits 0 ($dir/mysql.log)" test $? -eq 0
row=$(grep '^| roostd2_p8c8 ' "$bm/results.md")
check "bench_mysql.sh: the 2-node row has a × loop ratio" \
  sh -c "echo '$row' | awk -F' [|] ' '{ exit !(\$5 ~ /^[0-9.]+ [(]/) }'"
check "bench_mysql.sh: and a retries count" \
  sh -c "echo '$row' | awk -F' [|] ' '{ exit !(\$14 ~ /^[0-9]+\$/) }'"
check "bench_mysql.sh: the loop's statements per cycle" \
  sh -c "grep '^| mysql_p8c8 ' '$bm/results.md' | awk -F' [|] ' '{ exit !(\$9 + 0 > 0) }'"

# bench_paced_rates.sh at one rate: the loop's and roostd's rows, each with a p99, the machine's
# busy share and the time slices per cycle.
bpr=$dir/bpr
BUILD_DIR=$build BENCH_DIR=$bpr BENCH_RUNS=1 BENCH_SECONDS=0.5 BENCH_WARMUP=0.2 \
  "$src/scripts/bench_paced_rates.sh" 200 >"$dir/paced_rates.md" 2>"$dir/paced_rates.err"
check "bench_paced_rates.sh exits 0 ($dir/paced_rates.err, $bpr-200.log)" test $? -eq 0
for s in mysql_paced roostd1_paced; do
  check "bench_paced_rates.sh: $s has a p99, the machine's busy share and time slices per cycle" \
    sh -c "grep '^| 200 | $s ' '$dir/paced_rates.md' | awk -F' [|] ' '{ exit !(\$4 + 0 > 0 && \$6 ~ /^[0-9]+\$/ && \$10 + 0 > 0) }'"
done

# bench_pg.sh: the loop, one and two roostd nodes and a base build (here the same one) on its
# private PostgreSQL, each row with its ratios, load average and CPU per cycle.
bp=$dir/bp
chmod 0755 "$dir" # the PostgreSQL server runs as postgres and must reach $bp/db
BUILD_DIR=$build BENCH_DIR=$bp BENCH_RUNS=1 BENCH_SECONDS=0.5 BENCH_WARMUP=0.2 \
  BENCH_BASE_ROOSTD=$build/bin/roostd BENCH_ONLY="loop_p2c2 roostd1_p2c2 base1_p2c2 roostd2_p2c2" \
  "$src/scripts/bench_pg.sh" >"$dir/pg.log" 2>&1
check "bench_pg.sh exits 0 ($dir/pg.log)" test $? -eq 0
row=$(grep '^| roostd1_p2c2 ' "$bp/results.md")
check "bench_pg.sh: roostd has × loop and × base ratios and a load average" \
  sh -c "echo '$row' | awk -F' [|] ' '{ exit !(\$5 ~ /^[0-9.]+ [(]/ && \$6 ~ /^[0-9.]+ [(]/ && \$7 + 0 > 0) }'"
check "bench_pg.sh: roostd's and PostgreSQL's CPU per cycle" \
  sh -c "echo '$row' | awk -F' [|] ' '{ exit !(\$12 + 0 > 0 && \$13 + 0 > 0) }'"
check "bench_pg.sh: the loop's PostgreSQL CPU per cycle" \
  sh -c "grep '^| loop_p2c2 ' '$bp/results.md' | awk -F' [|] ' '{ exit !(\$13 + 0 > 0) }'"
check "bench_pg.sh: the base build and two nodes have their rows" \
  sh -c "grep -q '^| base1_p2c2 ' '$bp/results.md' && grep -q '^| roostd2_p2c2 ' '$bp/results.md'"
check "bench_pg.sh: its PostgreSQL is stopped" sh -c "! pgrep -f '$bp[/]db' >/dev/null"

# The ideal durable server: an answer only once its own bytes are durable.
ns_start() { # ns_start ARGS...: a null_server on a free port; sets ns_pid and ns_url
  rm -f "$dir/ns.ready"
  "$build/bin/null_server" --listen 127.0.0.1:0 --ready-file "$dir/ns.ready" "$@" \
    2>"$dir/ns.log" &
  ns_pid=$!
  wait_until 10 test -s "$dir/ns.ready" || abort "null_server did not start: $(cat "$dir/ns.log")"
  ns_url=$(head -n 1 "$dir/ns.ready")
}
publish_id() { # publish_id → the event id of one publish's 201 answer
  curl -sf -X POST -H 'Content-Type: application/json' \
    -d '{"recipients":["a1"],"payload":{"n":1}}' "$ns_url/api/v1/events" |
    grep -o '"event_id":"[^"]*"' | cut -d'"' -f4
}
for shape in inline thread; do
  ns_start --durable "$shape:$dir/durable.$shape"
  id=$(publish_id)
  check "$shape: the publish is answered with an event id" test -n "$id"
  check "$shape: its answer is in the file when it arrives" grep -qa "$id" "$dir/durable.$shape"
  "$build/bin/roost_load" --url "$ns_url" --target null --seconds 0.5 --warmup 0.1 \
    --producers 2 --consumers 2 >"$dir/ns.load" 2>&1
  check "$shape: roost_load runs against it" grep -q 'errors=0' "$dir/ns.load"
  kill "$ns_pid" && wait "$ns_pid"
  read -r answers writes < <(sed -n 's/.* \([0-9]*\) answers in \([0-9]*\) durable writes/\1 \2/p' \
    "$dir/ns.log")
  check "$shape: every answer went through a durable write" test "${writes:-0}" -gt 0
  check "$shape: and writes were shared ($answers answers, $writes writes)" \
    test "${answers:-0}" -gt "${writes:-0}"
done
check "--syncers is for mysql:URL only" \
  sh -c "! '$build/bin/null_server' --durable thread:$dir/x --syncers 2 2>/dev/null"
db=$dir/db
url=$("$src/scripts/mariadb_test.sh" start "$db") || abort "cannot start MariaDB"
ns_start --durable "mysql:$url" --syncers 2
id=$(publish_id)
rows=$(mariadb --no-defaults --protocol=socket --socket="$db/mysqld.sock" -uroot -N -B roost_test \
  -e "SELECT COUNT(*) FROM null_durable WHERE LOCATE('$id', body) > 0" 2>&1)
check "mysql: the publish is answered with an event id" test -n "$id"
check "mysql: its answer is in the table when it arrives" test "$rows" = 1
# A client that gives up while its answer waits for the database: the server drops that answer
# and goes on (the database stopped with SIGSTOP, so the write hangs until SIGCONT).
kill -STOP "$(cat "$db/mysqld.pid")"
curl -s -m 1 -o /dev/null -X POST -H 'Content-Type: application/json' \
  -d '{"recipients":["a1"],"payload":{"n":2}}' "$ns_url/api/v1/events"
kill -CONT "$(cat "$db/mysqld.pid")"
id=$(publish_id)
check "mysql: after a client gave up on a held answer, the next publish is answered" test -n "$id"
kill "$ns_pid" && wait "$ns_pid"
# mysql_direct --hop: every request of the loop first goes to the HTTP server.
ns_start
"$build/bin/mysql_direct" --url "$url" --fresh --hop "$ns_url" --seconds 0.5 --warmup 0.1 \
  --producers 1 --consumers 1 >"$dir/hop.out" 2>&1
check "mysql_direct --hop runs without errors" grep -q 'errors=0' "$dir/hop.out"
hops=$(curl -sf -X POST -H 'Content-Type: application/json' -d '{"limit":1000}' \
  "$ns_url/api/v1/agents/hop/inbox/claim" | grep -o '"event_id"' | wc -l)
acked=$(sed -n 's/.* acked=\([0-9]*\) .*/\1/p' "$dir/hop.out")
# (one claim answers at most 1000; every publish, claim and ack of the loop made a hop)
want=$((${acked:-0} < 1000 ? ${acked:-0} : 1000))
check "and the HTTP server saw its hops ($hops, for $acked acks)" \
  test "$hops" -gt 0 -a "$hops" -ge "$want"
kill "$ns_pid" && wait "$ns_pid"
"$src/scripts/mariadb_test.sh" stop "$db" >/dev/null 2>&1

BUILD_DIR=$build BENCH_DIR=$dir/ideal ROUNDS=1 SECONDS_RUN=0.5 WARMUP=0.2 MYSQL=1 \
  "$src/scripts/bench_ideal.sh" "$build" >"$dir/ideal.log" 2>&1
check "bench_ideal.sh exits 0 ($dir/ideal.log)" test $? -eq 0
for s in p2_ideal_inline p2_ideal_thread p2_roostd p8_ideal_thread p8_roostd my_loop_hop my_ideal \
  my_roostd; do
  check "bench_ideal.sh: $s has cycles/s and a ratio to its reference" \
    grep -qE "^\| $s \| [0-9.]+ \| [0-9.]+–[0-9.]+ \| [0-9.]+ \(" "$dir/ideal.log"
done
check "bench_ideal.sh: no unexpected answers" sh -c "! grep -q WARNING '$dir/ideal.log'"

# The peers: every system through the one driver, its row in the table. scripts/deps.sh installs
# Redis and beanstalkd for make test, so their absence fails here instead of passing unchecked.
check "redis-server and beanstalkd are installed (scripts/deps.sh)" \
  sh -c "command -v redis-server && command -v beanstalkd"
if command -v redis-server >/dev/null && command -v beanstalkd >/dev/null; then
  pe=$dir/pe
  chmod 0755 "$dir" # the PostgreSQL server runs as postgres and must reach $pe/pg
  BUILD_DIR=$build BENCH_DIR=$pe BENCH_RUNS=1 BENCH_SECONDS=0.5 BENCH_WARMUP=0.2 BENCH_SHAPES=2 \
    BENCH_SYSTEMS="roostd_sqlite roostd_mysql1_1a sqlite_direct mysql_direct pg_pgmq redis_aof \
    beanstalkd" "$src/scripts/bench_peers.sh" >"$dir/peers.log" 2>&1
  check "bench_peers.sh exits 0 ($dir/peers.log)" test $? -eq 0
  for s in "roostd, SQLite, agent per consumer" "roostd, MariaDB, one agent" "direct SQLite" \
    "MariaDB, plain SKIP LOCKED loop" "PostgreSQL, pgmq shape" "Redis Streams, appendfsync always" \
    "beanstalkd -f 0"; do
    row=$(grep "^| $s.* | P2 C2 |" "$pe/results.md")
    check "bench_peers.sh: $s has cycles/s, a load average and no errors" \
      sh -c "echo '$row' | awk -F' [|] ' '{ exit !(\$3 + 0 > 0 && \$11 + 0 > 0 && \$12 == \"0\") }'"
  done
  check "bench_peers.sh: roostd on MariaDB has a × loop ratio" \
    sh -c "grep '^| roostd, MariaDB, one agent | P2 C2 |' '$pe/results.md' | awk -F' [|] ' '{ exit !(\$5 ~ /^[0-9.]+ [(]/) }'"
  check "bench_peers.sh: Redis and beanstalkd had their server's CPU sampled" \
    sh -c "grep -E '^[|] (Redis|beanstalkd)' '$pe/results.md' | awk -F' [|] ' '\$7 + 0 <= 0 { bad = 1 } END { exit bad }'"
  check "bench_peers.sh: MariaDB's and PostgreSQL's CPU was sampled" \
    sh -c "grep -E '^[|] (MariaDB, plain|PostgreSQL, pgmq)' '$pe/results.md' | awk -F' [|] ' '\$8 + 0 <= 0 { bad = 1 } END { exit bad }'"
  check "bench_peers.sh: the P2 C2 target rows have ratios" \
    sh -c "grep -c 'P2 C2, one agent: roostd ≥ 0.75× the loop | [0-9.]* (' '$pe/results.md'"
  check "bench_peers.sh: the plot is a PNG" png "$pe/bench-peers.png"
  check "bench_peers.sh: the servers are gone" sh -c "! pgrep -f '$pe[/]' >/dev/null"
else
  echo "bench_peers.sh not run: redis-server or beanstalkd missing (scripts/deps.sh)"
fi

# roostd's cost per request, two builds side by side (here the same one twice).
BENCH_DIR=$dir/sys BENCH_RUNS=1 BENCH_SECONDS=0.5 BENCH_WARMUP=0.2 BENCH_SHAPE=1 \
  BENCH_STRACE_SECONDS=0.5 "$src/scripts/bench_syscalls.sh" "$build" "$build" >"$dir/sys.log" 2>&1
check "bench_syscalls.sh exits 0 ($dir/sys.log)" test $? -eq 0
for b in base new; do
  check "bench_syscalls.sh: $b has CPU per cycle, its user and system parts and system calls per request" \
    sh -c "grep '^| $b | sqlite |' '$dir/sys/results.md' | head -1 | awk -F' [|] ' '{ exit !(\$4 + 0 > 0 && \$5 != \"-\" && \$6 != \"-\" && \$7 + 0 > 0) }'"
  check "bench_syscalls.sh: $b's system calls per request by kind" \
    sh -c "grep -E '^[|] $b [|] sqlite [|] (loop|all) [|] .*writev [0-9.]+' '$dir/sys/results.md'"
done

# Where a cycle's time goes, roostd beside Redis, thread by thread (one short round).
if command -v redis-server >/dev/null && perf sched record -o /dev/null -- true >/dev/null 2>&1; then
  BENCH_DIR=$dir/split BENCH_RUNS=1 BENCH_SECONDS=7 BENCH_SAMPLE=1 BENCH_SHAPE=2 \
    "$src/scripts/bench_cycle_split.sh" "$build" >"$dir/split.log" 2>&1
  check "bench_cycle_split.sh exits 0 ($dir/split.log)" test $? -eq 0
  check "bench_cycle_split.sh: roostd's cycles, commits per cycle and writer time" \
    sh -c "grep -E '^system=roostd round=1 .*cycles_per_s=[1-9][0-9]* .*commits_per_cycle=[0-9.]+ jobs_per_group=[0-9.]+ writer_statements_us_per_cycle=[0-9.]+' '$dir/split/raw.txt'"
  for t in "roostd round=1 thread=loop" "roostd round=1 thread=writer" "redis round=1 thread=main"; do
    check "bench_cycle_split.sh: $t has its time on and off the CPU" \
      sh -c "grep -E '^system=$t run_us_per_cycle=[0-9.]+ runnable_wait_us_per_cycle=[0-9.]+ sched_disk_ms=[0-9]+ sched_sleep_ms=[0-9]+' '$dir/split/raw.txt'"
  done
  check "bench_cycle_split.sh: the servers are gone" sh -c "! pgrep -f '$dir/split[/]' >/dev/null"
else
  echo "bench_cycle_split.sh not run: redis-server or perf sched missing"
fi
summary

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The PostgreSQL peers of the benchmarks work on the private PostgreSQL of the tests
# (scripts/postgres_test.sh, fixture "postgres"): `pg_peers.sh PG_DIRECT URL`. bench/pg_direct
# runs the plain SKIP LOCKED loop and pgmq's queue shape for a moment each; every event
# published is claimed and acked with no error, and the server counted the commits.
# Ends with "N passed, N failed".
set -uo pipefail

pg_direct=${1:?pg_direct binary}
url=${2:?PostgreSQL URL}

. "$(dirname "$0")/../harness/preamble.sh" pg-peers

field() { # field NAME RESULT_LINE
  sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"
}

for mode in loop pgmq; do
  for ack in "" --batch-ack; do
    out=$("$pg_direct" --url "$url" --mode "$mode" --fresh --seconds 1 --warmup 0.2 \
      --producers 2 --consumers 2 $ack 2>"$dir/$mode.err")
    check "$mode $ack: pg_direct ran ($(cat "$dir/$mode.err"))" test -n "$out"
    check "$mode $ack: events acked ($out)" test "$(field acked "$out")" -gt 0
    check "$mode $ack: no errors ($out)" test "$(field errors "$out")" = 0
    check "$mode $ack: the server counted commits ($out)" test "$(field commits "$out")" -gt 0
  done
done
summary

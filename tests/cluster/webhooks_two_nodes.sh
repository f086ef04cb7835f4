#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Two roostd nodes on one MariaDB deliver each webhook event once (issue 15, DESIGN §8.3: the
# inbox lease is the only lock). `webhooks_two_nodes.sh ROOSTD ROOST_CLI MYSQL_URL` (the URL of
# the ctest fixture's server; this test makes a database of its own). Both nodes run a
# dispatcher; 60 events published through node 2 reach the HTTPS receiver (which verifies them
# with the npm standardwebhooks and http-message-signatures packages) exactly once each, and
# all end completed. Then a third node without a dispatcher (webhooks.enabled=false) publishes
# one event: the other two learn of it only through their change-log tailers (their fallback
# sweeps, webhooks.poll_ms, are 10 minutes away), and it arrives within 3 s.
# Ends with "N passed, N failed".
set -uo pipefail

roostd=${1:?roostd binary}
roost=${2:?roost binary}
base_url=${3:?MariaDB URL}

. "$(dirname "$0")/../harness/preamble.sh" webhooks-nodes
need openssl curl node jq mariadb
js_dir=$(cd "$(dirname "$0")/../js" && pwd)
n1_pid=
n2_pid=
kill_nodes() { for p in $n1_pid $n2_pid; do kill -9 "$p" 2>/dev/null; done; }
trap 'kill_nodes; preamble_cleanup' EXIT

# ---- a database of its own on the fixture's server ----
mysql_test_db "$base_url" wh_nodes

test_cert hook IP:127.0.0.1
check "openssl made the receiver's certificate" test -s "$dir/hook.pem"

# Each node has its own data dir; node 2 gets node 1's token and signing keys (one roostd
# identity, as behind a load balancer).
# A delivery's timeout of a minute: the node.js receiver verifies every delivery with two
# libraries and answers in seconds on a loaded machine (under ASan beside a busy suite it took
# 8 s), and a timed-out delivery is retried, i.e. delivered twice, which these tests count.
node_start() { # node_start DATA_DIR [ROOSTD_ARGS...]
  local data=$1
  shift
  roostd_start "$roostd" "$data" --set "store.url=$store_url" \
    --set webhooks.allow_cidrs=127.0.0.1/32 --set "webhooks.ca_file=$dir/ca.pem" \
    --set webhooks.poll_ms=600000 --set webhooks.retry_schedule_s=1 --set webhooks.jitter_pct=0 \
    --set webhooks.timeout_ms=60000 --set scavenger.interval_ms=200 --set tail.interval_ms=50 "$@"
}
node_start "$dir/data" || abort "node 1 did not start: $(cat "$dir/roostd.log")"
n1_pid=$roostd_pid
url1=$url

secret="whsec_$(head -c 32 /dev/urandom | base64 -w0)"
mkdir -p "$dir/rx"
node "$js_dir/webhook_receiver.cjs" "$dir/hook.pem" "$dir/hook.key" "$secret" \
  "$url1/api/v1/keys/server" "$dir/rx" 2>"$dir/rx/stderr" &
client_pid=$!
wait_until 10 test -s "$dir/rx/port" || abort "the receiver did not start"
touch "$dir/rx/log"
hook="https://127.0.0.1:$(cat "$dir/rx/port")"
tok=$("$roost" token mint --data-dir "$dir/data" --tenant t1 \
  --scope 'agent:*:consume agent:*:publish tenant:admin')

c=$(curl -sS -o "$dir/out" -w '%{http_code}' -H "Authorization: Bearer $tok" \
  -H 'Content-Type: application/json' -d "{\"url\":\"$hook/ok\",\"secret\":\"$secret\"}" \
  "$url1/api/v1/agents/n.a/callbacks")
check "endpoint registered on node 1 ($c)" test "$c" = 201

# Node 2 starts after the registration, so its dispatcher knows the endpoint from its first
# listing and both nodes deliver.
node_copy() { # node_copy DATA_DIR: a data dir with node 1's keys
  mkdir -p "$1" && chmod 700 "$1" &&
    cp -p "$dir/data/token_ed25519.pem" "$dir/data/signing_ed25519.pem" "$1/"
}
node_copy "$dir/data2" || abort "node 1 wrote no keys"
node_start "$dir/data2" || abort "node 2 did not start: $(cat "$dir/roostd.log")"
n2_pid=$roostd_pid
url2=$url

events='{"events":['
for i in $(seq 1 60); do
  events="$events{\"recipients\":[\"n.a\"],\"payload\":{\"i\":$i}}"
  [ "$i" -lt 60 ] && events="$events,"
done
events="$events]}"
c=$(curl -sS -o "$dir/pub" -w '%{http_code}' -H "Authorization: Bearer $tok" \
  -H 'Content-Type: application/json' -d "$events" "$url2/api/v1/events")
check "60 events published through node 2 ($c)" test "$c" = 201

deliveries() { jq -c 'select(.type == null)' "$dir/rx/log" | wc -l; }
distinct() { jq -r 'select(.type == null) | .id' "$dir/rx/log" | sort -u | wc -l; }
test_ge_60() { [ "$(distinct)" -ge 60 ]; }
check "every event delivered" wait_until 120 test_ge_60
# Leave time for a duplicate to show up (a lease taken twice would deliver twice at once).
completed() {
  [ "$(curl -sS -H "Authorization: Bearer $tok" "$url1/api/v1/admin/agents" |
    jq '[.agents[] | select(.agent_id == "n.a") | .pending + .claimed + .scheduled] | add')" = 0 ]
}
check "none left pending, claimed or scheduled" wait_until 15 completed
check "each event delivered exactly once ($(deliveries) deliveries of $(distinct) events)" \
  test "$(deliveries)" = 60
check "every delivery verified by both libraries" \
  test "$(jq -c 'select(.type == null and (.sw and .sig | not))' "$dir/rx/log" | wc -l)" = 0

# ---- work published through a node without a dispatcher: delivered through the tailers ----
node_copy "$dir/data3" || abort "cannot make node 3's data dir"
node_start "$dir/data3" --set webhooks.enabled=false || abort "node 3 did not start"
t0=$(date +%s%3N)
c=$(curl -sS -o "$dir/pub" -w '%{http_code}' -H "Authorization: Bearer $tok" \
  -H 'Content-Type: application/json' -d '{"recipients":["n.a"],"payload":{"late":1}}' \
  "$url/api/v1/events")
check "one event published through node 3 ($c)" test "$c" = 201
e_late=$(jq -r '.events[0].event_id // .event_id' "$dir/pub")
arrived() { [ "$(jq -c "select(.id == \"$e_late\")" "$dir/rx/log" | wc -l)" -ge 1 ]; }
check "it arrives within 3 s through node 1's or node 2's tailer" wait_until 3 arrived
t1=$(jq -s "[.[] | select(.id == \"$e_late\") | .at] | .[0] // 0" "$dir/rx/log")
echo "published on node 3, delivered by another node after $((t1 - t0)) ms"
roostd_stop
check "node 3 exits 0 (got $roostd_rc)" test "$roostd_rc" = 0

for n in 2 1; do
  eval "roostd_pid=\$n${n}_pid"
  eval "n${n}_pid="
  roostd_stop
  check "node $n exits 0 (got $roostd_rc)" test "$roostd_rc" = 0
done
summary

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Two roostd nodes on one MariaDB take racing copies of inbound webhook deliveries (issue 31):
# `ingest_two_nodes.sh ROOSTD ROOST_CLI MYSQL_URL` (the fixture's server; a database of its own).
# Each of 5 deliveries, signed by the npm standardwebhooks package (the OpenAI / Anthropic
# scheme), is sent 20 times at once, 10 copies to each node: every copy answers 200, every
# answer names the same event, and each delivery is exactly one event in the inbox (the sender's
# delivery id, scoped to the source, is the idempotency key; the agent row lock serialises the
# copies). A source made through node 1 takes deliveries through node 2.
# Ends with "N passed, N failed".
set -uo pipefail

roostd=${1:?roostd binary}
roost=${2:?roost binary}
base_url=${3:?MariaDB URL}

. "$(dirname "$0")/../harness/preamble.sh" ingest-nodes
need curl node jq mariadb
js_dir=$(cd "$(dirname "$0")/../js" && pwd)
n1_pid=
n2_pid=
kill_nodes() { for p in $n1_pid $n2_pid; do kill -9 "$p" 2>/dev/null; done; }
trap 'kill_nodes; preamble_cleanup' EXIT

mysql_test_db "$base_url" ingest_nodes

node_start() { # node_start DATA_DIR
  roostd_start "$roostd" "$1" --set "store.url=$store_url" --set ingest.rate_per_s=0 \
    --set tail.interval_ms=50
}
node_start "$dir/data" || abort "node 1 did not start: $(cat "$dir/roostd.log")"
n1_pid=$roostd_pid
url1=$url
mkdir -p "$dir/data2" && chmod 700 "$dir/data2" && cp -p "$dir/data/token_ed25519.pem" "$dir/data2/"
node_start "$dir/data2" || abort "node 2 did not start: $(cat "$dir/roostd.log")"
n2_pid=$roostd_pid
url2=$url
roostd_pid=

tok=$("$roost" token mint --data-dir "$dir/data" --tenant t1 --scope 'agent:*:read tenant:admin')
c=$(curl -sS -o "$dir/src.json" -w '%{http_code}' -H "Authorization: Bearer $tok" \
  -H 'Content-Type: application/json' \
  -d '{"name":"openai","scheme":"standard-webhooks","agents":["racer"]}' "$url1/api/v1/admin/sources")
check "source added through node 1 ($c)" test "$c" = 201
sid=$(jq -r .source_id "$dir/src.json")
secret=$(jq -r .secret "$dir/src.json")

deliveries=5
copies=20
for d in $(seq 1 $deliveries); do
  echo "{\"type\":\"response.completed\",\"data\":{\"id\":\"resp_$d\"}}" >"$dir/body$d.json"
  node "$js_dir/ingest_sign.mjs" standard-webhooks "$secret" "$dir/body$d.json" "msg_race_$d" \
    >"$dir/h$d.json" || abort "the signer failed"
  args=()
  while IFS=$'\t' read -r k v; do args+=(-H "$k: $v"); done < <(jq -r 'to_entries[] | "\(.key)\t\(.value)"' "$dir/h$d.json")
  pids=()
  for i in $(seq 1 $copies); do
    u=$url1
    [ $((i % 2)) -eq 0 ] && u=$url2
    curl -sS -o "$dir/r$d.$i" -w '%{http_code}\n' -X POST "$u/ingest/$sid" "${args[@]}" \
      -H 'Content-Type: application/json' --data-binary "@$dir/body$d.json" >"$dir/c$d.$i" &
    pids+=($!)
  done
  wait "${pids[@]}"
  ok=$(cat "$dir"/c$d.* | grep -c '^200$')
  check "delivery $d: all $copies racing copies answered 200 ($ok)" test "$ok" -eq "$copies"
  ids=$(cat "$dir"/r$d.* | jq -r '.events[0].event_id' | sort -u | wc -l)
  check "delivery $d: every answer names the same event ($ids distinct)" test "$ids" -eq 1
  news=$(cat "$dir"/r$d.* | jq -r 'select(.duplicate == false) | 1' | wc -l)
  check "delivery $d: exactly one copy was the first ($news)" test "$news" -eq 1
done

curl -sS -H "Authorization: Bearer $tok" "$url2/api/v1/agents/racer/inbox?limit=1000" >"$dir/inbox.json"
total=$(jq '.events | length' "$dir/inbox.json")
check "the inbox holds exactly $deliveries events ($total)" test "$total" -eq "$deliveries"
for d in $(seq 1 $deliveries); do
  n=$(jq --arg id "msg_race_$d" '[.events[] | select(.payload.delivery_id == $id)] | length' "$dir/inbox.json")
  check "msg_race_$d is one event ($n)" test "$n" -eq 1
done
accepted=$(my -N -e "SELECT COUNT(*) FROM $test_db.ingest_receipts WHERE outcome = 'accepted'")
dups=$(my -N -e "SELECT COUNT(*) FROM $test_db.ingest_receipts WHERE outcome = 'duplicate'")
check "receipts: $deliveries accepted, the rest duplicates ($accepted, $dups)" \
  test "$accepted" -eq "$deliveries" -a "$dups" -eq $((deliveries * (copies - 1)))
summary

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Inbound webhooks end to end (issue 31): `ingest.sh ROOSTD ROOST_CLI`. roostd on SQLite;
# tests/js/ingest_test.mjs sends deliveries signed by the senders' own npm libraries (every
# scheme's acceptance, duplicate, refusals with nothing written, rotation, routing, tenant
# isolation, rate limit, metrics); tests/js/ingest_jwt_test.mjs the jwt scheme (A2A pushes signed
# by jose, the JWK Set served over HTTPS by a private test CA roostd trusts). Then here: the CLI
# (admin sources add/list/show/receipts/rotate/rm, the secret shown once); `roost agent run` (an
# agent with no public address) handles a signed delivery at once, woken by roostd's ping (its
# safety resync an hour away); roostd SIGKILLed while deliveries are in flight, the sender
# retrying each until it gets a 2xx: every delivery lands exactly once, and none that got a 2xx
# is missing after the restart.
# Ends with "N passed, N failed".
set -uo pipefail

roostd=${1:?roostd binary}
roost=${2:?roost binary}

. "$(dirname "$0")/../harness/preamble.sh" ingest
need curl node jq
js_dir=$(cd "$(dirname "$0")/../js" && pwd)

test_cert jwks IP:127.0.0.1 || abort "no test certificate: $(cat "$dir/openssl.log")"
start() { # the jwt sources' key sets are fetched like webhooks: through the filter, our CA
  roostd_start "$roostd" "$dir/data" --set store.synchronous=full --set ingest.rate_per_s=20 \
    --set webhooks.allow_cidrs=127.0.0.1/32 --set "webhooks.ca_file=$dir/ca.pem" "$@"
}
start || abort "roostd did not start: $(cat "$dir/roostd.log")"

mint() { "$roost" token mint --data-dir "$dir/data" --tenant "$1" --scope "$2"; }
t1=$(mint t1 'agent:*:read agent:*:consume tenant:admin')
t2=$(mint t2 'agent:*:read tenant:admin')
check "tokens minted" test -n "$t1" -a -n "$t2"

node "$js_dir/ingest_test.mjs" "$url" "$t1" "$t2" >"$dir/node.out" 2>&1
node_rc=$?
cat "$dir/node.out"
check "ingest_test.mjs passed" test "$node_rc" -eq 0
passed=$((passed + $(tail -n1 "$dir/node.out" | sed -n 's/^\([0-9]*\) passed.*/\1/p')))

node "$js_dir/ingest_jwt_test.mjs" "$url" "$t1" "$dir/jwks.pem" "$dir/jwks.key" >"$dir/node_jwt.out" 2>&1
node_rc=$?
cat "$dir/node_jwt.out"
check "ingest_jwt_test.mjs passed" test "$node_rc" -eq 0
passed=$((passed + $(tail -n1 "$dir/node_jwt.out" | sed -n 's/^\([0-9]*\) passed.*/\1/p')))

export ROOST_SERVER=$url ROOST_TOKEN=$t1

# ---- the CLI ----
"$roost" admin sources add --name cli-gh --scheme github --agents worker >"$dir/src.json" 2>"$dir/cli.err"
check "admin sources add prints the source" jq -e '.source_id and .secret and .ingest_url' "$dir/src.json"
sid=$(jq -r .source_id "$dir/src.json")
secret=$(jq -r .secret "$dir/src.json")
check "admin sources list has it (no secret)" \
  sh -c "'$roost' admin sources list -o json | jq -e --arg s '$sid' '.sources[] | select(.source_id == \$s) | has(\"secret\") | not'"
check "admin sources show prints it without the secret" \
  sh -c "'$roost' admin sources show '$sid' | jq -e '.scheme == \"github\" and (has(\"secret\") | not)'"
check "admin sources add refuses agents and a pointer together (usage)" \
  sh -c "! '$roost' admin sources add --name x --scheme github --agents a --agent-pointer /a 2>/dev/null"

# One GitHub delivery, signed by @octokit/webhooks-methods, POSTed by curl.
deliver() { # deliver SOURCE SCHEME SECRET BODY_FILE ID → prints the HTTP status
  local h
  h=$(node "$js_dir/ingest_sign.mjs" "$2" "$3" "$4" "$5") || return 1
  local args=()
  while IFS=$'\t' read -r k v; do args+=(-H "$k: $v"); done < <(jq -r 'to_entries[] | "\(.key)\t\(.value)"' <<<"$h")
  curl -s -o "$dir/deliver.out" -w '%{http_code}' -X POST "$url/ingest/$1" "${args[@]}" \
    -H 'Content-Type: application/json' --data-binary "@$4"
}

# ---- roost agent run handles a signed delivery at once: woken by roostd's ping ----
# The agent has no public address: it holds an SSE stream out to roostd and pulls when pinged. Its
# safety resync is an hour away, so handling the delivery at all (the wait below is generous, for
# a loaded machine) shows the ping woke it; the time from the 200 is printed, not asserted (the
# issue's "within a second" holds on an idle machine; measured, never a test's pass or fail).
echo '{"action":"opened","issue":{"number":7}}' >"$dir/issue.json"
"$roost" agent run --agent worker --state-dir "$dir/agent-state" --resync 1h \
  --exec "cat >>'$dir/handled.jsonl'; echo >>'$dir/handled.jsonl'" >"$dir/agent.log" 2>&1 &
client_pid=$!
streaming() { "$roost" agent status --state-dir "$dir/agent-state" 2>/dev/null | jq -e '.connection == "streaming"' >/dev/null; }
wait_until 20 streaming
check "roost agent run is connected (streaming)" streaming
code=$(deliver "$sid" github "$secret" "$dir/issue.json" gh-delivery-1)
t0=$(date +%s%N) # from the 200, which roostd gives after COMMIT
check "the signed GitHub delivery is accepted ($code)" test "$code" = 200
wait_until 60 grep -qs '"number":7' "$dir/handled.jsonl"
t1ms=$((($(date +%s%N) - t0) / 1000000))
check "roost agent run handled it, woken by the ping (${t1ms} ms after the 200)" \
  grep -q '"delivery_id":"gh-delivery-1"' "$dir/handled.jsonl"
check "it was streaming all along (the ping's path, not a poll)" streaming
echo "roost agent run handled the delivery ${t1ms} ms after its 200 (load $(cut -d' ' -f1 /proc/loadavg))"
kill "$client_pid" 2>/dev/null && wait "$client_pid" 2>/dev/null
client_pid=

check "admin sources receipts shows the accepted delivery" \
  sh -c "'$roost' admin sources receipts '$sid' -o json | jq -e '.receipts[0].outcome == \"accepted\" and .receipts[0].delivery_id == \"gh-delivery-1\"'"
"$roost" admin sources rotate "$sid" --overlap 1h >"$dir/rot.json"
check "admin sources rotate prints the new secret once" \
  jq -e --arg old "$secret" '.secret != $old and .previous_secret_valid_until != null' "$dir/rot.json"

# ---- SIGKILL while deliveries are in flight; the sender retries each until a 2xx ----
n=40
for i in $(seq 1 $n); do echo "{\"n\":$i}" >"$dir/b$i.json"; done
: >"$dir/acked"
sender() { # retries one delivery until it gets a 2xx, like every webhook sender
  local i=$1 code
  for _ in $(seq 1 600); do
    code=$(deliver "$sid" github "$secret" "$dir/b$i.json" "kill-$i" 2>/dev/null)
    if [ "$code" = 200 ]; then
      echo "$i" >>"$dir/acked"
      return 0
    fi
    sleep 0.05
  done
  return 1
}
senders=()
for i in $(seq 1 $n); do
  sender "$i" &
  senders+=($!)
done
wait_until 20 test -s "$dir/acked"
kill -9 "$roostd_pid"
wait "$roostd_pid" 2>/dev/null
acked_at_kill=$(sort -u "$dir/acked" | wc -l)
# Back on the same port, where the senders keep retrying.
port=${url##*:}
rm -f "$dir/ready"
"$roostd" --data-dir "$dir/data" --listen "127.0.0.1:$port" --ready-file "$dir/ready" \
  --set store.synchronous=full --set ingest.rate_per_s=20 >>"$dir/roostd.log" 2>&1 &
roostd_pid=$!
wait_until 15 test -s "$dir/ready" || abort "roostd did not restart on port $port: $(tail -5 "$dir/roostd.log")"
wait "${senders[@]}"
check "every sender got its 2xx eventually ($(sort -u "$dir/acked" | wc -l)/$n)" test "$(sort -u "$dir/acked" | wc -l)" -eq "$n"
"$roost" inbox read --agent worker --limit 1000 >"$dir/inbox.json"
for i in $(seq 1 $n); do
  c=$(jq --arg d "kill-$i" '[.events[] | select(.payload.delivery_id == $d)] | length' "$dir/inbox.json")
  [ "$c" = 1 ] || echo "kill-$i: $c events" >>"$dir/bad"
done
check "each of the $n deliveries is exactly one event (a 2xx before the kill: $acked_at_kill)" test ! -s "$dir/bad"
[ -s "$dir/bad" ] && cat "$dir/bad" >&2

"$roost" admin sources rm "$sid" >/dev/null
check "admin sources rm: its URL is 404 now" \
  test "$(curl -s -o /dev/null -w '%{http_code}' -X POST "$url/ingest/$sid" -d '{}')" = 404

roostd_stop
check "roostd exits 0 ($roostd_rc)" test "$roostd_rc" = 0
summary

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Nodes that sign webhook deliveries with different keys, each publishing the other's through
# webhooks.extra_keys_file (issue 33, rough edge 2): a receiver holding the key set of either
# node verifies the deliveries of both. `webhooks_key_set.sh ROOSTD ROOST_CLI MYSQL_URL` (the URL
# of the ctest fixture's server; this test makes a database of its own).
#   key A signs on node 1 and node 2 publishes it as an extra key (a private key PEM);
#   key B signs on nodes 2 and 3, node 1 publishes it (a public key PEM).
# Phase 1: only node 1 delivers (node 2 runs without a dispatcher); receiver R1 checks RFC 9421
# signatures with node 1's key set, R2 with node 2's (npm http-message-signatures): every
# delivery, signed with A, verifies at both. Phase 2: node 1 stops, node 3 (key B) delivers: both
# receivers, with the key sets they fetched before, verify the B-signed deliveries. Which node
# delivers is fixed by which dispatchers run, never by timing. Ends with "N passed, N failed".
set -uo pipefail

roostd=${1:?roostd binary}
roost=${2:?roost binary}
base_url=${3:?MariaDB URL}

. "$(dirname "$0")/../harness/preamble.sh" webhooks-keyset
need openssl curl node jq mariadb
js_dir=$(cd "$(dirname "$0")/../js" && pwd)
n1_pid=
n2_pid=
n3_pid=
rx_pids=
kill_all() { for p in $n1_pid $n2_pid $n3_pid $rx_pids; do kill -9 "$p" 2>/dev/null; done; }
trap 'kill_all; preamble_cleanup' EXIT

# ---- a database of its own on the fixture's server ----
mysql_test_db "$base_url" wh_keyset

ossl() { openssl "$@" 2>>"$dir/openssl.log"; }
test_cert hook IP:127.0.0.1
check "openssl made the receiver's certificate" test -s "$dir/hook.pem"

# The two signing keys; node 1 gets B's public half only, node 2 A's private key file.
ossl genpkey -algorithm ed25519 -out "$dir/a.pem" && ossl genpkey -algorithm ed25519 -out "$dir/b.pem" &&
  ossl pkey -in "$dir/b.pem" -pubout -out "$dir/b.pub.pem" && chmod 600 "$dir/a.pem" "$dir/b.pem"
check "openssl made keys A and B" test -s "$dir/b.pub.pem"

# Every node has its own data dir with node 1's token key (one roostd identity for tokens).
# A delivery's timeout of a minute: the node.js receiver verifies every delivery with two
# libraries and answers in seconds on a loaded machine (under ASan beside a busy suite it took
# 8 s), and a timed-out delivery is retried, i.e. delivered twice, which these tests count.
node_start() { # node_start DATA_DIR [ROOSTD_ARGS...]
  local data=$1
  shift
  roostd_start "$roostd" "$data" --set "store.url=$store_url" \
    --set webhooks.allow_cidrs=127.0.0.1/32 --set "webhooks.ca_file=$dir/ca.pem" \
    --set webhooks.poll_ms=200 --set webhooks.retry_schedule_s=1 --set webhooks.jitter_pct=0 \
    --set webhooks.timeout_ms=60000 --set scavenger.interval_ms=200 --set tail.interval_ms=50 "$@"
}
node_copy() { # node_copy DATA_DIR: a data dir with node 1's token key
  mkdir -p "$1" && chmod 700 "$1" && cp -p "$dir/data1/token_ed25519.pem" "$1/"
}
node_start "$dir/data1" --set "webhooks.signing_key_file=$dir/a.pem" \
  --set "webhooks.extra_keys_file=$dir/b.pub.pem" || abort "node 1 did not start: $(cat "$dir/roostd.log")"
n1_pid=$roostd_pid
url1=$url
node_copy "$dir/data2" || abort "node 1 wrote no token key"
node_start "$dir/data2" --set webhooks.enabled=false --set "webhooks.signing_key_file=$dir/b.pem" \
  --set "webhooks.extra_keys_file=$dir/a.pem" || abort "node 2 did not start: $(cat "$dir/roostd.log")"
n2_pid=$roostd_pid
url2=$url

# ---- the key sets ----
curl -sS "$url1/api/v1/keys/server" >"$dir/jwks1" && curl -sS "$url2/api/v1/keys/server" >"$dir/jwks2"
kid_a=$(jq -r '.keys[0].kid' "$dir/jwks1")
kid_b=$(jq -r '.keys[0].kid' "$dir/jwks2")
check "node 1 signs with A, node 2 with B (different kids: $kid_a, $kid_b)" test "$kid_a" != "$kid_b"
check "node 1 publishes A then B" test "$(jq -c '[.keys[].kid]' "$dir/jwks1")" = "[\"$kid_a\",\"$kid_b\"]"
check "node 2 publishes B then A" test "$(jq -c '[.keys[].kid]' "$dir/jwks2")" = "[\"$kid_b\",\"$kid_a\"]"
check "only public members are published" \
  test "$(jq '[.keys[] | select(has("d"))] | length' "$dir/jwks1" "$dir/jwks2" | sort -u)" = 0
grep -q "webhook signing key.*kid=$kid_a published_keys=2" "$dir/roostd.log"
check "node 1 logs its signing kid and two published keys" test $? = 0

# ---- two receivers: R1 with node 1's key set, R2 with node 2's ----
secret="whsec_$(head -c 32 /dev/urandom | base64 -w0)"
for r in 1 2; do
  mkdir -p "$dir/rx$r"
  eval "jwks_url=\$url$r/api/v1/keys/server"
  node "$js_dir/webhook_receiver.cjs" "$dir/hook.pem" "$dir/hook.key" "$secret" \
    "$jwks_url" "$dir/rx$r" 2>"$dir/rx$r/stderr" &
  rx_pids="$rx_pids $!"
  wait_until 10 test -s "$dir/rx$r/port" || abort "receiver $r did not start"
  touch "$dir/rx$r/log"
done
tok=$("$roost" token mint --data-dir "$dir/data1" --tenant t1 \
  --scope 'agent:*:consume agent:*:publish tenant:admin')
register() { # register NODE_URL AGENT RECEIVER
  curl -sS -o "$dir/out" -w '%{http_code}' -H "Authorization: Bearer $tok" \
    -H 'Content-Type: application/json' \
    -d "{\"url\":\"https://127.0.0.1:$(cat "$dir/rx$3/port")/ok\",\"secret\":\"$secret\"}" \
    "$1/api/v1/agents/$2/callbacks"
}
c=$(register "$url1" k.one 1)
check "R1's endpoint registered on node 1 ($c)" test "$c" = 201
c=$(register "$url2" k.two 2)
check "R2's endpoint registered on node 2 ($c)" test "$c" = 201

publish() { # publish NODE_URL TAG: five events to each agent
  local events='{"events":[' i
  for i in 1 2 3 4 5; do
    events="$events{\"recipients\":[\"k.one\",\"k.two\"],\"payload\":{\"tag\":\"$2\",\"i\":$i}},"
  done
  events="${events%,}]}"
  curl -sS -o "$dir/pub" -w '%{http_code}' -H "Authorization: Bearer $tok" \
    -H 'Content-Type: application/json' -d "$events" "$1/api/v1/events"
}
# delivered R TAG: deliveries of TAG at receiver R; verified R TAG KID: those whose RFC 9421
# signature verified, made with KID.
delivered() { jq -c "select(.type == null and .payload.tag == \"$2\")" "$dir/rx$1/log" | wc -l; }
verified() {
  jq -c "select(.type == null and .payload.tag == \"$2\" and .sig and .sw and .kid == \"$3\")" \
    "$dir/rx$1/log" | wc -l
}
five() { [ "$(delivered 1 "$1")" -ge 5 ] && [ "$(delivered 2 "$1")" -ge 5 ]; }

# ---- phase 1: node 1 delivers, signed with A ----
c=$(publish "$url2" p1)
check "phase 1: ten events published through node 2 ($c)" test "$c" = 201
check "phase 1: both receivers got their five" wait_until 120 five p1
for r in 1 2; do
  check "phase 1: R$r verified every delivery, signed with A ($(verified $r p1 "$kid_a") of $(delivered $r p1))" \
    test "$(verified $r p1 "$kid_a")" = "$(delivered $r p1)"
done

# ---- phase 2: node 1 stops; node 3 (key B) delivers ----
roostd_pid=$n1_pid
n1_pid=
roostd_stop
check "node 1 exits 0 (got $roostd_rc)" test "$roostd_rc" = 0
node_copy "$dir/data3" || abort "cannot make node 3's data dir"
node_start "$dir/data3" --set "webhooks.signing_key_file=$dir/b.pem" \
  --set "webhooks.extra_keys_file=$dir/a.pem" || abort "node 3 did not start: $(cat "$dir/roostd.log")"
n3_pid=$roostd_pid
c=$(publish "$url2" p2)
check "phase 2: ten events published through node 2 ($c)" test "$c" = 201
check "phase 2: both receivers got their five" wait_until 120 five p2
for r in 1 2; do
  check "phase 2: R$r verified every delivery, signed with B ($(verified $r p2 "$kid_b") of $(delivered $r p2))" \
    test "$(verified $r p2 "$kid_b")" = "$(delivered $r p2)"
done

# ---- a broken extra keys file stops the start with a precise message ----
printf 'not a key\n' >"$dir/junk.pem"
node_copy "$dir/data4"
"$roostd" --data-dir "$dir/data4" --listen 127.0.0.1:0 --set "store.url=$store_url" \
  --set "webhooks.extra_keys_file=$dir/junk.pem" >"$dir/junk.log" 2>&1
rc=$?
check "a file without a PEM key: roostd refuses to start (rc $rc)" test "$rc" != 0
check "and says why" grep -q "extra_keys_file: .*no PEM key" "$dir/junk.log"

for n in 3 2; do
  eval "roostd_pid=\$n${n}_pid"
  eval "n${n}_pid="
  roostd_stop
  check "node $n exits 0 (got $roostd_rc)" test "$roostd_rc" = 0
done
summary

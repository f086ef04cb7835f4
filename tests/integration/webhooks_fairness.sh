#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# One tenant's webhooks never take what another's need (issue 33): `webhooks_fairness.sh ROOSTD
# ROOST_CLI`. A local HTTPS receiver (tests/js/webhook_receiver.cjs) whose /hang path never
# answers a delivery and whose /hangverify path never answers at all.
# 1. Delivery slots: with webhooks.max_total_in_flight=8 a tenant has 2 (a quarter); tenant A's
#    four hanging endpoints with four events each hold exactly 2, and tenant B's delivery arrives
#    while they hang (the deliveries' timeout is 120 s: without the share A would hold all 8).
# 2. Verifications: tenant A's two unanswered challenges reach webhooks.max_verifications_per_tenant
#    (2): A's third registration is 429 with Retry-After, and B's registration is 201 meanwhile.
# 3. Registration rate: tenant C registering in a loop meets 429 (webhooks.registrations_per_min
#    = 6, bursts of 6); twenty registrations would need over two minutes to never meet it.
# 4. Adaptive timeout: with webhooks.timeout_ms=2000, an endpoint's delivery that timed out is
#    followed by one with a 1000 ms timeout (the roostd log's attempt line says timeout_ms).
# Ends with "N passed, N failed".
set -uo pipefail

roostd=${1:?roostd binary}
roost=${2:?roost binary}

. "$(dirname "$0")/../harness/preamble.sh" webhooks-fair
need openssl curl node jq

test_cert hook IP:127.0.0.1
check "openssl made the receiver's certificate" test -s "$dir/hook.pem"

start() { # start TIMEOUT_MS
  roostd_start "$roostd" "$dir/data" --set store.synchronous=normal \
    --set webhooks.allow_cidrs=127.0.0.1/32 --set "webhooks.ca_file=$dir/ca.pem" \
    --set webhooks.poll_ms=600000 --set webhooks.retry_schedule_s=1,1,1,1 \
    --set webhooks.jitter_pct=0 --set "webhooks.timeout_ms=$1" \
    --set webhooks.verify_timeout_ms=120000 --set webhooks.max_in_flight=4 \
    --set webhooks.max_total_in_flight=8 --set webhooks.max_verifications_per_tenant=2 \
    --set webhooks.registrations_per_min=6 --set scavenger.interval_ms=100
}
start 120000 || abort "roostd did not start: $(cat "$dir/roostd.log")"

webhook_receiver_start

mint() { "$roost" token mint --data-dir "$dir/data" --tenant "$1" \
  --scope 'agent:*:consume agent:*:publish agent:*:read tenant:admin'; }
tok_a=$(mint ta)
tok_b=$(mint tb)
tok_c=$(mint tc)
check "tokens minted" test -n "$tok_a" -a -n "$tok_b" -a -n "$tok_c"

# api TOKEN METHOD PATH [BODY]: the body to $dir/out, the headers to $dir/hdr, the status out.
api() {
  curl -sS --max-time 30 -o "$dir/out" -D "$dir/hdr" -w '%{http_code}' -X "$2" \
    -H "Authorization: Bearer $1" -H 'Content-Type: application/json' ${4:+-d "$4"} "$url$3"
}
register() { # register TOKEN AGENT PATH: the status
  api "$1" POST "/api/v1/agents/$2/callbacks" "{\"url\":\"$hook$3\",\"secret\":\"$secret\"}"
}
publish() { # publish TOKEN AGENT: prints the event id
  api "$1" POST /api/v1/events "{\"recipients\":[\"$2\"],\"payload\":{\"n\":1}}" >/dev/null
  jq -r '.events[0].event_id // .event_id' "$dir/out"
}
rx_count() { jq -c "select($1)" "$dir/rx/log" | wc -l; }
rx_eq() { [ "$(rx_count "$2")" -eq "$1" ]; }
rx_ge() { [ "$(rx_count "$2")" -ge "$1" ]; }
retry_after() { tr -d '\r' <"$dir/hdr" | awk -F': ' 'tolower($1) == "retry-after" { print $2 }'; }

# ---- 1. delivery slots: A's hanging endpoints hold A's share, B's delivery arrives ----
for i in 1 2 3 4; do
  check "A's hanging endpoint $i registered" test "$(register "$tok_a" "fa.h$i" /hang)" = 201
done
for i in 1 2 3 4; do
  for j in 1 2 3 4; do publish "$tok_a" "fa.h$i" >/dev/null; done
done
check "A's deliveries hang in its share of the slots (2 of 8)" \
  wait_until 30 rx_ge 2 '.path == "/hang" and .type == null'
check "B's endpoint registered" test "$(register "$tok_b" fb.ok /ok)" = 201
eb=$(publish "$tok_b" fb.ok)
check "B's delivery arrives while A's hang" wait_until 60 rx_eq 1 ".id == \"$eb\""
check "A never held more than its share (2 hanging deliveries)" \
  rx_eq 2 '.path == "/hang" and .type == null'

# ---- 2. verifications: A's unanswered challenges do not refuse B ----
for i in 1 2; do
  curl -sS --max-time 200 -o /dev/null -X POST -H "Authorization: Bearer $tok_a" \
    -H 'Content-Type: application/json' \
    -d "{\"url\":\"$hook/hangverify\",\"secret\":\"$secret\"}" \
    "$url/api/v1/agents/fa.v$i/callbacks" >/dev/null 2>&1 &
done
check "A's two challenges are unanswered" \
  wait_until 30 rx_ge 2 '.path == "/hangverify" and .type == "endpoint.verification"'
c=$(register "$tok_a" fa.v3 /ok)
check "A's third registration is 429 ($c)" test "$c" = 429
check "naming webhooks.max_verifications_per_tenant" \
  jq -e '.error.code == "too_many_requests" and (.error.message | test("max_verifications_per_tenant"))' "$dir/out"
ra=$(retry_after)
check "with a Retry-After ($ra)" test "${ra:-0}" -ge 1
c=$(register "$tok_b" fb.ok2 /ok)
check "B's registration meanwhile is 201 ($c)" test "$c" = 201

# ---- 3. the registration rate of a tenant ----
c=0
for i in $(seq 1 20); do
  c=$(register "$tok_c" "fc.r$i" /ok)
  [ "$c" = 201 ] || break
done
check "C registering in a loop meets 429 ($c after $i)" test "$c" = 429 -a "$i" -ge 2
check "naming webhooks.registrations_per_min" \
  jq -e '.error.message | test("registrations_per_min")' "$dir/out"

# ---- 4. a timed-out endpoint gets a shorter timeout ----
# A's challenges still hang (120 s): roostd would wait for them at a SIGTERM.
kill -9 "$roostd_pid"
wait "$roostd_pid" 2>/dev/null
roostd_pid=
start 2000 || abort "roostd did not restart: $(cat "$dir/roostd.log")"
check "D's hanging endpoint registered" test "$(register "$(mint td)" fd.h /hang)" = 201
ed=$(publish "$(mint td)" fd.h)
check "its first attempt timed out after 2000 ms" \
  wait_until 60 grep -q "event=$ed attempt=1 .*class=timeout .*timeout_ms=2000 " "$dir/roostd.log"
check "its second attempt had 1000 ms" \
  wait_until 60 grep -q "event=$ed attempt=2 .*class=timeout .*timeout_ms=1000 " "$dir/roostd.log"

summary

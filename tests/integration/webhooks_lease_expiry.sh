#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A webhook delivery whose lease runs out (roostd SIGKILLed mid-delivery) counts as one attempt of
# webhooks.retry_schedule_s, never of claim.max_attempts (issue 33's fault finding):
# `webhooks_lease_expiry.sh ROOSTD ROOST_CLI`. roostd runs with claim.max_attempts=5 (the
# default) and a schedule of seven 1 s delays (eight attempts). Against the local HTTPS receiver
# (tests/js/webhook_receiver.cjs, /stall/N: 500 to an event's first N - 1 deliveries, no answer to
# the Nth, 200 after):
#  * event A stalls at its 5th attempt, roostd is killed then restarted: once the lease has run
#    out the scavenger returns A to pending (it once quarantined it: 5 attempts >= 5), and its 6th
#    attempt is delivered and acked;
#  * event B stalls at its 8th attempt, the last of the schedule: the scavenger quarantines it.
# Ends with "N passed, N failed".
set -uo pipefail

roostd=${1:?roostd binary}
roost=${2:?roost binary}

. "$(dirname "$0")/../harness/preamble.sh" wh-lease
need openssl curl node jq
js_dir=$(cd "$(dirname "$0")/../js" && pwd)

# ---- a test CA and a certificate for 127.0.0.1 ----
test_cert hook IP:127.0.0.1
check "openssl made the receiver's certificate" test -s "$dir/hook.pem"

# A stalled delivery times out after 20 s (its lease: 23 s): far longer than the test takes to
# kill roostd once the receiver has logged the stalled request, however busy the machine.
start() {
  roostd_start "$roostd" "$dir/data" --set store.synchronous=normal \
    --set webhooks.allow_cidrs=127.0.0.1/32 --set "webhooks.ca_file=$dir/ca.pem" \
    --set webhooks.retry_schedule_s=1,1,1,1,1,1,1 --set webhooks.jitter_pct=0 \
    --set webhooks.timeout_ms=20000 --set claim.max_attempts=5 --set scavenger.interval_ms=100
}
start || abort "roostd did not start: $(cat "$dir/roostd.log")"

secret="whsec_$(head -c 32 /dev/urandom | base64 -w0)"
mkdir -p "$dir/rx"
touch "$dir/rx/log"
node "$js_dir/webhook_receiver.cjs" "$dir/hook.pem" "$dir/hook.key" "$secret" \
  "$url/api/v1/keys/server" "$dir/rx" 2>"$dir/rx/stderr" &
client_pid=$!
wait_until 30 test -s "$dir/rx/port" || abort "the receiver did not start: $(cat "$dir/rx/stderr")"
hook="https://127.0.0.1:$(cat "$dir/rx/port")"

tok=$("$roost" token mint --data-dir "$dir/data" --tenant t1 \
  --scope 'agent:*:consume agent:*:publish agent:*:read tenant:admin')
check "token minted" test -n "$tok"

api() { # api METHOD PATH [BODY]: the body to $dir/out, the status to stdout
  curl -sS --max-time 30 -o "$dir/out" -w '%{http_code}' -X "$1" -H "Authorization: Bearer $tok" \
    -H 'Content-Type: application/json' ${3:+-d "$3"} "$url$2"
}
register() { # register AGENT PATH: prints the endpoint id (empty on failure)
  local c
  c=$(api POST "/api/v1/agents/$1/callbacks" "{\"url\":\"$hook$2\",\"secret\":\"$secret\"}")
  [ "$c" = 201 ] && jq -r .endpoint_id "$dir/out"
}
publish() { # publish AGENT: prints the event id
  api POST /api/v1/events "{\"recipients\":[\"$1\"],\"payload\":{\"n\":1}}" >/dev/null
  jq -r '.events[0].event_id // .event_id' "$dir/out"
}
rx_count() { jq -c "select($1)" "$dir/rx/log" | wc -l; } # receiver log lines matching
rx_eq() { [ "$(rx_count "$2")" -eq "$1" ]; }              # rx_eq N JQ_FILTER
status_is() { # status_is EVENT_ID STATUS: the event's status as the admin API shows it
  [ "$(curl -sS --max-time 10 -H "Authorization: Bearer $tok" "$url/api/v1/admin/quarantine/$1" |
    jq -r ".status // .error.status")" = "$2" ]
}

ep_a=$(register wh.a /stall/5)
ep_b=$(register wh.b /stall/8)
check "both endpoints registered" test -n "$ep_a" -a -n "$ep_b"
ea=$(publish wh.a)
eb=$(publish wh.b)
check "A: four failed attempts, then the fifth stalls" \
  wait_until 120 rx_eq 1 ".id == \"$ea\" and .status == 0"
check "B: seven failed attempts, then the eighth stalls" \
  wait_until 120 rx_eq 1 ".id == \"$eb\" and .status == 0"
check "A was delivered 5 times so far" test "$(rx_count ".id == \"$ea\"")" = 5
check "B was delivered 8 times so far" test "$(rx_count ".id == \"$eb\"")" = 8

# ---- roostd dies mid-delivery, with both leases held ----
kill -9 "$roostd_pid"
wait "$roostd_pid" 2>/dev/null
roostd_pid=
start || abort "roostd did not restart: $(cat "$dir/roostd.log")"
check "A: delivered a 6th time once its lease ran out" wait_until 120 rx_eq 6 ".id == \"$ea\""
check "A: and completed" wait_until 30 status_is "$ea" completed
check "B: quarantined by the scavenger, its schedule spent" wait_until 120 status_is "$eb" quarantined
check "B: never delivered a 9th time" test "$(rx_count ".id == \"$eb\"")" = 8
check "the scavenger quarantined exactly one event" \
  test "$(grep -o 'scavenger.*quarantined=[0-9]*' "$dir/roostd.log" |
    sed 's/.*quarantined=//' | awk '{ s += $1 } END { print s + 0 }')" = 1

roostd_stop
check "roostd exits 0 on SIGTERM (got $roostd_rc)" test "$roostd_rc" = 0
summary

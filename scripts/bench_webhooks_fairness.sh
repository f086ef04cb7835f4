#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# One tenant's hanging endpoints beside another's deliveries (issue 33; doc/WEBHOOKS.md, never
# gating): bench_webhooks_fairness.sh ROOSTD ROOST [N_HANG] [ROUNDS]
# On a local HTTPS receiver (tests/js/webhook_receiver.cjs, whose /hang path never answers a
# delivery), tenant B's deliveries are timed one after another (publish sent → received) while
# the node is idle, then while tenant A's N_HANG endpoints (default 64) with four events each want
# every delivery slot. The node runs at the defaults but for the registration limits, so A can
# register that many; WH_EXTRA adds roostd arguments (e.g. "--set
# webhooks.max_tenant_in_flight=256" to see the node without a tenant's share). Prints B's
# median, p90 and maximum both ways, and how many of A's deliveries hung.
set -uo pipefail

roostd=${1:?roostd binary}
roost=${2:?roost binary}
nhang=${3:-64}
rounds=${4:-20}
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/tests/harness/preamble.sh" bench-whfair
need openssl curl node jq

test_cert hook IP:127.0.0.1
# shellcheck disable=SC2086
roostd_start "$roostd" "$dir/data" --set webhooks.allow_cidrs=127.0.0.1/32 \
  --set "webhooks.ca_file=$dir/ca.pem" --set webhooks.registrations_per_min=100000 \
  --set webhooks.max_verifications_per_tenant=32 ${WH_EXTRA:-} ||
  abort "roostd did not start: $(cat "$dir/roostd.log")"
webhook_receiver_start

mint() { "$roost" token mint --data-dir "$dir/data" --tenant "$1" \
  --scope 'agent:*:consume agent:*:publish agent:*:read tenant:admin'; }
tok_a=$(mint ta)
tok_b=$(mint tb)
api() { # api TOKEN METHOD PATH [BODY]: the body to $dir/out, the status out
  curl -sS --max-time 30 -o "$dir/out" -w '%{http_code}' -X "$2" \
    -H "Authorization: Bearer $1" -H 'Content-Type: application/json' ${4:+-d "$4"} "$url$3"
}
register() { api "$1" POST "/api/v1/agents/$2/callbacks" "{\"url\":\"$hook$3\",\"secret\":\"$secret\"}"; }
publish() { # publish TOKEN AGENT: prints the event id
  api "$1" POST /api/v1/events "{\"recipients\":[\"$2\"],\"payload\":{\"n\":1}}" >/dev/null
  jq -r '.events[0].event_id // .event_id' "$dir/out"
}
rx_count() { jq -c "select($1)" "$dir/rx/log" | wc -l; }
measure() { # measure LABEL: B's deliveries one after another
  local out=$dir/lat.$1 i t0 e at
  : >"$out"
  for i in $(seq 1 "$rounds"); do
    t0=$(date +%s%3N)
    e=$(publish "$tok_b" fb.ok)
    if ! wait_until 60 test "$(rx_count ".id == \"$e\"")" -eq 1; then
      echo "$1: event $e not delivered within 60 s" >&2
      continue
    fi
    at=$(jq -r "select(.id == \"$e\") | .at" "$dir/rx/log")
    echo $((at - t0)) >>"$out"
  done
  sort -n "$out" | awk -v l="$1" '{ a[NR] = $1 } END {
    printf "B %s: %d deliveries, median %d ms, p90 %d ms, max %d ms\n",
      l, NR, a[int((NR + 1) / 2)], a[int(NR * 0.9 + 0.5)], a[NR] }'
}

[ "$(register "$tok_b" fb.ok /ok)" = 201 ] || abort "B's endpoint was not registered"
measure idle
for i in $(seq 1 "$nhang"); do
  [ "$(register "$tok_a" "fa.h$i" /hang)" = 201 ] || abort "A's endpoint $i was not registered"
done
for i in $(seq 1 "$nhang"); do
  for j in 1 2 3 4; do publish "$tok_a" "fa.h$i" >/dev/null; done
done
hanging() { echo $(($(rx_count '.path == "/hang" and .type == null') - $(wc -l <"$dir/rx/closed"))); }
wait_until 60 test "$(hanging)" -ge 1 || abort "none of A's deliveries arrived"
sleep 2 # let the dispatcher hand out every slot A may take
echo "A's deliveries hanging: $(hanging)"
measure "beside A"

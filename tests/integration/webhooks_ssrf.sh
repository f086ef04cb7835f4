#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The webhook destination filter against the real roostd (issue 15): `webhooks_ssrf.sh ROOSTD
# ROOST_CLI`. Runs itself inside a user, mount and network namespace (`unshare -rmn`) with only
# loopback, where every address of tests/data/ssrf/ip-cases.tsv that Linux accepts is put on lo
# and one TCP listener (dual stack, one port) records each connection's local address:
# * every `block` row is refused at registration with 400 destination_forbidden, and nothing
#   ever connected to it; every `allow` row that could be put on lo was connected to (the
#   verification ran, and failed: the listener speaks no TLS), so the listener would have seen
#   a blocked one;
# * DNS rebinding: /etc/hosts (bind-mounted) names rebind.test 127.0.0.1, allowed by
#   webhooks.allow_cidrs=127.0.0.1/32; it registers and verifies; then the name moves to
#   127.0.0.2 (blocked) and a delivery is refused at connect time (CURLOPT_OPENSOCKETFUNCTION):
#   the attempt log says destination_forbidden and the receiver, listening on every address,
#   never sees the event. Ends with "N passed, N failed".
set -uo pipefail

roostd=${1:?roostd binary}
roost=${2:?roost binary}
if [ -z "${ROOST_SSRF_NETNS:-}" ]; then
  command -v unshare >/dev/null || { echo "missing: unshare (util-linux)"; echo "0 passed, 1 failed"; exit 1; }
  ROOST_SSRF_NETNS=1 exec unshare -rmn "$0" "$@"
fi

. "$(dirname "$0")/../harness/preamble.sh" webhooks-ssrf
need openssl curl node jq ip mount
js_dir=$(cd "$(dirname "$0")/../js" && pwd)
cases="$(dirname "$0")/../data/ssrf/ip-cases.tsv"
ip link set lo up || abort "cannot bring lo up in the namespace"

# ---- the listener on every case address ----
grep -v '^#' "$cases" | cut -f1,2 >"$dir/cases"
while IFS=$'\t' read -r addr expect; do
  case $addr in *:*) ip -6 addr add "$addr/128" dev lo 2>/dev/null ;; *) ip addr add "$addr/32" dev lo 2>/dev/null ;; esac
done <"$dir/cases"
node -e '
  const net = require("net"); const fs = require("fs");
  const srv = net.createServer((s) => { fs.appendFileSync(process.argv[1], s.localAddress + "\n"); s.destroy(); });
  srv.listen({ port: 0, host: "::", ipv6Only: false }, () => fs.writeFileSync(process.argv[2], String(srv.address().port)));
' "$dir/connections" "$dir/lport" &
client_pid=$!
wait_until 10 test -s "$dir/lport" || abort "the listener did not start"
lport=$(cat "$dir/lport")
touch "$dir/connections"
# A positive control: the listener takes connections on a case address put on lo.
curl -s --max-time 5 -o /dev/null "http://8.8.8.8:$lport/"
check "the listener takes connections on 8.8.8.8 inside the namespace" \
  grep -q '8.8.8.8' "$dir/connections"
: >"$dir/connections"

# The matrix registers 57 times in a row: no per-tenant registration rate here.
roostd_start "$roostd" "$dir/data" --set store.synchronous=normal --set webhooks.poll_ms=50 \
  --set webhooks.registrations_per_min=0 \
  --set webhooks.verify_timeout_ms=2000 --set webhooks.connect_timeout_ms=1000 ||
  abort "roostd did not start: $(cat "$dir/roostd.log")"
tok=$("$roost" token mint --data-dir "$dir/data" --tenant t1 \
  --scope 'agent:*:consume agent:*:publish agent:*:read tenant:admin')
secret="whsec_$(head -c 32 /dev/urandom | base64 -w0)"

api() { # api METHOD PATH [BODY]: the body to $dir/out, the status to stdout
  curl -sS --max-time 30 -o "$dir/out" -w '%{http_code}' -X "$1" -H "Authorization: Bearer $tok" \
    -H 'Content-Type: application/json' ${3:+-d "$3"} "$url$2"
}

# ---- the matrix ----
blocked_ok=0
blocked_bad=
allowed=0
while IFS=$'\t' read -r addr expect; do
  case $addr in *:*) host="[$addr]" ;; *) host=$addr ;; esac
  c=$(api POST /api/v1/agents/m.a/callbacks "{\"url\":\"https://$host:$lport/hook\",\"secret\":\"$secret\"}")
  code=$(jq -r '.error.code // empty' "$dir/out")
  if [ "$expect" = block ]; then
    if [ "$c" = 400 ] && [ "$code" = destination_forbidden ]; then
      blocked_ok=$((blocked_ok + 1))
    else
      blocked_bad="$blocked_bad $addr($c:$code)"
    fi
  else
    allowed=$((allowed + 1))
    check "allowed $addr is not refused as a destination ($c $code)" test "$code" != destination_forbidden
  fi
done <"$dir/cases"
n_block=$(grep -c $'\tblock$' "$dir/cases")
check "every block row answered 400 destination_forbidden ($blocked_ok of $n_block;$blocked_bad)" \
  test "$blocked_ok" = "$n_block"
check "the table has its 57 rows" test "$(wc -l <"$dir/cases")" = 57
# Nothing connected to a blocked address: every connection went to an allowed one.
unexpected=
while read -r local; do
  a=${local#::ffff:}
  grep -q "^$a"$'\tallow' "$dir/cases" || grep -q "^$local"$'\tallow' "$dir/cases" ||
    unexpected="$unexpected $local"
done <"$dir/connections"
check "no connection reached a blocked address (${unexpected:-none})" test -z "$unexpected"
check "the allowed rows were connected to (the listener would have seen any)" \
  grep -q '8.8.8.8' "$dir/connections"

roostd_stop

# ---- DNS rebinding ----
echo "127.0.0.1 rebind.test" >"$dir/hosts"
mount --bind "$dir/hosts" /etc/hosts || abort "cannot bind-mount /etc/hosts"
check "rebind.test resolves to 127.0.0.1" sh -c "getent hosts rebind.test | grep -q 127.0.0.1"
test_cert hook DNS:rebind.test
check "openssl made the rebind.test certificate" test -s "$dir/hook.pem"
roostd_start "$roostd" "$dir/data" --set store.synchronous=normal --set webhooks.poll_ms=50 \
  --set webhooks.allow_cidrs=127.0.0.1/32 --set "webhooks.ca_file=$dir/ca.pem" \
  --set webhooks.retry_schedule_s=60 --set webhooks.timeout_ms=3000 ||
  abort "roostd did not restart: $(cat "$dir/roostd.log")"
kill "$client_pid" 2>/dev/null
wait "$client_pid" 2>/dev/null
mkdir -p "$dir/rx"
node "$js_dir/webhook_receiver.cjs" "$dir/hook.pem" "$dir/hook.key" "$secret" \
  "$url/api/v1/keys/server" "$dir/rx" 0.0.0.0 2>"$dir/rx/stderr" &
client_pid=$!
wait_until 10 test -s "$dir/rx/port" || abort "the receiver did not start"
touch "$dir/rx/log"
rport=$(cat "$dir/rx/port")
c=$(api POST /api/v1/agents/r.a/callbacks "{\"url\":\"https://rebind.test:$rport/ok\",\"secret\":\"$secret\"}")
check "rebind.test registers while it names 127.0.0.1 ($c)" test "$c" = 201
ep=$(jq -r .endpoint_id "$dir/out")
# In place (same inode): the bind mount shows the new content.
echo "127.0.0.2 rebind.test" >"$dir/hosts"
check "rebind.test now resolves to 127.0.0.2" sh -c "getent hosts rebind.test | grep -q 127.0.0.2"
c=$(api POST /api/v1/events '{"recipients":["r.a"],"payload":{"n":1}}')
ev=$(jq -r '.events[0].event_id // .event_id' "$dir/out")
refused() {
  [ "$(api GET "/api/v1/admin/endpoints/$ep/attempts")" = 200 ] &&
    jq -e '[.attempts[] | select(.error_class == "destination_forbidden" and .status_code == 0)] | length >= 1' "$dir/out" >/dev/null
}
check "the delivery was refused at connect time (attempt log)" wait_until 15 refused
check "the receiver, listening on every address, never saw the event" \
  test "$(jq -c "select(.id == \"$ev\")" "$dir/rx/log" | wc -l)" = 0

roostd_stop
check "roostd exits 0 on SIGTERM (got $roostd_rc)" test "$roostd_rc" = 0
summary

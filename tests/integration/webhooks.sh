#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Webhooks end to end (issue 15): `webhooks.sh ROOSTD ROOST_CLI`. A local HTTPS receiver
# (tests/js/webhook_receiver.cjs, certificate from a test CA made here) verifies every request
# with the npm standardwebhooks and http-message-signatures packages. roostd runs with short
# timers (retry schedule 1,1 s, no jitter) and webhooks.allow_cidrs=127.0.0.1/32, and with the
# dispatcher's fallback sweep (webhooks.poll_ms) at 10 minutes: every delivery here comes from a
# wake (a commit touching the agent) or from the sweep at start.
# Checks: registration refusals (https_required, destination_forbidden, invalid_secret, 422 on a
# wrong challenge answer, nothing stored), signed deliveries verified and acked, 500 retried on
# schedule then quarantined, replay (one event, or since a time) redelivers, 302 not followed and
# counted, 410 disables, a hanging endpoint does not delay another, SIGKILL mid-delivery then
# delivered after restart and acked once, the attempt log, per-endpoint metrics (and how
# metrics.tenant_labels, reloaded by SIGHUP, names them) and the CLI; an idle dispatcher with six
# endpoints makes (close to) no store call over 3 s, and an event published then still arrives
# within 30 s (the sweep would take 10 minutes).
# Deliveries get 30 s (webhooks.timeout_ms): the receiver is node.js, and on a busy machine under
# ASan it has answered in 8 s, which a short timeout turns into retries and wrong counts. Nothing
# here waits for a timeout but the hanging endpoint's (whose check is ordered, not timed) and the
# SIGKILL step's lease (timeout + 3 s).
# Ends with "N passed, N failed".
set -uo pipefail

roostd=${1:?roostd binary}
roost=${2:?roost binary}

. "$(dirname "$0")/../harness/preamble.sh" webhooks
need openssl curl node jq
js_dir=$(cd "$(dirname "$0")/../js" && pwd)

# ---- a test CA and a certificate for 127.0.0.1 ----
ossl() { openssl "$@" 2>>"$dir/openssl.log"; }
test_cert hook IP:127.0.0.1
check "openssl made the receiver's certificate" test -s "$dir/hook.pem"

# The signing key every node would share (webhooks.signing_key_file): every delivery below is
# verified against the JWK Set of /api/v1/keys/server, so they are signed with this key.
ossl genpkey -algorithm ed25519 -out "$dir/shared_signing.pem"
check "openssl made a shared signing key" test -s "$dir/shared_signing.pem"

# metrics.tenant_labels lives in the config file, so a SIGHUP can change it.
echo 'metrics.tenant_labels = top' >"$dir/roostd.conf"
start() {
  roostd_start "$roostd" "$dir/data" --config "$dir/roostd.conf" --set store.synchronous=normal \
    --set "webhooks.signing_key_file=$dir/shared_signing.pem" \
    --set webhooks.allow_cidrs=127.0.0.1/32 --set "webhooks.ca_file=$dir/ca.pem" \
    --set webhooks.poll_ms=600000 --set webhooks.retry_schedule_s=1,1 --set webhooks.jitter_pct=0 \
    --set webhooks.timeout_ms=30000 --set webhooks.connect_timeout_ms=30000 \
    --set scavenger.interval_ms=100
}
start || abort "roostd did not start: $(cat "$dir/roostd.log")"

webhook_receiver_start

tok=$("$roost" token mint --data-dir "$dir/data" --tenant t1 \
  --scope 'agent:*:consume agent:*:publish agent:*:read tenant:admin')
check "token minted" test -n "$tok"

# api METHOD PATH [BODY]: the body to $dir/out, the status to stdout.
api() {
  curl -sS --max-time 30 -o "$dir/out" -w '%{http_code}' -X "$1" -H "Authorization: Bearer $tok" \
    -H 'Content-Type: application/json' ${3:+-d "$3"} "$url$2"
}
code_is() { [ "$(jq -r .error.code "$dir/out")" = "$1" ]; }
register() { # register AGENT PATH: prints the endpoint id (empty on failure)
  local c
  c=$(api POST "/api/v1/agents/$1/callbacks" "{\"url\":\"$hook$2\",\"secret\":\"$secret\"}")
  [ "$c" = 201 ] && jq -r .endpoint_id "$dir/out"
}
publish() { # publish AGENT: prints the event id
  api POST /api/v1/events "{\"recipients\":[\"$1\"],\"payload\":{\"n\":1}}" >/dev/null
  jq -r '.events[0].event_id // .event_id' "$dir/out"
}
rx_count() { # rx_count JQ_FILTER: receiver log lines matching
  jq -c "select($1)" "$dir/rx/log" | wc -l
}
rx_eq() { [ "$(rx_count "$2")" -eq "$1" ]; } # rx_eq N JQ_FILTER
rx_ge() { [ "$(rx_count "$2")" -ge "$1" ]; } # rx_ge N JQ_FILTER
status_is() { # status_is EVENT_ID STATUS: the event's status as the admin API shows it
  [ "$(curl -sS --max-time 10 -H "Authorization: Bearer $tok" "$url/api/v1/admin/quarantine/$1" |
    jq -r ".status // .error.status")" = "$2" ]
}
out_is() { # out_is STATUS JQ_EXPR: the last api call answered STATUS and the expression holds
  [ "$c" = "$1" ] && jq -e "$2" "$dir/out" >/dev/null || { echo "got $c: $(head -c 600 "$dir/out")" >&2; false; }
}
get_ok() { # get_ok PATH JQ_EXPR: GET answers 200 and the expression holds
  [ "$(api GET "$1")" = 200 ] && jq -e "$2" "$dir/out" >/dev/null
}

# ---- registration refusals: nothing is stored ----
c=$(api POST /api/v1/agents/wh.a/callbacks "{\"url\":\"http://127.0.0.1:1/x\",\"secret\":\"$secret\"}")
check "http:// is refused with https_required ($c)" out_is 400 '.error.code == "https_required"'
c=$(api POST /api/v1/agents/wh.a/callbacks "{\"url\":\"https://169.254.169.254/x\",\"secret\":\"$secret\"}")
check "the metadata address is destination_forbidden ($c)" out_is 400 '.error.code == "destination_forbidden"'
c=$(api POST /api/v1/agents/wh.a/callbacks "{\"url\":\"https://127.0.0.2/x\",\"secret\":\"$secret\"}")
check "loopback outside allow_cidrs is destination_forbidden ($c)" test "$c" = 400
c=$(api POST /api/v1/agents/wh.a/callbacks "{\"url\":\"$hook/ok\",\"secret\":\"not-whsec\"}")
check "a secret not in whsec_ form is invalid_secret ($c)" out_is 400 '.error.code == "invalid_secret"'
c=$(api POST /api/v1/agents/wh.a/callbacks "{\"url\":\"$hook/badverify\",\"secret\":\"$secret\"}")
check "a wrong challenge answer is 422 endpoint_verification_failed ($c)" out_is 422 '.error.code == "endpoint_verification_failed"'
check "the challenge was signed (both libraries verified it)" \
  sh -c "jq -e -s '[.[] | select(.type == \"endpoint.verification\" and .sw and .sig)] | length >= 1' '$dir/rx/log' >/dev/null || { cat '$dir/rx/log' >&2; false; }"
c=$(api GET /api/v1/agents/wh.a/callbacks)
check "nothing was stored" out_is 200 '.endpoints | length == 0'

# ---- signed deliveries, verified by both libraries, acked ----
ep_ok=$(register wh.ok /ok)
check "endpoint registered (201)" test -n "$ep_ok"
check "a second endpoint for the agent is 409" test "$(api POST /api/v1/agents/wh.ok/callbacks "{\"url\":\"$hook/ok\",\"secret\":\"$secret\"}")" = 409
# An agent id longer than an event id is listed by its whole id (it was once cut to 30 bytes).
long=wh.an-agent-id-much-longer-than-an-event-id
ep_long=$(register $long /ok)
c=$(api GET "/api/v1/agents/$long/callbacks")
check "an agent with a long id lists its endpoint" \
  out_is 200 "(.endpoints | length) == 1 and .endpoints[0].endpoint_id == \"$ep_long\""
check "and deletes it" test "$(api DELETE "/api/v1/agents/$long/callbacks/$ep_long")" = 200
e1=$(publish wh.ok)
e2=$(publish wh.ok)
check "both deliveries arrived" wait_until 10 rx_ge 2 '.path == "/ok" and .type == null'
check "standardwebhooks verified every delivery" test "$(rx_count '.path == "/ok" and (.sw | not)')" = 0
check "http-message-signatures verified every delivery" test "$(rx_count '.path == "/ok" and (.sig | not)')" = 0
check "webhook-id is the event id" test "$(rx_count ".id == \"$e1\"")" = 1
check "the body is the event with its payload, without a lease token" \
  test "$(rx_count ".id == \"$e1\" and .event_id == \"$e1\" and .payload.n == 1 and (.lease | not)")" = 1
check "delivered events are completed" wait_until 10 status_is $e2 completed
c=$(api GET "/api/v1/admin/endpoints/$ep_ok/attempts")
check "the attempt log lists both, class ok" out_is 200 '[.attempts[] | select(.error_class == "ok" and .status_code == 200)] | length == 2'

# ---- an idle dispatcher waits for work: no store calls, and a publish still arrives at once ----
for i in 1 2 3 4 5; do
  check "idle endpoint $i registered" test -n "$(register wh.idle$i /ok)"
done
dispatch_calls() { # the dispatcher's store calls so far
  curl -sS --max-time 10 "$url/metrics" |
    awk '$1 == "roost_store_op_duration_seconds_count{op=\"webhook_dispatch\"}" { print $2 }'
}
settled() { # no dispatcher store call for 500 ms (the registrations' reloads are over)
  local a b
  a=$(dispatch_calls) && sleep 0.5 && b=$(dispatch_calls) && [ -n "$a" ] && [ "$a" = "$b" ]
}
check "the dispatcher settles after the registrations" wait_until 10 settled
calls0=$(dispatch_calls)
sleep 3 # the behaviour under test: three idle seconds
calls1=$(dispatch_calls)
check "an idle dispatcher with 6 endpoints made $((calls1 - calls0)) store calls in 3 s (<= 2)" \
  test $((calls1 - calls0)) -le 2
t0=$(date +%s%3N)
e_idle=$(publish wh.ok)
check "an event published to the idle dispatcher arrives (woken: the sweep is 10 min away)" wait_until 30 rx_eq 1 ".id == \"$e_idle\""
t1=$(jq -s "[.[] | select(.id == \"$e_idle\") | .at] | .[0] // 0" "$dir/rx/log")
echo "idle dispatcher: $((calls1 - calls0)) store calls in 3 s; publish to delivery $((t1 - t0)) ms"

# ---- 500: retried on the schedule (1 s, 1 s), then quarantined; replay redelivers ----
ep_flip=$(register wh.flip /flip)
check "flip endpoint registered" test -n "$ep_flip"
e3=$(publish wh.flip)
check "three attempts (first + two retries)" wait_until 15 rx_eq 3 ".id == \"$e3\""
check "the event is quarantined once the schedule is spent" wait_until 10 status_is $e3 quarantined
gaps=$(jq -s "[.[] | select(.id == \"$e3\") | .at] | [.[1] - .[0], .[2] - .[1]] | min" "$dir/rx/log")
check "retries waited the schedule (min gap ${gaps} ms >= 950)" test "$gaps" -ge 950
c=$(api GET "/api/v1/admin/endpoints/$ep_flip/attempts?event_id=$e3")
check "the attempt log shows three 500s" out_is 200 '[.attempts[] | select(.status_code == 500 and .error_class == "http_status" and .response_head == "boom")] | length == 3'
touch "$dir/rx/flip"
c=$(api POST "/api/v1/admin/endpoints/$ep_flip/replay" "{\"event_id\":\"$e3\"}")
check "replay accepted ($c)" out_is 200 '.replayed == 1'
check "replay redelivered and it was acked" wait_until 10 status_is $e3 completed
check "the fourth delivery verified" test "$(rx_count ".id == \"$e3\" and .status == 200 and .sw and .sig")" = 1

# ---- 302: not followed, counted as a failure ----
ep_redir=$(register wh.redir /redirect)
e4=$(publish wh.redir)
check "the redirect answered" wait_until 10 rx_ge 1 ".id == \"$e4\""
check "the attempt log counts it as redirect" wait_until 5 get_ok "/api/v1/admin/endpoints/$ep_redir/attempts" '[.attempts[] | select(.error_class == "redirect" and .status_code == 302)] | length >= 1'
check "the redirect was never followed" test "$(rx_count ".path == \"/ok\" and .id == \"$e4\"")" = 0
check "the redirected event is quarantined once the schedule is spent" wait_until 15 status_is "$e4" quarantined
c=$(api POST "/api/v1/admin/endpoints/$ep_redir/replay" '{"since":"2000-01-01T00:00:00Z"}')
check "replay since a time puts it back ($c)" out_is 200 '.replayed == 1'
check "and it is delivered again" wait_until 10 rx_ge 4 ".id == \"$e4\""
c=$(api POST "/api/v1/admin/endpoints/$ep_redir/replay" '{"since":"2999-01-01T00:00:00Z"}')
check "replay since a later time replays nothing" out_is 200 '.replayed == 0'

# ---- 410: the endpoint is disabled, the event goes back for the agent to pull ----
ep_gone=$(register wh.gone /gone)
e5=$(publish wh.gone)
check "410 disables the endpoint" wait_until 10 get_ok "/api/v1/admin/endpoints/$ep_gone" '.status == "disabled" and .disabled_reason == "gone"'
check "the event is pending again" wait_until 5 status_is $e5 pending
check "a disabled endpoint gets nothing more" test "$(rx_count ".id == \"$e5\"")" = 1
c=$(api POST "/api/v1/admin/endpoints/$ep_gone/enable" '{}')
check "an operator enables it again" out_is 200 '.status == "active"'
c=$(api POST "/api/v1/admin/endpoints/$ep_gone/disable" '{}')
check "and disables it" out_is 200 '.status == "disabled" and .disabled_reason == "operator"'

# ---- a hanging endpoint does not delay another ----
ep_hang=$(register wh.hang /hang)
for i in 1 2 3 4 5 6; do publish wh.hang >/dev/null; done
check "the hanging endpoint holds its deliveries" wait_until 30 rx_ge 4 '.path == "/hang" and .type == null'
e6=$(publish wh.ok)
check "another endpoint's delivery still arrives" wait_until 30 rx_eq 1 ".id == \"$e6\""
# Ordered, not timed: had it waited for a slot the hanging deliveries hold, it could only have
# come after one of them ended (roostd's 30 s timeout closing it), however busy the machine.
t1=$(jq -s "[.[] | select(.id == \"$e6\") | .at] | .[0]" "$dir/rx/log")
first_end=$(jq -s '[.[] | select(.path == "/hang") | .at] | min // empty' "$dir/rx/closed" 2>/dev/null)
check "while every hanging delivery was still open (arrived $t1, first hang ended ${first_end:-later})" \
  test -z "$first_end" -o "$t1" -lt "${first_end:-0}"

# ---- SIGKILL mid-delivery: delivered again after the restart, acked once ----
# /stall/1 never answers an event's first delivery and answers 200 from then on, so the kill
# always lands mid-delivery however slow the machine (a delivery answered after a delay could be
# acked before the kill).
ep_slow=$(register wh.slow /stall/1)
e7=$(publish wh.slow)
check "the delivery arrived and is held" wait_until 10 rx_eq 1 ".id == \"$e7\""
kill -9 "$roostd_pid"
wait "$roostd_pid" 2>/dev/null
roostd_pid=
start || abort "roostd did not restart: $(cat "$dir/roostd.log")"
# The killed node's lease (timeout_ms + 3 s = 33 s) must expire first.
check "delivered again after the restart (lease expired)" wait_until 90 rx_eq 2 ".id == \"$e7\""
check "then completed" wait_until 10 status_is $e7 completed
c=$(api GET "/api/v1/admin/endpoints/$ep_slow/attempts?event_id=$e7")
check "one attempt was logged and acked" out_is 200 '[.attempts[] | select(.error_class == "ok")] | length == 1'

# ---- listing, metrics, delete ----
c=$(api GET /api/v1/admin/endpoints)
check "the operator lists every endpoint, no secrets" out_is 200 '(.endpoints | length) == 11 and ([.endpoints[] | has("secret")] | any | not)'
curl -sS --max-time 10 -o "$dir/metrics" "$url/metrics"
check "per-endpoint metrics" grep -q "roost_webhook_attempts_total{tenant=\"t1\",endpoint=\"$ep_slow\"}" "$dir/metrics"
# metrics.tenant_labels: "on" keeps the tenant and folds its endpoints into endpoint="_other",
# "off" names neither (one sum), like the other series.
relabel() { # relabel MODE: rewrites the config, SIGHUP, waits for the reload, scrapes
  local before
  before=$(grep -c 'config reloaded' "$dir/roostd.log")
  echo "metrics.tenant_labels = $1" >"$dir/roostd.conf"
  kill -HUP "$roostd_pid"
  wait_until 10 eval '[ "$(grep -c "config reloaded" "$dir/roostd.log")" -gt "$before" ]' &&
    curl -sS --max-time 10 -o "$dir/metrics" "$url/metrics"
}
relabel on
check "tenant_labels=on: one series per tenant, endpoint=\"_other\"" \
  grep -q '^roost_webhook_attempts_total{tenant="t1",endpoint="_other"} [1-9]' "$dir/metrics"
check "tenant_labels=on: no endpoint id in the webhook series" \
  test "$(grep -c '^roost_webhook.*endpoint="ep_' "$dir/metrics")" = 0
check "tenant_labels=on: the latency histogram per tenant" \
  grep -q '^roost_webhook_latency_seconds_count{tenant="t1",endpoint="_other"} [1-9]' "$dir/metrics"
relabel off
check "tenant_labels=off: the webhook series are sums without labels" \
  grep -q '^roost_webhook_attempts_total [1-9]' "$dir/metrics"
check "tenant_labels=off: no tenant or endpoint in the webhook series" \
  test "$(grep -c '^roost_webhook.*\(tenant\|endpoint\)=' "$dir/metrics")" = 0
check "tenant_labels=off: the latency histogram without labels" \
  grep -q '^roost_webhook_latency_seconds_bucket{le="+Inf"} [1-9]' "$dir/metrics"
relabel top
check "tenant_labels=top: per endpoint again" \
  grep -q "^roost_webhook_attempts_total{tenant=\"t1\",endpoint=\"$ep_slow\"}" "$dir/metrics"
c=$(api DELETE "/api/v1/agents/wh.ok/callbacks/$ep_ok")
check "the agent deletes its endpoint" test "$c" = 200
c=$(api DELETE "/api/v1/agents/wh.ok/callbacks/$ep_ok")
check "a second delete is 404" out_is 404 '.error.code == "endpoint_not_found"'
c=$(api GET "/api/v1/admin/endpoints/no%20such%20id")
check "an endpoint id that cannot exist is 404 endpoint_not_found" out_is 404 '.error.code == "endpoint_not_found"'

# ---- the CLI ----
r() { "$roost" "$@" --server "$url" --token "$tok" --compact; }
out=$(r callbacks add --agent wh.cli --url "$hook/ok" --secret "$secret")
ep_cli=$(printf '%s' "$out" | jq -r .endpoint_id)
check "roost callbacks add registers ($out)" test "${ep_cli#ep_}" != "$ep_cli"
check "roost callbacks list shows it" \
  test "$(r callbacks list --agent wh.cli | jq -r '.endpoints[0].endpoint_id')" = "$ep_cli"
check "roost admin endpoints attempts lists the replayed event's four" \
  test "$(r admin endpoints attempts "$ep_flip" --event-id "$e3" | jq '.attempts | length')" = 4
check "roost admin endpoints inspect" test "$(r admin endpoints inspect "$ep_gone" | jq -r .status)" = disabled
check "roost admin endpoints list --agent" test "$(r admin endpoints list --agent wh.cli | jq '.endpoints | length')" = 1
r admin endpoints replay "$ep_cli" >/dev/null 2>&1
check "replay without --event-id/--since is a usage error (exit 2)" test $? = 2
r callbacks rm --agent wh.cli "$ep_cli" >/dev/null
check "roost callbacks rm" test $? = 0
r callbacks rm --agent wh.cli "$ep_cli" >/dev/null 2>&1
check "removing it again exits 3 (not found)" test $? = 3

# ---- doc/WEBHOOKS.md's registration, its lines run as they are (the agent, URL and CLI path
# substituted), against a receiver that reads the secret they made ----
sed -n '/<!-- webhooks:register/,$p' "$(dirname "$0")/../../doc/WEBHOOKS.md" |
  awk 'NR > 1 && /^```$/ { n++; next } n == 1 { print }' >"$dir/doc.lines"
check "the doc's registration is two lines" test "$(wc -l <"$dir/doc.lines")" = 2
mkdir -p "$dir/doc" "$dir/rx2"
export ROOST_SERVER=$url ROOST_TOKEN=$tok
(
  cd "$dir/doc" || exit 1
  sed -n 1p "$dir/doc.lines" | sh
  test -s hook.secret || exit 1
  node "$js_dir/webhook_receiver.cjs" "$dir/hook.pem" "$dir/hook.key" "$(cat hook.secret)" \
    "$url/api/v1/keys/server" "$dir/rx2" 2>"$dir/rx2/stderr" &
  echo $! >"$dir/rx2/pid"
  wait_until 30 test -s "$dir/rx2/port" || exit 1
  sed -n 2p "$dir/doc.lines" |
    sed -e "s|^roost |'$roost' |" \
      -e "s|https://hooks.example.com/roost|https://127.0.0.1:$(cat "$dir/rx2/port")/ok|" \
      -e 's|billing.worker|wh.doc|' | sh >"$dir/doc.out"
)
check "the doc's lines register an endpoint ($(cat "$dir/doc.out" 2>/dev/null))" \
  test "$(jq -r .endpoint_id "$dir/doc.out" 2>/dev/null | cut -c1-3)" = ep_
kill "$(cat "$dir/rx2/pid")" 2>/dev/null
unset ROOST_SERVER ROOST_TOKEN

# ---- refusals: the server's detail, a hint, the documented exit code ----
r callbacks add --agent wh.bad --url https://127.0.0.2/x --secret "$secret" >/dev/null 2>"$dir/err"
check "a forbidden address exits 1, as the help says" test $? = 1
check "and shows the server's detail, which names no address (no DNS oracle)" \
  sh -c "grep -q '^roost: detail: the host resolves to an address this server may not connect to' '$dir/err' && ! grep -q '127.0.0.2 resolves' '$dir/err'"
check "the server's log has the address" grep -q 'why="127.0.0.2 resolves to 127.0.0.2' "$dir/roostd.log"
check "and points at webhooks.allow_cidrs" grep -q 'webhooks.allow_cidrs' "$dir/err"
r callbacks add --agent wh.bad --url "$hook/badverify" </dev/null >/dev/null 2>"$dir/err"
check "a failed challenge exits 1" test $? = 1
secret_first() { # the whsec_ line comes before the refusal in $dir/err
  local at_secret at_error
  at_secret=$(grep -n '^whsec_' "$dir/err" | head -1 | cut -d: -f1)
  at_error=$(grep -n endpoint_verification_failed "$dir/err" | head -1 | cut -d: -f1)
  [ -n "$at_secret" ] && [ -n "$at_error" ] && [ "$at_secret" -lt "$at_error" ]
}
check "a secret made by the CLI is shown before the registration" secret_first
check "and the failure says how to give the endpoint the secret" grep -q -- '--secret-file' "$dir/err"
check "and points at webhooks.ca_file" grep -q 'webhooks.ca_file' "$dir/err"

# ---- webhooks.signing_key_file: another node with the same file serves the same key set ----
jwks() { curl -sS --max-time 10 "$1/api/v1/keys/server" | jq -c .; }
other() { # other DATA_DIR [ARGS...]: a second roostd; prints its URL (empty when it did not start)
  local d=$1
  shift
  rm -f "$d.ready"
  "$roostd" --data-dir "$d" --listen 127.0.0.1:0 --ready-file "$d.ready" "$@" >>"$d.log" 2>&1 &
  echo $! >"$d.pid"
  wait_until 15 test -s "$d.ready" && head -n1 "$d.ready"
}
url2=$(other "$dir/node2" --set "webhooks.signing_key_file=$dir/shared_signing.pem")
check "a node sharing the key file serves the same JWK Set" \
  test -n "$url2" -a "$(jwks "$url2")" = "$(jwks "$url")"
kill "$(cat "$dir/node2.pid")"
url3=$(other "$dir/node3")
check "a node without it serves its own key" test -n "$url3" -a "$(jwks "$url3")" != "$(jwks "$url")"
kill "$(cat "$dir/node3.pid")"
other "$dir/node4" --set "webhooks.signing_key_file=$dir/no-such.pem" >/dev/null
check "a missing shared key file stops roostd at start (never a key of its own)" \
  sh -c "! kill -0 \$(cat '$dir/node4.pid') 2>/dev/null && grep -q 'no-such.pem' '$dir/node4.log'"

roostd_stop
check "roostd exits 0 on SIGTERM (got $roostd_rc)" test "$roostd_rc" = 0
summary

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Third-party SSE clients against the real roostd: `sse_clients.sh MODE ROOSTD ROOST_CLI JS_DIR`
# with MODE one of
#   curl         `curl -N` receives the connect-time ping and a ping after a publish, with the
#                token in Authorization and as ?access_token=
#   eventsource  tests/js/eventsource_test.mjs (the npm eventsource package)
#   chromium     tests/js/chromium_test.mjs (headless Chromium's EventSource)
# Starts roostd the harness way (a new data dir, --listen 127.0.0.1:0, --ready-file), mints a
# token with `roost token mint`, runs the client, then SIGTERM: roostd must exit 0. A missing
# tool (node, npm packages, chromium, curl) is a failure, never a skip. Ends with the line
# "N passed, N failed".
set -uo pipefail

mode=${1:?mode}
roostd=${2:?roostd binary}
roost=${3:?roost binary}
js_dir=${4:?tests/js dir}

. "$(dirname "$0")/../harness/preamble.sh" "sse-clients-$mode"

roostd_start "$roostd" "$dir/data" || abort "roostd did not become ready: $(tail -n 30 "$dir/roostd.log")"
token=$("$roost" token mint --data-dir "$dir/data" --tenant t1 \
  --scope 'agent:js.*:read agent:js.*:publish agent:cli.*:read agent:cli.*:publish' --ttl 10m)
check "token minted" test -n "$token"

publish() { # publish AGENT -> prints the sequence number
  curl -sS -X POST -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
    --data "{\"recipients\":[\"$1\"],\"payload\":{\"from\":\"curl\"}}" "$url/api/v1/events" |
    sed -n 's/.*"sequence_number":\([0-9]*\).*/\1/p'
}

run_curl() {
  need curl
  local n agent out hdr
  for n in header query; do
    agent="cli.$n"
    out="$dir/curl-$n.out"
    hdr="$dir/curl-$n.hdr"
    : >"$out"
    if [ "$n" = header ]; then
      curl -N -sS -D "$hdr" -H "Authorization: Bearer $token" \
        "$url/api/v1/agents/$agent/subscribe" >"$out" 2>"$dir/curl-$n.err" &
    else
      curl -N -sS -D "$hdr" "$url/api/v1/agents/$agent/subscribe?access_token=$token" \
        >"$out" 2>"$dir/curl-$n.err" &
    fi
    client_pid=$!
    check "$n: connect-time ping (head 0)" wait_until 10 grep -qx 'data: {"cursor_hint":0}' "$out"
    check "$n: 200" grep -q '^HTTP/1.1 200' "$hdr"
    check "$n: text/event-stream" grep -qi '^content-type: text/event-stream' "$hdr"
    check "$n: retry line first" test "$(head -n1 "$out")" = "retry: 3000"
    local seq
    seq=$(publish "$agent")
    check "$n: published" test -n "$seq"
    check "$n: ping for head $seq" wait_until 10 grep -qx "data: {\"cursor_hint\":$seq}" "$out"
    check "$n: id $seq" grep -qx "id: $seq" "$out"
    check "$n: inbox_updated" test "$(grep -c '^event: inbox_updated$' "$out")" -eq 2
    kill "$client_pid" 2>/dev/null
    wait "$client_pid" 2>/dev/null
    client_pid=
  done
  # A bad query token: 401, and curl's stream ends at once.
  local code
  code=$(curl -sS -o /dev/null -w '%{http_code}' "$url/api/v1/agents/cli.x/subscribe?access_token=${token}x")
  check "bad access_token: 401" test "$code" = 401
}

run_node() { # run_node SCRIPT
  need node
  if [ ! -d "$js_dir/node_modules/eventsource" ] || [ ! -d "$js_dir/node_modules/puppeteer-core" ]; then
    echo "missing: $js_dir/node_modules (make test runs npm ci there)" >&2
    failed=$((failed + 1))
    return
  fi
  local out
  out=$(ROOST_URL="$url" ROOST_TOKEN="$token" timeout 120 node "$js_dir/$1" 2>&1)
  local rc=$?
  echo "$out"
  check "node $1 exited 0" test "$rc" -eq 0
}

case "$mode" in
  curl) run_curl ;;
  eventsource) run_node eventsource_test.mjs ;;
  chromium)
    need "${CHROMIUM:-chromium}"
    run_node chromium_test.mjs
    ;;
  *)
    echo "unknown mode $mode" >&2
    exit 2
    ;;
esac

# Graceful shutdown with whatever is still open: exit status 0.
roostd_stop
check "roostd exited 0 on SIGTERM (got $roostd_rc)" test "$roostd_rc" = 0
[ "$failed" -ne 0 ] && tail -n 30 "$dir/roostd.log" >&2
summary

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Built-in HTTPS: `tls.sh ROOSTD ROOST_CLI`. Generates a test CA and a server certificate for
# 127.0.0.1 with the openssl CLI, starts roostd with tls.cert_file/tls.key_file the harness way
# (new data dir, --listen 127.0.0.1:0, --ready-file), then with `curl --cacert`: health, metrics,
# publish and an SSE stream that receives its ping over TLS; the CLI (libroost) publishes with
# --cacert; an untrusted client and plain HTTP are refused; a key that does not match the
# certificate stops the start. SIGTERM: roostd must exit 0. Missing tools fail, never skip.
# Ends with the line "N passed, N failed".
set -uo pipefail

roostd=${1:?roostd binary}
roost=${2:?roost binary}

. "$(dirname "$0")/../harness/preamble.sh" tls
need openssl curl

# ---- a test CA and a server certificate signed by it ----
ossl() { openssl "$@" 2>>"$dir/openssl.log"; }
test_cert server IP:127.0.0.1,DNS:localhost &&
ossl genpkey -algorithm ed25519 -out "$dir/other.key"
check "openssl generated the test CA and certificate" test -s "$dir/server.pem"

start_roostd() { # start_roostd KEY_FILE: 0 when ready
  roostd_start "$roostd" "$dir/data" --set store.synchronous=normal \
    --set "tls.cert_file=$dir/server.pem" --set "tls.key_file=$1"
}

# A key that does not belong to the certificate: roostd refuses to start and says why.
start_roostd "$dir/other.key"
check "mismatched key stops the start" test -z "$roostd_pid"
check "the error names tls.key_file" grep -q "tls.key_file" "$dir/roostd.log"

: >"$dir/roostd.log"
start_roostd "$dir/server.key" || abort "roostd did not start: $(cat "$dir/roostd.log")"
port=${url##*:}
check "ready file announces https ($url)" test "${url#https://}" != "$url"

c() { curl -sS --max-time 10 --cacert "$dir/ca.pem" "$@"; }
check "healthz over TLS" test "$(c "$url/healthz")" = "ok"
check "untrusted certificate is refused" test "$(curl -s --max-time 5 -o /dev/null -w '%{http_code}' "$url/healthz")" = "000"
check "plain HTTP on the TLS port gets no answer" \
  test "$(curl -s --max-time 5 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/healthz")" = "000"
check "metrics over TLS" sh -c "curl -sS --max-time 10 --cacert '$dir/ca.pem' '$url/metrics' | grep -q '^roost_build_info'"

tok=$("$roost" token mint --data-dir "$dir/data" --tenant t1 \
  --scope 'agent:*:consume agent:*:publish agent:*:read tenant:admin')
check "token minted" test -n "$tok"

# SSE over TLS: the connect-time ping, then a ping after a publish.
c -N -H "Authorization: Bearer $tok" "$url/api/v1/agents/tls.a/subscribe" >"$dir/sse.out" &
client_pid=$!
check "SSE stream opened over TLS" wait_until 10 grep -q '^retry:' "$dir/sse.out"
code=$(c -o "$dir/pub.json" -w '%{http_code}' -H "Authorization: Bearer $tok" \
  -H 'Content-Type: application/json' -d '{"recipients":["tls.a"],"payload":{"k":1}}' \
  "$url/api/v1/events")
check "publish over TLS (201)" test "$code" = "201"
wait_until 10 grep -q '"cursor_hint":1' "$dir/sse.out"
check "SSE ping with the new head over TLS" grep -q 'event: inbox_updated' "$dir/sse.out"
check "SSE ping carries cursor_hint 1" grep -q '"cursor_hint":1' "$dir/sse.out"
kill "$client_pid" 2>/dev/null
wait "$client_pid" 2>/dev/null
client_pid=

# libroost (libcurl) over TLS through the CLI's --cacert.
out=$("$roost" publish --server "$url" --token "$tok" --cacert "$dir/ca.pem" --compact \
  --agent tls.a --payload '{"k":2}' 2>&1)
check "roost publish --cacert over TLS" sh -c "printf '%s' '$out' | grep -q '\"sequence_number\":2'"
"$roost" publish --server "$url" --token "$tok" --compact --agent tls.a --payload '{}' \
  >/dev/null 2>&1
check "roost without --cacert refuses the test CA" test $? -ne 0

# A request signature covering @scheme and @target-uri verifies over TLS: the signer (the npm
# http-message-signatures package) sees https, so roostd must rebuild the base with https too.
need node
js_dir=$(cd "$(dirname "$0")/../js" && pwd)
secret=$(head -c 32 /dev/urandom | base64 -w0)
code=$(c -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $tok" \
  -H 'Content-Type: application/json' \
  -d "{\"key_id\":\"tls-k\",\"agent_id\":\"tls.a\",\"alg\":\"hmac-sha256\",\"secret\":\"$secret\"}" \
  "$url/api/v1/admin/keys")
check "hmac key registered (201)" test "$code" = "201"
now=$(date +%s)
target="$url/api/v1/agents/tls.a/inbox?after_cursor=0"
printf '{"alg":"hmac-sha256","keyid":"tls-k","secretB64":"%s","fields":["@method","@scheme","@target-uri","@authority","@path","@query","authorization"],"created":%s,"expires":%s,"nonce":"n-%s","message":{"method":"GET","url":"%s","headers":{"authorization":"Bearer %s"}}}' \
  "$secret" "$now" "$((now + 60))" "$now" "$target" "$tok" >"$dir/sign.json"
node "$js_dir/httpsig_sign_request.cjs" <"$dir/sign.json" >"$dir/sig.json"
check "the npm signer signed the request" test -s "$dir/sig.json"
sig_input=$(node -e 'process.stdout.write(JSON.parse(require("fs").readFileSync(0)).signatureInput)' <"$dir/sig.json")
sig=$(node -e 'process.stdout.write(JSON.parse(require("fs").readFileSync(0)).signature)' <"$dir/sig.json")
code=$(c -o "$dir/signed.json" -w '%{http_code}' -H "Authorization: Bearer $tok" \
  -H "Signature-Input: $sig_input" -H "Signature: $sig" "$target")
check "signature covering @scheme/@target-uri verifies over https (got $code)" test "$code" = "200"

roostd_stop
check "roostd exits 0 on SIGTERM (got $roostd_rc)" test "$roostd_rc" = 0
check "no TLS errors logged" sh -c "! grep -qi 'level=error' '$dir/roostd.log'"
summary

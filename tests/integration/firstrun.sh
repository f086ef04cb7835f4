#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What a new user and a long-running agent meet first, against the real roostd and the real CLI
# (issue 14): `firstrun.sh ROOSTD ROOST SOURCE_DIR`.
#  * tokens that rotate: `agent run --token-file F` (F rewritten by the test with fresh 4 s
#    tokens) and `agent run --token-command CMD` (CMD mints a 4 s token) both handle an event
#    published after roostd refuses their first token (about 65 s: roostd allows 60 s of skew),
#    and are still running.
#  * roostd locks its data dir: a second roostd on it exits 1 saying the dir is in use (with the
#    first one's pid), and the first one still answers.
#  * publish reads standard input only for --payload - (or @F): a `while read` loop keeps its
#    input, a publish with stdin an open pipe returns, the default payload is {}.
#  * keys generate writes a 0600 private key and F.pub, refuses to overwrite, and prints the
#    keys add command; the key, once added, signs requests roostd accepts (and another
#    generated key under the same id is refused).
#  * whoami prints the tenant, subject, scopes and expiry of the token in use.
# Ends with the line "N passed, N failed".
set -uo pipefail

roostd=${1:?roostd binary}
roost=${2:?roost binary}
src=${3:?source dir}

. "$(dirname "$0")/../harness/preamble.sh" firstrun

roostd_start "$roostd" "$dir/data" --set store.synchronous=normal ||
  abort "roostd did not start: $(cat "$dir/roostd.log")"
mint() { # mint TTL SCOPES
  "$roost" token mint --data-dir "$dir/data" --tenant t1 --ttl "$1" --scope "$2"
}
admin=$(mint 1h 'agent:*:consume agent:*:publish agent:*:read tenant:admin')
check "token minted" test -n "$admin"
export ROOST_SERVER=$url

# ---- roostd locks its data dir ----
timeout 20 "$roostd" --data-dir "$dir/data" --listen 127.0.0.1:0 >"$dir/second.log" 2>&1
check "a second roostd on the data dir exits 1" test $? -eq 1
check "... saying the data dir is in use, by which pid" \
  grep -q "data dir $dir/data is in use by another roostd (pid $roostd_pid" "$dir/second.log"
check "the first roostd still answers" \
  "$roost" state --agent tr.file --token "$admin" --compact >/dev/null

# ---- publish reads stdin only when asked ----
pub() { "$roost" publish --token "$admin" --compact "$@"; }
last_payload() { # last_payload AGENT: the payload of the agent's newest event
  "$roost" inbox read --token "$admin" --agent "$1" --compact | grep -o '"payload":{[^}]*}' | tail -1
}
printf 'one\ntwo\nthree\n' | while read -r word; do
  pub --agent pb.loop --payload "{\"w\":\"$word\"}" >/dev/null
done
check "a while-read loop publishes every line (stdin not swallowed)" \
  test "$("$roost" inbox read --token "$admin" --agent pb.loop --compact | grep -o '"w":"[a-z]*"' |
    tr '\n' ' ')" = '"w":"one" "w":"two" "w":"three" '
pub --agent pb.def >/dev/null < <(sleep 30)
check "publish without --payload does not wait on an open pipe; the payload is {}" \
  test "$(last_payload pb.def)" = '"payload":{}'
printf '{"from":"stdin"}' | pub --agent pb.stdin --payload - >/dev/null
check "--payload - reads standard input" test "$(last_payload pb.stdin)" = '"payload":{"from":"stdin"}'
printf '{"from":"file"}' >"$dir/payload.json"
pub --agent pb.file --payload "@$dir/payload.json" >/dev/null
check "--payload @F reads file F" test "$(last_payload pb.file)" = '"payload":{"from":"file"}'

# ---- whoami ----
who=$("$roost" whoami --compact --token "$(mint 1h 'agent:w.*:read tenant:admin')")
check "whoami names tenant, scopes and expiry" \
  sh -c "printf '%s' '$who' | grep -q '\"tenant\":\"t1\",\"sub\":\"roost-cli\",\"scopes\":\[\"agent:w.\*:read\",\"tenant:admin\"\],\"exp\":[0-9]*,\"expires_at\":\"20[0-9-]*T[0-9:]*Z\",\"expires_in_s\":3[56][0-9][0-9],\"expired\":false'"

# ---- keys generate ----
"$roost" keys generate --out "$dir/ed.pem" >"$dir/gen.out"
check "keys generate writes the private key 0600" test "$(stat -c %a "$dir/ed.pem")" = 600
check "... and its public half" grep -q "BEGIN PUBLIC KEY" "$dir/ed.pem.pub"
check "... and prints the keys add command" \
  grep -qF -- "roost keys add --key-id KEY_ID --agent AGENT --alg ed25519 --public-key-file $dir/ed.pem.pub" "$dir/gen.out"
check "keys generate never overwrites" sh -c "! '$roost' keys generate --out '$dir/ed.pem' 2>/dev/null"
"$roost" keys add --token "$admin" --key-id kg-ed --agent kg.a --alg ed25519 \
  --public-key-file "$dir/ed.pem.pub" >/dev/null
check "the generated key registers" test $? -eq 0
check "a request signed with it is accepted" \
  sh -c "'$roost' state --token '$admin' --agent kg.a --key-file '$dir/ed.pem' --key-id kg-ed >/dev/null"
"$roost" keys generate --out "$dir/other.pem" >/dev/null
check "a request signed with another key under its id is refused" sh -c \
  "! '$roost' state --token '$admin' --agent kg.a --key-file '$dir/other.pem' --key-id kg-ed 2>/dev/null"

# ---- agents outlive their tokens ----
refused() { ! "$roost" state --agent tr.file --token "$1" >/dev/null 2>&1; }
handled() { grep -q "$2" "$dir/$1.out" 2>/dev/null; }
agent_pids=()
cleanup_agents() {
  for p in "${agent_pids[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
}
trap 'cleanup_agents; preamble_cleanup' EXIT

short_scope='agent:tr.*:consume agent:tr.*:read'
mint 4s "$short_scope" >"$dir/token"
first_file=$(cat "$dir/token")
(while :; do
  mint 4s "$short_scope" >"$dir/token.new" && mv "$dir/token.new" "$dir/token"
  sleep 1 # the issuer's rotation period, not a synchronisation
done) &
agent_pids+=($!)
"$roost" agent run --agent tr.file --state-dir "$dir/st.file" --token-file "$dir/token" \
  --exec "cat >>'$dir/file.out'; echo >>'$dir/file.out'" 2>"$dir/file.log" &
file_agent=$!
agent_pids+=($file_agent)

cmd="'$roost' token mint --data-dir '$dir/data' --tenant t1 --ttl 4s --scope '$short_scope'"
first_cmd=$(mint 4s "$short_scope")
"$roost" agent run --agent tr.cmd --state-dir "$dir/st.cmd" --token-command "$cmd" \
  --exec "cat >>'$dir/cmd.out'; echo >>'$dir/cmd.out'" 2>"$dir/cmd.log" &
cmd_agent=$!
agent_pids+=($cmd_agent)

"$roost" publish --token "$admin" --agent tr.file --agent tr.cmd --payload '{"n":"before"}' \
  >/dev/null
check "--token-file agent handles an event" wait_until 15 handled file before
check "--token-command agent handles an event" wait_until 15 handled cmd before
# roostd accepts a token up to 60 s past its exp (clock skew, AUTH_SKEW_MS): wait for the
# first tokens to be refused outright.
check "the first tokens expire" wait_until 90 eval 'refused "$first_file" && refused "$first_cmd"'
"$roost" publish --token "$admin" --agent tr.file --agent tr.cmd --payload '{"n":"after"}' \
  >/dev/null
check "--token-file agent handles an event after its first token expired" \
  wait_until 15 handled file after
check "--token-command agent handles an event after its first token expired" \
  wait_until 15 handled cmd after
check "--token-file agent still runs" kill -0 "$file_agent"
check "--token-command agent still runs" kill -0 "$cmd_agent"
cleanup_agents
agent_pids=()

summary

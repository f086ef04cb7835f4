#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What the CLI generates from its command table, and its option handling against a real roostd:
# `cli.sh ROOSTD ROOST SOURCE_DIR`.
#  * --help: `roost CMD --help` and `roost help CMD` exit 0 with the usage of every command the
#    table lists (roost --list-commands); an unknown option or a missing value exits 2.
#  * the man page: doc/man/roost.1 names every command, every shared option and every
#    environment variable of the table (roost --list-options), so a command added to the table
#    without a man entry fails here; and its COMMANDS section names no command the table lacks.
#  * bash completion: `source <(roost completion bash)` registers _roost, which completes the
#    command words, each command's every option, choices and files (COMP_WORDS/COMP_CWORD).
#  * against roostd (new data dir, --listen 127.0.0.1:0, --ready-file): server and token from
#    ROOST_SERVER/ROOST_TOKEN alone, --token-file before ROOST_TOKEN, a repeated --agent fans out,
#    a repeated --limit keeps the last value; then every inbox command once (inbox read, claim,
#    extend, release, ack, release-all, admin quarantine list).
# Ends with the line "N passed, N failed".
set -uo pipefail

roostd=${1:?roostd binary}
roost=${2:?roost binary}
src=${3:?source dir}
man="$src/doc/man/roost.1"

. "$(dirname "$0")/../harness/preamble.sh" cli

"$roost" --list-commands >"$dir/commands"
"$roost" --list-options >"$dir/options"
check "the table lists commands" test "$(wc -l <"$dir/commands")" -ge 20
check "the table lists options" test "$(wc -l <"$dir/options")" -ge 100

# ---- --help for every command, usage errors ----
while read -r cmd; do
  # shellcheck disable=SC2086 # the command's words are separate arguments
  check "roost $cmd --help" sh -c "'$roost' $cmd --help | head -1 | grep -q '^Usage: roost $cmd'"
  # shellcheck disable=SC2086
  check "roost help $cmd" sh -c "'$roost' help $cmd | head -1 | grep -q '^Usage: roost $cmd'"
done <"$dir/commands"
"$roost" claim --agent a1 --no-such-option 2>"$dir/err"
check "unknown option exits 2" test $? -eq 2
check "unknown option is named" grep -q "^roost claim: unknown option --no-such-option" "$dir/err"
"$roost" inbox read --agent 2>"$dir/err"
check "missing value exits 2" test $? -eq 2
check "missing value is named" grep -q "^roost inbox read: option --agent needs a value" "$dir/err"
"$roost" no-such-command 2>/dev/null
check "unknown command exits 2" test $? -eq 2

# ---- the man page names the whole table ----
man_has() { # man_has TEXT: TEXT as troff writes it (every '-' escaped)
  grep -qF -- "$(printf '%s' "$1" | sed 's/-/\\-/g')" "$man"
}
while read -r cmd; do
  check "roost.1 names the command '$cmd'" man_has "$cmd"
done <"$dir/commands"
# ... and names no command the table does not have: the leading words of each entry of its
# COMMANDS section (".TP" then ".B words \-\-option ...") start a command of the table.
sed -n '/^\.SH COMMANDS/,/^\.SH /p' "$man" | awk 'prev == ".TP" && /^\.B / { print } { prev = $0 }' |
  sed 's/^\.B //; s/\\f.*//; s/ \\-.*//; s/\\-/-/g' >"$dir/man_commands"
check "roost.1 has command entries" test "$(wc -l <"$dir/man_commands")" -ge 20
while read -r entry; do
  known=no
  while read -r cmd; do
    case "$entry " in "$cmd "*) known=yes ;; esac
  done <"$dir/commands"
  check "roost.1's entry '$entry' is a command of the table" test "$known" = yes
done <"$dir/man_commands"
# The shared options ('admin stats' takes no other) and every environment variable.
awk -F'\t' '$1 == "admin stats" { print $2 }' "$dir/options" >"$dir/shared"
check "the table has shared options" test "$(wc -l <"$dir/shared")" -ge 10
while read -r opt; do
  check "roost.1 names the shared option $opt" man_has "$opt"
done <"$dir/shared"
cut -f5 "$dir/options" | grep -v '^-$' | sort -u >"$dir/envs"
check "the table has environment defaults" test "$(wc -l <"$dir/envs")" -ge 5
while read -r env; do
  check "roost.1 names $env" man_has "$env"
done <"$dir/envs"

# ---- bash completion ----
"$roost" completion bash >"$dir/roost.bash"
check "completion bash is valid bash" bash -n "$dir/roost.bash"
check "completion zsh starts with #compdef" sh -c "'$roost' completion zsh | head -1 | grep -qx '#compdef roost'"
check "completion registers _roost" \
  test "$(bash -c "source <('$roost' completion bash); complete -p roost")" = "complete -F _roost roost"
complete_words() { # complete_words WORD... : what _roost offers for the last word
  bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
           _roost; printf "%s\n" "${COMPREPLY[@]}"' _ "$dir/roost.bash" roost "$@"
}
offers() { # offers EXPECTED WORD...: EXPECTED is among the completions
  local want=$1 got
  shift
  # No pipe: grep -q stopping early would fail the writer and so the pipeline (pipefail).
  got=$(complete_words "$@")
  grep -qx -- "$want" <<<"$got"
}
check "completes a command" test "$(complete_words cla)" = "claim"
check "completes a group's words" test "$(complete_words admin quarantine '' | tr '\n' ' ')" = "list requeue inspect purge "
check "completes after help" offers revoke help keys ''
check "completes a choice" test "$(complete_words admin agents --sort de)" = "depth"
check "completes a positional choice" test "$(complete_words completion '' | tr '\n' ' ')" = "bash zsh "
mkdir -p "$dir/pemdir" && : >"$dir/pemdir/key.pem"
check "completes a file value" offers "$dir/pemdir/key.pem" keys add --public-key-file "$dir/pemdir/k"
check "a free-text value completes nothing" test -z "$(complete_words claim --agent '')"
check "an unknown command completes nothing" test -z "$(complete_words frobnicate '')"
# Every option of every command is offered after the command's words.
while IFS=$'\t' read -r cmd opt short _arg _env; do
  # shellcheck disable=SC2086
  check "completion offers '$cmd $opt'" offers "$opt" $cmd -
  if [ "$short" != "-" ]; then
    # shellcheck disable=SC2086
    check "completion offers '$cmd $short'" offers "$short" $cmd -
  fi
done <"$dir/options"

# ---- against a real roostd ----
roostd_start "$roostd" "$dir/data" --set store.synchronous=normal ||
  abort "roostd did not start: $(cat "$dir/roostd.log")"
tok=$("$roost" token mint --data-dir "$dir/data" --tenant t1 \
  --scope 'agent:*:consume agent:*:publish agent:*:read tenant:admin')
check "token minted" test -n "$tok"

out=$(ROOST_SERVER=$url ROOST_TOKEN=$tok "$roost" publish --compact --agent cli.a --agent cli.b \
  --payload '{"n":1}')
check "server and token from the environment; a repeated --agent fans out to both" \
  sh -c "printf '%s' '$out' | grep -q '\"agent_id\":\"cli.a\"' && printf '%s' '$out' | grep -q '\"agent_id\":\"cli.b\"'"
ROOST_SERVER=$url ROOST_TOKEN=$tok "$roost" publish --compact -a cli.a --payload '{"n":2}' >/dev/null
printf '%s\n' "$tok" >"$dir/token"
out=$(ROOST_SERVER=$url ROOST_TOKEN=not-a-token "$roost" claim --compact --agent cli.a \
  --token-file "$dir/token" --limit 5 --limit 1)
check "--token-file before ROOST_TOKEN; the last --limit wins (1 of 2 events)" \
  test "$(printf '%s' "$out" | grep -o '"lease_token"' | wc -l)" -eq 1
ROOST_SERVER=$url ROOST_TOKEN=not-a-token "$roost" state --agent cli.a 2>"$dir/err" >/dev/null
check "a bad ROOST_TOKEN is used when nothing else is given (exit 1)" test $? -eq 1
check "... and refused by the server" grep -q "unauthenticated\|invalid_token" "$dir/err"
"$roost" state --agent cli.a --server "$url" --token "$tok" --compact --pretty >"$dir/state"
check "the last of --compact/--pretty wins" test "$(wc -l <"$dir/state")" -gt 1

# Every inbox command once, through the table's parser (options before and after arguments).
r() { "$roost" "$@" --server "$url" --token "$tok" --compact; }
field() { sed -n "s/.*\"$1\":\"\([^\"]*\)\".*/\1/p"; }
r publish --agent cli.c --payload '{"n":3}' >/dev/null
check "inbox read --ndjson prints the event" \
  test "$(r inbox read --agent cli.c --after 0 --ndjson 2>"$dir/err" | wc -l)" -eq 1
check "inbox read --ndjson reports the cursor on stderr" grep -q '^next_cursor=1 has_more=false$' "$dir/err"
out=$(r claim --agent cli.c --consumer w1 --lease 30s)
ev=$(printf '%s' "$out" | field event_id)
lease=$(printf '%s' "$out" | field lease_token)
check "claim returns a lease" test -n "$ev" -a -n "$lease"
check "extend EVENT_ID LEASE_TOKEN --lease" sh -c "'$roost' extend '$ev' --agent cli.c '$lease' --lease 2m \
  --server '$url' --token '$tok' --compact | grep -q claim_expires_at"
r release --agent cli.c "$ev" "$lease" --reason shutdown >/dev/null
check "release --reason shutdown" test $? -eq 0
out=$(r claim --agent cli.c --consumer w1)
lease2=$(printf '%s' "$out" | field lease_token)
r ack --agent cli.c "$ev" "$lease" >/dev/null 2>&1
check "ack with the released lease exits 3" test $? -eq 3
r ack --agent cli.c "$ev" "$lease2" >/dev/null
check "ack with the new lease" test $? -eq 0
r publish --agent cli.c --payload '{"n":4}' >/dev/null
r claim --agent cli.c --consumer w1 >/dev/null
check "release-all --consumer releases its lease" \
  test "$(r release-all --agent cli.c --consumer w1)" = '{"released":1}'
check "admin quarantine list --agent" sh -c "'$roost' admin quarantine list --agent cli.c \
  --server '$url' --token '$tok' --compact | grep -q '\"events\":\[\]'"

summary

# SPDX-License-Identifier: MIT
# The one preamble of the shell tests (tests/integration/*.sh), sourced after `set -uo pipefail`:
#   . "$(dirname "$0")/../harness/preamble.sh" NAME
# Gives the check kit (check, summary, abort: the final line "N passed, N failed"), a private
# temp dir $dir (kept when ROOST_TEST_KEEP is set) removed by an exit trap that also kills
# $roostd_pid and $client_pid when set, wait_until for deadlines (never a sleep standing in for
# synchronisation), need for tools (a missing tool fails, never skips), and roostd_start /
# roostd_stop that run the real roostd the harness way (--listen 127.0.0.1:0, --ready-file).

passed=0
failed=0
check() { # check DESCRIPTION COMMAND...
  local what=$1
  shift
  if "$@"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "CHECK failed: $what" >&2
  fi
}
summary() {
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}
abort() { # abort MESSAGE: counts one failure, prints the summary and exits 1
  echo "$1" >&2
  failed=$((failed + 1))
  summary
  exit 1
}

dir=$(mktemp -d "${TMPDIR:-/tmp}/roost-${1:?preamble.sh NAME}-XXXXXX")
roostd_pid=
client_pid=
preamble_cleanup() {
  if [ -n "$client_pid" ]; then
    kill "$client_pid" 2>/dev/null && wait "$client_pid" 2>/dev/null
  fi
  if [ -n "$roostd_pid" ]; then
    kill -9 "$roostd_pid" 2>/dev/null && wait "$roostd_pid" 2>/dev/null
  fi
  [ -z "${ROOST_TEST_KEEP:-}" ] && rm -rf "$dir"
}
trap preamble_cleanup EXIT

# Polls a condition every 10 ms until it holds or the deadline (seconds) passes.
wait_until() { # wait_until SECONDS COMMAND...
  local deadline=$((SECONDS + $1))
  shift
  until "$@"; do
    [ "$SECONDS" -ge "$deadline" ] && return 1
    sleep 0.01
  done
}

need() { # need TOOL...
  local tool
  for tool in "$@"; do
    command -v "$tool" >/dev/null 2>&1 || abort "missing: $tool (scripts/deps.sh installs it)"
  done
}

# Starts ROOSTD on a port of the kernel's choosing with a ready file, stderr and stdout appended
# to $dir/roostd.log; 0 once the ready file is written (its first line in $url), 1 when roostd
# exited first (roostd_pid is then empty) or did not get ready within 15 s.
roostd_start() { # roostd_start ROOSTD DATA_DIR [ROOSTD_ARGS...]
  local bin=$1 data=$2
  shift 2
  rm -f "$dir/ready"
  "$bin" --data-dir "$data" --listen 127.0.0.1:0 --ready-file "$dir/ready" "$@" \
    >>"$dir/roostd.log" 2>&1 &
  roostd_pid=$!
  local deadline=$((SECONDS + 15))
  until [ -s "$dir/ready" ]; do
    if ! kill -0 "$roostd_pid" 2>/dev/null; then
      wait "$roostd_pid"
      roostd_pid=
      return 1
    fi
    [ "$SECONDS" -ge "$deadline" ] && return 1
    sleep 0.01
  done
  url=$(head -n1 "$dir/ready")
}

# SIGTERM, then waits up to 20 s; roostd's exit status in $roostd_rc ("still running" past that,
# and the exit trap kills it).
roostd_alive() { kill -0 "$roostd_pid" 2>/dev/null; }
roostd_stop() {
  roostd_rc="still running"
  kill -TERM "$roostd_pid"
  if wait_until 20 eval '! roostd_alive'; then
    wait "$roostd_pid"
    roostd_rc=$?
    roostd_pid=
  fi
}

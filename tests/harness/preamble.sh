# SPDX-License-Identifier: MIT
# The one preamble of the shell tests (tests/integration/*.sh), sourced after `set -uo pipefail`:
#   . "$(dirname "$0")/../harness/preamble.sh" NAME
# Gives the check kit (check, summary, abort: the final line "N passed, N failed"), a private
# temp dir $dir (kept when ROOST_TEST_KEEP is set) removed by an exit trap that also kills
# $roostd_pid and $client_pid when set, test_cert for a private CA and TLS certificate, wait_until for deadlines (never a sleep standing in for
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
  if [ -n "$test_db" ]; then
    my -e "DROP DATABASE IF EXISTS $test_db" 2>/dev/null
  fi
  [ -z "${ROOST_TEST_KEEP:-}" ] && rm -rf "$dir"
}
trap preamble_cleanup EXIT

# A database of the test's own on the ctest fixture's MariaDB (the tests of tests/cluster get its
# URL): sets store_url (for roostd's store.url) and test_db, and `my` runs the mariadb client on
# that server; preamble_cleanup drops the database.
test_db=
my() { mariadb -h "$my_host" -P "$my_port" -u "$my_user" -p"$my_pass" "$@"; }
mysql_test_db() { # mysql_test_db MYSQL_URL NAME
  local rest=${1#mysql://} creds hostport
  creds=${rest%%@*}
  hostport=${rest#*@}
  hostport=${hostport%%/*}
  my_host=${hostport%%:*}
  my_port=${hostport##*:}
  my_user=${creds%%:*}
  my_pass=$(printf '%b' "$(printf '%s' "${creds#*:}" | sed 's/%\([0-9A-Fa-f][0-9A-Fa-f]\)/\\x\1/g')")
  test_db="roost_${2}_$$"
  my -e "DROP DATABASE IF EXISTS $test_db; CREATE DATABASE $test_db CHARACTER SET utf8mb4 COLLATE utf8mb4_bin" ||
    abort "cannot create the test database"
  store_url="mysql://$creds@$hostport/$test_db"
}

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

# Makes a private test CA ($dir/ca.pem, $dir/ca.key) and a P-256 server certificate it signs,
# $dir/NAME.pem with its key $dir/NAME.key, for SAN (`IP:127.0.0.1`, `DNS:rebind.test`, or a
# comma-separated list); openssl's complaints go to $dir/openssl.log. 0 when the certificate exists.
test_cert() { # test_cert NAME SAN
  local name=$1 san=$2 cn=${2%%,*}
  cn=${cn#*:}
  {
    [ -s "$dir/ca.pem" ] ||
      openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
        -subj "/CN=Roost Test CA" -keyout "$dir/ca.key" -out "$dir/ca.pem" \
        -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
  } && openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$cn" \
    -keyout "$dir/$name.key" -out "$dir/$name.csr" &&
    printf 'subjectAltName=%s\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' "$san" \
      >"$dir/$name.ext" &&
    openssl x509 -req -in "$dir/$name.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" \
      -CAcreateserial -days 2 -extfile "$dir/$name.ext" -out "$dir/$name.pem"
} 2>>"$dir/openssl.log"

# Starts tests/js/webhook_receiver.cjs on the certificate test_cert made as "hook", with a fresh
# Standard Webhooks secret ($secret) and roostd's key set at $url: its state in $dir/rx (the
# deliveries' log, `closed`, its stderr), its pid in $client_pid (the exit trap ends it), its base
# URL in $hook. Aborts when it does not start.
harness_js_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/../js" && pwd)
webhook_receiver_start() {
  secret="whsec_$(head -c 32 /dev/urandom | base64 -w0)"
  mkdir -p "$dir/rx"
  node "$harness_js_dir/webhook_receiver.cjs" "$dir/hook.pem" "$dir/hook.key" \
    "$secret" "$url/api/v1/keys/server" "$dir/rx" 2>"$dir/rx/stderr" &
  client_pid=$!
  wait_until 10 test -s "$dir/rx/port" || abort "the receiver did not start: $(cat "$dir/rx/stderr")"
  hook="https://127.0.0.1:$(cat "$dir/rx/port")"
  touch "$dir/rx/log" "$dir/rx/closed"
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

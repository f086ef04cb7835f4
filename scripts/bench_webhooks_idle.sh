#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What an idle webhook dispatcher costs the database, and how fast it delivers one event
# (doc/WEBHOOKS.md; never gating). Works with any roostd build, old or new:
#   bench_webhooks_idle.sh ROOSTD ROOST [N] [WINDOW_S] [MYSQL_URL]
# registers N endpoints (default 50) on a local HTTPS receiver (tests/js/webhook_receiver.cjs),
# counts the store's statements over WINDOW_S idle seconds (default 10) with webhooks.enabled on
# and again with it off (the difference is the dispatcher's), and times 5 single events from the
# publish to the receiver. Statements: on SQLite the roostd process's sqlite3_step and sqlite3_exec
# calls (an LD_PRELOAD counter built here with cc); with MYSQL_URL (the URL of a MariaDB whose user
# may create databases; a database of its own is made and dropped) the server's Questions.
# Prints one line: N, the window, statements on/off, the dispatcher's per second, latencies (ms).
set -uo pipefail

roostd=${1:?roostd binary}
roost=${2:?roost binary}
N=${3:-50}
W=${4:-10}
mysql_url=${5:-}
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/tests/harness/preamble.sh" bench-webhooks-idle
need openssl curl node jq cc
js_dir=$root/tests/js

cat >"$dir/count.c" <<'EOF'
/* LD_PRELOAD: counts the process's sqlite3_step and sqlite3_exec calls; every 100 ms writes the
 * total to $STMT_OUT (through a rename, so a reader never sees a partial file). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
static _Atomic unsigned long calls;
int sqlite3_step(void *s)
{
    static int (*real)(void *);
    if (!real)
        real = (int (*)(void *))dlsym(RTLD_NEXT, "sqlite3_step");
    calls++;
    return real(s);
}
int sqlite3_exec(void *db, const char *sql, void *cb, void *arg, char **err)
{
    static int (*real)(void *, const char *, void *, void *, char **);
    if (!real)
        real = (int (*)(void *, const char *, void *, void *, char **))dlsym(RTLD_NEXT,
                                                                          "sqlite3_exec");
    calls++;
    return real(db, sql, cb, arg, err);
}
static void *writer(void *path)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", (const char *)path);
    for (;;) {
        FILE *f = fopen(tmp, "w");
        if (f) {
            fprintf(f, "%lu\n", (unsigned long)calls);
            fclose(f);
            rename(tmp, path);
        }
        usleep(100000);
    }
    return NULL;
}
__attribute__((constructor)) static void start(void)
{
    const char *out = getenv("STMT_OUT");
    pthread_t t;
    if (out)
        pthread_create(&t, NULL, writer, (void *)out);
}
EOF
cc -O2 -shared -fPIC -o "$dir/count.so" "$dir/count.c" -ldl -lpthread || abort "cannot build the counter"

store_args=()
my() { :; }
if [ -n "$mysql_url" ]; then
  rest=${mysql_url#mysql://}
  creds=${rest%%@*}
  hostport=${rest#*@}
  hostport=${hostport%%/*}
  pass=$(printf '%b' "$(printf '%s' "${creds#*:}" | sed 's/%\([0-9A-Fa-f][0-9A-Fa-f]\)/\\x\1/g')")
  db="roost_wh_idle_$$"
  my() { mariadb -h "${hostport%%:*}" -P "${hostport##*:}" -u "${creds%%:*}" -p"$pass" "$@"; }
  my -e "DROP DATABASE IF EXISTS $db; CREATE DATABASE $db CHARACTER SET utf8mb4 COLLATE utf8mb4_bin" ||
    abort "cannot create the database"
  trap 'my -e "DROP DATABASE IF EXISTS '"$db"'" 2>/dev/null; preamble_cleanup' EXIT
  store_args=(--set "store.url=mysql://$creds@$hostport/$db")
fi
statements() {
  if [ -n "$mysql_url" ]; then
    my -N -e "SHOW GLOBAL STATUS LIKE 'Questions'" | awk '{ print $2 }'
  else
    cat "$dir/stmts"
  fi
}

ossl() { openssl "$@" 2>>"$dir/openssl.log"; }
ossl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=Bench CA" \
  -keyout "$dir/ca.key" -out "$dir/ca.pem" \
  -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign &&
ossl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=127.0.0.1" \
  -keyout "$dir/hook.key" -out "$dir/hook.csr" &&
printf 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' \
  >"$dir/ext.cnf" &&
ossl x509 -req -in "$dir/hook.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -CAcreateserial \
  -days 2 -extfile "$dir/ext.cnf" -out "$dir/hook.pem" || abort "openssl failed"

start() { # start true|false: roostd with webhooks.enabled so
  STMT_OUT=$dir/stmts LD_PRELOAD=$dir/count.so roostd_start "$roostd" "$dir/data" \
    --set store.synchronous=normal --set log.level=warn --set webhooks.allow_cidrs=127.0.0.1/32 \
    --set "webhooks.ca_file=$dir/ca.pem" --set "webhooks.enabled=$1" "${store_args[@]}"
}
window() { # statements over W idle seconds, after 2 s to settle
  local a b
  sleep 2
  a=$(statements)
  sleep "$W"
  b=$(statements)
  echo $((b - a))
}

start true || abort "roostd did not start: $(tail -5 "$dir/roostd.log")"
secret="whsec_$(head -c 32 /dev/urandom | base64 -w0)"
mkdir -p "$dir/rx"
node "$js_dir/webhook_receiver.cjs" "$dir/hook.pem" "$dir/hook.key" "$secret" \
  "$url/api/v1/keys/server" "$dir/rx" 2>"$dir/rx/stderr" &
client_pid=$!
wait_until 10 test -s "$dir/rx/port" || abort "the receiver did not start"
touch "$dir/rx/log"
hook="https://127.0.0.1:$(cat "$dir/rx/port")"
tok=$("$roost" token mint --data-dir "$dir/data" --tenant t1 \
  --scope 'agent:*:consume agent:*:publish tenant:admin')
api() { # api PATH BODY: POSTs, prints the body
  curl -sS --max-time 30 -H "Authorization: Bearer $tok" -H 'Content-Type: application/json' \
    -d "$2" "$url$1"
}
for i in $(seq 1 "$N"); do
  api "/api/v1/agents/idle.a$i/callbacks" "{\"url\":\"$hook/ok\",\"secret\":\"$secret\"}" |
    jq -e .endpoint_id >/dev/null || abort "endpoint $i was not registered"
done

on=$(window)
latencies=""
for _ in 1 2 3 4 5; do
  sleep "1.$((RANDOM % 10))" # a random phase against any poll period
  t0=$(date +%s%3N)
  id=$(api /api/v1/events '{"recipients":["idle.a1"],"payload":{}}' |
    jq -r '.events[0].event_id // .event_id')
  wait_until 30 sh -c "grep -q '\"id\":\"$id\"' '$dir/rx/log'" || abort "event $id not delivered"
  t1=$(jq -s "[.[] | select(.id == \"$id\") | .at] | .[0]" "$dir/rx/log")
  latencies="$latencies $((t1 - t0))"
done
roostd_stop
start false || abort "roostd did not restart"
off=$(window)
roostd_stop
echo "N=$N window=${W}s statements webhooks_on=$on webhooks_off=$off" \
  "dispatcher_per_s=$(awk "BEGIN { printf \"%.1f\", ($on - $off) / $W }")" \
  "publish_to_delivery_ms=[$latencies ]"

#!/usr/bin/env bash
# `make run`: starts roostd in the foreground on an embedded SQLite data dir (or the store URL
# STORE names: make run STORE=postgres://…), then prints an admin
# token and a working curl example. Ctrl-C stops it (gracefully). BUILD_DIR (default build) names
# the build whose binaries it runs.
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${BUILD_DIR:-build}/bin"
listen="${1:-127.0.0.1:8080}"
data_dir="${2:-./var}"
store="${3:-}" # a store URL (mysql://…, postgres://…); empty: SQLite in the data dir
mkdir -p -m 700 "$data_dir" # it holds payloads and keys: roostd warns when others can read it
ready="$data_dir/roostd.ready"
rm -f "$ready"

"$bin/roostd" --data-dir "$data_dir" --listen "$listen" --ready-file "$ready" \
  ${store:+--store "$store"} &
pid=$!
trap 'kill -TERM $pid 2>/dev/null || true' INT TERM
for _ in $(seq 1 200); do
  [ -s "$ready" ] && break
  if ! kill -0 $pid 2>/dev/null; then
    wait $pid || true
    echo "make run: roostd did not start (see its message above). If $listen is in use, pick" \
         "another address: make run LISTEN=127.0.0.1:9090 (and DATA_DIR=./var2 for a second data dir)" >&2
    exit 1
  fi
  sleep 0.05
done
[ -s "$ready" ] || { echo "roostd did not become ready" >&2; kill $pid; exit 1; }
url=$(cat "$ready")
token=$("$bin/roost" token mint --data-dir "$data_dir" --tenant default --sub admin \
          --scope "tenant:admin agent:*:read agent:*:publish agent:*:consume" --ttl 24h)

cat <<EOT

roostd is running at $url (data in $data_dir). Press Ctrl-C to stop it.

An admin token for tenant "default", valid 24 h (make another with build/bin/roost token mint):

  export ROOST_SERVER=$url
  export ROOST_TOKEN=$token

The operator dashboard: open $url/ui and sign in with that token. It needs tenant:admin (agents,
quarantine, webhook endpoints), agent:*:read (inboxes) and agent:*:publish (test events); this
token has them all (doc/BROWSER.md).

Try it:

  curl -s -X POST \$ROOST_SERVER/api/v1/events -H "Authorization: Bearer \$ROOST_TOKEN" \\
       -H 'Content-Type: application/json' \\
       -d '{"recipients":["agent-1"],"payload":{"task":"hello"}}'
  curl -s "\$ROOST_SERVER/api/v1/agents/agent-1/inbox?after_cursor=0" -H "Authorization: Bearer \$ROOST_TOKEN"
  build/bin/roost claim --agent agent-1

A web app served from another origin (a dev server such as Vite's) must be allowed (CORS, exact
origins, comma-separated; doc/BROWSER.md). Now: ${ROOST_HTTP_CORS_ORIGINS:-none (same-origin pages only)}.

  ROOST_HTTP_CORS_ORIGINS=http://localhost:5173 make run
  # or: build/bin/roostd ... --set http.cors_origins=http://localhost:5173

EOT
wait $pid

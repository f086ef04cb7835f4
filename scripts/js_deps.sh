#!/usr/bin/env bash
# Installs the npm packages of the JS tests with `npm ci` from each committed package-lock.json:
#   tests/js           eventsource, puppeteer-core, playwright-core, jose, http-message-signatures,
#                      standardwebhooks, @redocly/cli, ajv, TypeScript 7, the MCP SDK
#   tests/openapi-ts   openapi-typescript and the TypeScript 5 it needs (test_openapi_types)
# Idempotent: skips a directory whose node_modules was installed from the same lockfile.
# puppeteer-core and playwright-core never download a browser: the tests drive Debian's
# /usr/bin/chromium (scripts/deps.sh installs it).
set -euo pipefail
cd "$(dirname "$0")/../tests"
for d in js openapi-ts; do
  stamp=$d/node_modules/.roost-lock-stamp
  if [ -f "$stamp" ] && cmp -s "$d/package-lock.json" "$stamp"; then
    continue
  fi
  echo "deps: npm ci in tests/$d"
  (cd "$d" && npm ci --no-audit --no-fund --loglevel=error)
  cp "$d/package-lock.json" "$stamp"
done

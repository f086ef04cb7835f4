#!/usr/bin/env bash
# Installs the npm packages of the JS tests (tests/js: eventsource, puppeteer-core, playwright-core,
# jose, http-message-signatures, standardwebhooks) with `npm ci` from the committed
# package-lock.json. Idempotent: skips when node_modules was installed from the same lockfile.
# puppeteer-core and playwright-core never download a browser: the tests drive Debian's
# /usr/bin/chromium (scripts/deps.sh installs it).
set -euo pipefail
cd "$(dirname "$0")/../tests/js"
stamp=node_modules/.roost-lock-stamp
if [ -f "$stamp" ] && cmp -s package-lock.json "$stamp"; then
  exit 0
fi
echo "deps: npm ci in tests/js"
npm ci --no-audit --no-fund --loglevel=error
cp package-lock.json "$stamp"

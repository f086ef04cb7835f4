#!/usr/bin/env bash
# Installs every build and test dependency of Roost from Debian 12 packages. Idempotent: does
# nothing when all are present, runs `apt-get update` once when something is missing.
set -euo pipefail
pkgs=(build-essential cmake ninja-build pkg-config
      libevent-dev libsqlite3-dev sqlite3 libjansson-dev libssl-dev libcurl4-openssl-dev libinih-dev zlib1g-dev
      curl ca-certificates procps openssl
      prometheus
      chromium
      mariadb-server mariadb-client libmariadb-dev
      clang libclang-rt-14-dev
      clang-format python3 git)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
# Node and npm for the JS client tests (tests/js): Debian's, unless a node with npm is there.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  missing+=(nodejs npm)
fi
if [ ${#missing[@]} -ne 0 ]; then
  echo "deps: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# The npm packages of the JS client tests, from the committed lockfile.
"$(dirname "$0")/js_deps.sh"

#!/usr/bin/env bash
# Installs every build and test dependency of Roost from Debian 12 packages. Idempotent: does
# nothing when all are present, runs `apt-get update` once when something is missing.
set -euo pipefail
pkgs=(build-essential cmake ninja-build pkg-config
      libevent-dev libsqlite3-dev sqlite3 libjansson-dev libssl-dev libcurl4-openssl-dev libinih-dev zlib1g-dev
      curl ca-certificates procps)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"

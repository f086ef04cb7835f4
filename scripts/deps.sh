#!/usr/bin/env bash
# Installs Roost's dependencies from Debian 12 packages. Idempotent: does nothing when all are
# present, runs `apt-get update` once when something is missing.
#   scripts/deps.sh run   what building and running roostd need (`make run`)
#   scripts/deps.sh deb   that and what building and testing the Debian packages and the image
#                         need (`make deb`, `make image`, `make test-packages`)
#   scripts/deps.sh peers that and the peers `make bench-peers` runs roostd beside (Redis,
#                         beanstalkd); the rest of what it needs comes with the full set
#   scripts/deps.sh       that and everything the tests, benchmarks and chaos runs need (`make test`;
#                         the peers too: test_bench_scripts drives them)
set -euo pipefail
what=${1:-all}
pkgs=(build-essential cmake ninja-build pkg-config
      libevent-dev libsqlite3-dev libjansson-dev libssl-dev libcurl4-openssl-dev libinih-dev zlib1g-dev
      libmariadb-dev libpq-dev libsecret-1-dev
      curl ca-certificates)
if [ "$what" = deb ]; then
  pkgs+=(debhelper dpkg-dev lintian rsync debootstrap buildah podman runc)
elif [ "$what" = peers ]; then
  pkgs+=(redis-server redis-tools beanstalkd)
elif [ "$what" != run ]; then
  pkgs+=(sqlite3 procps openssl
         prometheus
         chromium
         mariadb-server mariadb-client galera-4 rsync
         postgresql postgresql-client
         gnuplot-nox fiu-utils faketime strace nftables iproute2 jq util-linux
         clang libclang-rt-14-dev
         clang-format python3 git
         python3-httpx python3-cryptography python3-pytest mypy python3-build python3-setuptools
         python3-wheel python3-venv
         dbus gnome-keyring libsecret-tools python3-secretstorage
         redis-server redis-tools beanstalkd)
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
# Node and npm for the JS client tests (tests/js): Debian's, unless a node with npm is there.
if [ "$what" = all ] && { ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; }; then
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
if [ "$what" = all ]; then
  "$(dirname "$0")/js_deps.sh"
fi

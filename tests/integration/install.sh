#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Packaging: `install.sh BUILD_DIR SOURCE_DIR`. Installs into a temporary DESTDIR (prefix /usr)
# and checks the files (binaries, SDK, headers, pkg-config, man pages, systemd unit, docs);
# installs once more under a temporary prefix, where the unit's ExecStart exists, and runs
# `systemd-analyze verify` and its offline security score on it; renders both man pages with
# groff -ww (no warnings) and man -l; checks that roostd.8 names every config key (roost.1 and
# the CLI's command table: tests/integration/cli.sh); promtool checks the example alert rules. systemd-analyze, groff and man are used when installed (they are optional
# tools of the machine, said so on stderr). Ends with the line "N passed, N failed".
set -uo pipefail

build=${1:?build dir}
src=${2:?source dir}

. "$(dirname "$0")/../harness/preamble.sh" install

# ---- DESTDIR install ----
DESTDIR="$dir/dest" cmake --install "$build" --prefix /usr >"$dir/install.log" 2>&1
check "cmake --install with DESTDIR succeeds" test $? -eq 0
root="$dir/dest/usr"
for f in bin/roostd bin/roost include/roost/roost.h include/roost/roost_client.h \
  share/man/man8/roostd.8 share/man/man1/roost.1 lib/systemd/system/roostd.service \
  share/doc/roost/OPERATIONS.md share/doc/roost/API.md share/doc/roost/CONFIG.md \
  share/doc/roost/roostd.conf share/doc/roost/prometheus-rules.yml \
  share/bash-completion/completions/roost share/zsh/site-functions/_roost; do
  check "installed $f" test -s "$root/$f"
done
check "libroost.so with its SONAME link" sh -c "ls '$root'/lib*/libroost.so.0 >/dev/null 2>&1 || ls '$root'/lib/*/libroost.so.0 >/dev/null 2>&1"
check "roost.pc installed" sh -c "ls '$root'/lib*/pkgconfig/roost.pc >/dev/null 2>&1 || ls '$root'/lib/*/pkgconfig/roost.pc >/dev/null 2>&1"
check "nothing installed outside DESTDIR/usr" test -z "$(cd "$dir/dest" && ls -A | grep -v '^usr$')"
check "unit ExecStart points at the installed roostd" \
  grep -q '^ExecStart=/usr/bin/roostd ' "$root/lib/systemd/system/roostd.service"
check "installed roostd runs" sh -c "'$root/bin/roostd' --version | grep -q '^roostd '"
check "installed roost runs" sh -c "'$root/bin/roost' --version | grep -q '^roost '"
for key in DynamicUser=yes ProtectSystem=strict StateDirectory=roost NoNewPrivileges=yes \
  LimitNOFILE= PrivateTmp=yes CapabilityBoundingSet= SystemCallFilter=@system-service; do
  check "unit sets $key" grep -q "^$key" "$root/lib/systemd/system/roostd.service"
done

# ---- systemd-analyze on a prefix install (ExecStart must exist for verify) ----
if command -v systemd-analyze >/dev/null 2>&1; then
  cmake --install "$build" --prefix "$dir/prefix" >>"$dir/install.log" 2>&1
  unit="$dir/prefix/lib/systemd/system/roostd.service"
  check "unit ExecStart follows --prefix" grep -q "^ExecStart=$dir/prefix/bin/roostd " "$unit"
  systemd-analyze verify --man=no "$unit" >"$dir/verify.log" 2>&1
  rc=$?
  check "systemd-analyze verify" test "$rc" -eq 0
  [ "$rc" -eq 0 ] || cat "$dir/verify.log" >&2
  score=$(systemd-analyze security --offline=yes "$unit" 2>/dev/null |
    sed -n 's/.*Overall exposure level for roostd.service: \([0-9.]*\).*/\1/p')
  check "systemd-analyze security exposure below 2.0 (got '$score')" \
    awk -v s="$score" 'BEGIN { exit !(s != "" && s + 0 < 2.0) }'
else
  echo "note: systemd-analyze not installed, unit not verified" >&2
fi

# ---- the example alert rules (promtool comes with the prometheus package: never skipped) ----
check "promtool check rules packaging/prometheus-rules.yml" \
  sh -c "promtool check rules '$src/packaging/prometheus-rules.yml' >'$dir/rules.log' 2>&1"

# ---- man pages ----
for page in "$src/doc/man/roostd.8" "$src/doc/man/roost.1"; do
  if command -v groff >/dev/null 2>&1; then
    out=$(groff -man -Tutf8 -ww -z "$page" 2>&1)
    check "groff -ww renders $(basename "$page") without warnings" test -z "$out"
    [ -z "$out" ] || echo "$out" >&2
  else
    echo "note: groff not installed, $(basename "$page") not checked" >&2
  fi
  if command -v man >/dev/null 2>&1; then
    check "man -l renders $(basename "$page")" sh -c "MANWIDTH=80 man -l '$page' 2>/dev/null | grep -q NAME"
  fi
done
# The man page documents every config key (the table in config.h is the source).
for key in $("$build/bin/roostd" --print-config | sed -n 's/^\([a-z_.0-9]*\) = .*/\1/p'); do
  check "roostd.8 names $key" grep -q -- "$(printf '%s' "$key" | sed 's/[.]/\\./g')" "$src/doc/man/roostd.8"
done

summary

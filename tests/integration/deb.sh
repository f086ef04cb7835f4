#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The Debian packages, installed, upgraded and purged in a clean Debian 12 root (issue 34):
# `deb.sh BUILD_DIR SOURCE_DIR`. Needs root (debootstrap, chroot, unshare).
#  * builds roostd, roost and libroost-dev with scripts/deb.sh (lintian must pass there) into
#    BUILD_DIR/deb-test, and checks what each package holds: the conffile, the unit (the one of
#    packaging/roostd.service with User=roost/Group=roost for DynamicUser), man pages,
#    completions, libroost and roost.pc.
#  * a minbase bookworm root from debootstrap, from the Debian mirror this machine's apt uses
#    (/etc/apt/sources.list*); the bootstrapped root is cached as a tarball in
#    BUILD_DIR/deb-cache (keyed by mirror), so only the first run pays for debootstrap. Every run
#    unpacks it into its own temp dir; the downloaded .debs are kept in BUILD_DIR/deb-cache too.
#  * apt inside the root installs the three .debs, resolving their dependencies from the mirror:
#    the roost system user (nologin, home /var/lib/roost), /var/lib/roost roost:roost 0700,
#    /etc/roost/roostd.conf a conffile root:roost 0640.
#  * roostd from the root, the way the installed unit says (its ExecStart as its User=; there is
#    no systemd in the root), in a network namespace of its own so the packaged config's
#    127.0.0.1:8080 is free; /readyz answers; the installed CLI mints a token, publishes and
#    claims; roostd stops cleanly on SIGTERM.
#  * upgrade: a rebuild of the tree as a higher version; apt installs it over the first with a
#    local edit of the conffile; the edit, the uid and the data stay (the message published before
#    the upgrade is claimed after it, with its payload).
#  * purge (with --autoremove): no /etc/roost, no /var/lib/roost, no roost user or group, and the
#    root's file list is the one it had before the install (apt's and dpkg's own state aside).
# Every chroot runs in a mount namespace of its own (unshare -m), so its /proc and /dev mounts
# end with it. Ends with the line "N passed, N failed".
set -uo pipefail

build=${1:?build dir}
src=${2:?source dir}
build=$(cd "$build" && pwd)
src=$(cd "$src" && pwd)

. "$(dirname "$0")/../harness/preamble.sh" deb

[ "$(id -u)" -eq 0 ] || abort "deb.sh needs root (debootstrap, chroot, unshare)"
need debootstrap dpkg-buildpackage dh lintian unshare chroot curl ip tar flock pkg-config
t0=$SECONDS
stamp() { echo "deb: $1 after $((SECONDS - t0)) s" >&2; }

# ---- the packages ----
out=$build/deb-test
scripts_deb() { "$src/scripts/deb.sh" "$out" >"$dir/deb-build-$1.log" 2>&1; }
ROOST_DEB_VERSION= scripts_deb 1
rc=$?
check "scripts/deb.sh builds the packages and lintian passes" test "$rc" -eq 0
[ "$rc" -eq 0 ] || abort "$(tail -n 40 "$dir/deb-build-1.log")"
stamp "packages built"
v1=$(cd "$src" && dpkg-parsechangelog -S Version)
arch=$(dpkg --print-architecture)
mkdir -p "$dir/v1" "$dir/v2"
for p in roostd roost libroost-dev; do
  cp "$out/${p}_${v1}_$arch.deb" "$dir/v1/" || abort "no ${p}_${v1}_$arch.deb in $out"
done
contents() { dpkg-deb -c "$dir/v1/${1}_${v1}_$arch.deb" | awk '{print $6}' | sed 's|^\./|/|'; }
has() { contents "$1" | grep -qx -- "$2"; }
for f in /usr/bin/roostd /etc/roost/roostd.conf /lib/systemd/system/roostd.service \
  /usr/share/man/man8/roostd.8.gz /usr/share/doc/roostd/OPERATIONS.md.gz; do
  check "roostd holds $f" has roostd "$f"
done
for f in /usr/bin/roost /usr/share/man/man1/roost.1.gz /usr/share/bash-completion/completions/roost \
  /usr/share/zsh/vendor-completions/_roost "/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)/libroost.so.0"; do
  check "roost holds $f" has roost "$f"
done
ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
for f in /usr/include/roost/roost.h "/usr/lib/$ma/libroost.so" "/usr/lib/$ma/libroost.a" \
  "/usr/lib/$ma/pkgconfig/roost.pc"; do
  check "libroost-dev holds $f" has libroost-dev "$f"
done
check "/etc/roost/roostd.conf is a conffile" \
  sh -c "dpkg-deb --info '$dir/v1/roostd_${v1}_$arch.deb' conffiles | grep -qx /etc/roost/roostd.conf"
check "nothing of roostd under /var (the postinst makes /var/lib/roost)" \
  test -z "$(contents roostd | grep '^/var')"
dpkg-deb --fsys-tarfile "$dir/v1/roostd_${v1}_$arch.deb" |
  tar -xO ./lib/systemd/system/roostd.service >"$dir/unit"
sed 's/^DynamicUser=yes$/User=roost\nGroup=roost/' "$src/packaging/roostd.service" >"$dir/unit.want"
check "the packaged unit is packaging/roostd.service with User=roost and Group=roost" \
  cmp -s "$dir/unit" "$dir/unit.want"
dpkg-deb --fsys-tarfile "$dir/v1/libroost-dev_${v1}_$arch.deb" |
  tar -xO "./usr/lib/$ma/pkgconfig/roost.pc" >"$dir/roost.pc"
check "roost.pc: prefix /usr, the multiarch libdir, the project's version" \
  sh -c "grep -qx 'prefix=/usr' '$dir/roost.pc' && grep -qx 'libdir=\${prefix}/lib/$ma' '$dir/roost.pc' &&
         grep -qx 'Version: ${v1%%[-+~]*}' '$dir/roost.pc'"

# The upgrade: the same tree rebuilt as a higher version (incremental: the copy's build dir stays).
v2="$v1+upgradetest1"
ROOST_DEB_VERSION=$v2 ROOST_DEB_LINTIAN=0 scripts_deb 2
check "the rebuild as $v2" test $? -eq 0
check "$v2 sorts above $v1" dpkg --compare-versions "$v2" gt "$v1"
for p in roostd roost libroost-dev; do
  cp "$out/${p}_${v2}_$arch.deb" "$dir/v2/" || abort "no ${p}_${v2}_$arch.deb in $out"
done
stamp "upgrade packages built"

# ---- the root: debootstrap's minbase bookworm from this machine's mirror, cached ----
. "$src/scripts/debroot.sh"
cache=$build/deb-cache
debroot_mirror || abort "no bookworm archive in /etc/apt/sources.list*"
echo "deb: mirror $debroot_mirror${debroot_security:+, security $debroot_security}" >&2
base=$(debroot_base "$cache") || abort "debootstrap failed"
stamp "base root ready ($base)"
root=$dir/root
debroot_unpack "$base" "$root" || abort "cannot unpack $base"
cp -r "$dir/v1" "$dir/v2" "$root/tmp/"
stamp "base root unpacked"

in_root() { debroot_run "$root" "$cache/archives" "$@"; }
st() { in_root stat -c "$1" "$2"; }
export root cache
export -f in_root st debroot_run

# The root's file list, apt's, dpkg's and the logs' state aside (compared after the purge).
snapshot() {
  (cd "$root" && find . -xdev \( -path ./proc -o -path ./dev -o -path ./tmp -o -path ./var/cache \
    -o -path ./var/lib/apt -o -path ./var/lib/dpkg -o -path ./var/log -o -path ./run \) -prune \
    -o -print | grep -vx './etc/\(passwd\|group\|shadow\|gshadow\|subuid\|subgid\)-' | sort)
}

in_root apt-get update -q >"$dir/apt-update.log" 2>&1
check "apt-get update in the root" test $? -eq 0
snapshot >"$dir/before"

# ---- install ----
in_root apt-get install -y -q --no-install-recommends /tmp/v1/roostd_${v1}_$arch.deb \
  /tmp/v1/roost_${v1}_$arch.deb /tmp/v1/libroost-dev_${v1}_$arch.deb >"$dir/install.log" 2>&1
rc=$?
check "apt installs the three packages (dependencies from the mirror)" test "$rc" -eq 0
[ "$rc" -eq 0 ] || abort "$(tail -n 30 "$dir/install.log")"
stamp "installed"
pw=$(in_root getent passwd roost)
IFS=: read -r _ _ uid gid _ home shell <<<"$pw"
check "the roost user: a system uid, home /var/lib/roost, no login shell ($pw)" \
  sh -c "[ '${uid:-x}' -lt 1000 ] && [ '$home' = /var/lib/roost ] && [ '$shell' = /usr/sbin/nologin ]"
check "the roost group is the user's" test "$(in_root getent group roost | cut -d: -f3)" = "$gid"
check "/var/lib/roost roost:roost 0700" test "$(st '%U:%G %a' /var/lib/roost)" = "roost:roost 700"
check "/etc/roost/roostd.conf root:roost 0640" \
  test "$(st '%U:%G %a' /etc/roost/roostd.conf)" = "root:roost 640"
check "dpkg lists /etc/roost/roostd.conf as roostd's conffile" \
  bash -c "in_root dpkg-query -W -f='\${Conffiles}' roostd | grep -q '/etc/roost/roostd.conf '"
check "the installed unit runs roostd as roost" \
  bash -c "in_root cat /lib/systemd/system/roostd.service | grep -qx User=roost"
check "roost's man page and completion installed" \
  in_root test -s /usr/share/man/man1/roost.1.gz -a -s /usr/share/bash-completion/completions/roost
check "libroost.so.0 known to the dynamic linker" bash -c "in_root ldconfig -p | grep -q 'libroost.so.0 '"
# Every module roost.pc requires (Requires.private too: pkg-config reads their Cflags) comes with
# libroost-dev's dependencies: the host's pkg-config over the root's .pc files only.
check "pkg-config --cflags --libs roost resolves in the root (libroost-dev pulls what roost.pc requires)" \
  sh -c "PKG_CONFIG_PATH= PKG_CONFIG_SYSROOT_DIR='$root' \
    PKG_CONFIG_LIBDIR='$root/usr/lib/$ma/pkgconfig:$root/usr/share/pkgconfig' \
    pkg-config --cflags --libs roost >/dev/null"

# roostd as the unit would start it: its ExecStart, as its User= and Group=.
unit_get() { in_root cat /lib/systemd/system/roostd.service | sed -n "s/^$1=//p" | head -n1; }
exec_start=$(unit_get ExecStart)
user=$(unit_get User)
listen=$(in_root cat /etc/roost/roostd.conf | sed -n 's/^listen *= *//p')
check "ExecStart and User= read from the installed unit ($exec_start as $user)" \
  test -n "$exec_start" -a "$user" = roost -a -n "$listen"

# session N SCRIPT: one network namespace holds roostd (started as the unit says) and runs the
# commands of SCRIPT (a shell fragment with $roost_cli) once /readyz answers; roostd then gets
# SIGTERM. Prints the fragment's output; its log in $dir/session-N.log.
cat >"$dir/session.sh" <<'EOF'
#!/bin/sh
# Runs inside the network namespace: $1 root, $2 listen address, $3 user, $4 the fragment, the
# rest ExecStart. roostd runs through chroot + setpriv; the CLI through chroot.
root=$1 listen=$2 user=$3 fragment=$4
shift 4
ip link set lo up || exit 125
mount -t proc proc "$root/proc" && mount --rbind /dev "$root/dev" || exit 125
chroot "$root" setpriv --reuid="$user" --regid="$user" --init-groups "$@" &
pid=$!
n=0
until curl -fsS -o /dev/null "http://$listen/readyz" 2>/dev/null; do
  kill -0 "$pid" 2>/dev/null || { echo "roostd exited" >&2; exit 124; }
  n=$((n + 1))
  [ "$n" -lt 3000 ] || { echo "no /readyz in 30 s" >&2; kill -9 "$pid"; exit 124; }
  sleep 0.01
done
echo ready >&2
roost_cli() { chroot "$root" env ROOST_SERVER="http://$listen" roost "$@"; }
mint() { chroot "$root" setpriv --reuid="$user" --regid="$user" --init-groups \
  roost token mint --data-dir /var/lib/roost --tenant t1 \
  --scope 'agent:*:consume agent:*:publish agent:*:read'; }
. "$fragment"
frc=$?
kill -TERM "$pid"
wait "$pid"
echo "roostd exit $?" >&2
exit "$frc"
EOF
chmod +x "$dir/session.sh"
session() { # session N FRAGMENT_FILE
  # shellcheck disable=SC2086
  unshare --mount --propagation private --net --fork --kill-child -- "$dir/session.sh" "$root" "$listen" \
    "$user" "$2" $exec_start 2>"$dir/session-$1.log"
}
field() { sed -n "s/.*\"$1\":\"\([^\"]*\)\".*/\1/p"; }

cat >"$dir/s1" <<'EOF'
tok=$(mint) || exit 1
export ROOST_TOKEN=$tok
roost_cli publish --compact --agent pkg.a --payload '{"n":1}' >/dev/null || exit 1
roost_cli publish --compact --agent pkg.a --payload '{"n":2,"kept":"across the upgrade"}' >/dev/null || exit 1
roost_cli claim --compact --agent pkg.a --consumer w1 --limit 1 || exit 1
EOF
claim1=$(session 1 "$dir/s1")
check "first run: roostd from the root answers /readyz" grep -qx ready "$dir/session-1.log"
lease1=$(printf '%s' "$claim1" | field lease_token)
check "the installed CLI minted, published twice and claimed the first event" \
  sh -c "printf '%s' '$claim1' | grep -q '\"n\":1' && test -n '$lease1'"
check "roostd exits 0 on SIGTERM" grep -qx "roostd exit 0" "$dir/session-1.log"
[ "$failed" -eq 0 ] || cat "$dir/session-1.log" >&2
check "roostd made its state in /var/lib/roost as roost" \
  bash -c "in_root find /var/lib/roost -mindepth 1 ! -user roost | grep -c . | grep -qx 0 &&
         test -n \"\$(in_root find /var/lib/roost -mindepth 1 -print -quit)\""
stamp "first run"

# ---- upgrade, with a local edit of the conffile ----
in_root sh -c 'echo "# a local edit the upgrade keeps" >>/etc/roost/roostd.conf'
in_root apt-get install -y -q --no-install-recommends /tmp/v2/roostd_${v2}_$arch.deb \
  /tmp/v2/roost_${v2}_$arch.deb /tmp/v2/libroost-dev_${v2}_$arch.deb >"$dir/upgrade.log" 2>&1
rc=$?
check "apt upgrades to $v2" test "$rc" -eq 0
[ "$rc" -eq 0 ] || cat "$dir/upgrade.log" >&2
check "roostd is at $v2" test "$(in_root dpkg-query -W -f='${Version}' roostd)" = "$v2"
check "the conffile's local edit is kept" \
  bash -c "in_root cat /etc/roost/roostd.conf | grep -qx '# a local edit the upgrade keeps'"
check "no .dpkg-new/.dpkg-old beside it" sh -c "! ls '$root/etc/roost' | grep -q dpkg"
check "the roost user keeps its uid" test "$(in_root id -u roost)" = "$uid"
check "/var/lib/roost still roost:roost 0700" test "$(st '%U:%G %a' /var/lib/roost)" = "roost:roost 700"
cat >"$dir/s2" <<'EOF'
tok=$(mint) || exit 1
export ROOST_TOKEN=$tok
roost_cli claim --compact --agent pkg.a --consumer w2 --limit 5 || exit 1
EOF
claim2=$(session 2 "$dir/s2")
check "after the upgrade: roostd answers /readyz" grep -qx ready "$dir/session-2.log"
check "the event published before the upgrade is claimed after it, payload intact" \
  sh -c "printf '%s' '$claim2' | grep -q '\"kept\":\"across the upgrade\"'"
check "roostd exits 0 on SIGTERM after the upgrade" grep -qx "roostd exit 0" "$dir/session-2.log"
[ "$failed" -eq 0 ] || cat "$dir/session-2.log" >&2
stamp "upgraded"

# ---- purge ----
in_root apt-get purge -y -q --autoremove roostd roost libroost-dev >"$dir/purge.log" 2>&1
check "apt purges the packages" test $? -eq 0
check "no /etc/roost" test ! -e "$root/etc/roost"
check "no /var/lib/roost" test ! -e "$root/var/lib/roost"
check "no roost user" bash -c "! in_root getent passwd roost >/dev/null"
check "no roost group" bash -c "! in_root getent group roost >/dev/null"
check "no package of roost left in dpkg's database" \
  bash -c "! in_root dpkg-query -W -f='\${Package} \${db:Status-Abbrev}\n' roostd roost libroost-dev 2>/dev/null | grep -v ' [pu]n *\$' | grep -q ."
snapshot >"$dir/after"
check "the root holds the files it had before the install, no more, no fewer" \
  diff "$dir/before" "$dir/after"
stamp "purged"

summary

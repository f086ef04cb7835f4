#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `make image`: an OCI image of roostd built from the Debian packages on a debootstrapped Debian 12
# root, with buildah. Needs root. Usage: scripts/image.sh DEB_DIR [IMAGE]
#   DEB_DIR  holds roostd_*.deb and roost_*.deb of one version (`make deb` leaves them in build/deb)
#   IMAGE    the name to commit (default localhost/roostd:VERSION)
# The root is debroot_base's (scripts/debroot.sh; cached in ROOST_DEB_CACHE, default
# build/deb-cache); apt installs the two .debs there (dependencies from the machine's mirror),
# then the apt lists and .debs go. The image: user roost, volume /var/lib/roost (the data), port
# 8080 (ROOST_LISTEN=0.0.0.0:8080 over the packaged config's loopback address), entrypoint the
# packaged unit's ExecStart, and a health check on GET /readyz (bash's /dev/tcp: no curl in the
# image). Prints the image name. doc/OPERATIONS.md, "Container image", says how to run it.
set -euo pipefail
export BUILDAH_FORMAT=docker   # HEALTHCHECK is a Docker-format field
src=$(cd "$(dirname "$0")/.." && pwd)
debs=$(cd "${1:?DEB_DIR}" && pwd)
. "$src/scripts/debroot.sh"
for tool in buildah debootstrap unshare; do
  command -v "$tool" >/dev/null || { echo "image: missing $tool (scripts/deps.sh installs it)" >&2; exit 1; }
done
[ "$(id -u)" -eq 0 ] || { echo "image: needs root (debootstrap, chroot)" >&2; exit 1; }

shopt -s nullglob
roostd_deb=("$debs"/roostd_*.deb)
roost_deb=("$debs"/roost_*.deb)
[ ${#roostd_deb[@]} -eq 1 ] && [ ${#roost_deb[@]} -eq 1 ] ||
  { echo "image: $debs must hold one roostd_*.deb and one roost_*.deb" >&2; exit 1; }
version=$(dpkg-deb -f "${roostd_deb[0]}" Version)
image=${2:-localhost/roostd:$version}
cache=${ROOST_DEB_CACHE:-$src/build/deb-cache}

work=$(mktemp -d "${TMPDIR:-/tmp}/roost-image-XXXXXX")
ctr=
cleanup() {
  [ -z "$ctr" ] || buildah rm "$ctr" >/dev/null 2>&1 || true
  rm -rf --one-file-system "$work"
}
trap cleanup EXIT

base=$(debroot_base "$cache")
root=$work/root
debroot_unpack "$base" "$root"
mkdir "$root/tmp/debs"
cp "${roostd_deb[0]}" "${roost_deb[0]}" "$root/tmp/debs/"
debroot_run "$root" "$cache/archives" sh -c 'apt-get update -q &&
  apt-get install -y -q --no-install-recommends /tmp/debs/*.deb' >"$work/apt.log" 2>&1 ||
  { tail -n 30 "$work/apt.log" >&2; echo "image: apt-get install failed" >&2; exit 1; }
rm -rf "$root/tmp/debs" "$root"/var/lib/apt/lists/* "$root/etc/apt/apt.conf.d/90host-acquire" \
  "$root/etc/dpkg/dpkg.cfg.d/unsafe-io"
: >"$root/etc/resolv.conf"

# The image's command is the unit's: one source of truth for how roostd starts.
unit=$root/lib/systemd/system/roostd.service
exec_start=$(sed -n 's/^ExecStart=//p' "$unit")
user=$(sed -n 's/^User=//p' "$unit")
[ -n "$exec_start" ] && [ "$user" = roost ] || { echo "image: unexpected unit $unit" >&2; exit 1; }
entrypoint=$(printf '%s\n' $exec_start | sed 's/.*/"&"/' | paste -sd, -)

# buildah 1.28 splits the health check like a shell (it does not read a JSON array): one CMD with
# the bash script as one quoted word.
health='exec 3<>/dev/tcp/127.0.0.1/8080 && printf "GET /readyz HTTP/1.0\r\n\r\n" >&3 && head -n1 <&3 | grep -q " 200 "'
ctr=$(buildah from scratch)
mnt=$(buildah mount "$ctr")
# tar keeps owners and modes (/var/lib/roost roost:roost 0700), which `buildah copy` would not.
tar -C "$root" -cf - . | tar -C "$mnt" -xpf - --numeric-owner
buildah umount "$ctr" >/dev/null
buildah config \
  --user roost:roost \
  --workingdir /var/lib/roost \
  --volume /var/lib/roost \
  --port 8080/tcp \
  --env ROOST_LISTEN=0.0.0.0:8080 \
  --entrypoint "[$entrypoint]" \
  --cmd '' \
  --stop-signal SIGTERM \
  --healthcheck "CMD /bin/bash -c '$health'" \
  --healthcheck-interval 30s --healthcheck-timeout 5s --healthcheck-start-period 10s \
  --healthcheck-retries 3 \
  --label org.opencontainers.image.title=roostd \
  --label "org.opencontainers.image.version=$version" \
  "$ctr"
buildah commit --quiet --format docker --rm "$ctr" "$image" >/dev/null
ctr=
echo "$image"

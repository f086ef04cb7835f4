# SPDX-License-Identifier: MIT
# Sourced by tests/integration/deb.sh and scripts/image.sh: a clean Debian 12 root to install the
# packages into. Needs root (debootstrap, chroot, unshare).
#   debroot_mirror             sets $debroot_mirror and $debroot_security: the bookworm archive
#                              (and its security archive) of this machine's /etc/apt/sources.list*
#   debroot_base CACHE_DIR     prints the path of a minbase bookworm root as a tarball, made with
#                              debootstrap from that mirror the first time and cached in CACHE_DIR
#                              (one per mirror; a lock keeps concurrent runs from racing)
#   debroot_unpack TAR ROOT    unpacks it into ROOT and points its apt at the same mirror, with
#                              the machine's Acquire:: settings and unsafe I/O for dpkg
#   debroot_run ROOT ARCHIVES CMD...   CMD chrooted in ROOT with /proc and /dev, the .deb cache
#                              ARCHIVES on its /var/cache/apt/archives, all in a mount namespace
#                              of its own (the mounts end with CMD)

# The root's files and the .debs copied into it must be readable by its users (_apt, roost)
# whatever umask the caller runs under.
umask 022

debroot_mirror() {
  local f
  debroot_sources() {
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
      [ -f "$f" ] && awk '$1 == "deb" { o = ($2 ~ /^\[/); print $(2 + o), $(3 + o) }' "$f"
    done
    for f in /etc/apt/sources.list.d/*.sources; do
      [ -f "$f" ] && awk 'BEGIN { RS = ""; FS = "\n" }
        { u = ""; s = ""; t = 0; en = 1
          for (i = 1; i <= NF; i++) {
            if ($i ~ /^Types:.*deb( |$)/) t = 1
            if ($i ~ /^Enabled: *no/) en = 0
            if ($i ~ /^URIs:/) { u = $i; sub(/^URIs: */, "", u); sub(/ .*/, "", u) }
            if ($i ~ /^Suites:/) { s = $i; sub(/^Suites: */, "", s) }
          }
          if (t && en && u != "") { n = split(s, a, " "); for (j = 1; j <= n; j++) print u, a[j] } }' "$f"
    done
  }
  debroot_mirror=$(debroot_sources | awk '$2 == "bookworm" { print $1; exit }')
  debroot_security=$(debroot_sources | awk '$2 == "bookworm-security" { print $1; exit }')
  [ -n "$debroot_mirror" ] || { echo "debroot: no bookworm archive in /etc/apt/sources.list*" >&2; return 1; }
}

debroot_base() { # debroot_base CACHE_DIR
  local cache=$1 base tmp
  debroot_mirror || return 1
  mkdir -p "$cache" || return 1
  base=$cache/bookworm-minbase-$(printf '%s' "$debroot_mirror" | sha256sum | cut -c1-12).tar
  (
    flock 9
    [ -s "$base" ] && exit 0
    tmp=$(mktemp -d "$cache/boot-XXXXXX") || exit 1
    echo "debroot: debootstrap --variant=minbase bookworm from $debroot_mirror (cached in $base)" >&2
    if ! debootstrap --variant=minbase bookworm "$tmp/root" "$debroot_mirror" >"$tmp/log" 2>&1; then
      tail -n 20 "$tmp/log" >&2
      rm -rf --one-file-system "$tmp"
      exit 1
    fi
    tar -C "$tmp/root" -cf "$base.tmp" . && mv "$base.tmp" "$base"
    rc=$?
    rm -rf --one-file-system "$tmp"
    exit $rc
  ) 9>"$cache/lock" || return 1
  printf '%s\n' "$base"
}

debroot_unpack() { # debroot_unpack TAR ROOT
  local tar=$1 root=$2 f
  debroot_mirror || return 1
  mkdir -p "$root" && tar -C "$root" -xf "$tar" || return 1
  {
    echo "deb $debroot_mirror bookworm main"
    echo "deb $debroot_mirror bookworm-updates main"
    [ -z "$debroot_security" ] || echo "deb $debroot_security bookworm-security main"
  } >"$root/etc/apt/sources.list"
  # The machine's settings for reaching the mirror, as apt itself reads them (apt-config dump
  # prints one whole statement a line): a line-wise copy of apt.conf.d once took the opening line
  # of a block ("Acquire::IndexTargets {", appstream's), which swallowed every setting after it
  # (Acquire::Languages "none" among them, so apt fetched 6 MB of translations). Retries: the
  # install fetches some 30 packages from the mirror, and one dropped connection must not fail it.
  {
    apt-config dump | grep -E '^Acquire::(Check-Valid-Until|Check-Date|Languages|GzipIndexes|Retries|https?::(Proxy|Timeout))'
    apt-config dump | grep -q '^Acquire::Retries ' || echo 'Acquire::Retries "5";'
  } >"$root/etc/apt/apt.conf.d/90host-acquire"
  echo force-unsafe-io >"$root/etc/dpkg/dpkg.cfg.d/unsafe-io"
  cp /etc/resolv.conf "$root/etc/resolv.conf"
}

debroot_run() { # debroot_run ROOT ARCHIVES CMD...
  local root=$1 archives=$2
  shift 2
  mkdir -p "$archives/partial"
  unshare --mount --propagation private --fork --kill-child -- sh -c '
    r=$1 archives=$2; shift 2
    mount -t proc proc "$r/proc" && mount --rbind /dev "$r/dev" &&
      mount --bind "$archives" "$r/var/cache/apt/archives" || exit 125
    exec env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LC_ALL=C.UTF-8 \
      DEBIAN_FRONTEND=noninteractive chroot "$r" "$@"' \
    sh "$root" "$archives" "$@"
}

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `make deb`: the Debian packages roostd, roost and libroost-dev from this tree, with debhelper
# (debian/). Usage: scripts/deb.sh [OUT_DIR]   (default build/deb)
# Copies the tree (git's files, tracked and untracked but not ignored, as they are in the work
# tree) to OUT_DIR/src/roost, runs `dpkg-buildpackage -b -us -uc` there and leaves the .debs,
# .buildinfo and .changes in OUT_DIR; then runs lintian on them (error and warning tags fail;
# debian/*.lintian-overrides say why each remaining tag is kept). The copy keeps its CMake build
# directory between runs, so a second run recompiles only what changed.
#   ROOST_DEB_VERSION=V   build version V instead of debian/changelog's (an entry is added to the
#                         copy; the package test uses it to build an upgrade)
#   ROOST_DEB_LINTIAN=0   skip lintian
set -euo pipefail
export LC_ALL=C
src=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$src/build/deb}
mkdir -p "$out"
out=$(cd "$out" && pwd)
tree=$out/src/roost

for tool in dpkg-buildpackage dh rsync; do
  command -v "$tool" >/dev/null || { echo "deb: missing $tool (scripts/deps.sh installs it)" >&2; exit 1; }
done

# The changelog's version must be the project's (CMakeLists.txt) or a Debian revision of it.
project_version=$(sed -n 's/^project(roost VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
changelog_version=$(cd "$src" && dpkg-parsechangelog -S Version)
case $changelog_version in
  "$project_version" | "$project_version"[-+~]*) ;;
  *) echo "deb: debian/changelog is at $changelog_version, CMakeLists.txt at $project_version;" \
      "add a changelog entry (dch -v $project_version)" >&2; exit 1 ;;
esac

# The copy: the tree's files, not its build directories; what the last build left beside them
# (the obj-* CMake directory, debian/tmp) stays, so ninja rebuilds only what changed.
mkdir -p "$tree"
files=$out/files.list
if git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  git -C "$src" ls-files -z --cached --others --exclude-standard >"$files"
else
  (cd "$src" && find . -path ./build -prune -o -path './build-*' -prune -o -type f -print0) >"$files"
fi
rsync -a --from0 --files-from="$files" "$src/" "$tree/"
# Files deleted from the tree since the last copy go from the copy too (debian/ aside, where the
# build leaves its own files).
tr '\0' '\n' <"$files" | sort >"$files.sorted"
(cd "$tree" && find . -path ./debian -prune -o -path './obj-*' -prune -o -type f -print | sed 's|^\./||' | sort) |
  comm -23 - "$files.sorted" | while IFS= read -r f; do rm -f -- "$tree/$f"; done
# dh's logs of the last run would make it skip steps: each run starts from debian/rules' top.
rm -rf "$tree/debian/.debhelper" "$tree"/debian/*.debhelper.log "$tree/debian/debhelper-build-stamp"

if [ -n "${ROOST_DEB_VERSION:-}" ]; then
  {
    echo "roost ($ROOST_DEB_VERSION) bookworm; urgency=medium"
    echo
    echo "  * Rebuilt from the tree as $ROOST_DEB_VERSION."
    echo
    echo " -- $(cd "$src" && dpkg-parsechangelog -S Maintainer)  $(date -R)"
    echo
    cat "$src/debian/changelog"
  } >"$tree/debian/changelog"
fi
version=$(cd "$tree" && dpkg-parsechangelog -S Version)
arch=$(dpkg --print-architecture)

rm -f "$out"/src/*.deb "$out"/src/*.ddeb "$out"/src/*.buildinfo "$out"/src/*.changes
(cd "$tree" && dpkg-buildpackage -b -us -uc -nc -j"$(nproc)") >"$out/build.log" 2>&1 || {
  tail -n 60 "$out/build.log" >&2
  echo "deb: dpkg-buildpackage failed (whole log: $out/build.log)" >&2
  exit 1
}
rm -f "$out"/*.deb "$out"/*.buildinfo "$out"/*.changes
mv "$out"/src/*.deb "$out"/src/*.buildinfo "$out"/src/*.changes "$out/"
changes=$out/roost_${version}_${arch}.changes

if [ "${ROOST_DEB_LINTIAN:-1}" != 0 ]; then
  command -v lintian >/dev/null || { echo "deb: missing lintian (scripts/deps.sh installs it)" >&2; exit 1; }
  # (--show-overrides is not used: lintian 2.116 exits 2 with it even when nothing fails.)
  # mismatched-override: see debian/roostd.lintian-overrides (tail-merged string fragments).
  lintian --fail-on error,warning --display-info --suppress-tags mismatched-override "$changes" \
    >"$out/lintian.log" 2>&1 || {
    cat "$out/lintian.log" >&2
    echo "deb: lintian failed" >&2
    exit 1
  }
  # What is left are info tags (none today): shown, not failed.
  grep '^[EWIP]: ' "$out/lintian.log" >&2 || true
fi
ls -1 "$out"/*.deb

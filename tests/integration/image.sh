#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The container image (issue 34): `image.sh BUILD_DIR SOURCE_DIR`. Needs root; runs after test_deb
# (ctest fixture deb_packages), whose last build left roostd_*.deb and roost_*.deb in
# BUILD_DIR/deb-test.
#  * scripts/image.sh builds the image with buildah from those .debs on the debootstrapped root
#    (the cache of test_deb): user roost, volume /var/lib/roost, ROOST_LISTEN=0.0.0.0:8080, the
#    unit's ExecStart as entrypoint, a health check on /readyz.
#  * podman (runtime runc: crun refuses this machine's hybrid cgroup hierarchy) runs it with no
#    network but its loopback and a named volume on /var/lib/roost; `podman healthcheck run`
#    turns healthy (podman's periodic checks need systemd, which this machine lacks); roostd runs
#    as roost, not root; the installed CLI mints, publishes and claims inside; SIGTERM (podman
#    stop) ends it with 0.
#  * a second container on the same volume claims the event the first one left: the data lives on
#    the volume, not in the container.
# Everything it makes (image, containers, volume) carries a name of its own and is removed at
# exit. Ends with the line "N passed, N failed".
set -uo pipefail

build=${1:?build dir}
src=${2:?source dir}
build=$(cd "$build" && pwd)
src=$(cd "$src" && pwd)

. "$(dirname "$0")/../harness/preamble.sh" image

[ "$(id -u)" -eq 0 ] || abort "image.sh needs root (debootstrap, chroot, podman)"
need buildah podman runc debootstrap unshare
t0=$SECONDS
stamp() { echo "image: $1 after $((SECONDS - t0)) s" >&2; }

name=roost-test-$$-$RANDOM
image=localhost/$name:test
vol=$name-data
pm() { podman --runtime runc "$@"; }
podman_cleanup() {
  podman rm -f -t 0 "$name-1" "$name-2" >/dev/null 2>&1
  podman volume rm -f "$vol" >/dev/null 2>&1
  podman rmi -f "$image" >/dev/null 2>&1
  preamble_cleanup
}
trap podman_cleanup EXIT

ROOST_DEB_CACHE=$build/deb-cache "$src/scripts/image.sh" "$build/deb-test" "$image" \
  >"$dir/image-build.log" 2>&1
rc=$?
check "scripts/image.sh builds the image from the .debs" test "$rc" -eq 0
[ "$rc" -eq 0 ] || abort "$(tail -n 30 "$dir/image-build.log")"
stamp "image built"
cfg=$(podman image inspect "$image" --format '{{.Config.User}}|{{json .Config.Volumes}}|{{json .Config.Env}}|{{json .Config.Entrypoint}}')
check "image: user roost:roost, volume /var/lib/roost, listen 0.0.0.0:8080, the unit's ExecStart ($cfg)" \
  sh -c "printf '%s' '$cfg' | grep -q '^roost:roost|{\"/var/lib/roost\":{}}|.*ROOST_LISTEN=0.0.0.0:8080.*|\[\"/usr/bin/roostd\",\"--config\",\"/etc/roost/roostd.conf\",\"--data-dir\",\"/var/lib/roost\"\]$'"
hc=$(podman image inspect "$image" --format '{{json .HealthCheck}}' 2>/dev/null)
check "image: a health check on /readyz ($hc)" sh -c "printf '%s' '$hc' | grep -q readyz"

pm volume create "$vol" >/dev/null
# This machine's hard limits are below podman's defaults and root here lacks CAP_SYS_RESOURCE, so
# the container gets the machine's own open-file limit and a modest process limit.
run() { # run N: a container of the image on the volume, detached
  pm run -d --name "$name-$1" --network none --ulimit "nofile=$(ulimit -Hn):$(ulimit -Hn)" \
    --ulimit nproc=4096:4096 -v "$vol:/var/lib/roost" "$image" >>"$dir/podman.log" 2>&1
}
healthy() { podman healthcheck run "$1" >/dev/null 2>&1; }
ex() { local c=$1; shift; podman exec -e ROOST_SERVER=http://127.0.0.1:8080 ${tok:+-e ROOST_TOKEN=$tok} "$c" "$@"; }
stopped_with_0() { # stopped_with_0 CONTAINER: podman stop (SIGTERM) and exit code 0
  podman stop -t 20 "$1" >/dev/null 2>&1 &&
    test "$(podman inspect "$1" --format '{{.State.ExitCode}}')" = 0
}

run 1
check "podman runs the image" test $? -eq 0
check "the health check turns healthy" wait_until 30 healthy "$name-1"
check "roostd runs as roost, not root" test "$(podman exec "$name-1" id -un)" = roost
check "/var/lib/roost on the volume: roost 0700" \
  test "$(podman exec "$name-1" stat -c '%U %a' /var/lib/roost)" = "roost 700"
tok=
tok=$(ex "$name-1" roost token mint --data-dir /var/lib/roost --tenant t1 \
  --scope 'agent:*:consume agent:*:publish agent:*:read')
check "the CLI in the container mints a token" test -n "$tok"
ex "$name-1" roost publish --compact --agent box.a --payload '{"n":1}' >/dev/null
ex "$name-1" roost publish --compact --agent box.a --payload '{"n":2,"kept":"on the volume"}' >/dev/null
out=$(ex "$name-1" roost claim --compact --agent box.a --consumer w1 --limit 1)
check "publish and claim through the CLI in the container" \
  sh -c "printf '%s' '$out' | grep -q '\"n\":1' && test -n \"\$(printf '%s' '$out' | sed -n 's/.*\"lease_token\":\"\([^\"]*\)\".*/\1/p')\""
check "podman stop: roostd exits 0 on SIGTERM" stopped_with_0 "$name-1"
podman logs "$name-1" >"$dir/container-1.log" 2>&1
stamp "first container"

run 2
check "a second container on the same volume" test $? -eq 0
check "... turns healthy" wait_until 30 healthy "$name-2"
out=$(ex "$name-2" roost claim --compact --agent box.a --consumer w2 --limit 5)
check "... and claims the event the first left (the data is on the volume)" \
  sh -c "printf '%s' '$out' | grep -q '\"kept\":\"on the volume\"'"
check "... and stops with 0" stopped_with_0 "$name-2"
podman logs "$name-2" >"$dir/container-2.log" 2>&1
[ "$failed" -eq 0 ] || cat "$dir/podman.log" "$dir/container-1.log" "$dir/container-2.log" >&2
stamp "second container"
summary

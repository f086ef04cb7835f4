#!/usr/bin/env bash
# Builds the asan preset (ASan+UBSan) and runs the whole ctest suite under it, except tests
# labelled noasan (long chaos and browser runs, which the release suite runs).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f build-asan/build.ninja ] || cmake --preset asan >/dev/null
cmake --build build-asan -j "$(nproc)"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
ctest --test-dir build-asan --output-on-failure -j "$(nproc)" --timeout 900 -LE noasan

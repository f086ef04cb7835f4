#!/bin/sh
# SPDX-License-Identifier: MIT
# Fails when a tracked .c or .h file differs from .clang-format (clang-format --dry-run --Werror).
# Run from ctest (test_format) and CI, which works in a clone; outside a git checkout there is
# no list of tracked files, so it says so and passes (ctest reports it as skipped: exit 77).
set -eu
cd "$(dirname "$0")/.."
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    echo "check_format: not a git checkout, nothing to check"
    exit 77
fi
files=$(git ls-files '*.c' '*.h')
# Word splitting is wanted: tracked C files have no spaces in their names.
# shellcheck disable=SC2086
clang-format --dry-run --Werror $files
echo "check_format: $(echo "$files" | wc -l) files formatted"

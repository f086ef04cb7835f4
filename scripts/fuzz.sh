#!/usr/bin/env bash
# Builds the `fuzz` preset (clang, libFuzzer + ASan + UBSan) and fuzzes every tests/fuzz target for
# FUZZ_SECONDS (default 60) each, starting from its committed seed corpus. New inputs go to
# build-fuzz/fuzz-work/<target>/ (never into the committed corpus); crashes to
# build-fuzz/fuzz-artifacts/<target>/. Prints executions per target; exits 1 on any crash.
# FUZZ_TARGETS="sf jwt" restricts the set; FUZZ_JOBS (default 2) is the build parallelism.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${FUZZ_SECONDS:-60}
jobs=${FUZZ_JOBS:-2}
targets=${FUZZ_TARGETS:-$(cd tests/fuzz && ls fuzz_*.c | sed 's/^fuzz_//; s/\.c$//')}

# -max_len per target: a bit above the largest realistic input of that parser.
max_len() {
  case "$1" in
    sf) echo 4096 ;;
    httpsig_base) echo 8192 ;;
    httpsig_key) echo 16384 ;;
    jwt) echo 8300 ;;
    json_request) echo 16384 ;;
    config) echo 4096 ;;
    *) echo 4096 ;;
  esac
}

[ -f build-fuzz/build.ninja ] || cmake --preset fuzz
bins=()
for t in $targets; do bins+=("fuzz_$t"); done
cmake --build build-fuzz -j "$jobs" --target "${bins[@]}"

status=0
summary=""
for t in $targets; do
  work=build-fuzz/fuzz-work/$t
  art=build-fuzz/fuzz-artifacts/$t
  mkdir -p "$work" "$art"
  log=build-fuzz/fuzz-$t.log
  echo "fuzz: $t for ${secs}s (max_len $(max_len "$t"))"
  set +e
  build-fuzz/bin/fuzz_"$t" -max_total_time="$secs" -max_len="$(max_len "$t")" \
    -print_final_stats=1 -artifact_prefix="$art/" -timeout=10 -rss_limit_mb=2048 \
    "$work" "tests/fuzz/corpus/$t" >"$log" 2>&1
  rc=$?
  set -e
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  crashes=$(find "$art" -type f | wc -l)
  line="$t: rc=$rc executions=$execs corpus=$(find "$work" -type f | wc -l) artifacts=$crashes"
  echo "  $line"
  summary+="$line"$'\n'
  if [ "$rc" -ne 0 ] || [ "$crashes" -ne 0 ]; then
    status=1
    grep -E 'ERROR|SUMMARY|==[0-9]+==' "$log" | head -20 || true
    find "$art" -type f -printf '  artifact: %p\n'
  fi
done
echo "---- fuzz summary (${secs}s per target)"
printf '%s' "$summary"
exit $status

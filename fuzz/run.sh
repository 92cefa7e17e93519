#!/usr/bin/env bash
# Run the URDF fuzz target for a bounded time from the seed corpus.
#   fuzz/run.sh FUZZER [SECONDS] [WORKDIR]
# FUZZER is the libFuzzer binary (built by CMake as fuzz_urdf when clang's
# libFuzzer is available, or by hand: see docs/urdf.md). Seeds: fuzz/corpus/
# and the test models in tests/urdf/ (and validation/). New inputs go to WORKDIR/corpus (the
# source tree is never written); a crash, leak, timeout or sanitizer report
# leaves its input in WORKDIR and makes the script exit nonzero.
set -euo pipefail
fuzzer=$1
seconds=${2:-45}
here=$(cd "$(dirname "$0")" && pwd)
work=${3:-$(mktemp -d /tmp/mbk-fuzz-XXXXXX)}
mkdir -p "$work/corpus"
cp "$here"/corpus/* "$here"/../tests/urdf/*.urdf "$here"/../tests/urdf/validation/*.urdf "$work/corpus/"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
status=0
"$fuzzer" "$work/corpus" -dict="$here/urdf.dict" -max_total_time="$seconds" -max_len=16384 \
  -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$work/" -print_final_stats=1 2>"$work/log.txt" || status=$?
tail -n 25 "$work/log.txt"
if [ "$status" -ne 0 ]; then
  echo "fuzz: FAILED (exit $status); inputs and log in $work" >&2
  echo "0 passed, 1 failed"
  exit 1
fi
runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work/log.txt" | grep -o '[0-9]*$' || echo 0)
echo "fuzz: $runs inputs in ${seconds} s, no crash, leak, timeout or sanitizer report"
echo "1 passed, 0 failed"
rm -rf "$work"

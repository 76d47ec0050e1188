#!/usr/bin/env bash
# README command 2: install what is missing, build, run the test suite.
# GPU tests are built and show as Skipped, with the reason, without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
status=0
ctest --preset cpu "$@" || status=$?
# ctest lists skipped tests without their output: print why the GPU tests skipped.
log=build/cpu/Testing/Temporary/LastTest.log
if [ -f "$log" ] && grep -q "MUSESPARK_GPU_TESTS_SKIPPED" "$log"; then
  echo "GPU tests skipped here, reason:"
  grep -h "^MUSESPARK_GPU_TESTS_SKIPPED" "$log" | sort -u | sed 's/^/  /'
fi
exit $status

#!/usr/bin/env bash
# README command 2: install what is missing, build, run the test suite.
# GPU tests are built and show as Skipped, with the reason, without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
scripts/setup.sh
cmake --preset cpu >/dev/null
cmake --build --preset cpu
ctest --preset cpu "$@"

#!/usr/bin/env bash
# README command 2: install what is missing, build, run the test suite.
# GPU tests are built and show as Skipped, with the reason, without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
ctest --preset cpu "$@"

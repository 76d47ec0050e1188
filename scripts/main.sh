#!/usr/bin/env bash
# README command 1: install what is missing, build, run the main job
# (`musespark check`: every implementation this machine can run against the
# float64 reference; exit status 1 on any failure of a production one).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
scripts/setup.sh
cmake --preset cpu >/dev/null
cmake --build --preset cpu
./build/cpu/harness/musespark check "$@"

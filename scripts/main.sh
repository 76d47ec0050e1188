#!/usr/bin/env bash
# README command 1: install what is missing, build, run the main job
# (`musespark check`: every implementation this machine can run against the
# float64 reference; exit status 1 on any failure of a production one).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
./build/cpu/harness/musespark check "$@"

#!/usr/bin/env bash
# Puts the source of COMMIT (default HEAD) in .baseline/ (git-ignored) so the
# GPU script's `ab` step can time that kernel and this tree's in one call.
#   scripts/make_baseline.sh [COMMIT]; then carry .baseline with the device call
set -euo pipefail
cd "$(dirname "$0")/.."
commit=$(git rev-parse --short=12 "${1:-HEAD}")
rm -rf .baseline && mkdir .baseline
# The report data (reports/h100, reports/h200: 8 MB of plots) is left out:
# the build does not need it and the device call carries at most 64 MB.
git archive "$commit" -- . ':!reports/h100' ':!reports/h200' | tar -x -C .baseline
echo "$commit" > .baseline/COMMIT
echo "make_baseline: .baseline holds $commit"

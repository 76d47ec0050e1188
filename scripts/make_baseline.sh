#!/usr/bin/env bash
# Puts the source of COMMIT (default HEAD) in .baseline/ (git-ignored) so the
# GPU script's `ab` step can time that kernel and this tree's in one call.
#   scripts/make_baseline.sh [COMMIT]; then carry .baseline with the device call
set -euo pipefail
cd "$(dirname "$0")/.."
commit=$(git rev-parse --short=12 "${1:-HEAD}")
scripts/export_tree.sh "$commit" .baseline
echo "make_baseline: .baseline holds $commit"

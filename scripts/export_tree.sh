#!/usr/bin/env bash
# Writes the source of COMMIT into DIR (emptied first) with a COMMIT file
# naming it: the tree that make_baseline.sh and make_candidates.sh hand to
# the GPU script. The report data (reports/h100, reports/h200: 8 MB of
# plots) is left out: builds do not need it and a device call carries at
# most 64 MB.
#   scripts/export_tree.sh COMMIT DIR
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 2 ] || { echo "usage: scripts/export_tree.sh COMMIT DIR" >&2; exit 2; }
commit=$1 dir=$2
rm -rf "$dir" && mkdir -p "$dir"
git archive "$commit" -- . ':!reports/h100' ':!reports/h200' | tar -x -C "$dir"
echo "$commit" > "$dir/COMMIT"

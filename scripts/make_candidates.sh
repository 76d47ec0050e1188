#!/usr/bin/env bash
# Puts the source of each REV (a branch, tag or commit) in .candidates/NAME/
# (git-ignored) so that one device call of `gpu_run.sh candidates` can time
# them all against .baseline/ (scripts/make_baseline.sh), interleaved, on
# the same GPU: device time is scarce, and one call costs one start-up.
#   scripts/make_baseline.sh main
#   scripts/make_candidates.sh next/softmax-redux next/round-ballot
#   device run (carry .gpu-deps .baseline .candidates): scripts/gpu_run.sh candidates
# NAME is the REV with '/' turned into '-'; each tree as scripts/export_tree.sh
# writes it.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: scripts/make_candidates.sh REV [REV...]" >&2; exit 2; }
rm -rf .candidates && mkdir .candidates
for rev in "$@"; do
  commit=$(git rev-parse --verify --short=12 "$rev^{commit}") || { echo "make_candidates: '$rev' is not a commit" >&2; exit 2; }
  name=${rev//\//-}
  scripts/export_tree.sh "$commit" ".candidates/$name"
  echo "make_candidates: .candidates/$name holds $commit ($rev)"
done
du -sh .candidates | sed 's/^/make_candidates: /'

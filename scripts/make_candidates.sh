#!/usr/bin/env bash
# Puts the source of each REV (a branch, tag or commit) in .candidates/NAME/
# (git-ignored) so that one device call of `gpu_run.sh candidates` can time
# them all against .baseline/ (scripts/make_baseline.sh), interleaved, on
# the same GPU: device time is scarce, and one call costs one start-up.
#   scripts/make_baseline.sh main
#   scripts/make_candidates.sh next/softmax-redux next/round-ballot
#   device run (carry .gpu-deps .baseline .candidates): scripts/gpu_run.sh candidates
# NAME is the REV with '/' turned into '-'. The report data under
# reports/h100 and reports/h200 (8 MB of plots) is left out: builds do not
# need it and the device call carries at most 64 MB.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: scripts/make_candidates.sh REV [REV...]" >&2; exit 2; }
rm -rf .candidates && mkdir .candidates
for rev in "$@"; do
  commit=$(git rev-parse --verify --short=12 "$rev^{commit}") || { echo "make_candidates: '$rev' is not a commit" >&2; exit 2; }
  name=${rev//\//-}
  mkdir ".candidates/$name"
  git archive "$commit" -- . ':!reports/h100' ':!reports/h200' | tar -x -C ".candidates/$name"
  echo "$commit" > ".candidates/$name/COMMIT"
  echo "make_candidates: .candidates/$name holds $commit ($rev)"
done
du -sh .candidates | sed 's/^/make_candidates: /'

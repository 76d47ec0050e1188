#!/usr/bin/env bash
# The H100 perf sweep (run by scripts/gpu_run.sh perf): the anchor grid for
# the CUDA kernel and the torch recipe, rendered against the anchor CSV.
#   scripts/perf_sweep.sh OUT_DIR [PRESET]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?output directory}
preset=${2:-anchor}
cmd="build/gpu/perf/routing_benchmark --preset=$preset --impls=cuda,torch-recipe --benchmark_repetitions=3 --benchmark_out=$out/h100_$preset.json --benchmark_out_format=json"
echo "perf: $cmd"
$cmd > "$out/perf_$preset.log" 2>&1 || { tail -20 "$out/perf_$preset.log"; exit 1; }
python3 reports/render_report.py "$out/h100_$preset.json" --anchor reports/anchors/h100_seed_router.csv \
  --out "${REPORT_DIR:-$out/report}" --title "Router on the H100: preset $preset" --command "$cmd"
grep -A6 "## Speedups" "${REPORT_DIR:-$out/report}/README.md"

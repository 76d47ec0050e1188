#!/usr/bin/env bash
# ctest perf_quick_smoke: the quick preset's JSON through the report renderer.
set -euo pipefail
bench=$1 out=$2 src=$3
mkdir -p "$out"
"$bench" --preset=quick --impls=cpu --benchmark_out="$out/quick.json" --benchmark_out_format=json >/dev/null
python3 "$src/reports/render_report.py" "$out/quick.json" --out "$out/report" --title "quick smoke (CPU)"
test -s "$out/report/README.md"
echo "perf smoke: $(grep -c '"name"' "$out/quick.json") rows rendered to $out/report/README.md"

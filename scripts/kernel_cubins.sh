#!/usr/bin/env bash
# Compiles the router's kernel translation units of REV (a branch, tag or
# commit; the working tree without one) to sm_90a cubins, with the build's
# optimization flags, so that `reports/render_report.py kernels` can read
# each kernel's code size, registers and shared memory on a machine without
# a GPU or cuobjdump.
#   scripts/kernel_cubins.sh [REV]     -> build/cubins/<REV or worktree>/routing_kernel_{fp32,bf16,fp16}.cubin
#   python3 reports/render_report.py kernels build/cubins/worktree/routing_kernel_fp32.cubin \
#       --baseline build/cubins/main/routing_kernel_fp32.cubin --match block_rank
set -euo pipefail
cd "$(dirname "$0")/.."
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
[ -x "$NVCC" ] || { echo "kernel_cubins: no nvcc at $NVCC (set NVCC)" >&2; exit 2; }
rev=${1:-}
src=$PWD
name=worktree
if [ -n "$rev" ]; then
  commit=$(git rev-parse --verify --short=12 "$rev^{commit}") || { echo "kernel_cubins: '$rev' is not a commit" >&2; exit 2; }
  name=${rev//\//-}
  src=$(mktemp -d)
  trap 'rm -rf "$src"' EXIT
  git archive "$commit" impl | tar -x -C "$src"
fi
out=build/cubins/$name
mkdir -p "$out"
# One cubin per dtype, as render_report.py reads them: the kernels' sources
# (impl/cuda/instances/, built once per dtype) in one translation unit.
# Trees from before that split compile their routing_kernel_<dtype>.cu.
for dtype in fp32 bf16 fp16; do
  if [ -d "$src/impl/cuda/instances" ]; then
    tu=$out/routing_kernel_$dtype.cu
    for f in "$src"/impl/cuda/instances/*.cu; do echo "#include \"$f\""; done > "$tu"
    define=-DMUSESPARK_INSTANCE_${dtype^^}
  else
    tu=$src/impl/cuda/routing_kernel_$dtype.cu define=
  fi
  "$NVCC" -O2 -DNDEBUG $define --generate-code=arch=compute_90a,code=sm_90a -cubin -std=c++17 \
    -I"$src/impl/cuda" -I"$src/impl/include" "$tu" -o "$out/routing_kernel_$dtype.cubin" &
done
wait
echo "kernel_cubins: $out/routing_kernel_{fp32,bf16,fp16}.cubin${rev:+ ($rev = $commit)}"

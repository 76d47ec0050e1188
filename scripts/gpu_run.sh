#!/usr/bin/env bash
# Everything the GPU machine does, in one call (device time is scarce):
# configure + build the gpu preset, the GPU tests, compute-sanitizer on a
# representative subset, `musespark check`, and (when present) the perf sweep.
# Logs and JSON go to $OUT (or ./gpu-out when OUT is unset), at most eight
# files, which is what the device tool brings back.
#
#   scripts/prepare_gpu_deps.sh          # here, once
#   device run (carry .gpu-deps):  scripts/gpu_run.sh [build|test|sanitize|check|perf ...]
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(build test sanitize check)

export MUSESPARK_TORCH_PREFIX=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')
export MUSESPARK_EXTRA_PREFIX=$PWD/.gpu-deps/usr
status=0
log() { echo "== $* ($(date +%T))" | tee -a "$OUT/summary.log"; }

for step in "${steps[@]}"; do
  case "$step" in
    build)
      log "configure + build (gpu preset)"
      nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee -a "$OUT/summary.log"
      { cmake --preset gpu && cmake --build --preset gpu; } > "$OUT/build.log" 2>&1 || { tail -50 "$OUT/build.log"; exit 1; }
      tail -3 "$OUT/build.log" ;;
    test)
      log "ctest -L gpu"
      ctest --preset gpu > "$OUT/ctest_gpu.log" 2>&1 || status=1
      grep -E "tests passed|tests failed|Skipped|\[  FAILED  \]" "$OUT/ctest_gpu.log" | sort -u | head -30 | tee -a "$OUT/summary.log"
      log "property suite on cuda (RC_PARAMS=${RC_PARAMS:-max_success=300})"
      RC_PARAMS=${RC_PARAMS:-max_success=300} MUSESPARK_PROPERTY_IMPLS=cuda \
        ./build/gpu/property_tests/test_router_properties > "$OUT/properties_cuda.log" 2>&1 || status=1
      ./build/gpu/property_tests/test_invalid_arguments >> "$OUT/properties_cuda.log" 2>&1 || status=1
      grep -E "^\[  (PASSED|FAILED) |OK, passed|Falsifiable|properties run on" "$OUT/properties_cuda.log" | tee -a "$OUT/summary.log" ;;
    sanitize)
      for tool in memcheck racecheck; do
        log "compute-sanitizer --tool $tool (Sanitizer.*)"
        compute-sanitizer --tool "$tool" --error-exitcode 99 ./build/gpu/property_tests/test_cuda_kernel \
          --gtest_filter='Sanitizer.*' > "$OUT/sanitizer_$tool.tmp" 2>&1 || status=1
        cat "$OUT/sanitizer_$tool.tmp" >> "$OUT/sanitizer.log"
        tail -3 "$OUT/sanitizer_$tool.tmp" | tee -a "$OUT/summary.log"
        rm -f "$OUT/sanitizer_$tool.tmp"
      done ;;
    check)
      log "musespark check"
      ./build/gpu/harness/musespark check 2>&1 | tee "$OUT/check.log" | tail -8 || status=1 ;;
    fuzz)
      log "musespark fuzz --impl cuda --seconds ${FUZZ_SECONDS:-300}"
      ./build/gpu/harness/musespark fuzz --impl cuda --seconds "${FUZZ_SECONDS:-300}" --seed "${FUZZ_SEED:-1}" \
        --json "$OUT/fuzz_cuda.json" --out-dir "$OUT/fuzz-failures" > "$OUT/fuzz_cuda.log" 2>&1 || status=1
      tail -2 "$OUT/fuzz_cuda.log" | tee -a "$OUT/summary.log"
      log "corpus replay on cuda"
      ./build/gpu/harness/musespark replay --impl cuda corpus/*.safetensors 2>&1 | tee "$OUT/corpus_cuda.log" | grep -c PASS | sed 's/^/corpus cases passing: /' | tee -a "$OUT/summary.log"
      grep -q FAIL "$OUT/corpus_cuda.log" && status=1
      log "export / op / verify from Python"
      python3 examples/verify_torch_op.py build/gpu --workdir /tmp 2>&1 | tail -3 | tee -a "$OUT/summary.log" || status=1 ;;
    perf)
      if [ -x scripts/perf_sweep.sh ]; then log "perf sweep"; REPORT_DIR=${REPORT_DIR:-/tmp/musespark-report} scripts/perf_sweep.sh "$OUT" || status=1; fi ;;
    *) echo "gpu_run: unknown step '$step' (build, test, sanitize, check, fuzz, perf)"; exit 2 ;;
  esac
done
log "done, status $status"
exit $status

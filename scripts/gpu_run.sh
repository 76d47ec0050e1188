#!/usr/bin/env bash
# Everything the GPU machine does, in one call (device time is scarce).
#
#   scripts/prepare_gpu_deps.sh                      # here, once
#   device run (carry .gpu-deps [.baseline]):  scripts/gpu_run.sh STEP...
#
# Steps, in the order given:
#   build     configure + build the gpu preset (BUILD_TARGETS: only these targets,
#             e.g. routing_benchmark for a sweep, which then skips the test binaries)
#   test      ctest -L gpu, then the property suite on the kernel
#   sanitize  compute-sanitizer memcheck + racecheck on the Sanitizer.* tests
#   check     musespark check
#   fuzz      musespark fuzz --impl FUZZ_IMPL (cuda) for FUZZ_SECONDS (300), corpus replay,
#             the Python export / op / verify round trip
#   perf      routing_benchmark on PERF_PRESET (anchor) in PERF_PROCESSES (3) processes, merged
#             (`render_report.py merge`: each cell's median over all their repetitions),
#             rendered against the anchor CSV
#   ab        the same preset on the kernel of .baseline/ (scripts/make_baseline.sh
#             COMMIT, carried) and this tree, interleaved, then `render_report.py compare`
#             (AB_AXES, routing_benchmark flags, replaces the preset; AB_TAG names it)
#   candidates  the same for every tree of .candidates/ (scripts/make_candidates.sh
#             REV..., carried with .baseline): each built once, all timed in
#             CANDIDATE_ROUNDS (2) interleaved rounds, each compared with the
#             baseline; CANDIDATE_TESTS=1 also runs each one's GPU kernel tests
#             (CANDIDATE_TEST_NAMES, those the tree defines);
#             CANDIDATE_AXES (routing_benchmark flags) replaces the preset;
#             CANDIDATE_NAMES picks some trees (their names under .candidates/),
#             CANDIDATE_TAG names the step's logs, so that a second step times
#             other trees on other axes with the builds kept from the first
#   paths     the paths of PATHS_FORCE ("1 2": register, shared; "7:2": the filter
#             path with 2 rows per warp task, column "path 7r2"; "5:4": the
#             row-per-thread path with 4 lanes per row, "path 5l4") forced on the same
#             cells (PATHS_AXES), a table of medians, for tuning the tier table
#             (PATHS_ROUNDS, default 1: interleaved rounds, the table their median),
#             and each shape's forced columns over the first by rows
#             (`render_report.py paths --grid`; the JSON go into logs.tgz)
#   placement the cells of PLACEMENT_AXES with their device buffers at each offset of
#             PLACEMENT_OFFSETS (routing_benchmark --buffer-offset), PLACEMENT_ROUNDS (2)
#             interleaved rounds: how much of a decode cell's time follows where its data
#             lies, against the rounds at one offset (`render_report.py placement`; BENCH
#             picks the tree; session 50, H100: the process moved cells, the offset did not)
#   iofloor   each anchor cell's io floor (routing_benchmark --impls=io-floor) to
#             $OUT/io_floor.json (IOFLOOR_TAG names it; BENCH picks the tree)
#   pdl       decode cells with programmatic dependent launch on and off
#   ncu       Nsight Compute on the cells of NCU_CELLS (T:E:k:dtype[:norm] ...;
#             NCU_BENCH_ARGS: more routing_benchmark flags, e.g. --force-path=7;
#             NCU_SOURCE=1: per-instruction counts and stall samples too, which
#             scripts/ncu_sass_summary.py summarizes; NCU_EXTRA: more ncu flags)
#   loader    a full Muse layer through loader_benchmark --device=cuda and musespark load
#   sass      cuobjdump -sass of the kernels whose name contains SASS_MATCH
#             (block_rank), from the built library of each tree of SASS_TREES
#             (".": this one; e.g. ". .baseline" after candidates), to logs.tgz
#             (sass_NAME.txt), with each kernel's instruction count in the summary
#
# What comes back ($OUT, at most eight files): summary.log, the JSON reports
# and logs.tgz with every log. Without $OUT, ./gpu-out.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-out}
WORK=${WORK:-/tmp/musespark-gpu}
mkdir -p "$OUT" "$WORK/logs"
LOGS=$WORK/logs
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(build test sanitize check)

export MUSESPARK_TORCH_PREFIX=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')
export MUSESPARK_EXTRA_PREFIX=$PWD/.gpu-deps/usr
# Fallbacks only for what the image lacks (a package config anywhere CMake looks).
for pkg in GTest benchmark fmt nlohmann_json; do
  if ! ls -d /usr/lib/x86_64-linux-gnu/cmake/$pkg /usr/lib/cmake/$pkg /usr/local/lib/cmake/$pkg \
        /usr/share/cmake/$pkg /usr/local/share/cmake/$pkg /usr/lib64/cmake/$pkg >/dev/null 2>&1; then
    echo "gpu_run: no system $pkg: using .gpu-deps/fallback" | tee -a "$OUT/summary.log"
    export MUSESPARK_EXTRA_PREFIX="$MUSESPARK_EXTRA_PREFIX;$PWD/.gpu-deps/fallback/usr"
    break
  fi
done
gpu_tag=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 | grep -oiE 'H100|H200|B200|A100|L40S' | tr A-Z a-z)
gpu_tag=${gpu_tag:-gpu}
preset=${PERF_PRESET:-anchor}
status=0
log() { echo "== $* ($(date +%T))" | tee -a "$OUT/summary.log"; }
# BENCH: another tree's built benchmark (.baseline/build/gpu/perf/routing_benchmark
# after `candidates`), so that ncu or paths need no build of this tree.
bench=${BENCH:-build/gpu/perf/routing_benchmark}
bench_args="--preset=$preset --impls=cuda --benchmark_repetitions=3"

# Builds TARGETS (routing_benchmark by default) in the source tree DIR (a
# .baseline/ or .candidates/ tree; its COMMIT file names it), with the same
# preset as this tree's build: a benchmark linked differently (without
# LibTorch, say) measured ~0.1 us apart on decode cells.
#
# The tree's build/ is a link to $WORK/trees/<tree>-<commit>: `carry` puts
# fresh copies of .baseline/ and .candidates/ on the machine each call, so a
# build inside them was redone on every call (90-200 s of device time), while
# $WORK lasts as long as the machine stays warm. Keyed by commit, the kept
# build only ever sees the same sources again (git archive sets each file's
# time to the commit's, so an older commit under a reused name could look
# up to date to ninja). If the kept build cannot be configured again (the
# tree landed at another path), it is wiped and built afresh.
configure_tree() { (cd "$1" && MUSESPARK_GIT_COMMIT=$(cat COMMIT) cmake --preset gpu); }

build_tree() {
  local dir=$1 logfile=$2
  shift 2
  local targets=("${@:-routing_benchmark}")
  local kept="$WORK/trees/$(basename "$dir")-$(cat "$dir/COMMIT")"
  if [ ! -e "$dir/build" ] || [ -L "$dir/build" ]; then
    mkdir -p "$kept" && ln -sfn "$kept" "$dir/build"
  fi
  {
    if [ -d "$dir/build/gpu" ]; then echo "build_tree: reusing $(readlink -f "$dir/build")/gpu"; fi
    configure_tree "$dir" ||
      { echo "build_tree: configure failed on the kept build; building afresh"; rm -rf "$dir/build/gpu"; configure_tree "$dir"; } &&
      (cd "$dir" && cmake --build build/gpu -j"${BUILD_JOBS:-16}" --target "${targets[@]}")
  } > "$logfile" 2>&1
}

# Prints the REGRESSION lines (the first 12) and the per-tokens summary of
# `render_report.py compare NEW BASE`.
compare_runs() {
  python3 reports/render_report.py compare "$1" "$2" --impl cuda > "$3" 2>&1
  grep REGRESSION "$3" | head -12
  grep -E "^(tokens|compare)" "$3"
  # The same ratio per kernel path (the new run's labels): which path moved.
  python3 reports/render_report.py compare "$1" "$2" --impl cuda --group path 2>&1 | grep -E "^path" | tee -a "$3"
}

# merge_rounds PREFIX N: PREFIX1.json ... PREFIXN.json, one process each,
# into PREFIXall.json (`render_report.py merge`: each cell's median over
# every round's repetitions). A decode cell can shift by up to 1.5x in one
# process (session 50, H100), which reads as one round's regression and
# does not move the merged comparison.
merge_rounds() {
  local files=() round
  for round in $(seq 1 "$2"); do files+=("$1$round.json"); done
  python3 reports/render_report.py merge "${files[@]}" --out "$1all.json" > /dev/null
}

for step in "${steps[@]}"; do
  case "$step" in
    build)
      log "configure + build (gpu preset)"
      nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader | tee -a "$OUT/summary.log"
      { cmake --preset gpu && cmake --build --preset gpu ${BUILD_TARGETS:+--target $BUILD_TARGETS}; } > "$LOGS/build.log" 2>&1 ||
        { tail -50 "$LOGS/build.log"; status=1; break; }
      tail -1 "$LOGS/build.log" ;;
    test)
      log "ctest -L gpu"
      # A per-test limit well under the device call's 10 minutes: a hung kernel
      # then costs minutes, not the whole call and its logs.
      ctest --preset gpu --timeout "${CTEST_TIMEOUT:-180}" > "$LOGS/ctest_gpu.log" 2>&1 || status=1
      grep -E "tests passed|tests failed|Skipped|\(Failed\)|\[  FAILED  \]" "$LOGS/ctest_gpu.log" | sort -u | head -30 | tee -a "$OUT/summary.log"
      log "property suite on cuda (RC_PARAMS=${RC_PARAMS:-max_success=300})"
      RC_PARAMS=${RC_PARAMS:-max_success=300} MUSESPARK_PROPERTY_IMPLS=cuda \
        ./build/gpu/property_tests/test_router_properties > "$LOGS/properties_cuda.log" 2>&1 || status=1
      MUSESPARK_PROPERTY_IMPLS=cuda ./build/gpu/property_tests/test_invalid_arguments >> "$LOGS/properties_cuda.log" 2>&1 || status=1
      grep -E "^\[  (PASSED|FAILED) |Falsifiable|properties run on" "$LOGS/properties_cuda.log" | tee -a "$OUT/summary.log" ;;
    sanitize)
      for tool in memcheck racecheck; do
        log "compute-sanitizer --tool $tool (Sanitizer.*, CudaLoader.*)"
        for bin in test_cuda_kernel:Sanitizer.* test_cuda_thread_row:Sanitizer.* test_cuda_filter_path:Sanitizer.* test_cuda_estimate_select:Sanitizer.* test_cuda_loader:*many_chunks*; do
          compute-sanitizer --tool "$tool" --error-exitcode 99 ./build/gpu/property_tests/${bin%%:*} \
            --gtest_filter="${bin#*:}" > "$LOGS/sanitizer.tmp" 2>&1 || status=1
          cat "$LOGS/sanitizer.tmp" >> "$LOGS/sanitizer.log"
          echo "${bin%%:*}: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$LOGS/sanitizer.tmp" | tail -1)" | tee -a "$OUT/summary.log"
        done
      done
      rm -f "$LOGS/sanitizer.tmp" ;;
    check)
      log "musespark check"
      ./build/gpu/harness/musespark check > "$LOGS/check.log" 2>&1 || status=1
      tail -8 "$LOGS/check.log" | tee -a "$OUT/summary.log" ;;
    fuzz)
      # FUZZ_IMPL: another implementation, e.g. cuda-block-rank (a path forced).
      fuzz_impl=${FUZZ_IMPL:-cuda}
      log "musespark fuzz --impl $fuzz_impl --seconds ${FUZZ_SECONDS:-300} --seed ${FUZZ_SEED:-1}"
      ./build/gpu/harness/musespark fuzz --impl "$fuzz_impl" --seconds "${FUZZ_SECONDS:-300}" --seed "${FUZZ_SEED:-1}" \
        --json "$OUT/fuzz_$fuzz_impl.json" --out-dir "$WORK/fuzz-failures" > "$LOGS/fuzz_$fuzz_impl.log" 2>&1 || status=1
      tail -2 "$LOGS/fuzz_$fuzz_impl.log" | tee -a "$OUT/summary.log"
      log "corpus replay on cuda"
      ./build/gpu/harness/musespark replay --impl cuda corpus/*.safetensors > "$LOGS/corpus_cuda.log" 2>&1 || status=1
      echo "corpus cases passing: $(grep -c PASS "$LOGS/corpus_cuda.log") of $(ls corpus/*.safetensors | wc -l)" | tee -a "$OUT/summary.log"
      log "export / op / verify from Python"
      # Skipped only where BUILD_TARGETS asked for a build without the op
      # library; a full build that lacks it still fails here.
      if [ -n "${BUILD_TARGETS:-}" ] && [ ! -f build/gpu/impl/libmusespark_torch_ops.so ]; then
        echo "python round trip skipped: BUILD_TARGETS='$BUILD_TARGETS' did not build musespark_torch_ops" |
          tee -a "$OUT/summary.log"
      else
        python3 examples/verify_torch_op.py build/gpu --workdir "$WORK" > "$LOGS/verify_torch_op.log" 2>&1 || status=1
        tail -3 "$LOGS/verify_torch_op.log" | tee -a "$OUT/summary.log"
      fi ;;
    perf)
      # PERF_PROCESSES (3) runs, each its own process, merged into one
      # (every repetition under its cell): a decode cell's repetitions agree
      # within a process but the cell can read up to 1.5x slower in one
      # process than in the next (session 50, H100), so the report's median
      # is over the repetitions of all of them.
      processes=${PERF_PROCESSES:-3}
      runs=()
      for p in $(seq "$processes"); do
        log "perf: process $p of $processes: $bench $bench_args (and the torch recipe)"
        $bench $bench_args --impls=cuda,torch-recipe --benchmark_out="$LOGS/perf_${preset}_p$p.json" \
          --benchmark_out_format=json > "$LOGS/perf_${preset}_p$p.log" 2>&1 || status=1
        runs+=("$LOGS/perf_${preset}_p$p.json")
      done
      python3 reports/render_report.py merge "${runs[@]}" --out "$OUT/${gpu_tag}_$preset.json" | tee -a "$OUT/summary.log" \
        || status=1
      python3 reports/render_report.py "$OUT/${gpu_tag}_$preset.json" --anchor reports/anchors/h100_seed_router.csv \
        --out "$WORK/report" --title "Router on the ${gpu_tag^^}: preset $preset" > "$LOGS/render.log" 2>&1 || status=1
      grep -A8 "## Speedups" "$WORK/report/README.md" | tee -a "$OUT/summary.log" ;;
    ab)
      [ -d .baseline ] || { echo "ab: no .baseline/ (scripts/make_baseline.sh COMMIT, then carry .baseline)"; status=1; continue; }
      log "ab: building the baseline kernel ($(cat .baseline/COMMIT 2>/dev/null))"
      build_tree .baseline "$LOGS/baseline_build.log" || { tail -20 "$LOGS/baseline_build.log"; status=1; continue; }
      # AB_AXES (routing_benchmark flags) replaces the preset's cells; its
      # files and logs are named by AB_TAG (axes), so a second `ab` in the
      # same call keeps the first one's.
      ab_args=$bench_args ab_name=ab ab_tag=$preset
      if [ -n "${AB_AXES:-}" ]; then
        ab_tag=${AB_TAG:-axes}
        ab_name=ab_$ab_tag ab_args="$AB_AXES --impls=cuda --benchmark_repetitions=3"
        log "ab: $ab_args"
      fi
      for round in 1 2; do
        for side in baseline new; do
          bin=$bench; [ $side = baseline ] && bin=.baseline/build/gpu/perf/routing_benchmark
          $bin $ab_args --benchmark_out="$WORK/${ab_name}_${side}_$round.json" --benchmark_out_format=json \
            > "$LOGS/${ab_name}_${side}_$round.log" 2>&1 || status=1
        done
      done
      cp "$WORK/${ab_name}_new_2.json" "$OUT/${gpu_tag}_${ab_tag}_cuda.json"
      cp "$WORK/${ab_name}_baseline_2.json" "$OUT/${gpu_tag}_${ab_tag}_baseline.json"
      for round in 1 2; do
        compare_runs "$WORK/${ab_name}_new_$round.json" "$WORK/${ab_name}_baseline_$round.json" \
          "$LOGS/${ab_name}_compare_$round.log" | tee -a "$OUT/summary.log"
      done
      # Both rounds merged per side (merge_rounds), as the candidates step does.
      for side in baseline new; do merge_rounds "$WORK/${ab_name}_${side}_" 2 || status=1; done
      echo "ab, both rounds merged:" | tee -a "$OUT/summary.log"
      compare_runs "$WORK/${ab_name}_new_all.json" "$WORK/${ab_name}_baseline_all.json" "$LOGS/${ab_name}_compare_all.log" \
        | tee -a "$OUT/summary.log" ;;
    candidates)
      if [ ! -d .baseline ] || [ ! -d .candidates ]; then
        echo "candidates: needs .baseline/ and .candidates/ (scripts/make_baseline.sh, scripts/make_candidates.sh; carry both)" \
          | tee -a "$OUT/summary.log"
        status=1; continue
      fi
      # All trees build side by side (a tree's build is a handful of long
      # nvcc jobs, so one at a time leaves most cores idle), the candidates'
      # tests included when asked for.
      # CANDIDATE_NAMES: only these trees of .candidates (their directory
      # names), so that one call can time some trees on one set of axes and
      # others on another (a second `candidates` step reuses the kept
      # builds); CANDIDATE_TAG names that step's logs (cand_TAG_*).
      dirs=()
      for dir in .candidates/*/; do
        if [ -z "${CANDIDATE_NAMES:-}" ] || [[ " $CANDIDATE_NAMES " == *" $(basename "$dir") "* ]]; then dirs+=("$dir"); fi
      done
      if [ ${#dirs[@]} -eq 0 ]; then
        echo "candidates: no tree of .candidates is named in CANDIDATE_NAMES ('${CANDIDATE_NAMES:-}'): $(ls .candidates | tr '\n' ' ')" \
          | tee -a "$OUT/summary.log"
        status=1; continue
      fi
      cand_prefix=cand${CANDIDATE_TAG:+_$CANDIDATE_TAG}
      # CANDIDATE_TESTS=1: each tree's GPU tests of the kernel too (those of
      # CANDIDATE_TEST_NAMES that the tree defines, so a branch may add one).
      test_names=(${CANDIDATE_TEST_NAMES:-test_cuda_kernel test_cuda_thread_row test_cuda_filter_path test_cuda_estimate_select test_cuda_routing_math})
      cand_targets=(routing_benchmark)
      jobs_each=$(( 16 / (${#dirs[@]} + 1) )); [ "$jobs_each" -lt 2 ] && jobs_each=2
      log "candidates: building the baseline ($(cat .baseline/COMMIT)) and ${#dirs[@]} candidates side by side (-j$jobs_each each)"
      BUILD_JOBS=$jobs_each build_tree .baseline "$LOGS/baseline_build.log" &
      base_pid=$!
      pids=()
      for dir in "${dirs[@]}"; do
        tree_targets=("${cand_targets[@]}")
        if [ "${CANDIDATE_TESTS:-0}" = 1 ]; then
          for t in "${test_names[@]}"; do grep -q "musespark_add_test($t " "$dir/property_tests/CMakeLists.txt" && tree_targets+=("$t"); done
        fi
        BUILD_JOBS=$jobs_each build_tree "$dir" "$LOGS/build_$(basename "$dir").log" "${tree_targets[@]}" &
        pids+=($!)
      done
      base_ok=1
      wait "$base_pid" || base_ok=0
      names=()
      for i in "${!dirs[@]}"; do
        name=$(basename "${dirs[$i]}")
        if wait "${pids[$i]}"; then
          names+=("$name")
        else
          echo "candidates: $name ($(cat "${dirs[$i]}/COMMIT")) does not build; its log is build_$name.log in logs.tgz" | tee -a "$OUT/summary.log"
          tail -5 "$LOGS/build_$name.log" | tee -a "$OUT/summary.log"
          status=1
        fi
      done
      if [ "$base_ok" = 0 ]; then tail -20 "$LOGS/baseline_build.log"; status=1; continue; fi
      log "candidates: built"
      rounds=${CANDIDATE_ROUNDS:-2}
      cand_args="${CANDIDATE_AXES:---preset=$preset} --impls=cuda --benchmark_repetitions=3"
      for round in $(seq 1 "$rounds"); do
        log "candidates: round $round of $rounds (baseline, ${names[*]})"
        .baseline/build/gpu/perf/routing_benchmark $cand_args --benchmark_out="$LOGS/${cand_prefix}_baseline_$round.json" \
          --benchmark_out_format=json > "$LOGS/${cand_prefix}_baseline_$round.log" 2>&1 || status=1
        for name in "${names[@]}"; do
          ".candidates/$name/build/gpu/perf/routing_benchmark" $cand_args --benchmark_out="$LOGS/${cand_prefix}_${name}_$round.json" \
            --benchmark_out_format=json > "$LOGS/${cand_prefix}_${name}_$round.log" 2>&1 || status=1
        done
      done
      # The trees' tests (built with the benchmark above) all start at once,
      # now that the timed rounds are over: one after another they took about
      # two minutes a tree (session 49), most of it test_cuda_kernel's CPU
      # reference, and the machine has 16 cores.
      test_pids=() test_keys=()
      if [ "${CANDIDATE_TESTS:-0}" = 1 ]; then
        for name in "${names[@]}"; do
          for t in "${test_names[@]}"; do
            [ -x ".candidates/$name/build/gpu/property_tests/$t" ] || continue
            ".candidates/$name/build/gpu/property_tests/$t" --gtest_brief=1 > "$LOGS/${t}_$name.log" 2>&1 &
            test_pids+=($!) test_keys+=("$name $t")
          done
        done
      fi
      # Besides each round, all rounds merged per tree (merge_rounds).
      [ "$rounds" -gt 1 ] && { merge_rounds "$LOGS/${cand_prefix}_baseline_" "$rounds" || status=1; }
      for name in "${names[@]}"; do
        log "candidates: $name ($(cat ".candidates/$name/COMMIT")) against the baseline ($(cat .baseline/COMMIT))"
        for round in $(seq 1 "$rounds"); do
          compare_runs "$LOGS/${cand_prefix}_${name}_$round.json" "$LOGS/${cand_prefix}_baseline_$round.json" "$LOGS/${cand_prefix}_${name}_compare_$round.log" \
            | tee -a "$OUT/summary.log"
        done
        if [ "$rounds" -gt 1 ] && merge_rounds "$LOGS/${cand_prefix}_${name}_" "$rounds"; then
          echo "$name, all $rounds rounds merged:" | tee -a "$OUT/summary.log"
          compare_runs "$LOGS/${cand_prefix}_${name}_all.json" "$LOGS/${cand_prefix}_baseline_all.json" "$LOGS/${cand_prefix}_${name}_compare_all.log" \
            | tee -a "$OUT/summary.log"
        fi
      done
      [ ${#test_pids[@]} -gt 0 ] && log "candidates: the trees' tests"
      for i in "${!test_pids[@]}"; do
        wait "${test_pids[$i]}" || status=1
        read -r name t <<< "${test_keys[$i]}"
        echo "$name $t: $(grep -E '^\[  (PASSED|FAILED)  \]|^MUSESPARK_GPU_TESTS_SKIPPED' "$LOGS/${t}_$name.log" | head -3 | tr '\n' ' ')" \
          | tee -a "$OUT/summary.log"
      done ;;
    paths)
      axes=${PATHS_AXES:---tokens=1,16,128,1024,4096 --experts=64,128,256,512 --topk=8 --dtypes=float32 --norms=sigmoid,softmax}
      forced=(${PATHS_FORCE:-1 2})
      tag=${PATHS_TAG:-paths}
      rounds=${PATHS_ROUNDS:-1}
      files=()
      for round in $(seq "$rounds"); do
      for entry in "${forced[@]}"; do
        # PATH, or PATH:N: the filter path (7) with N rows per warp task
        # (column "path 7r2"), the row-per-thread path (5) with N lanes per
        # row (column "path 5l4").
        path=${entry%%:*} extra="" name=$entry
        if [ "$entry" != "$path" ]; then
          case $path in
            7) extra="--filter-rows=${entry#*:}" name=${path}r${entry#*:} ;;
            5) extra="--thread-row-lanes=${entry#*:}" name=${path}l${entry#*:} ;;
            *) echo "gpu_run: PATHS_FORCE entry '$entry': only 7:ROWS and 5:LANES take a number"; exit 2 ;;
          esac
        fi
        log "$tag: round $round of $rounds: --force-path=$path $extra $axes"
        $bench --impls=cuda $axes --force-path=$path $extra --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
          --benchmark_out="$WORK/${tag}_${name}_r$round.json" --benchmark_out_format=json \
          > "$LOGS/${tag}_${name}_r$round.log" 2>&1 || status=1
        files+=("$WORK/${tag}_${name}_r$round.json")
      done
      done
      # One row per cell, one column per forced path (median us over the
      # PATHS_ROUNDS rounds, each the median of 3 repetitions; "-" where the
      # path cannot run the cell), then each shape's columns over the first
      # by rows (reports/perfreport/paths.py); the JSON go into logs.tgz so
      # the tables can be remade there.
      cp "${files[@]}" "$LOGS/"
      python3 reports/render_report.py paths --grid "${files[@]}" | tee -a "$OUT/summary.log" "$LOGS/${tag}_table.txt"
      ;;
    placement)
      # The same cells with their device buffers at each offset of
      # PLACEMENT_OFFSETS into their allocations (routing_benchmark
      # --buffer-offset), PLACEMENT_ROUNDS (2) interleaved rounds, each its
      # own process: whether a decode cell's time follows where its data lies
      # (the rounds at one offset are the control), then a table of medians
      # per offset and each cell's slowest over fastest offset
      # (reports/perfreport/placement.py); the JSON go into logs.tgz.
      axes=${PLACEMENT_AXES:---tokens=1,16,128 --experts=128,256,512 --topk=1,8 --dtypes=float32,bfloat16 --norms=softmax}
      offsets=(${PLACEMENT_OFFSETS:-0 256 4096 65536 1048576 2097152 4194304 12582912})
      rounds=${PLACEMENT_ROUNDS:-2}
      files=()
      for round in $(seq "$rounds"); do
        log "placement: round $round of $rounds: offsets ${offsets[*]}, $axes"
        for offset in "${offsets[@]}"; do
          $bench --impls=cuda $axes --buffer-offset="$offset" --benchmark_repetitions=3 \
            --benchmark_out="$LOGS/placement_${offset}_r$round.json" --benchmark_out_format=json \
            > "$LOGS/placement_${offset}_r$round.log" 2>&1 || { tail -3 "$LOGS/placement_${offset}_r$round.log"; status=1; }
          files+=("$LOGS/placement_${offset}_r$round.json")
        done
      done
      python3 reports/render_report.py placement "${files[@]}" | tee -a "$OUT/summary.log" "$LOGS/placement_table.txt"
      ;;
    iofloor)
      # Each anchor cell's io floor (perf/io_floor_kernel.cuh: the cell's
      # bytes and launch, no selection; it ignores the normalization, so
      # sigmoid cells only), for render_report.py floors.
      tag=${IOFLOOR_TAG:-io_floor}
      log "io floor of the anchor grid's cells ($bench)"
      $bench --impls=io-floor --tokens=1,16,128,1024,8192,65536 --experts=8,64,128,256,512 --topk=1,4,8 \
        --dtypes=float32,bfloat16 --norms=sigmoid --benchmark_repetitions=3 \
        --benchmark_out="$OUT/$tag.json" --benchmark_out_format=json > "$LOGS/$tag.log" 2>&1 \
        || { tail -5 "$LOGS/$tag.log"; status=1; }
      grep -o '"launch_floor_us": "[^"]*"' "$OUT/$tag.json" | tee -a "$OUT/summary.log" ;;
    pdl)
      for flag in "" --no-pdl; do
        log "decode cells, PDL ${flag:-on}"
        $bench --impls=cuda --tokens=1,128 --experts=8,64,256,512 --topk=8 $flag --benchmark_repetitions=3 \
          --benchmark_report_aggregates_only=true 2>&1 | grep median | awk '{print $1, $2, $3}' | tee -a "$OUT/summary.log"
      done ;;
    ncu)
      # A cell is T:E:k:dtype[:norm] (norm: sigmoid unless given). NCU_EXTRA:
      # more ncu flags, e.g. "--cache-control none" (ncu flushes the caches
      # before each replayed launch by default, which a decode kernel then
      # spends its time on) or "--warp-sampling-interval 0" (a one-warp
      # kernel sampled every 32 cycles).
      for cell in ${NCU_CELLS:-65536:64:8:float32 65536:256:8:float32 65536:256:8:bfloat16 1:256:8:float32}; do
        IFS=: read -r t e k d n <<< "$cell"
        n=${n:-sigmoid}
        tag="${t}_${e}_${k}_${d}_$n"
        log "ncu T=$t E=$e k=$k $d $n"
        profile=(ncu --clock-control none --set full ${NCU_EXTRA:-} -k regex:route_ --launch-skip 3 --launch-count 1)
        cell_run=($bench --impls=cuda --tokens=$t --experts=$e --topk=$k --dtypes=$d --norms=$n ${NCU_BENCH_ARGS:-})
        "${profile[@]}" "${cell_run[@]}" > "$LOGS/ncu_$tag.log" 2>&1 || status=1
        if [ "${NCU_SOURCE:-0}" = 1 ]; then  # per-SASS-instruction counts of the cell, for logs.tgz
          "${profile[@]}" -f -o "$WORK/ncu_cell" "${cell_run[@]}" > /dev/null 2>&1 \
            && ncu -i "$WORK/ncu_cell.ncu-rep" --page source --csv --print-source sass > "$LOGS/ncu_sass_$tag.csv" 2>&1
        fi
        grep -E "^  [a-z_]+::route|Duration|DRAM Throughput|Memory Throughput|Compute \(SM\) Throughput|Achieved Occupancy|Registers Per|Executed Ipc Active|Issue Slots Busy|No Eligible|One or More Eligible|Theoretical Occupancy|Shared Memory Configuration Size|Block Limit Shared Mem|Block Limit Registers|L1/TEX Hit|L2 Hit|Warp Cycles Per Issued" \
          "$LOGS/ncu_$tag.log" | head -26 | tee -a "$OUT/summary.log"
      done ;;
    loader)
      ckpt=$WORK/muse_layer.safetensors
      log "loader: generate a full Muse layer (E=256 H=4096 I=4096 NVFP4)"
      ./build/gpu/harness/musespark generate-checkpoint --prefix layer --experts 256 --hidden 4096 --intermediate 4096 --nvfp4 \
        --out "$ckpt" 2>&1 | tee -a "$OUT/summary.log"
      for tp in "1 0" "8 3"; do
        set -- $tp
        for engine in "staged --workers 8" "staged --workers 16" "per-expert"; do
          ./build/gpu/harness/musespark load "$ckpt" --prefix layer --experts 256 --hidden 4096 --intermediate 4096 --nvfp4 \
            --tp-size $1 --tp-rank $2 --device cuda --engine $engine --repeat 3 2>&1 | tee -a "$LOGS/loader_cli.log" \
            | sed -n '1p;$p' | sed -E 's/w13_input_scale.*w2_weight_scale_2 //' | tee -a "$OUT/summary.log"
        done
      done
      log "loader_benchmark --device=cuda"
      build/gpu/perf/loader_benchmark --device=cuda --file="$ckpt" --experts=256 --hidden=4096 --intermediate=4096 --nvfp4 \
        --iterations=${LOADER_ITERATIONS:-3} --workers=${LOADER_WORKERS:-8} --benchmark_out="$OUT/${gpu_tag}_loader.json" --benchmark_out_format=json \
        > "$LOGS/loader_benchmark.log" 2>&1 || status=1
      grep -E "^loader/" "$LOGS/loader_benchmark.log" | tee -a "$OUT/summary.log"
      log "loader_benchmark --device=cuda --workers=16, warm cells"
      build/gpu/perf/loader_benchmark --device=cuda --file="$ckpt" --experts=256 --hidden=4096 --intermediate=4096 --nvfp4 \
        --iterations=${LOADER_ITERATIONS:-3} --workers=16 --benchmark_filter='staged.*warm' \
        --benchmark_out="$OUT/${gpu_tag}_loader_16workers.json" --benchmark_out_format=json > "$LOGS/loader_benchmark_16.log" 2>&1 || status=1
      grep -E "^loader/" "$LOGS/loader_benchmark_16.log" | tee -a "$OUT/summary.log"
      rm -f "$ckpt" ;;
    sass)
      # The kernels' SASS as the device's toolkit disassembles it (this
      # machine has no cuobjdump); locally, scripts/kernel_cubins.sh and
      # render_report.py kernels give the sizes without the instructions.
      cuobjdump_bin=$(command -v cuobjdump || echo "${CUDA_HOME:-/usr/local/cuda}/bin/cuobjdump")
      match=${SASS_MATCH:-block_rank}
      for tree in ${SASS_TREES:-.}; do
        lib=$tree/build/gpu/impl/libmusespark_cuda.a
        name=$( [ "$tree" = . ] && echo this || basename "$tree")
        log "sass: $cuobjdump_bin -sass $lib, kernels containing '$match'"
        if [ ! -f "$lib" ]; then
          echo "sass: no $lib (build that tree first: the build or candidates step)" | tee -a "$OUT/summary.log"
          status=1; continue
        fi
        "$cuobjdump_bin" -sass "$lib" 2> "$LOGS/sass_${name}.err" \
          | awk -v m="$match" '/Function : /{keep = index($0, m) > 0} keep' > "$LOGS/sass_${name}.txt" || status=1
        awk '/Function : /{if (f) print n, f; f = $3; n = 0} /^ +\/\*[0-9a-f]+\*\/ /{n++} END{if (f) print n, f}' \
          "$LOGS/sass_${name}.txt" | sed 's/^/  instructions: /' | tee -a "$OUT/summary.log"
      done ;;
    *) echo "gpu_run: unknown step '$step' (build test sanitize check fuzz perf ab candidates paths placement iofloor pdl ncu loader sass)"; exit 2 ;;
  esac
done
log "done, status $status"
tar -czf "$OUT/logs.tgz" -C "$WORK" logs $( [ -d "$WORK/fuzz-failures" ] && echo fuzz-failures )
exit $status

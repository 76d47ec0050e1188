// routing_benchmark: the router timed per cell, implementations side by side.
//
//   routing_benchmark --preset=anchor --benchmark_out=anchor.json --benchmark_out_format=json
//
// Own flags (the rest go to Google Benchmark):
//   --preset=quick|decode|prefill|anchor|full   (default quick)
//   --impls=cuda,torch-recipe,cpu               (default: all this build has but io-floor;
//                     io-floor: each cell's io floor, a kernel with the cell's bytes and
//                     launch and no selection, perf/io_floor_kernel.cuh)
//   --flush-l2        time single launches after an L2 flush (default: warm L2, graph replay)
//   --no-pdl          launch without programmatic dependent launch
//   --graph-launches=N  launches per replayed graph (default 20)
//   --force-path=N    1 register path, 2 shared-memory path, 3 register path with scalar loads,
//                     4 split-row path, 5 row-per-thread path, 6 block-rank path, 7 filter
//                     path, 8 block-threshold path (tier-table tuning; cells the forced path
//                     cannot run are reported as errors)
//   --filter-rows=N   filter path: rows per warp task, 1-16 (default: the launch chooses)
//   --thread-row-lanes=N  row-per-thread path: lanes per row, 1, 2 or 4 (default: the launch
//                     chooses; cells whose E is not a multiple of 16 N are reported as errors)
//   --io-floor-blocks=N  io-floor cells: at most N blocks, each warp looping over rows
//                     (default: a warp per row), to see what the grid's size costs
//   --io-floor-warps=N  io-floor cells: N warps, one row each, per block, 1-32 (default 8):
//                     the same rows on fewer or more blocks (at 128 rows, 8 warps: 16 blocks)
//   --buffer-offset=BYTES  CUDA cells: every device buffer starts BYTES (a multiple of 256,
//                     at most 64 MiB) into its allocation, to see how a cell's time depends
//                     on where its data lies (default 0)
//   --force-rounds    register path: select by rounds, never by the threshold filter
//   --force-threshold register path: threshold selection at any row count (warp-per-row tiers, 8+ experts per lane)
//   --tokens=1,2,4 --experts=8,256 --topk=1,8 --dtypes=float32,bfloat16
//   --norms=sigmoid,softmax --padding=none,half
//                     any product of axes instead of a preset (unset axes
//                     take: tokens 1,128,8192,65536; experts 64,256; topk 8;
//                     float32; sigmoid; none)
#include <benchmark/benchmark.h>

#include <cstring>
#include <iostream>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "bench_impls.h"
#include "musespark/errors.h"
#ifdef MUSESPARK_HAVE_CUDA
#include "harness/cuda_device.h"
#endif

namespace {

using musespark::perf::BenchOptions;
using musespark::perf::Cell;

bool take_flag(const char* arg, const char* name, std::string* value) {
  const std::size_t n = std::strlen(name);
  if (std::strncmp(arg, name, n) != 0) return false;
  if (arg[n] == '\0') { *value = ""; return true; }
  if (arg[n] != '=') return false;
  *value = arg + n + 1;
  return true;
}

// The integer value of `flag`, in [lo, hi]; ArgumentError names the flag and
// the value otherwise (std::stoi alone would end the run in terminate).
long long flag_integer(const char* flag, const std::string& value, long long lo,
                       long long hi = std::numeric_limits<int>::max()) {
  long long x = 0;
  if (!musespark::perf::parse_whole_integer(value, &x) || x < lo || x > hi)
    musespark::throw_argument_error(flag, "'", value, "' is not an integer in [", lo, ", ", hi, "]");
  return x;
}

}  // namespace

int main(int argc, char** argv) {
  std::string preset = "quick";
  std::vector<std::string> impls;
#ifdef MUSESPARK_HAVE_CUDA
  impls.push_back("cuda");
#endif
#ifdef MUSESPARK_HAVE_TORCH
  impls.push_back("torch-recipe");
#endif
  impls.push_back("cpu");
  BenchOptions options;
  std::map<std::string, std::string> axes;
  std::vector<char*> rest = {argv[0]};
  try {
    for (int i = 1; i < argc; ++i) {
      std::string v;
      if (take_flag(argv[i], "--preset", &v)) preset = v;
      else if (take_flag(argv[i], "--impls", &v)) impls = musespark::perf::split_list(v);
      else if (take_flag(argv[i], "--flush-l2", &v)) options.flush_l2 = true;
      else if (take_flag(argv[i], "--no-pdl", &v)) options.pdl = false;
      else if (take_flag(argv[i], "--graph-launches", &v))
        options.graph_launches = static_cast<int>(flag_integer("--graph-launches", v, 1));
      else if (take_flag(argv[i], "--force-path", &v))
        options.force_path = static_cast<int>(flag_integer("--force-path", v, 0));
      else if (take_flag(argv[i], "--filter-rows", &v))
        options.filter_rows = static_cast<int>(flag_integer("--filter-rows", v, 0));
      else if (take_flag(argv[i], "--thread-row-lanes", &v))
        options.thread_row_lanes = static_cast<int>(flag_integer("--thread-row-lanes", v, 0));
      else if (take_flag(argv[i], "--io-floor-blocks", &v))
        options.io_floor_max_blocks = flag_integer("--io-floor-blocks", v, 0);
      else if (take_flag(argv[i], "--io-floor-warps", &v))
        options.io_floor_warps = static_cast<int>(flag_integer("--io-floor-warps", v, 1, 32));
      else if (take_flag(argv[i], "--buffer-offset", &v)) {
        options.buffer_offset = flag_integer("--buffer-offset", v, 0, 64LL << 20);
        if (options.buffer_offset % 256 != 0)
          musespark::throw_argument_error("--buffer-offset", "'", v, "' is not a multiple of 256");
      }
      else if (take_flag(argv[i], "--force-rounds", &v)) options.force_round_selection = true;
      else if (take_flag(argv[i], "--force-threshold", &v)) options.force_threshold_selection = true;
      else if (bool taken = false; [&] {
                 for (const char* axis : {"tokens", "experts", "topk", "dtypes", "norms", "padding"})
                   if (take_flag(argv[i], (std::string("--") + axis).c_str(), &v)) axes[axis] = v, taken = true;
                 return taken;
               }()) {
      }
      else rest.push_back(argv[i]);
    }
  } catch (const musespark::ArgumentError& e) {
    std::cerr << "routing_benchmark: " << e.what() << "\n";
    return 2;
  }
  int rest_argc = static_cast<int>(rest.size());
  benchmark::Initialize(&rest_argc, rest.data());
  if (benchmark::ReportUnrecognizedArguments(rest_argc, rest.data())) return 2;

  std::vector<Cell> cells;
  try {
    if (axes.empty()) {
      cells = musespark::perf::preset_cells(preset, impls);
    } else {
      using namespace musespark::perf;
      auto get = [&](const char* k, const char* fallback) { return axes.count(k) ? axes[k] : std::string(fallback); };
      Axes a;
      a.tokens = parse_sizes("tokens", get("tokens", "1,128,8192,65536"));
      a.experts = parse_sizes("experts", get("experts", "64,256"));
      a.topk = parse_sizes("topk", get("topk", "8"));
      a.dtypes = parse_dtypes(get("dtypes", "float32"));
      a.norms = parse_norms(get("norms", "sigmoid"));
      a.half_padded = parse_padding(get("padding", "none"));
      cells = axes_cells(a, impls);
      preset = "custom axes";
    }
  } catch (const musespark::ArgumentError& e) {
    std::cerr << "routing_benchmark: " << e.what() << "\n";
    return 2;
  }
  for (const std::string& impl : impls)
    if (impl != "cuda" && impl != "io-floor" && impl != "torch-recipe" && impl != "cpu") {
      std::cerr << "routing_benchmark: unknown implementation '" << impl
                << "'; known: cuda, io-floor, torch-recipe, cpu\n";
      return 2;
    }

  benchmark::AddCustomContext("git_commit", MUSESPARK_GIT_COMMIT);
  benchmark::AddCustomContext("build_type", MUSESPARK_BUILD_TYPE);
  benchmark::AddCustomContext("preset", preset);
  benchmark::AddCustomContext("l2", options.flush_l2 ? "flushed before each launch" : "warm (graph replay)");
  benchmark::AddCustomContext("pdl", options.pdl ? "on" : "off");
  benchmark::AddCustomContext("graph_launches", std::to_string(options.graph_launches));
  benchmark::AddCustomContext("force_path", std::to_string(options.force_path));
  benchmark::AddCustomContext("filter_rows", std::to_string(options.filter_rows));
  benchmark::AddCustomContext("thread_row_lanes", std::to_string(options.thread_row_lanes));
  benchmark::AddCustomContext("io_floor_max_blocks", std::to_string(options.io_floor_max_blocks));
  benchmark::AddCustomContext("io_floor_warps", std::to_string(options.io_floor_warps));
  benchmark::AddCustomContext("buffer_offset", std::to_string(options.buffer_offset));
  benchmark::AddCustomContext("selection", options.force_round_selection       ? "rounds (forced)"
                                          : options.force_threshold_selection ? "threshold where the tier has it (forced)"
                                                                              : "automatic");

  double copy_bw = 0;
  std::string cuda_why = "this build has no CUDA kernel";
#ifdef MUSESPARK_HAVE_CUDA
  cuda_why = musespark::harness::cuda_unavailable_reason();
  if (cuda_why.empty()) {
    copy_bw = musespark::perf::describe_gpu_and_measure_copy_bandwidth();
    if (!options.flush_l2) musespark::perf::record_launch_floor(options);
  }
#endif
  if (!cuda_why.empty()) {
    benchmark::AddCustomContext("gpu", "none: " + cuda_why);
    std::cerr << "routing_benchmark: CUDA cells skipped: " << cuda_why << "\n";
  }

  for (const Cell& cell : cells) {
    const bool gpu_cell = cell.impl == "cuda" || cell.impl == "io-floor";  // timed by run_cuda_cell
    auto* b = benchmark::RegisterBenchmark(cell.name().c_str(),
                                           [cell, gpu_cell, options, copy_bw, cuda_why](benchmark::State& st) {
      try {
        if (gpu_cell) {
#ifdef MUSESPARK_HAVE_CUDA
          if (cuda_why.empty()) return musespark::perf::run_cuda_cell(st, cell, options, copy_bw);
#endif
          return musespark::perf::skip_cell(st, cuda_why);
        }
        if (cell.impl == "torch-recipe") {
#ifdef MUSESPARK_HAVE_TORCH
          return musespark::perf::run_torch_cell(st, cell, copy_bw);
#else
          return musespark::perf::skip_cell(st, "this build has no LibTorch");
#endif
        }
        return musespark::perf::run_cpu_cell(st, cell, copy_bw);
      } catch (const std::exception& e) {
        st.SkipWithError(e.what());
      }
    });
    // A fixed count: each iteration already replays a graph of many launches,
    // and letting the library grow the count for microsecond cells would
    // spend seconds of host synchronization per cell.
    b->UseManualTime()->Unit(benchmark::kMicrosecond)->Iterations(gpu_cell ? 20 : 10);
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

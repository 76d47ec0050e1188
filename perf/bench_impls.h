// One timing function per implementation; routing_benchmark.cpp registers
// the cells and calls these.
#pragma once

#include <benchmark/benchmark.h>

#include <string>

#include "routing_cells.h"

namespace musespark::perf {

struct BenchOptions {
  bool flush_l2 = false;   // rewrite a buffer twice the L2 size before each timed launch
  bool pdl = true;
  int graph_launches = 20; // launches captured in the CUDA graph that is replayed
  int force_path = 0;      // cuda::LaunchOptions::force_path, for tuning the tier table
  int filter_rows = 0;     // cuda::LaunchOptions::filter_rows
  int thread_row_lanes = 0;  // cuda::LaunchOptions::thread_row_lanes
  bool force_round_selection = false;  // cuda::LaunchOptions::force_round_selection
  bool force_threshold_selection = false;  // cuda::LaunchOptions::force_threshold_selection
  long long io_floor_max_blocks = 0;  // io-floor cells: cap the grid (its warps then loop over rows); 0: a warp per row
  int io_floor_warps = 8;  // io-floor cells: warps (rows) per block, 1-32; 8 as the register path's warp-per-row tiers
  long long buffer_offset = 0;  // CUDA cells: each device buffer starts this many bytes (a multiple of 256) into its allocation
};

// Reports a cell that cannot run on this machine, in whichever way this
// Google Benchmark version offers.
void skip_cell(benchmark::State& state, const std::string& why);

// Sets bytes, tokens and percent-of-copy-bandwidth counters from the time.
void set_counters(benchmark::State& state, const Cell& cell, double copy_bytes_per_second);

// GPU name, clocks, driver/runtime versions into the JSON context, and the
// measured device-to-device copy bandwidth (read + write bytes per second).
double describe_gpu_and_measure_copy_bandwidth();
// The time per launch of a one-warp kernel that only waits for its
// predecessor and writes a word, launched as the cells are (graph replay,
// PDL per the options): context launch_floor_us, the bound under decode.
void record_launch_floor(const BenchOptions& options);
void run_cuda_cell(benchmark::State& state, const Cell& cell, const BenchOptions& options, double copy_bw);
void run_torch_cell(benchmark::State& state, const Cell& cell, double copy_bw);
void run_cpu_cell(benchmark::State& state, const Cell& cell, double copy_bw);

}  // namespace musespark::perf

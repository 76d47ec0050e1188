// loader_benchmark: the consolidated expert loader's throughput (GB/s of
// destination bytes) for one synthetic Muse-shaped layer: the block-copy fast
// path against a per-expert, row-by-row baseline (the shape of the seed's
// per-expert weight_loader loop), TP 1 and one rank of TP 8, page-cached and
// (where the kernel lets us drop the cache) cold.
//
//   loader_benchmark --experts=256 --hidden=4096 --intermediate=4096 --nvfp4 \
//       --device=cuda --benchmark_out=loader.json --benchmark_out_format=json
//
// --device=cpu: block copies against row-by-row pieces into host memory.
// --device=cuda: the staged engine (pinned staging, worker threads, streams)
// against one synchronous cudaMemcpy2D per expert block from the mapping.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "harness/expert_layer_buffers.h"
#include "musespark/expert_loader.h"
#ifdef MUSESPARK_HAVE_CUDA
#include <cuda_runtime.h>

#include "expert_copy_engine.h"
#endif

namespace {

using namespace musespark;

struct Settings {
  std::int64_t experts = 32, hidden = 1024, intermediate = 1024;
  bool nvfp4 = true;
  std::string path;
  std::string device = "cpu";
  int workers = 16;
  int iterations = 5;
};
Settings g_settings;
double g_link_pinned_bytes_per_s = 0;  // measured at start-up with --device=cuda

void write_layer(const Settings& s) {
  ExpertLayerConfig c{"bench", s.experts, s.hidden, s.intermediate, 1, 0, 1, 0, ExpertPlacement::kContiguous, s.nvfp4};
  std::vector<TensorToWrite> list;
  std::uint64_t x = 88172645463325252ull;
  for (const auto& [name, spec] : ConsolidatedExpertLoader::expected_params(c, DType::kBFloat16)) {
    std::int64_t n = 1;
    for (std::int64_t d : spec.second) n *= d;
    TensorToWrite t{"layer." + name, spec.first, spec.second, std::vector<std::uint8_t>(static_cast<std::size_t>(n) * dtype_size(spec.first))};
    for (std::size_t i = 0; i + 8 <= t.bytes.size(); i += 8) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      std::memcpy(&t.bytes[i], &x, 8);
    }
    list.push_back(std::move(t));
  }
  write_safetensors(s.path, list, {});
}

// The baseline: every local expert, every half, row by row.
void copy_rows_one_by_one(const std::vector<BlockCopy>& blocks, Device) {
  for (const BlockCopy& b : blocks)
    for (std::size_t r = 0; r < b.height; ++r) {
      const std::size_t row_bytes = b.width_bytes;
      for (std::size_t off = 0; off < row_bytes; off += 512)  // a narrow().copy_() walks elements; 512-byte pieces stand in
        std::memcpy(b.dst + r * b.dst_pitch + off, b.src + r * b.src_pitch + off, std::min<std::size_t>(512, row_bytes - off));
    }
}

bool drop_page_cache(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) return false;
  const int rc = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  close(fd);
  return rc == 0;
}

void run(benchmark::State& state, bool fast, std::int64_t tp, bool cold) {
  const Settings& s = g_settings;
  ExpertLayerConfig c{"bench", s.experts, s.hidden, s.intermediate, tp, 0, 1, 0, ExpertPlacement::kContiguous, s.nvfp4};
  const bool cuda = s.device == "cuda";
  std::unique_ptr<harness::ExpertLayerBuffers> dst;
  CopyEngine engine = fast ? CopyEngine(copy_blocks_on_host) : CopyEngine(copy_rows_one_by_one);
#ifdef MUSESPARK_HAVE_CUDA
  std::unique_ptr<cuda::ExpertCopyEngine> staged;
#endif
  try {
#ifdef MUSESPARK_HAVE_CUDA
    if (cuda) {
      staged = std::make_unique<cuda::ExpertCopyEngine>(std::size_t{16} << 20, s.workers);
      engine = fast ? staged->as_copy_engine() : CopyEngine(cuda::copy_blocks_one_call_each);
    }
#endif
    dst = std::make_unique<harness::ExpertLayerBuffers>(c, DType::kBFloat16, cuda ? Device::kCuda : Device::kCpu);
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  // A warm cell must not inherit an evicted file from the cold cell before it:
  // one untimed load brings the checkpoint into the page cache.
  if (!cold) ConsolidatedExpertLoader(c, dst->params(), engine).load(Checkpoint::open(s.path), "layer");
  for (auto _ : state) {
    if (cold && !drop_page_cache(s.path)) {
      state.SkipWithError("posix_fadvise(DONTNEED) failed: the cold cell cannot be measured here");
      return;
    }
    const auto t0 = std::chrono::steady_clock::now();
    const Checkpoint ckpt = Checkpoint::open(s.path);
    ConsolidatedExpertLoader(c, dst->params(), engine).load(ckpt, "layer");
    state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  const double bytes = static_cast<double>(dst->bytes());
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes) * state.iterations());
  state.counters["GB_per_s"] = benchmark::Counter(bytes / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["bytes_per_load"] = bytes;
  // Share of the pinned host-to-device rate measured at start-up (CUDA only).
  if (g_link_pinned_bytes_per_s > 0 && state.iterations() > 0)
    state.counters["pct_of_pinned_h2d"] = benchmark::Counter(100.0 * bytes / g_link_pinned_bytes_per_s,
                                                              benchmark::Counter::kIsIterationInvariantRate);
}

#ifdef MUSESPARK_HAVE_CUDA
// The link's own rates, for the loader's share of them: 1 GiB host to device
// from pinned and from pageable memory, best of 5 after a warm-up copy.
// Returns {pinned, pageable} in bytes per second, or {0, 0} when a CUDA call
// fails (the context then says so).
std::pair<double, double> measure_host_to_device() {
  const std::size_t bytes = std::size_t{1} << 30;
  void *pinned = nullptr, *device = nullptr;
  std::vector<std::uint8_t> pageable(bytes, 1);
  if (cudaMallocHost(&pinned, bytes) != cudaSuccess) return {0, 0};
  if (cudaMalloc(&device, bytes) != cudaSuccess) {
    cudaFreeHost(pinned);
    return {0, 0};
  }
  std::memset(pinned, 1, bytes);
  auto best_of = [&](const void* src) {
    double best = 1e30;
    for (int i = 0; i < 6; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      if (cudaMemcpy(device, src, bytes, cudaMemcpyHostToDevice) != cudaSuccess) return 0.0;
      const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (i > 0) best = std::min(best, sec);
    }
    return static_cast<double>(bytes) / best;
  };
  const double pinned_rate = best_of(pinned), pageable_rate = best_of(pageable.data());
  cudaFree(device);
  cudaFreeHost(pinned);
  return {pinned_rate, pageable_rate};
}
#endif

bool take(const char* arg, const char* name, std::string* v) {
  const std::size_t n = std::strlen(name);
  if (std::strncmp(arg, name, n) != 0 || (arg[n] != '=' && arg[n] != '\0')) return false;
  *v = arg[n] == '=' ? arg + n + 1 : "";
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<char*> rest = {argv[0]};
  for (int i = 1; i < argc; ++i) {
    std::string v;
    if (take(argv[i], "--experts", &v)) g_settings.experts = std::stoll(v);
    else if (take(argv[i], "--hidden", &v)) g_settings.hidden = std::stoll(v);
    else if (take(argv[i], "--intermediate", &v)) g_settings.intermediate = std::stoll(v);
    else if (take(argv[i], "--bf16", &v)) g_settings.nvfp4 = false;
    else if (take(argv[i], "--nvfp4", &v)) g_settings.nvfp4 = true;
    else if (take(argv[i], "--file", &v)) g_settings.path = v;
    else if (take(argv[i], "--device", &v)) g_settings.device = v;
    else if (take(argv[i], "--workers", &v)) g_settings.workers = std::stoi(v);
    else if (take(argv[i], "--iterations", &v)) g_settings.iterations = std::stoi(v);
    else rest.push_back(argv[i]);
  }
  if (g_settings.device != "cpu" && g_settings.device != "cuda") {
    std::fprintf(stderr, "loader_benchmark: --device must be cpu or cuda, got '%s'\n", g_settings.device.c_str());
    return 2;
  }
#ifndef MUSESPARK_HAVE_CUDA
  if (g_settings.device == "cuda") {
    std::fprintf(stderr, "loader_benchmark: --device=cuda needs a build with CUDA\n");
    return 2;
  }
#endif
  int rest_argc = static_cast<int>(rest.size());
  benchmark::Initialize(&rest_argc, rest.data());
  if (benchmark::ReportUnrecognizedArguments(rest_argc, rest.data())) return 2;
  const bool own_file = g_settings.path.empty();
  if (own_file) g_settings.path = (std::filesystem::temp_directory_path() / "musespark_loader_bench.safetensors").string();
  if (own_file) write_layer(g_settings);
  benchmark::AddCustomContext("layer", "E=" + std::to_string(g_settings.experts) + " H=" + std::to_string(g_settings.hidden) +
                                           " I=" + std::to_string(g_settings.intermediate) + (g_settings.nvfp4 ? " nvfp4" : " bf16"));
  benchmark::AddCustomContext("destination", g_settings.device);
  benchmark::AddCustomContext("git_commit", MUSESPARK_GIT_COMMIT);
  if (g_settings.device == "cuda") benchmark::AddCustomContext("staging", std::to_string(g_settings.workers) + " workers x 2 x 16 MB pinned");
#ifdef MUSESPARK_HAVE_CUDA
  if (g_settings.device == "cuda") {
    const auto [pinned, pageable] = measure_host_to_device();
    g_link_pinned_bytes_per_s = pinned;
    benchmark::AddCustomContext("h2d_pinned_gbps", pinned > 0 ? std::to_string(pinned / 1e9) : "not measured (a CUDA call failed)");
    benchmark::AddCustomContext("h2d_pageable_gbps", pageable > 0 ? std::to_string(pageable / 1e9) : "not measured (a CUDA call failed)");
  }
#endif
  for (bool fast : {true, false})
    for (std::int64_t tp : {1, 8})
      for (bool cold : {false, true}) {
        const bool cuda = g_settings.device == "cuda";
        const char* impl = fast ? (cuda ? "staged-engine" : "block-copies") : (cuda ? "per-expert-memcpy2d" : "per-expert-rows");
        const std::string name = std::string("loader/impl:") + impl + "/tp:" + std::to_string(tp) + "/cache:" +
                                 (cold ? "cold" : "warm") + "/device:" + g_settings.device;
        benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& st) { run(st, fast, tp, cold); })
            ->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(g_settings.iterations);
      }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  if (own_file) std::filesystem::remove(g_settings.path);
  return 0;
}

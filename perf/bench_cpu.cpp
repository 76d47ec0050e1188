// Times the production CPU path (wall clock), on small cells only.
#include <chrono>
#include <random>
#include <vector>

#include "bench_impls.h"
#include "musespark/route.h"

namespace musespark::perf {

void skip_cell(benchmark::State& state, const std::string& why) {
#if MUSESPARK_BENCHMARK_HAS_SKIP_MESSAGE
  state.SkipWithMessage(why);
#else
  state.SkipWithError(why.c_str());
#endif
}

void set_counters(benchmark::State& state, const Cell& cell, double copy_bw) {
  using benchmark::Counter;
  state.SetBytesProcessed(static_cast<std::int64_t>(cell.bytes()) * state.iterations());
  state.counters["tokens_per_second"] = Counter(static_cast<double>(cell.tokens), Counter::kIsIterationInvariantRate);
  if (copy_bw > 0)
    state.counters["pct_of_copy_bw"] = Counter(100.0 * cell.bytes() / copy_bw, Counter::kIsIterationInvariantRate);
  state.counters["bytes_per_call"] = cell.bytes();
}

void run_cpu_cell(benchmark::State& state, const Cell& cell, double copy_bw) {
  const std::int64_t T = cell.tokens, E = cell.experts, k = cell.topk;
  if (cell.dtype != DType::kFloat32) {
    skip_cell(state, "the CPU benchmark times fp32 logits only");
    return;
  }
  std::mt19937 rng(1);
  std::normal_distribution<float> normal;
  std::vector<float> logits(static_cast<std::size_t>(T * E)), bias(static_cast<std::size_t>(E)),
      weights(static_cast<std::size_t>(T * k));
  std::vector<std::int32_t> ids(static_cast<std::size_t>(T * k));
  std::vector<std::uint8_t> pad(static_cast<std::size_t>(T));
  for (float& v : logits) v = normal(rng);
  for (float& v : bias) v = 0.05f * normal(rng);
  for (std::int64_t t = 0; t < T; ++t) pad[t] = cell.half_padded && t % 2;
  RoutingParams p;
  p.logits = logits.data();
  p.logits_row_stride = E;
  p.num_tokens = T;
  p.num_experts = E;
  p.bias = bias.data();
  p.topk = k;
  p.normalization = cell.norm;
  p.route_scale = 2.5;
  p.multiplier = 0.17677669529663687;
  p.eps = 1e-15;
  if (cell.half_padded) p.is_padding = reinterpret_cast<const bool*>(pad.data());
  set_contiguous_outputs(p, weights.data(), ids.data(), DType::kInt32);
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    route(p);
    benchmark::DoNotOptimize(weights.data());
    state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  set_counters(state, cell, copy_bw);
}

}  // namespace musespark::perf

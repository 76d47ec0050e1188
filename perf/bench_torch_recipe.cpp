// Times the seed's torch recipe with LibTorch ops, eager, on CUDA (CUDA
// events around back-to-back calls) or on the CPU (wall clock).
#include <ATen/ATen.h>

#include <chrono>

#include "bench_impls.h"

#ifdef MUSESPARK_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace musespark::perf {
namespace {

std::tuple<at::Tensor, at::Tensor> recipe(const at::Tensor& logits, const at::Tensor& bias, const Cell& cell) {
  at::Tensor g = logits * 0.17677669529663687;
  g = cell.norm == Normalization::kSigmoid ? at::sigmoid(g) : at::softmax(g, -1);
  const at::Tensor ids = std::get<1>(at::topk(g + bias, cell.topk, -1));
  at::Tensor w = at::gather(g, 1, ids);
  w = (w / (w.sum(-1, true) + 1e-15) * 2.5).to(at::kFloat);
  return {w, ids.to(at::kInt)};
}

}  // namespace

void run_torch_cell(benchmark::State& state, const Cell& cell, double copy_bw) {
  const bool on_cuda = at::hasCUDA();
  const auto dtype = cell.dtype == DType::kFloat32 ? at::kFloat : cell.dtype == DType::kBFloat16 ? at::kBFloat16 : at::kHalf;
  if (!on_cuda && dtype == at::kHalf) {
    skip_cell(state, "this LibTorch has no CPU fp16 softmax/sigmoid");
    return;
  }
  const at::Device device = on_cuda ? at::Device(at::kCUDA) : at::Device(at::kCPU);
  const at::Tensor logits = at::randn({cell.tokens, cell.experts}, at::TensorOptions().device(device)).to(dtype);
  const at::Tensor bias = at::randn({cell.experts}, at::TensorOptions().device(device)) * 0.05;
  recipe(logits, bias, cell);
  constexpr int kCalls = 10;
#ifdef MUSESPARK_HAVE_CUDA
  if (on_cuda) {
    cudaEvent_t start, stop;
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    cudaDeviceSynchronize();
    for (auto _ : state) {
      // Legacy default stream: LibTorch's default current stream.
      cudaEventRecord(start, nullptr);
      for (int i = 0; i < kCalls; ++i) benchmark::DoNotOptimize(recipe(logits, bias, cell));
      cudaEventRecord(stop, nullptr);
      cudaEventSynchronize(stop);
      float ms = 0;
      cudaEventElapsedTime(&ms, start, stop);
      state.SetIterationTime(ms * 1e-3 / kCalls);
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    set_counters(state, cell, copy_bw);
    return;
  }
#endif
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kCalls; ++i) benchmark::DoNotOptimize(recipe(logits, bias, cell));
    state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / kCalls);
  }
  set_counters(state, cell, copy_bw);
}

}  // namespace musespark::perf

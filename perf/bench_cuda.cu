// Times the CUDA kernel: CUDA events around the replay of a CUDA graph of
// many launches (warm L2, as the anchor was measured), or around single
// launches after an L2 flush.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "bench_impls.h"
#include "io_floor_kernel.cuh"
#include "harness/cuda_device.h"
#include "musespark/route.h"
#include "routing_kernel_common.cuh"

namespace musespark::perf {
namespace {

using harness::check_cuda;
using harness::DeviceBuffer;

// Deterministic pseudo-normal logits (sum of four hashed uniforms).
template <typename T>
__global__ void fill_logits(T* out, std::int64_t n, std::uint32_t seed) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    float acc = 0.0f;
    std::uint32_t h = static_cast<std::uint32_t>(i) * 2654435761u ^ seed ^ static_cast<std::uint32_t>(i >> 32);
    for (int r = 0; r < 4; ++r) {
      h ^= h >> 16; h *= 0x7feb352du; h ^= h >> 15; h *= 0x846ca68bu; h ^= h >> 16;
      acc += static_cast<float>(h) * 2.3283064e-10f;
    }
    out[i] = static_cast<T>((acc - 2.0f) * 1.7320508f);
  }
}

__global__ void fill_padding(bool* pad, std::int64_t n, bool half) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    pad[i] = half && (i % 2 == 1);
}

struct Events {
  cudaEvent_t start, stop;
  Events() { cudaEventCreate(&start); cudaEventCreate(&stop); }
  ~Events() { cudaEventDestroy(start); cudaEventDestroy(stop); }
  double seconds() {
    float ms = 0;
    check_cuda(cudaEventSynchronize(stop), "event sync");
    check_cuda(cudaEventElapsedTime(&ms, start, stop), "event elapsed");
    return ms * 1e-3;
  }
};

// A stream of its own, so that capture and replay see no other work.
class OwnedStream {
 public:
  OwnedStream() { check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "stream"); }
  OwnedStream(const OwnedStream&) = delete;
  OwnedStream& operator=(const OwnedStream&) = delete;
  ~OwnedStream() { cudaStreamDestroy(stream_); }
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

// `launches` calls of launch(stream) captured into one CUDA graph; a replay
// runs them back to back, as a serving loop would (the anchor's method).
// The launch floor and the cells are timed by the same code, so their
// figures compare.
class CapturedLaunches {
 public:
  template <typename Launch>
  CapturedLaunches(cudaStream_t stream, int launches, Launch&& launch) : stream_(stream), launches_(launches) {
    check_cuda(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "capture");
    try {
      for (int i = 0; i < launches; ++i) check_cuda(launch(stream), "captured launch");
    } catch (...) {
      cudaGraph_t partial = nullptr;  // leave the stream out of capture mode
      cudaStreamEndCapture(stream, &partial);
      if (partial != nullptr) cudaGraphDestroy(partial);
      throw;
    }
    check_cuda(cudaStreamEndCapture(stream, &graph_), "end capture");
    check_cuda(cudaGraphInstantiate(&exec_, graph_, 0), "instantiate");
  }
  CapturedLaunches(const CapturedLaunches&) = delete;
  CapturedLaunches& operator=(const CapturedLaunches&) = delete;
  ~CapturedLaunches() {
    if (exec_ != nullptr) cudaGraphExecDestroy(exec_);
    if (graph_ != nullptr) cudaGraphDestroy(graph_);
  }

  // One replay between two events on the stream; seconds per launch.
  double replay_seconds_per_launch(Events& ev) {
    check_cuda(cudaEventRecord(ev.start, stream_), "record");
    check_cuda(cudaGraphLaunch(exec_, stream_), "replay");
    check_cuda(cudaEventRecord(ev.stop, stream_), "record");
    return ev.seconds() / launches_;
  }

 private:
  cudaStream_t stream_;
  int launches_;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

// The least a router launch can cost here: one warp that waits for its
// predecessor (PDL), lets its dependents start and writes one word.
__global__ void launch_floor_kernel(int* out, bool trigger_first) {
  cuda::pdl_enter(trigger_first);
  if (threadIdx.x == 0) *out = 1;
}

}  // namespace

void record_launch_floor(const BenchOptions& options) {
  try {
    DeviceBuffer word(sizeof(int));
    OwnedStream stream;
    CapturedLaunches graph(stream.get(), options.graph_launches, [&](cudaStream_t s) {
      return cuda::launch_with_pdl(launch_floor_kernel, 1, 32, 0, s, options.pdl, static_cast<int*>(word.get()),
                                   cuda::trigger_first_for(1, 32));
    });
    Events ev;
    double best = 1e30;
    for (int rep = 0; rep < 20; ++rep) {  // the first replay warms up
      const double s = graph.replay_seconds_per_launch(ev);
      if (rep > 0) best = std::min(best, s);
    }
    // Same launch, graph and PDL setting as the cells; best of 19 replays.
    benchmark::AddCustomContext("launch_floor_us", std::to_string(best * 1e6));
  } catch (const std::exception& e) {
    benchmark::AddCustomContext("launch_floor_us", std::string("unmeasured: ") + e.what());
  }
}

double describe_gpu_and_measure_copy_bandwidth() {
  cudaDeviceProp prop{};
  check_cuda(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  int driver = 0, runtime = 0, sm_khz = 0, mem_khz = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  cudaDeviceGetAttribute(&sm_khz, cudaDevAttrClockRate, 0);
  cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, 0);
  benchmark::AddCustomContext("gpu_name", prop.name);
  benchmark::AddCustomContext("gpu_sm_count", std::to_string(prop.multiProcessorCount));
  benchmark::AddCustomContext("gpu_l2_bytes", std::to_string(prop.l2CacheSize));
  benchmark::AddCustomContext("gpu_sm_clock_mhz", std::to_string(sm_khz / 1000));
  benchmark::AddCustomContext("gpu_mem_clock_mhz", std::to_string(mem_khz / 1000));
  benchmark::AddCustomContext("cuda_driver_version", std::to_string(driver));
  benchmark::AddCustomContext("cuda_runtime_version", std::to_string(runtime));

  // Device-to-device copy of 1 GiB, best of 5, counting bytes read + written.
  const std::size_t bytes = std::size_t{1} << 30;
  DeviceBuffer a(bytes), b(bytes);
  Events ev;
  double best = 1e30;
  for (int i = 0; i < 6; ++i) {
    check_cuda(cudaEventRecord(ev.start), "record");
    check_cuda(cudaMemcpyAsync(b.get(), a.get(), bytes, cudaMemcpyDeviceToDevice), "copy");
    check_cuda(cudaEventRecord(ev.stop), "record");
    const double s = ev.seconds();
    if (i > 0) best = std::min(best, s);
  }
  const double bw = 2.0 * static_cast<double>(bytes) / best;
  benchmark::AddCustomContext("d2d_copy_gbps", std::to_string(bw / 1e9));
  return bw;
}

// A device buffer whose data starts `offset` bytes into its allocation
// (--buffer-offset), to see whether a cell's time follows where its data
// lies while nothing else changes. On the H100 (session 50) it did not: two
// processes at one offset differed as much as any two offsets did.
class OffsetBuffer {
 public:
  OffsetBuffer(std::size_t bytes, std::size_t offset) : buffer_(bytes + offset), offset_(offset) {}
  void* get() const { return static_cast<unsigned char*>(buffer_.get()) + offset_; }

 private:
  DeviceBuffer buffer_;
  std::size_t offset_;
};

void run_cuda_cell(benchmark::State& state, const Cell& cell, const BenchOptions& options, double copy_bw) {
  const bool io_floor = cell.impl == "io-floor";
  const std::int64_t row_bytes = cell.experts * static_cast<std::int64_t>(dtype_size(cell.dtype));
  if (const char* why = io_floor ? io_floor_unsupported(row_bytes) : nullptr) return skip_cell(state, why);
  const std::int64_t T = cell.tokens, E = cell.experts, k = cell.topk;
  const auto offset = static_cast<std::size_t>(options.buffer_offset);
  OffsetBuffer logits(static_cast<std::size_t>(T * E) * dtype_size(cell.dtype), offset);
  OffsetBuffer bias(static_cast<std::size_t>(E) * 4, offset), weights(static_cast<std::size_t>(T * k) * 4, offset),
      ids(static_cast<std::size_t>(T * k) * 4, offset), pad(static_cast<std::size_t>(T), offset);
  const unsigned blocks = 1024;
  switch (cell.dtype) {
    case DType::kFloat32: fill_logits<<<blocks, 256>>>(static_cast<float*>(logits.get()), T * E, 1); break;
    case DType::kBFloat16: fill_logits<<<blocks, 256>>>(static_cast<__nv_bfloat16*>(logits.get()), T * E, 1); break;
    default: fill_logits<<<blocks, 256>>>(static_cast<__half*>(logits.get()), T * E, 1); break;
  }
  fill_logits<<<4, 256>>>(static_cast<float*>(bias.get()), E, 2);
  fill_padding<<<blocks, 256>>>(static_cast<bool*>(pad.get()), T, cell.half_padded);
  check_cuda(cudaDeviceSynchronize(), "fill");

  RoutingParams p;
  p.device = Device::kCuda;
  p.logits = logits.get();
  p.logits_dtype = cell.dtype;
  p.logits_row_stride = E;
  p.num_tokens = T;
  p.num_experts = E;
  p.bias = static_cast<const float*>(bias.get());
  p.topk = k;
  p.normalization = cell.norm;
  p.route_scale = 2.5;
  p.multiplier = 0.17677669529663687;
  p.eps = 1e-15;
  if (cell.half_padded) p.is_padding = static_cast<const bool*>(pad.get());
  set_contiguous_outputs(p, static_cast<float*>(weights.get()), ids.get(), DType::kInt32);

  OwnedStream owned_stream;
  const cudaStream_t stream = owned_stream.get();
  cuda::LaunchOptions lo;
  lo.enable_pdl = options.pdl;
  lo.force_path = options.force_path;
  lo.filter_rows = options.filter_rows;
  lo.thread_row_lanes = options.thread_row_lanes;
  lo.force_round_selection = options.force_round_selection;
  lo.force_threshold_selection = options.force_threshold_selection;
  // The router, or on "io-floor" cells the io floor kernel with the same
  // buffers, grid-size rule (one warp per row) and PDL setting.
  const auto launch = [&](cudaStream_t s) {
    if (!io_floor) return cuda::launch_routing(p, s, lo);
    const int warps = options.io_floor_warps;
    std::int64_t want = (T + warps - 1) / warps;
    if (options.io_floor_max_blocks > 0) want = std::min<std::int64_t>(want, options.io_floor_max_blocks);
    const auto blocks = static_cast<unsigned>(std::min<std::int64_t>(want, 1 << 20));
    return cuda::launch_with_pdl(io_floor_kernel, blocks, 32 * warps, 0, s, options.pdl,
                                 static_cast<const unsigned char*>(logits.get()), T, row_bytes, static_cast<int>(k),
                                 static_cast<float*>(weights.get()), static_cast<std::int32_t*>(ids.get()),
                                 cuda::trigger_first_for(blocks, 32 * warps));
  };
  check_cuda(launch(stream), "launch");
  check_cuda(cudaStreamSynchronize(stream), "warm-up");
  Events ev;

  if (!options.flush_l2) {
    CapturedLaunches graph(stream, options.graph_launches, launch);
    graph.replay_seconds_per_launch(ev);  // warm replay
    for (auto _ : state) state.SetIterationTime(graph.replay_seconds_per_launch(ev));
  } else {
    int l2 = 0;
    cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0);
    DeviceBuffer flush(static_cast<std::size_t>(l2) * 2);
    for (auto _ : state) {
      check_cuda(cudaMemsetAsync(flush.get(), 0, static_cast<std::size_t>(l2) * 2, stream), "flush");
      check_cuda(cudaEventRecord(ev.start, stream), "record");
      check_cuda(launch(stream), "launch");
      check_cuda(cudaEventRecord(ev.stop, stream), "record");
      state.SetIterationTime(ev.seconds());
    }
  }
  set_counters(state, cell, copy_bw);
  // Which path the router took (the label column; "label" in the JSON).
  if (!io_floor) state.SetLabel(std::string("path=") + cuda::routing_path_name(cuda::chosen_path(p, lo)));
}

}  // namespace musespark::perf

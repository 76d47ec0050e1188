// Kernel bodies and per-dtype launch logic; included once per logits dtype by
// routing_kernel_{fp32,bf16,fp16}.cu. See routing_kernel.cuh for the design.
#pragma once

#include <atomic>
#include <cstdint>
#include <type_traits>

#include "routing_kernel_common.cuh"
#include "routing_block_rank_path.cuh"
#include "routing_block_threshold_path.cuh"
#include "routing_filter_path.cuh"
#include "routing_register_path.cuh"
#include "routing_split_row_path.cuh"
#include "routing_thread_row_path.cuh"

namespace musespark::cuda {

// ---------------------------------------------------------------------------
// Shared-memory path: one block per row, any E up to kSharedPathMaxExperts.
// ---------------------------------------------------------------------------
struct BlockScratch {
  std::uint64_t warp_u64[kBlockThreads / 32];
  std::uint64_t round_winner[2][kBlockThreads / 32];  // per warp, by round parity
  float warp_f32[kBlockThreads / 32];
  int warp_flag[kBlockThreads / 32];
  std::int32_t slot_id[kMaxTopK];
  float slot_score[kMaxTopK];
};

// The warp's largest 64-bit selection key by two 32-bit redux.sync: the high
// half (score order) first, then the low half (inverted expert index) among
// lanes that hold that high half. 0 (no key) loses to every key.
__device__ __forceinline__ std::uint64_t warp_max_key(std::uint64_t v) {
  const std::uint32_t hi = __reduce_max_sync(0xFFFFFFFFu, static_cast<std::uint32_t>(v >> 32));
  const std::uint32_t lo_mine = static_cast<std::uint32_t>(v >> 32) == hi ? static_cast<std::uint32_t>(v) : 0u;
  const std::uint32_t lo = __reduce_max_sync(0xFFFFFFFFu, lo_mine);
  return (static_cast<std::uint64_t>(hi) << 32) | lo;
}

// Block-wide max of selection keys with one barrier: round j publishes the
// warp winners in buffer j % 2, so a fast warp writing round j + 1 cannot
// overwrite what a slow warp still reads for round j (round j + 1's barrier
// lies between them).
__device__ __forceinline__ std::uint64_t block_max_key(std::uint64_t v, BlockScratch& sc, int parity) {
  v = warp_max_key(v);
  const int lane = threadIdx.x % 32;
  if (lane == 0) sc.round_winner[parity][threadIdx.x / 32] = v;
  __syncthreads();
  return warp_max_key(lane < kBlockThreads / 32 ? sc.round_winner[parity][lane] : 0u);
}

__device__ __forceinline__ std::uint64_t block_sum_u64(std::uint64_t v, BlockScratch& sc) {
  for (int off = 16; off > 0; off /= 2) v += __shfl_xor_sync(0xFFFFFFFFu, v, off);
  __syncthreads();
  if (threadIdx.x % 32 == 0) sc.warp_u64[threadIdx.x / 32] = v;
  __syncthreads();
  v = 0;
  for (int w = 0; w < kBlockThreads / 32; ++w) v += sc.warp_u64[w];
  return v;
}

__device__ __forceinline__ float block_max_f32(float v, BlockScratch& sc) {
  for (int off = 16; off > 0; off /= 2) v = fmaxf(v, __shfl_xor_sync(0xFFFFFFFFu, v, off));
  __syncthreads();
  if (threadIdx.x % 32 == 0) sc.warp_f32[threadIdx.x / 32] = v;
  __syncthreads();
  v = sc.warp_f32[0];
  for (int w = 1; w < kBlockThreads / 32; ++w) v = fmaxf(v, sc.warp_f32[w]);
  return v;
}

__device__ __forceinline__ bool block_any(bool flag, BlockScratch& sc) {
  flag = __any_sync(0xFFFFFFFFu, flag);
  __syncthreads();
  if (threadIdx.x % 32 == 0) sc.warp_flag[threadIdx.x / 32] = flag;
  __syncthreads();
  bool any = false;
  for (int w = 0; w < kBlockThreads / 32; ++w) any |= sc.warp_flag[w] != 0;
  return any;
}

template <typename T>
__global__ void __launch_bounds__(kBlockThreads) route_shared_kernel(const KernelParams p) {
  extern __shared__ __align__(16) unsigned char dynamic_smem[];
  std::uint64_t* key = reinterpret_cast<std::uint64_t*>(dynamic_smem);  // [E]
  float* s = reinterpret_cast<float*>(key + p.num_experts);               // [E]
  __shared__ BlockScratch sc;

  pdl_enter(p.trigger_first);
  const int E = p.num_experts;
  const int tid = threadIdx.x;

  for (std::int64_t row = blockIdx.x; row < p.num_tokens; row += gridDim.x) {
    if (row_is_padded(p, row)) {
      for (int j = tid; j < p.topk; j += kBlockThreads) store_slot(p, row, j, 0.0f, -1);
      continue;
    }
    const T* row_ptr = static_cast<const T*>(p.logits) + row * p.logits_row_stride;
    for (int e = tid; e < E; e += kBlockThreads)
      s[e] = apply_multiplier(p, LogitTraits<T>::widen(row_ptr[e * p.logits_col_stride]));

    if (!p.softmax) {
      for (int e = tid; e < E; e += kBlockThreads) s[e] = rm::sigmoid(s[e]);
    } else {
      float mx = -INFINITY;
      bool any_nan = false;
      for (int e = tid; e < E; e += kBlockThreads) {
        any_nan |= isnan(s[e]);
        mx = fmaxf(mx, s[e]);
      }
      mx = block_max_f32(mx, sc);
      std::uint64_t fixed = 0;
      for (int e = tid; e < E; e += kBlockThreads) {
        s[e] = rm::exp_f32(s[e] - mx);
        if (isnan(s[e])) any_nan = true;
        else fixed += rm::softmax_term_fixed(s[e]);
      }
      fixed = block_sum_u64(fixed, sc);
      any_nan = block_any(any_nan, sc);
      const float sum = any_nan ? __int_as_float(0x7FFFFFFF) : rm::softmax_sum_from_fixed(fixed);
      for (int e = tid; e < E; e += kBlockThreads) s[e] = rm::softmax_share(s[e], sum);
    }

    std::uint64_t my_best = 0;
    for (int e = tid; e < E; e += kBlockThreads) {
      key[e] = rm::selection_key(s[e] + p.bias[e], static_cast<std::uint32_t>(e));
      my_best = key[e] > my_best ? key[e] : my_best;
    }
    // Each thread caches the best of its own experts; only the round's
    // winner rescans, so a round costs one block reduction.
    for (int j = 0; j < p.topk; ++j) {
      const std::uint64_t best = block_max_key(my_best, sc, j & 1);
      const std::uint32_t expert = rm::key_expert(best);
      if (my_best == best) {
        key[expert] = 0;
        sc.slot_id[j] = static_cast<std::int32_t>(expert);
        sc.slot_score[j] = s[expert];
        my_best = 0;
        for (int e = tid; e < E; e += kBlockThreads) my_best = key[e] > my_best ? key[e] : my_best;
      }
    }
    __syncthreads();
    float selected_sum = 0.0f;
    for (int j = 0; j < p.topk; ++j) selected_sum += sc.slot_score[j];
    const float denominator = rm::weight_denominator(selected_sum, p.has_eps, p.eps);
    for (int j = tid; j < p.topk; j += kBlockThreads)
      store_slot(p, row, j, rm::routing_weight(sc.slot_score[j], denominator, p.route_scale), sc.slot_id[j]);
    __syncthreads();  // scratch and staged scores are reused by the next row
  }
}

// ---------------------------------------------------------------------------
// Launch
// ---------------------------------------------------------------------------
template <typename Kernel>
cudaError_t launch_kernel(Kernel kernel, unsigned blocks, std::size_t smem, cudaStream_t stream,
                          bool pdl, const KernelParams& kp, unsigned threads = kBlockThreads) {
  KernelParams launched = kp;
  launched.trigger_first = trigger_first_for(blocks, threads);
  return launch_with_pdl(kernel, blocks, threads, smem, stream, pdl, launched);
}

// Enough blocks to cover the rows, capped so a grid-stride loop takes over.
inline unsigned grid_for(std::int64_t work_items) {
  constexpr std::int64_t kMaxBlocks = 1 << 20;
  return static_cast<unsigned>(work_items < kMaxBlocks ? work_items : kMaxBlocks);
}

// Experts per vector load: up to 16 bytes, and a power of two that divides
// P (P = 12 with 16-bit logits loads 4, not 8).
template <typename T, int P>
constexpr int register_tier_vector() {
  int v = 16 / static_cast<int>(sizeof(T));
  while (v > 1 && P % v != 0) v /= 2;
  return v;
}
static_assert(register_tier_vector<float, 8>() == 4 && register_tier_vector<float, 12>() == 4 &&
              register_tier_vector<__nv_bfloat16, 16>() == 8 && register_tier_vector<__nv_bfloat16, 12>() == 4 &&
              register_tier_vector<__half, 2>() == 2 && register_tier_vector<float, 1>() == 1,
              "vector width per tier");

template <typename T, int G, int P, int kMinBlocks, bool kSoftmax>
cudaError_t launch_register_tier_norm(const KernelParams& kp, cudaStream_t stream, bool pdl,
                                      bool allow_vector) {
  constexpr int kRowsPerBlock = kBlockThreads / G;
  constexpr int kVec = register_tier_vector<T, P>();
  const unsigned blocks = grid_for((kp.num_tokens + kRowsPerBlock - 1) / kRowsPerBlock);
  constexpr int kBiasVec = kVec < 4 ? kVec : 4;  // as in route_register_kernel
  const auto addr = reinterpret_cast<std::uintptr_t>(kp.logits);
  const auto bias_addr = reinterpret_cast<std::uintptr_t>(kp.bias);
  const bool vector_ok = allow_vector && kVec > 1 && kp.logits_col_stride == 1 &&
                         kp.num_experts % kVec == 0 && addr % (kVec * sizeof(T)) == 0 &&
                         bias_addr % (kBiasVec * sizeof(float)) == 0 &&
                         (kp.num_tokens == 1 || kp.logits_row_stride % kVec == 0);
  if constexpr (G == 32 && P == 1) {  // k >= kRankSelectMinK: the ranking kernel
    if (kp.rank_select && kp.topk >= kRankSelectMinK)
      return launch_kernel(route_register_kernel<T, G, P, 1, kSoftmax, false, kMinBlocks, true>, blocks, 0, stream,
                           pdl, kp);
  }
  // Full tiers (E == G * P) with 8+ experts per lane, the large-batch tiers,
  // drop their bound checks; others keep one kernel per vector width.
  if constexpr (P >= 8) {
    if (vector_ok && kp.num_experts == G * P)
      return launch_kernel(route_register_kernel<T, G, P, kVec, kSoftmax, true, kMinBlocks>, blocks, 0, stream, pdl,
                           kp);
  }
  if (vector_ok)
    return launch_kernel(route_register_kernel<T, G, P, kVec, kSoftmax, false, kMinBlocks>, blocks, 0, stream, pdl, kp);
  return launch_kernel(route_register_kernel<T, G, P, 1, kSoftmax, false, kMinBlocks>, blocks, 0, stream, pdl, kp);
}

template <typename T, int G, int P, int kMinBlocks = kRegisterMinBlocks<P>>
cudaError_t launch_register_tier(const KernelParams& kp, cudaStream_t stream, bool pdl, bool allow_vector) {
  return kp.softmax ? launch_register_tier_norm<T, G, P, kMinBlocks, true>(kp, stream, pdl, allow_vector)
                    : launch_register_tier_norm<T, G, P, kMinBlocks, false>(kp, stream, pdl, allow_vector);
}

// Split-row path: W warps per row, 64 experts per warp (E <= 64 * W).
template <typename T, int W>
cudaError_t launch_split_row_tier(const KernelParams& kp, cudaStream_t stream, bool pdl) {
  constexpr int kVec = 2;  // two experts per lane
  const auto addr = reinterpret_cast<std::uintptr_t>(kp.logits);
  const bool vector_ok = kp.logits_col_stride == 1 && kp.num_experts % kVec == 0 && addr % (kVec * sizeof(T)) == 0 &&
                         (kp.num_tokens == 1 || kp.logits_row_stride % kVec == 0);
  const unsigned blocks = grid_for(kp.num_tokens);
  if constexpr (W > 1) {  // W * k > 32 with k <= 32: the block merges (W = 1 never has both)
    if (W * kp.topk > 32 && kp.topk <= 32) {
      if (kp.softmax) {
        if (vector_ok)
          return launch_kernel(route_split_row_kernel<T, W, kVec, true, true>, blocks, 0, stream, pdl, kp, 32 * W);
        return launch_kernel(route_split_row_kernel<T, W, 1, true, true>, blocks, 0, stream, pdl, kp, 32 * W);
      }
      if (vector_ok)
        return launch_kernel(route_split_row_kernel<T, W, kVec, false, true>, blocks, 0, stream, pdl, kp, 32 * W);
      return launch_kernel(route_split_row_kernel<T, W, 1, false, true>, blocks, 0, stream, pdl, kp, 32 * W);
    }
  }
  if (kp.softmax) {
    if (vector_ok) return launch_kernel(route_split_row_kernel<T, W, kVec, true>, blocks, 0, stream, pdl, kp, 32 * W);
    return launch_kernel(route_split_row_kernel<T, W, 1, true>, blocks, 0, stream, pdl, kp, 32 * W);
  }
  if (vector_ok) return launch_kernel(route_split_row_kernel<T, W, kVec, false>, blocks, 0, stream, pdl, kp, 32 * W);
  return launch_kernel(route_split_row_kernel<T, W, 1, false>, blocks, 0, stream, pdl, kp, 32 * W);
}

// The block-per-row paths (block-rank, block-threshold): W warps per row,
// one expert per thread (E <= 32 * W). Blocks are capped so that a forced
// launch on many rows also runs the kernels' row loop (the tier table
// sends them few rows only).
constexpr std::int64_t kBlockRankMaxBlocks = 1024;

template <auto kSigmoidKernel, auto kSoftmaxKernel, int W>
cudaError_t launch_block_per_row(const KernelParams& kp, cudaStream_t stream, bool pdl) {
  const unsigned blocks = grid_for(kp.num_tokens < kBlockRankMaxBlocks ? kp.num_tokens : kBlockRankMaxBlocks);
  return launch_kernel(kp.softmax ? kSoftmaxKernel : kSigmoidKernel, blocks, 0, stream, pdl, kp, 32 * W);
}

// Calls launch(std::integral_constant<int, W>) with the block-per-row
// paths' warps per row for E.
template <typename Launch>
cudaError_t with_block_row_warps(int E, Launch launch) {
  if (E <= 64) return launch(std::integral_constant<int, 2>{});
  if (E <= 128) return launch(std::integral_constant<int, 4>{});
  if (E <= 256) return launch(std::integral_constant<int, 8>{});
  if (E <= 384) return launch(std::integral_constant<int, 12>{});
  return launch(std::integral_constant<int, 16>{});
}

template <typename T>
cudaError_t launch_block_rank(const KernelParams& kp, cudaStream_t stream, bool pdl) {
  return with_block_row_warps(kp.num_experts, [&](auto w) {
    constexpr int W = decltype(w)::value;
    return launch_block_per_row<route_block_rank_kernel<T, W, false>, route_block_rank_kernel<T, W, true>, W>(
        kp, stream, pdl);
  });
}

template <typename T>
cudaError_t launch_block_threshold(const KernelParams& kp, cudaStream_t stream, bool pdl) {
  return with_block_row_warps(kp.num_experts, [&](auto w) {
    constexpr int W = decltype(w)::value;
    return launch_block_per_row<route_block_threshold_kernel<T, W, false>, route_block_threshold_kernel<T, W, true>,
                                W>(kp, stream, pdl);
  });
}

template <typename T>
cudaError_t launch_split_row(const KernelParams& kp, cudaStream_t stream, bool pdl) {
  const int E = kp.num_experts;
  if (E <= 64) return launch_split_row_tier<T, 1>(kp, stream, pdl);
  if (E <= 128) return launch_split_row_tier<T, 2>(kp, stream, pdl);
  if (E <= 256) return launch_split_row_tier<T, 4>(kp, stream, pdl);
  return launch_split_row_tier<T, 8>(kp, stream, pdl);
}

// Dynamic shared memory beyond the 48 KB default (static included) needs an
// opt-in per kernel and device; the largest size granted so far is
// remembered per kernel and device so the attribute call is made once, not
// per launch.
template <auto kKernel>
cudaError_t allow_dynamic_smem(std::size_t dynamic_bytes, std::size_t static_bytes) {
  if (dynamic_bytes + static_bytes <= 48 * 1024) return cudaSuccess;
  constexpr int kMaxDevices = 64;
  static std::atomic<std::size_t> granted[kMaxDevices] = {};
  int device = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err != cudaSuccess) return err;
  std::atomic<std::size_t>& slot = granted[device % kMaxDevices];
  if (slot.load(std::memory_order_relaxed) >= dynamic_bytes) return cudaSuccess;
  err = cudaFuncSetAttribute(kKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(dynamic_bytes));
  if (err == cudaSuccess) slot.store(dynamic_bytes, std::memory_order_relaxed);
  return err;
}

template <typename T>
cudaError_t launch_shared_path(const KernelParams& kp, cudaStream_t stream, bool pdl) {
  const std::size_t smem = static_cast<std::size_t>(kp.num_experts) * (sizeof(std::uint64_t) + sizeof(float));
  const cudaError_t err = allow_dynamic_smem<route_shared_kernel<T>>(smem, sizeof(BlockScratch));
  if (err != cudaSuccess) return err;
  return launch_kernel(route_shared_kernel<T>, grid_for(kp.num_tokens), smem, stream, pdl, kp);
}

template <typename T, int K, int G>
cudaError_t launch_thread_row_tier(const KernelParams& kp, cudaStream_t stream, bool pdl) {
  const std::size_t smem = thread_row_smem_bytes<T>(kp.num_experts, G);
  const cudaError_t err = allow_dynamic_smem<route_thread_row_kernel<T, K, G>>(smem, 0);
  if (err != cudaSuccess) return err;
  constexpr int kRowsPerBlock = kThreadRowBlockThreads / G;
  const unsigned blocks = grid_for((kp.num_tokens + kRowsPerBlock - 1) / kRowsPerBlock);
  return launch_kernel(route_thread_row_kernel<T, K, G>, blocks, smem, stream, pdl, kp, kThreadRowBlockThreads);
}

template <typename T, int G>
cudaError_t launch_thread_row_lanes(const KernelParams& kp, cudaStream_t stream, bool pdl) {
  if (kp.topk == 1) return launch_thread_row_tier<T, 1, G>(kp, stream, pdl);
  if (kp.topk <= 4) return launch_thread_row_tier<T, 4, G>(kp, stream, pdl);
  return launch_thread_row_tier<T, 8, G>(kp, stream, pdl);
}

// The caller has checked thread_row_unsupported. K tiers: the sorted list
// costs K compares per listed expert; G lanes per row as
// thread_row_lanes_per_row says.
template <typename T>
cudaError_t launch_thread_row(const KernelParams& kp, cudaStream_t stream, bool pdl) {
  switch (thread_row_lanes_per_row(kp.num_experts)) {
    case 4: return launch_thread_row_lanes<T, 4>(kp, stream, pdl);
    case 2: return launch_thread_row_lanes<T, 2>(kp, stream, pdl);
    default: return launch_thread_row_lanes<T, 1>(kp, stream, pdl);
  }
}

// Filter path: rows per warp task. A task's rows are filtered one after
// another and ranked one per lane, so more rows per task make phase B's
// lanes busier, and fewer make more tasks to spread over the SMs: R = T /
// 2048 within [4, 16]. Measured on the H200 at 65536 rows (E = 256-512):
// 16 rows 0.80-0.85x the time of 32; at 8192 rows 4 rows 0.55-0.6x of 16.
inline int filter_rows_for(std::int64_t rows, int requested) {
  if (requested > 0) return requested;
  const std::int64_t r = rows / 2048;
  return static_cast<int>(r < 4 ? 4 : (r > kFilterMaxRows ? kFilterMaxRows : r));
}

template <typename T, int P, int K, bool kFull>
cudaError_t launch_filter_tier(const KernelParams& kp, cudaStream_t stream, bool pdl) {
  constexpr int kVec = register_tier_vector<T, P>();
  const std::int64_t tasks = (kp.num_tokens + kp.filter_rows - 1) / kp.filter_rows;
  const unsigned blocks = grid_for((tasks + kFilterWarps - 1) / kFilterWarps);
  if (kp.softmax)
    return launch_kernel(route_filter_kernel<T, P, kVec, K, true, kFull>, blocks, 0, stream, pdl, kp,
                         kFilterBlockThreads);
  return launch_kernel(route_filter_kernel<T, P, kVec, K, false, kFull>, blocks, 0, stream, pdl, kp,
                       kFilterBlockThreads);
}

template <typename T, int P, bool kFull>
cudaError_t launch_filter_lists(const KernelParams& kp, cudaStream_t stream, bool pdl) {
  if (kp.topk == 1) return launch_filter_tier<T, P, 1, kFull>(kp, stream, pdl);
  if (kp.topk <= 4) return launch_filter_tier<T, P, 4, kFull>(kp, stream, pdl);
  return launch_filter_tier<T, P, 8, kFull>(kp, stream, pdl);
}

template <typename T, int P>
cudaError_t launch_filter_tier_of(const KernelParams& kp, cudaStream_t stream, bool pdl) {
  if (kp.num_experts == 32 * P) return launch_filter_lists<T, P, true>(kp, stream, pdl);
  if constexpr (P > 2) return launch_filter_lists<T, P, false>(kp, stream, pdl);
  return cudaErrorInvalidValue;  // unreachable: E = 64 is the only multiple of 32 in [64, 64]
}

// The caller has checked filter_unsupported (E a multiple of 32 in
// [64, 512], k <= 8). Tiers: the fewest experts per lane that hold E.
template <typename T>
cudaError_t launch_filter(const KernelParams& kp_in, cudaStream_t stream, bool pdl, int requested_rows) {
  KernelParams kp = kp_in;
  kp.filter_rows = filter_rows_for(kp.num_tokens, requested_rows);
  const int E = kp.num_experts;
  if (E <= 64) return launch_filter_tier_of<T, 2>(kp, stream, pdl);
  if (E <= 128) return launch_filter_tier_of<T, 4>(kp, stream, pdl);
  if (E <= 256) return launch_filter_tier_of<T, 8>(kp, stream, pdl);
  if (E <= 384) return launch_filter_tier_of<T, 12>(kp, stream, pdl);
  return launch_filter_tier_of<T, 16>(kp, stream, pdl);
}

// Where the block-rank path runs (one block per row, one expert per
// thread, no selection rounds in the row's chain). Measured on the H200
// against the tier table before it, anchor grid, T = 1-128
// (docs/performance.md): k = 8 at E = 128 0.77-0.85x the time (register
// path, 8 rounds) and at E = 256 0.81-0.92x (threshold selection); k = 4 at
// E = 128 0.91-0.99x. It lost elsewhere: E = 64 (one warp per row, two
// experts per lane: 1.0-1.2x), k = 1 (1.0-1.18x, softmax most: its two
// block-wide reductions), E = 256 k = 4 (even) and E = 512 (k = 4 1.18-1.25x:
// 16 warps share four schedulers); at 1024 rows 1.2-1.8x (a block per row
// issues more than a warp per row, and issue bounds there).
// E in (128, 512] with k in (4, 8] has since gone to the block-threshold
// path, checked first (block_threshold_preferred).
constexpr std::int64_t kBlockRankMaxRows = 128;

inline bool block_rank_preferred(const KernelParams& kp) {
  const int E = kp.num_experts;
  // E in (256, 512], k = 1, sigmoid, up to 16 rows: 0.945-0.977x the
  // split-row path's time in both rounds of an A/B (H200, 2026-11-30);
  // about even at 128 rows, softmax 1.16x.
  if (E > 256 && E <= kRegisterPathMaxExperts && kp.topk == 1 && !kp.softmax) return kp.num_tokens <= 16;
  return E > 64 && E <= 256 && kp.num_tokens <= kBlockRankMaxRows && (kp.topk > 4 || (E <= 128 && kp.topk > 1));
}

// Where the block-threshold path runs (checked before the block-rank
// path): E in (128, 512], k in (4, 8], up to kBlockRankMaxRows rows.
// Forced against the tier table before it on the H200 (2026-11-30,
// T = 1 and 128, both dtypes and normalizations, E = 128 / 256 / 512,
// k = 1 / 4 / 8): E = 512 k = 8 0.86-0.88x the time with sigmoid and
// 0.92-0.94x with softmax (the split-row path before), E = 256 k = 8
// 0.91-0.92x sigmoid and 0.97-0.99x softmax (the block-rank path before).
// It lost at k = 1 (1.4-1.6x: its steps after the scores take about
// 0.4 us more than one round over the warp winners), at E = 512 k = 4
// (1.07-1.11x), E = 256 k = 4 softmax (1.05x; sigmoid even at T = 1,
// 0.94-0.96x at 128 rows, left as it was) and at E = 128 k = 8, where
// k > W = 4 makes every expert a candidate (1.7-2x). E = 384 is not
// measured.
inline bool block_threshold_preferred(const KernelParams& kp) {
  const int E = kp.num_experts;
  return E > 128 && E <= kRegisterPathMaxExperts && kp.topk > 4 && kp.topk <= 8 &&
         kp.num_tokens <= kBlockRankMaxRows;
}

// Up to this many rows, E in (128, 512] takes the split-row path: a block of
// E / 64 warps per row shortens the dependent chain that bounds decode. On
// the H200 it took 0.56-0.80x the register path's time at T <= 128 and
// 1.12-1.18x at T = 1024 (docs/performance.md).
constexpr std::int64_t kSplitRowMaxRows = 128;

// Where the register path tries threshold selection first (one warp per
// row, 8 or more experts per lane): from 1024 rows it issues fewer
// instructions per row, which bounds large batches (0.80-0.86x the time at
// E = 256-512, 8192+ rows, on the H200); below that its shared-memory round
// trips lengthen the dependent chain that bounds decode, and with 2 or 4
// experts per lane (E <= 128) the ranking costs more than the rounds it
// replaces (1.05-1.3x). docs/performance.md has the measurements.
constexpr std::int64_t kThresholdSelectMinRows = 1024;
constexpr int kThresholdSelectMinExperts = 129;

// Decode exception to the two limits above: for E in (128, 256] and k > 4
// the warp-per-row tier with threshold selection beats the split-row path
// at any row count (H200, fp32, T <= 128, k = 8: sigmoid 0.80-0.84x the
// time, softmax 0.90-0.92x; k = 4 and E = 512 are not faster, so they keep
// the split-row path; docs/performance.md). Up to kBlockRankMaxRows the
// block-threshold path, checked first, takes these cells with k <= 8.
inline bool decode_prefers_threshold(const KernelParams& kp) {
  return kp.num_experts >= kThresholdSelectMinExperts && kp.num_experts <= 256 && kp.topk > 4;
}

// Where E <= 32 takes one warp per row (one expert per lane): a round of
// the selection is then two redux.sync and a shuffle, where 4-16 lanes per
// row need two shuffle trees, but a warp does 1 row instead of 8-2. Measured
// at E = 8 on the H200 against 4 lanes per row (docs/performance.md): T <= 16
// 0.83-1.01x the time; T = 128 k >= 4 0.90-0.97x, k = 1 1.0-1.08x; T = 1024
// k = 8 0.92-0.95x, k <= 4 1.01-1.08x. E = 16 (two device calls of the
// same day, fp32): 0.79-1.0x where the rule applies. E = 32 untimed against
// its old tier (16 lanes, 2 experts each).
inline bool small_e_prefers_warp_row(const KernelParams& kp) {
  const std::int64_t rows = kp.num_tokens;
  return kp.num_experts <= 32 &&
         (rows <= 16 || (rows <= 128 && kp.topk >= 4) || (rows <= 1024 && kp.topk > 4));
}

// Where the row-per-thread path runs by itself. It executes ~45% fewer
// instructions per row than the register path (E = 256: 444 against 806
// warp instructions under ncu), but a thread's row is one long dependent
// stream and each row keeps E 16-bit keys in shared memory, so it needs many
// rows and resident warps; 16-bit logits halve its staging. Measured on the
// H200 against the register path (docs/performance.md, "row-per-thread"):
//  - E <= 128 (one lane per row): sigmoid from 32768 rows 0.59-0.99x the
//    time (one cell 1.04x); softmax with 16-bit logits from 65536 rows
//    0.73-0.95x; fp32 softmax up to 1.1x.
//  - E = 256, 384 and 512, where the register tier is full (every register
//    an expert, no bound checks): 2 and 4 lanes per row win only for sigmoid
//    at E = 256 from 32768 rows with 16-bit logits or k >= 4 (0.77-0.91x;
//    fp32 k = 1 1.02-1.05x); softmax 1.05-1.65x; E = 512 0.96-1.23x; E = 384
//    0.78-1.6x, below 1 only for 16-bit sigmoid at 65536 rows (0.94x).
//  - E in (128, 512] between the full tiers, 2 or 4 lanes per row (E = 192,
//    and E = 384 before its full tier, measured): sigmoid 0.59-0.79x from
//    16384 rows (fp32 E <= 256 from 32768: 1.04x at 16384, k = 1); softmax
//    from 32768 rows 0.73-0.94x, and E > 256 with 16-bit logits from 16384
//    (0.81-0.89x); fp32 softmax at E > 256 0.92-1.03x, left to the register
//    path. E = 320 (12-per-lane tier, not full) at 8192 rows: 0.92-1.02x
//    sigmoid, 1.16-1.49x softmax.
inline bool thread_row_preferred(const KernelParams& kp, int logit_bytes) {
  const int E = kp.num_experts;
  const std::int64_t rows = kp.num_tokens;
  const bool narrow = logit_bytes == 2;
  if (E <= 128) return !kp.softmax ? rows >= 32768 : narrow && rows >= 65536;
  if (E == 384 || E == 512) return false;  // full register tiers
  if (E == 256) return !kp.softmax && rows >= 32768 && (narrow || kp.topk >= 4);
  if (E > 512 || thread_row_lanes_per_row(E) == 1) return false;  // not measured
  if (!kp.softmax) return rows >= (narrow || E > 256 ? 16384 : 32768);
  if (narrow) return rows >= (E > 256 ? 16384 : 32768);
  return E <= 256 && rows >= 32768;
}

// Where the filter path runs by itself (routing_filter_path.cuh). Forced
// against the tier table before it on the H200 (docs/performance.md):
//  - 2026-11-30, at the first form (T = 8192-65536, E = 64-512, k = 1, 4, 8,
//    fp32 and bf16, both normalizations): E = 384 and 512 0.60-0.80x the
//    time at 65536 rows, 0.69-0.83x at 32768 and 0.81-0.99x at 16384
//    (E = 384 with k = 8 there 1.03-1.09x, so from 32768); E = 256 with
//    softmax 0.68-0.79x at 65536 rows and 0.74-0.93x at 32768 (1.07-1.33x at
//    16384); E = 256 sigmoid k = 1 at 65536 rows 0.70x (fp32) and 0.92x
//    (bf16); E <= 128 0.9-2.5x, most above 1.2x (with 2 or 4 experts per
//    lane a warp's per-row steps outweigh what the estimates save).
//  - 2026-11-30, the final kernel (six blocks per SM up to 8 experts per
//    lane, 8-byte candidate stores), T = 1024 and 8192 at E = 256 / 512 with
//    tasks of 1, 2 and 4 rows, T = 16384-65536 at E = 128 / 256: E = 512
//    k <= 4 at 8192 rows 0.73-0.87x with tasks of 4 rows (the launch's
//    choice there), k = 8 0.95-1.12x; E = 256 at 8192 rows 1.02-1.68x and
//    every cell at 1024 rows 1.16-1.96x (tasks of one row were the best
//    there; a task's bias load and margin are per warp); E = 256 sigmoid
//    k = 4 at 65536 rows 0.93x (fp32) and 0.99x (bf16) against the
//    row-per-thread path, k = 8 1.0x and 1.14x, at 32768 rows 1.26-1.41x;
//    E = 128 1.0-1.7x but two cells (0.92x and 0.99x).
inline bool filter_preferred(const KernelParams& kp) {
  const int E = kp.num_experts;
  const std::int64_t rows = kp.num_tokens;
  if (E == 512) return rows >= (kp.topk <= 4 ? 8192 : 16384);
  if (E == 384) return rows >= (kp.topk > 4 ? 32768 : 16384);
  if (E == 256) return kp.softmax ? rows >= 32768 : kp.topk <= 4 && rows >= 65536;
  return false;
}

// E in (384, 512] on the register path: up to this many rows (256 blocks of
// 8 rows, all resident at two blocks per SM on a 132-SM H100 or H200) the
// third block per SM has nothing to hold, so the build without a spill
// runs; above it the three-block build's extra warps pay for its spill.
// H200, two blocks per SM against three (docs/performance.md): T = 1024
// 0.84-0.91x the time with 16-bit logits, 0.97-0.98x fp32; T = 8192
// 1.05-1.19x and T = 65536 1.11-1.27x.
constexpr std::int64_t kSpillFreeMaxRows = 2048;

// The tier table. A register tier is (group lanes G, experts per lane P),
// E <= G * P. Few rows: one warp per row for E <= 32 and from E = 64
// (G = 32), the shortest dependent chain per row. Many rows: eight experts
// per lane, so 32 / G rows share a warp and the k rounds of group
// reductions are paid once per warp.
// Where "many" starts was measured on the H200 (docs/performance.md): for
// E = 128 from 4096 rows; for E = 64 the narrower groups (8 lanes) lose at
// 8192 rows and win at 65536, so from 32768. Above 128 experts one warp
// per row with 8, 12 or 16 experts per lane: a full tier (E = 256, 384,
// 512) has no per-register bound checks, and E = 384 on the 16-per-lane
// tier (a quarter of its registers empty) took 1.2-1.5x the time of its
// own 12-per-lane tier at 1024-65536 rows (H200).
template <typename T>
cudaError_t launch_routing_typed_impl(const KernelParams& kp_in, cudaStream_t stream,
                                      const LaunchOptions& options, bool pdl) {
  const int E = kp_in.num_experts;
  const std::int64_t rows = kp_in.num_tokens;
  KernelParams kp = kp_in;
  kp.threshold_select = !options.force_round_selection &&
                        (options.force_threshold_selection || decode_prefers_threshold(kp) ||
                         (rows >= kThresholdSelectMinRows && E >= kThresholdSelectMinExperts));
  kp.rank_select = !options.force_round_selection;
  if (options.force_path == 7 ||
      (options.force_path == 0 && filter_preferred(kp) && !filter_unsupported(kp, sizeof(T))))
    return launch_filter<T>(kp, stream, pdl, options.filter_rows);
  if (options.force_path == 5 ||
      (options.force_path == 0 && thread_row_preferred(kp, sizeof(T)) && !thread_row_unsupported(kp, sizeof(T))))
    return launch_thread_row<T>(kp, stream, pdl);
  if (options.force_path == 8 || (options.force_path == 0 && block_threshold_preferred(kp)))
    return launch_block_threshold<T>(kp, stream, pdl);
  if (options.force_path == 6 || (options.force_path == 0 && block_rank_preferred(kp)))
    return launch_block_rank<T>(kp, stream, pdl);
  if (options.force_path == 4 || (options.force_path == 0 && E > 128 && E <= kRegisterPathMaxExperts &&
                                  rows <= kSplitRowMaxRows && !decode_prefers_threshold(kp)))
    return launch_split_row<T>(kp, stream, pdl);
  const bool use_register = options.force_path != 2 && E <= kRegisterPathMaxExperts;
  if (!use_register) return launch_shared_path<T>(kp, stream, pdl);
  const bool vec = options.force_path != 3;
  if (small_e_prefers_warp_row(kp)) return launch_register_tier<T, 32, 1>(kp, stream, pdl, vec);
  if (E <= 8) return launch_register_tier<T, 4, 2>(kp, stream, pdl, vec);
  if (E <= 16) return launch_register_tier<T, 8, 2>(kp, stream, pdl, vec);
  if (E <= 32) return launch_register_tier<T, 16, 2>(kp, stream, pdl, vec);
  if (E <= 64) return rows >= 32768 ? launch_register_tier<T, 8, 8>(kp, stream, pdl, vec)
                                    : launch_register_tier<T, 32, 2>(kp, stream, pdl, vec);
  if (E <= 128) return rows >= 4096 ? launch_register_tier<T, 16, 8>(kp, stream, pdl, vec)
                                    : launch_register_tier<T, 32, 4>(kp, stream, pdl, vec);
  if (E <= 256) return launch_register_tier<T, 32, 8>(kp, stream, pdl, vec);
  if (E <= 384) return launch_register_tier<T, 32, 12>(kp, stream, pdl, vec);
  return rows <= kSpillFreeMaxRows ? launch_register_tier<T, 32, 16, 2>(kp, stream, pdl, vec)
                                   : launch_register_tier<T, 32, 16>(kp, stream, pdl, vec);
}

}  // namespace musespark::cuda


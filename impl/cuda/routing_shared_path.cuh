// Shared-memory path of the router kernel: one block per row, any E up to
// kSharedPathMaxExperts (the only path past 512 experts; forced with
// LaunchOptions::force_path = 2 as the bit-for-bit yardstick of the tests).
#pragma once

#include <cstdint>

#include "routing_kernel_common.cuh"

namespace musespark::cuda {

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

  pdl_trigger_early(p.trigger_first);  // the wait: the row loop's first statement (pdl_trigger_early)
  const int E = p.num_experts;
  const int tid = threadIdx.x;

  for (std::int64_t row = blockIdx.x; row < p.num_tokens; row += gridDim.x) {
    if (row == blockIdx.x) pdl_wait_then_trigger(p.trigger_first);
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

}  // namespace musespark::cuda

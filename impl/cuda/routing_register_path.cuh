// Register path of the router kernel (E <= 512): G lanes own one row, each
// lane holds P experts in registers.
//
// Expert e lives in lane (e / V) % G, register (e / (V*G)) * V + e % V, so a
// lane's experts grow with the register index.
//
// Selection. Each lane first keeps a sorted list of its best M candidates
// (M = min(P, 3)); a round is then a group-wide max over the list heads, a
// group-wide min over the expert index among equal heads (the exact order of
// the 64-bit keys of routing_math.h), and a pop in the winning lane. When a
// lane with more than M experts runs out of candidates before the last
// round, the row is redone with full rescans of every register: slower, same
// answer. With M = 3 that needs 4 of the top-k in one lane, which is rare.
//
// All groups of a warp iterate rows in lockstep (rows past T or padded take
// part with no experts), so G < 32 reductions can use full-warp shuffles.
#pragma once

#include "routing_kernel_common.cuh"

namespace musespark::cuda {

template <int G>
__device__ __forceinline__ std::uint32_t group_max_u32(std::uint32_t v) {
  if constexpr (G == 32) {
    return __reduce_max_sync(0xFFFFFFFFu, v);
  } else {
#pragma unroll
    for (int off = G / 2; off > 0; off /= 2) v = max(v, __shfl_xor_sync(0xFFFFFFFFu, v, off, G));
    return v;
  }
}

template <int G>
__device__ __forceinline__ std::uint32_t group_min_u32(std::uint32_t v) {
  if constexpr (G == 32) {
    return __reduce_min_sync(0xFFFFFFFFu, v);
  } else {
#pragma unroll
    for (int off = G / 2; off > 0; off /= 2) v = min(v, __shfl_xor_sync(0xFFFFFFFFu, v, off, G));
    return v;
  }
}

template <int G>
__device__ __forceinline__ float group_max_f32(float v) {
#pragma unroll
  for (int off = G / 2; off > 0; off /= 2) v = fmaxf(v, __shfl_xor_sync(0xFFFFFFFFu, v, off, G));
  return v;
}

template <int G>
__device__ __forceinline__ std::uint64_t group_sum_u64(std::uint64_t v) {
#pragma unroll
  for (int off = G / 2; off > 0; off /= 2) v += __shfl_xor_sync(0xFFFFFFFFu, v, off, G);
  return v;
}

template <typename T, int G, int P, int V>
__global__ void __launch_bounds__(kBlockThreads) route_register_kernel(const KernelParams p) {
  static_assert(32 % G == 0 && P % V == 0, "tier shape");
  constexpr int kRowsPerBlock = kBlockThreads / G;
  constexpr int kChunks = P / V;
  constexpr int kSlotsPerLane = 2;  // k <= min(E, 64) <= 2 * G for every tier
  constexpr int M = P < 3 ? P : 3;
  static_assert(kSlotsPerLane * G >= (G * P < 64 ? G * P : 64), "slots per lane");

  pdl_wait();

  const int lane = threadIdx.x % G;
  const int E = p.num_experts;
  auto expert_of = [lane](int i) { return ((i / V) * G + lane) * V + i % V; };

  for (std::int64_t base = static_cast<std::int64_t>(blockIdx.x) * kRowsPerBlock; base < p.num_tokens;
       base += static_cast<std::int64_t>(gridDim.x) * kRowsPerBlock) {
    const std::int64_t row = base + threadIdx.x / G;
    const bool in_range = row < p.num_tokens;
    const bool padded = in_range && row_is_padded(p, row);
    const bool live = in_range && !padded;

    // ---- scores ------------------------------------------------------------
    float s[P];
    float b[P];
    bool valid[P];
#pragma unroll
    for (int i = 0; i < P; ++i) {
      valid[i] = live && expert_of(i) < E;
      b[i] = valid[i] ? p.bias[expert_of(i)] : 0.0f;
    }
    const T* row_ptr = static_cast<const T*>(p.logits) + (live ? row : 0) * p.logits_row_stride;
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      const int e0 = (c * G + lane) * V;
      if constexpr (V > 1) {
        if (valid[c * V]) {  // E % V == 0 on this path: the whole vector is in range
          const Vec<T, V> vec = *reinterpret_cast<const Vec<T, V>*>(row_ptr + e0);
#pragma unroll
          for (int v = 0; v < V; ++v) s[c * V + v] = LogitTraits<T>::widen(vec.v[v]);
        }
      } else {
        if (valid[c]) s[c] = LogitTraits<T>::widen(row_ptr[e0 * p.logits_col_stride]);
      }
    }
#pragma unroll
    for (int i = 0; i < P; ++i) s[i] = valid[i] ? apply_multiplier(p, s[i]) : 0.0f;

    if (!p.softmax) {
#pragma unroll
      for (int i = 0; i < P; ++i) s[i] = rm::sigmoid(s[i]);
    } else {
      float mx = -INFINITY;
      std::uint32_t any_nan = 0;
#pragma unroll
      for (int i = 0; i < P; ++i) {
        if (!valid[i]) continue;
        any_nan |= isnan(s[i]) ? 1u : 0u;
        mx = fmaxf(mx, s[i]);  // fmaxf drops NaN operands
      }
      mx = group_max_f32<G>(mx);
      std::uint64_t fixed = 0;
#pragma unroll
      for (int i = 0; i < P; ++i) {
        if (!valid[i]) continue;
        s[i] = rm::exp_f32(s[i] - mx);
        if (isnan(s[i])) any_nan = 1u;
        else fixed += rm::softmax_term_fixed(s[i]);
      }
      fixed = group_sum_u64<G>(fixed);
      any_nan = group_max_u32<G>(any_nan);
      const float sum = any_nan ? __int_as_float(0x7FFFFFFF) : rm::softmax_sum_from_fixed(fixed);
#pragma unroll
      for (int i = 0; i < P; ++i) s[i] = s[i] / sum;
    }

    // Selection state: the order-preserving image of q, plus one, so that 0
    // means "taken or no expert" (NaN maps to 1).
    std::uint32_t ord[P];
    int n_valid = 0;
#pragma unroll
    for (int i = 0; i < P; ++i) {
      ord[i] = valid[i] ? rm::ordered_score(s[i] + b[i]) + 1u : 0u;
      n_valid += valid[i] ? 1 : 0;
    }

    // The lane's best M, sorted by (ord desc, expert asc). An element carried
    // down by an insertion can have a lower expert index than an equal one
    // below it, so the comparison uses the whole key, not the score alone.
    std::uint32_t top_ord[M];
    std::uint32_t top_expert[M];
    float top_score[M];
#pragma unroll
    for (int m = 0; m < M; ++m) top_ord[m] = 0, top_expert[m] = 0xFFFFFFFFu, top_score[m] = 0.0f;
#pragma unroll
    for (int i = 0; i < P; ++i) {
      std::uint32_t o = ord[i], e = static_cast<std::uint32_t>(expert_of(i));
      float sc = s[i];
#pragma unroll
      for (int m = 0; m < M; ++m) {
        if (o > top_ord[m] || (o == top_ord[m] && o != 0 && e < top_expert[m])) {
          const std::uint32_t to = top_ord[m], te = top_expert[m];
          const float ts = top_score[m];
          top_ord[m] = o, top_expert[m] = e, top_score[m] = sc;
          o = to, e = te, sc = ts;
        }
      }
    }

    float selected_sum = 0.0f;
    std::int32_t slot_id[kSlotsPerLane] = {};
    float slot_score[kSlotsPerLane] = {};
    bool exhausted = false;
    int popped = 0;
    for (int j = 0; j < p.topk; ++j) {
      const std::uint32_t group_best = group_max_u32<G>(top_ord[0]);
      const std::uint32_t mine = top_ord[0] == group_best ? top_expert[0] : 0xFFFFFFFFu;
      const std::uint32_t expert = group_min_u32<G>(mine);
      const bool owner = mine == expert;
      const float score = __shfl_sync(0xFFFFFFFFu, top_score[0], static_cast<int>((expert / V) % G), G);
      if (owner) {
#pragma unroll
        for (int m = 0; m + 1 < M; ++m) top_ord[m] = top_ord[m + 1], top_expert[m] = top_expert[m + 1], top_score[m] = top_score[m + 1];
        top_ord[M - 1] = 0, top_expert[M - 1] = 0xFFFFFFFFu;
        ++popped;
        exhausted |= popped == M && n_valid > M && j + 1 < p.topk;
      }
      selected_sum += score;
#pragma unroll
      for (int c = 0; c < kSlotsPerLane; ++c) {
        if (j == c * G + lane) slot_id[c] = static_cast<std::int32_t>(expert), slot_score[c] = score;
      }
    }

    if constexpr (P > M) {
      // A lane ran out of candidates: redo the rounds rescanning every register.
      if (__any_sync(0xFFFFFFFFu, exhausted)) {
        selected_sum = 0.0f;
        for (int j = 0; j < p.topk; ++j) {
          std::uint32_t best = 0;
          int best_i = 0;
#pragma unroll
          for (int i = 0; i < P; ++i) {
            if (ord[i] > best) best = ord[i], best_i = i;
          }
          const std::uint32_t group_best = group_max_u32<G>(best);
          const std::uint32_t mine = best == group_best ? static_cast<std::uint32_t>(expert_of(best_i)) : 0xFFFFFFFFu;
          const std::uint32_t expert = group_min_u32<G>(mine);
          float mine_score = 0.0f;
          if (mine == expert) {
#pragma unroll
            for (int i = 0; i < P; ++i) {
              if (i == best_i) mine_score = s[i], ord[i] = 0;
            }
          }
          const float score = __shfl_sync(0xFFFFFFFFu, mine_score, static_cast<int>((expert / V) % G), G);
          selected_sum += score;
#pragma unroll
          for (int c = 0; c < kSlotsPerLane; ++c) {
            if (j == c * G + lane) slot_id[c] = static_cast<std::int32_t>(expert), slot_score[c] = score;
          }
        }
      }
    }

    if (in_range) {
      const float scale = rm::weight_scale(selected_sum, p.has_eps, p.eps, p.route_scale);
#pragma unroll
      for (int c = 0; c < kSlotsPerLane; ++c) {
        const int j = c * G + lane;
        if (j < p.topk) {
          if (padded) store_slot(p, row, j, 0.0f, -1);
          else store_slot(p, row, j, slot_score[c] * scale, slot_id[c]);
        }
      }
    }
  }
  pdl_launch_dependents();
}

}  // namespace musespark::cuda

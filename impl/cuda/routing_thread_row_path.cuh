// Row-per-thread path of the router kernel, for large batches: each thread
// owns one row, E a multiple of 16 up to 512, k <= 8, logits contiguous
// along the experts and 16-byte aligned (routing_kernel.cuh,
// thread_row_unsupported, names what it needs).
//
// Why. With one warp per row (the register path) every per-row step of the
// selection (the tau rounds, the candidate ranking, the slot writes) is a
// whole-warp instruction; large batches are bound by instruction issue, and
// those steps are about two thirds of a row's instructions at E = 256
// (docs/performance.md). With one row per thread a per-row step costs a
// thirty-second of a warp instruction per row, and no step needs the rest of
// the warp: the kernel has no shuffles and no barriers.
//
// How a row is selected, exactly:
//  1. One pass over the logits computes q = p + b for every expert, keeps the
//     maximum order-preserving key (routing_math ordered_score, NaN lowest)
//     of each of 16 buckets (bucket = expert index % 16), and stores the high
//     16 bits of every key in this thread's slice of shared memory.
//  2. tau = the k-th largest bucket maximum. k buckets reach it, so at least
//     k distinct experts have key >= tau and the top-k all do. When fewer
//     than k buckets hold a number, tau is 0 and every expert qualifies.
//  3. A pass over the stored high halves lists, in index order, the experts
//     with high half >= tau's: a superset of those with key >= tau.
//  4. Each listed expert's q is computed again from its logit (the same
//     arithmetic, so the same bits) and inserted into a sorted list of K
//     (64-bit key order: strict compares suffice because the list is visited
//     in increasing index order). A row with more listed experts than the
//     list in shared memory holds inserts every qualifying expert from a
//     second pass over the stored halves instead: slower, as exact.
// The weights are the selected unbiased scores over their slot-order sum,
// as in every other path, so the bits agree with them (tested).
#pragma once

#include "routing_kernel_common.cuh"
#include "routing_register_path.cuh"  // insert_candidate

namespace musespark::cuda {

constexpr int kThreadRowBlockThreads = 64;
constexpr int kThreadRowBuckets = 16;     // experts per step of pass 1; bucket = index % 16
constexpr int kThreadRowCandidates = 32;  // per-thread list of step 3

// Dynamic shared memory of one block: each thread's E 16-bit key halves (one
// 16-byte pad per thread keeps 16-byte accesses of neighbouring threads on
// different banks), then the candidate lists, thread-minor.
inline std::size_t thread_row_smem_bytes(int num_experts) {
  return static_cast<std::size_t>(kThreadRowBlockThreads) * (num_experts / 8 + 1) * 16 +
         static_cast<std::size_t>(kThreadRowCandidates) * kThreadRowBlockThreads * sizeof(std::uint16_t);
}

// Reads the 16-bit key half of expert 8 * c + i from a thread's slice.
__device__ __forceinline__ std::uint32_t key_half(const uint4& w, int i) {
  const std::uint32_t word = i / 2 == 0 ? w.x : i / 2 == 1 ? w.y : i / 2 == 2 ? w.z : w.w;
  return i % 2 == 0 ? word & 0xFFFFu : word >> 16;
}

// Steps 1-4 for one row; `score` maps a logit (multiplier applied) to p.
// Instantiated once per normalization, so the hot loops carry no branch on
// it. On return top_* hold the row's best K experts in key order.
template <typename T, int K, typename Score>
__device__ __forceinline__ void thread_row_select(const KernelParams& p, const T* logits, Score score, uint4* halves,
                                                  std::uint16_t* cand, std::uint32_t (&top_ord)[K],
                                                  std::uint32_t (&top_expert)[K], float (&top_score)[K]) {
  constexpr int V = 16 / static_cast<int>(sizeof(T));  // logits per 16-byte load
  constexpr int kStep = kThreadRowBuckets;
  static_assert(kStep % V == 0 && kStep % 8 == 0, "step shape");
  const int E = p.num_experts;
  const auto* logits_vec = reinterpret_cast<const Vec<T, V>*>(logits);
  const auto* bias4 = reinterpret_cast<const float4*>(p.bias);

  // ---- 1. keys: bucket maxima and the stored high halves ------------------
  std::uint32_t bucket[kStep];
#pragma unroll
  for (int i = 0; i < kStep; ++i) bucket[i] = 0u;
  for (int c = 0; c < E; c += kStep) {
    float x[kStep];
#pragma unroll
    for (int u = 0; u < kStep / V; ++u) {
      const Vec<T, V> vec = logits_vec[c / V + u];
#pragma unroll
      for (int v = 0; v < V; ++v) x[u * V + v] = LogitTraits<T>::widen(vec.v[v]);
    }
    float b[kStep];
#pragma unroll
    for (int u = 0; u < kStep / 4; ++u) {  // the same address in every thread: one transaction
      const float4 vb = bias4[c / 4 + u];
      b[4 * u] = vb.x, b[4 * u + 1] = vb.y, b[4 * u + 2] = vb.z, b[4 * u + 3] = vb.w;
    }
    std::uint32_t packed[kStep / 2];
#pragma unroll
    for (int i = 0; i < kStep; ++i) {
      const std::uint32_t key = rm::ordered_score(score(apply_multiplier(p, x[i])) + b[i]);
      bucket[i] = max(bucket[i], key);
      packed[i / 2] = i % 2 == 0 ? key >> 16 : packed[i / 2] | (key & 0xFFFF0000u);
    }
#pragma unroll
    for (int u = 0; u < kStep / 8; ++u)
      halves[c / 8 + u] = make_uint4(packed[4 * u], packed[4 * u + 1], packed[4 * u + 2], packed[4 * u + 3]);
  }

  // ---- 2. tau: the k-th largest bucket maximum (a sorted list of K) ------
  std::uint32_t largest[K];
#pragma unroll
  for (int m = 0; m < K; ++m) largest[m] = 0u;
#pragma unroll
  for (int i = 0; i < kStep; ++i) {
    std::uint32_t v = bucket[i];
#pragma unroll
    for (int m = 0; m < K; ++m) {
      const std::uint32_t hi = max(largest[m], v);
      v = min(largest[m], v);
      largest[m] = hi;
    }
  }
  std::uint32_t tau = 0u;
#pragma unroll
  for (int m = 0; m < K; ++m) tau = m == p.topk - 1 ? largest[m] : tau;
  const std::uint32_t tau_half = tau >> 16;  // 0: every expert, NaN ones included, qualifies

  // ---- 3. the experts whose stored half reaches tau's, in index order ----
  int n = 0;
  for (int c = 0; c < E / 8; ++c) {
    const uint4 w = halves[c];
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      if (key_half(w, i) >= tau_half) {
        if (n < kThreadRowCandidates) cand[n * kThreadRowBlockThreads] = static_cast<std::uint16_t>(c * 8 + i);
        ++n;
      }
    }
  }

  // ---- 4. exact keys of the listed experts into a sorted list of K -------
  const auto consider = [&](int e) {
    const float s = score(apply_multiplier(p, LogitTraits<T>::widen(logits[e])));
    // + 1: 0 marks an empty list entry, so a NaN q (key 0) still enters.
    insert_candidate<K>(top_ord, top_expert, top_score, rm::ordered_score(s + p.bias[e]) + 1u,
                        static_cast<std::uint32_t>(e), s);
  };
  if (n <= kThreadRowCandidates) {
    for (int i = 0; i < n; ++i) consider(cand[i * kThreadRowBlockThreads]);
  } else {  // more than the list holds: every qualifying expert, from the stored halves
    for (int c = 0; c < E / 8; ++c) {
      const uint4 w = halves[c];
#pragma unroll
      for (int i = 0; i < 8; ++i)
        if (key_half(w, i) >= tau_half) consider(c * 8 + i);
    }
  }
}

// K: the compile-time list length, k <= K.
template <typename T, int K>
__global__ void __launch_bounds__(kThreadRowBlockThreads) route_thread_row_kernel(const KernelParams p) {
  constexpr int V = 16 / static_cast<int>(sizeof(T));
  extern __shared__ __align__(16) unsigned char thread_row_smem[];

  pdl_wait();
  pdl_launch_dependents();

  const int E = p.num_experts;
  const int tid = static_cast<int>(threadIdx.x);
  uint4* const halves = reinterpret_cast<uint4*>(thread_row_smem) + tid * (E / 8 + 1);
  std::uint16_t* const cand =
      reinterpret_cast<std::uint16_t*>(reinterpret_cast<uint4*>(thread_row_smem) + kThreadRowBlockThreads * (E / 8 + 1)) +
      tid;  // entry i at cand[i * kThreadRowBlockThreads]

  for (std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * kThreadRowBlockThreads + tid; row < p.num_tokens;
       row += static_cast<std::int64_t>(gridDim.x) * kThreadRowBlockThreads) {
    if (row_is_padded(p, row)) {
      for (int j = 0; j < p.topk; ++j) store_slot(p, row, j, 0.0f, -1);
      continue;
    }
    const T* const logits = static_cast<const T*>(p.logits) + row * p.logits_row_stride;
    std::uint32_t top_ord[K], top_expert[K];
    float top_score[K];
#pragma unroll
    for (int m = 0; m < K; ++m) top_ord[m] = 0u, top_expert[m] = 0xFFFFFFFFu, top_score[m] = 0.0f;

    if (!p.softmax) {
      thread_row_select<T, K>(p, logits, [](float x) { return rm::sigmoid(x); }, halves, cand, top_ord, top_expert,
                              top_score);
    } else {
      // The row maximum and the fixed-point sum, exactly as the other paths.
      const auto* logits_vec = reinterpret_cast<const Vec<T, V>*>(logits);
      float mx = -INFINITY;
      bool any_nan = false;
      for (int c = 0; c < E / V; ++c) {
        const Vec<T, V> vec = logits_vec[c];
#pragma unroll
        for (int v = 0; v < V; ++v) {
          const float x = apply_multiplier(p, LogitTraits<T>::widen(vec.v[v]));
          any_nan |= isnan(x);
          mx = fmaxf(mx, x);  // fmaxf drops NaN operands
        }
      }
      std::uint64_t fixed = 0;
      for (int c = 0; c < E / V; ++c) {
        const Vec<T, V> vec = logits_vec[c];
#pragma unroll
        for (int v = 0; v < V; ++v) {
          const float e = rm::exp_f32(apply_multiplier(p, LogitTraits<T>::widen(vec.v[v])) - mx);
          if (isnan(e)) any_nan = true;
          else fixed += rm::softmax_term_fixed(e);
        }
      }
      const float sum = any_nan ? __int_as_float(0x7FFFFFFF) : rm::softmax_sum_from_fixed(fixed);
      thread_row_select<T, K>(p, logits, [mx, sum](float x) { return rm::exp_f32(x - mx) / sum; }, halves, cand,
                              top_ord, top_expert, top_score);
    }

    // ---- weights: the slot-order sum, as in every path ---------------------
    float selected_sum = 0.0f;
#pragma unroll
    for (int j = 0; j < K; ++j)
      if (j < p.topk) selected_sum += top_score[j];
    const float scale = rm::weight_scale(selected_sum, p.has_eps, p.eps, p.route_scale);
#pragma unroll
    for (int j = 0; j < K; ++j)
      if (j < p.topk) store_slot(p, row, j, top_score[j] * scale, static_cast<std::int32_t>(top_expert[j]));
  }
}

}  // namespace musespark::cuda

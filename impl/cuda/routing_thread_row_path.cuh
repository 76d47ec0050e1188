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
// Loads. A thread reading its own row would make every warp load touch 32
// rows (measured: 1.6-2.4x slower than the register path at E >= 256); the
// warp instead stages 16 experts of its 32 rows at a time through shared
// memory with coalesced loads, the next chunk already in flight.
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
constexpr int kThreadRowWarps = kThreadRowBlockThreads / 32;
constexpr int kThreadRowBuckets = 16;     // experts per chunk; bucket = index % 16
constexpr int kThreadRowCandidates = 32;  // per-thread list of step 3

// A warp's chunk of 16 logits of each of its 32 rows: 16-byte vectors, one
// spare vector per row so that neighbouring rows start on different banks.
template <typename T>
struct ThreadRowChunk {
  static constexpr int kVecPerRow = kThreadRowBuckets * static_cast<int>(sizeof(T)) / 16;
  static constexpr int kPitch = kVecPerRow + 1;  // uint4 per row
  static constexpr int kBytesPerWarp = 32 * kPitch * 16;
};

// Dynamic shared memory of one block: the warps' chunks, each thread's E
// 16-bit key halves (a spare 16 bytes per thread, for the banks), then the
// candidate lists, thread-minor.
template <typename T>
std::size_t thread_row_smem_bytes(int num_experts) {
  return static_cast<std::size_t>(kThreadRowWarps) * ThreadRowChunk<T>::kBytesPerWarp +
         static_cast<std::size_t>(kThreadRowBlockThreads) * (num_experts / 8 + 1) * 16 +
         static_cast<std::size_t>(kThreadRowCandidates) * kThreadRowBlockThreads * sizeof(std::uint16_t);
}

// Streams a warp's 32 rows through its chunk buffer. Every lane of the warp
// calls each() together (it synchronizes the warp); rows that are not live
// load nothing and see zeros.
template <typename T>
struct ThreadRowStream {
  using Chunk = ThreadRowChunk<T>;
  static constexpr int kVec = Chunk::kVecPerRow;  // vectors each lane loads per chunk
  static constexpr int V = 16 / static_cast<int>(sizeof(T));
  uint4* buf;                  // this warp's chunk buffer
  const T* src[kVec];          // lane's j-th vector: its row's first logit
  bool ok[kVec];
  int slot[kVec];              // where the vector goes in buf

  __device__ ThreadRowStream(const KernelParams& p, uint4* warp_buf, std::int64_t row0, bool live) : buf(warp_buf) {
    const int lane = threadIdx.x % 32;
#pragma unroll
    for (int j = 0; j < kVec; ++j) {
      const int v = lane + 32 * j;
      const int r = v / kVec, part = v % kVec;
      ok[j] = __shfl_sync(0xFFFFFFFFu, live, r);
      src[j] = static_cast<const T*>(p.logits) + (ok[j] ? row0 + r : 0) * p.logits_row_stride + part * V;
      slot[j] = r * Chunk::kPitch + part;
    }
  }

  // body(x, b, c): x[16] the lane's own row's logits c .. c + 15 and, with
  // kBias, b[16] their bias (prefetched with the logits: a bias load used
  // at once was the kernel's largest stall); without it b is zeros.
  template <bool kBias, typename Body>
  __device__ __forceinline__ void each(int num_experts, const float* bias, Body body) {
    const int lane = threadIdx.x % 32;
    const auto* bias4 = reinterpret_cast<const float4*>(bias);
    uint4 next[kVec];
    float4 next_b[kThreadRowBuckets / 4];
#pragma unroll
    for (int j = 0; j < kVec; ++j) next[j] = ok[j] ? *reinterpret_cast<const uint4*>(src[j]) : make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int u = 0; u < kThreadRowBuckets / 4; ++u) {
      if constexpr (kBias) next_b[u] = bias4[u];
      else next_b[u] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
    for (int c = 0; c < num_experts; c += kThreadRowBuckets) {
      __syncwarp();  // the lanes have read the previous chunk
#pragma unroll
      for (int j = 0; j < kVec; ++j) buf[slot[j]] = next[j];
      __syncwarp();
      float b[kThreadRowBuckets];
#pragma unroll
      for (int u = 0; u < kThreadRowBuckets / 4; ++u)
        b[4 * u] = next_b[u].x, b[4 * u + 1] = next_b[u].y, b[4 * u + 2] = next_b[u].z, b[4 * u + 3] = next_b[u].w;
      if (c + kThreadRowBuckets < num_experts) {
#pragma unroll
        for (int j = 0; j < kVec; ++j)
          next[j] = ok[j] ? *reinterpret_cast<const uint4*>(src[j] + c + kThreadRowBuckets) : make_uint4(0, 0, 0, 0);
        if constexpr (kBias) {  // the same address in every lane: one transaction
#pragma unroll
          for (int u = 0; u < kThreadRowBuckets / 4; ++u) next_b[u] = bias4[(c + kThreadRowBuckets) / 4 + u];
        }
      }
      float x[kThreadRowBuckets];
#pragma unroll
      for (int u = 0; u < kVec; ++u) {
        const Vec<T, V> vec = *reinterpret_cast<const Vec<T, V>*>(buf + lane * Chunk::kPitch + u);
#pragma unroll
        for (int v = 0; v < V; ++v) x[u * V + v] = LogitTraits<T>::widen(vec.v[v]);
      }
      body(x, b, c);
    }
  }
};

// Reads the 16-bit key half of expert 8 * c + i from a thread's slice.
__device__ __forceinline__ std::uint32_t key_half(const uint4& w, int i) {
  const std::uint32_t word = i / 2 == 0 ? w.x : i / 2 == 1 ? w.y : i / 2 == 2 ? w.z : w.w;
  return i % 2 == 0 ? word & 0xFFFFu : word >> 16;
}

// Steps 1-4 for the warp's rows; `score` maps a logit (multiplier applied)
// to p. Instantiated once per normalization, so the hot loops carry no
// branch on it. On return top_* hold a live row's best K experts in key
// order.
template <typename T, int K, typename Score>
__device__ __forceinline__ void thread_row_select(const KernelParams& p, ThreadRowStream<T>& stream, const T* logits,
                                                  bool live, Score score, uint4* halves, std::uint16_t* cand,
                                                  std::uint32_t (&top_ord)[K], std::uint32_t (&top_expert)[K],
                                                  float (&top_score)[K]) {
  constexpr int kStep = kThreadRowBuckets;
  const int E = p.num_experts;

  // ---- 1. keys: bucket maxima and the stored high halves ------------------
  std::uint32_t bucket[kStep];
#pragma unroll
  for (int i = 0; i < kStep; ++i) bucket[i] = 0u;
  stream.template each<true>(E, p.bias, [&](const float (&x)[kStep], const float (&b)[kStep], int c) {
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
  });
  if (!live) return;

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
  const auto consider = [&](int e, float x, float b) {
    const float s = score(apply_multiplier(p, x));
    // + 1: 0 marks an empty list entry, so a NaN q (key 0) still enters.
    insert_candidate<K>(top_ord, top_expert, top_score, rm::ordered_score(s + b) + 1u, static_cast<std::uint32_t>(e), s);
  };
  if (n <= kThreadRowCandidates) {
    constexpr int kBatch = 8;  // loads in flight together
    for (int i0 = 0; i0 < n; i0 += kBatch) {
      int e[kBatch];
      float x[kBatch], b[kBatch];
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        e[u] = i0 + u < n ? cand[(i0 + u) * kThreadRowBlockThreads] : -1;
        x[u] = e[u] >= 0 ? LogitTraits<T>::widen(logits[e[u]]) : 0.0f;
        b[u] = e[u] >= 0 ? p.bias[e[u]] : 0.0f;
      }
#pragma unroll
      for (int u = 0; u < kBatch; ++u)
        if (e[u] >= 0) consider(e[u], x[u], b[u]);
    }
  } else {  // more than the list holds: every qualifying expert, from the stored halves
    for (int c = 0; c < E / 8; ++c) {
      const uint4 w = halves[c];
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const int e = c * 8 + i;
        if (key_half(w, i) >= tau_half) consider(e, LogitTraits<T>::widen(logits[e]), p.bias[e]);
      }
    }
  }
}

// K: the compile-time list length, k <= K.
template <typename T, int K>
__global__ void __launch_bounds__(kThreadRowBlockThreads) route_thread_row_kernel(const KernelParams p) {
  extern __shared__ __align__(16) unsigned char thread_row_smem[];

  pdl_wait();
  pdl_launch_dependents();

  const int E = p.num_experts;
  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32, lane = tid % 32;
  uint4* const chunks = reinterpret_cast<uint4*>(thread_row_smem);
  uint4* const halves = chunks + kThreadRowWarps * ThreadRowChunk<T>::kBytesPerWarp / 16 + tid * (E / 8 + 1);
  std::uint16_t* const cand = reinterpret_cast<std::uint16_t*>(chunks + kThreadRowWarps * ThreadRowChunk<T>::kBytesPerWarp / 16 +
                                                               kThreadRowBlockThreads * (E / 8 + 1)) +
                              tid;  // entry i at cand[i * kThreadRowBlockThreads]

  // Warp-uniform loop over tiles of 32 rows: the chunk stream needs every lane.
  for (std::int64_t row0 = (static_cast<std::int64_t>(blockIdx.x) * kThreadRowWarps + warp) * 32; row0 < p.num_tokens;
       row0 += static_cast<std::int64_t>(gridDim.x) * kThreadRowBlockThreads) {
    const std::int64_t row = row0 + lane;
    const bool in_range = row < p.num_tokens;
    const bool padded = in_range && row_is_padded(p, row);
    const bool live = in_range && !padded;
    ThreadRowStream<T> stream(p, chunks + warp * ThreadRowChunk<T>::kBytesPerWarp / 16, row0, live);
    const T* const logits = static_cast<const T*>(p.logits) + (live ? row : 0) * p.logits_row_stride;

    std::uint32_t top_ord[K], top_expert[K];
    float top_score[K];
#pragma unroll
    for (int m = 0; m < K; ++m) top_ord[m] = 0u, top_expert[m] = 0xFFFFFFFFu, top_score[m] = 0.0f;

    if (!p.softmax) {
      thread_row_select<T, K>(p, stream, logits, live, [](float x) { return rm::sigmoid(x); }, halves, cand, top_ord,
                              top_expert, top_score);
    } else {
      // The row maximum and the fixed-point sum, exactly as the other paths.
      float mx = -INFINITY;
      bool any_nan = false;
      using Chunk = float[kThreadRowBuckets];
      stream.template each<false>(E, nullptr, [&](const Chunk& x, const Chunk&, int) {
#pragma unroll
        for (int i = 0; i < kThreadRowBuckets; ++i) {
          const float xm = apply_multiplier(p, x[i]);
          any_nan |= isnan(xm);
          mx = fmaxf(mx, xm);  // fmaxf drops NaN operands
        }
      });
      std::uint64_t fixed = 0;
      stream.template each<false>(E, nullptr, [&](const Chunk& x, const Chunk&, int) {
#pragma unroll
        for (int i = 0; i < kThreadRowBuckets; ++i) {
          const float e = rm::exp_f32(apply_multiplier(p, x[i]) - mx);
          if (isnan(e)) any_nan = true;
          else fixed += rm::softmax_term_fixed(e);
        }
      });
      const float sum = any_nan ? __int_as_float(0x7FFFFFFF) : rm::softmax_sum_from_fixed(fixed);
      thread_row_select<T, K>(p, stream, logits, live, [mx, sum](float x) { return rm::softmax_share(rm::exp_f32(x - mx), sum); }, halves,
                              cand, top_ord, top_expert, top_score);
    }
    if (!in_range) continue;

    if (padded) {
      for (int j = 0; j < p.topk; ++j) store_slot(p, row, j, 0.0f, -1);
      continue;
    }
    // ---- weights: the slot-order sum, as in every path ---------------------
    float selected_sum = 0.0f;
#pragma unroll
    for (int j = 0; j < K; ++j)
      if (j < p.topk) selected_sum += top_score[j];
    const float denominator = rm::weight_denominator(selected_sum, p.has_eps, p.eps);
#pragma unroll
    for (int j = 0; j < K; ++j)
      if (j < p.topk) store_slot(p, row, j, rm::routing_weight(top_score[j], denominator, p.route_scale), static_cast<std::int32_t>(top_expert[j]));
  }
}

}  // namespace musespark::cuda

// Filter path of the router kernel, for large batches: E a multiple of 32
// in [64, 512], held as P in {2, 4, 8, 12, 16} experts per lane (kFull: E =
// 32 * P, every register an expert; otherwise the registers past E hold
// none), k <= 8, logits contiguous along the experts and 16-byte aligned
// (filter_unsupported names what it needs).
//
// Why. Large batches are bound by instruction issue, not by memory
// (docs/performance_log.md): with one warp per row the exact score of every
// expert (about fourteen instructions for the sigmoid) and every per-row
// step of the selection (tau, ranking, slot writes, stores) are whole-warp
// instructions. Here a warp works on R <= 16 rows in two phases:
//  A. One row at a time, the whole warp (one expert per lane and register,
//     as the register path lays them out): an estimate qa of each expert's
//     selection input from the hardware's estimates (sigmoid: tanh, three
//     instructions; softmax: the exact term times the sum's reciprocal
//     estimate), tau = the k-th largest of the 32 lanes' maxima
//     of qa (k redux.sync rounds), and the experts with qa >= tau - margin,
//     the candidates, compacted into the row's slice of shared memory with
//     their logit (sigmoid) or exact exp term (softmax). A row with more
//     than kFilterCandidates candidates (ties en masse, constant rows) is
//     selected after phase A, exactly, by the register path's round
//     selection over the whole row.
//  B. One row per lane: the lane scores its row's candidates exactly (the
//     functions every path uses, so the same bits), keeps the k best in a
//     sorted list of 64-bit selection keys and writes the row's outputs. A
//     per-row step now costs a thirty-second of a warp instruction.
//
// Why the candidates hold the top k (the margin). Let q be the exact
// selection input and qa its estimate; both are NaN for the same experts.
// Suppose |qa - q| <= d for every other expert. tau is the k-th largest
// lane maximum of qa: k distinct experts reach it, so the k-th largest qa
// of the row is >= tau, and then the k-th largest q is >= tau - d. An
// expert of the top k has q >= that, so qa >= tau - 2d: it is a candidate
// whenever margin >= 2d. (When fewer than k lanes hold a number, or the
// margin is not finite, every expert is a candidate.) The bound d:
//  - sigmoid: p = sigmoid(x), pa = sigmoid_estimate(x), |pa - p| <=
//    1.5 * 2^-12 (kSigmoidEstimateMaxError, from tanh.approx; tested on
//    every float); q = fl(p + b) and qa = fl(pa + b) each round by at most
//    half an ulp of a value below 2 + |b| in magnitude, 2^-23 (1 + |b|)
//    together. d <= 1.5 * 2^-12 + 2^-23 (1 + B) < 2^-11.4 (1 + B), with B
//    the largest |b| of the bias.
//  - softmax: p = softmax_share(t, S) is t / S to within an ulp (2^-23, as
//    p <= 1); qa = fma(t, r, b) with r = reciprocal_estimate(S), |r S - 1|
//    <= 2^-22 (tested on every S in [1, 2^24], the sums a row can have), so
//    |t r - t / S| <= 2^-22 (t <= 1 <= S); with the two roundings, d <=
//    2^-22 + 2^-23 + 2^-23 (1 + B).
// The softmax d is below 2^-19 (1 + B): margin = 2^-17 (1 + B) is twice
// 2d. For sigmoid margin = 2^-9 (1 + B) is 2.6 times 2d (estimate_margin,
// routing_lane_scores.cuh, which the register path's estimated selection
// shares). The slack covers the roundings of computing margin and tau -
// margin (each within 2^-23 relative of values below 2 + B). B, an fmax over the bias,
// drops NaN entries (their experts' q is NaN either way).
// property_tests/test_filter_selection_model.cpp checks this step on the
// CPU: estimates anywhere within d of q, skewed to reverse near ties, never
// lose an expert of the top k (with the softmax margin at 2^-20 (1 + B), or
// the sigmoid one at 2^-12 (1 + B), it finds rows that do).
//
// The result is then the same as every other path's, bit for bit: the
// same exact scores, the same total order of 64-bit keys (NaN lowest, the
// lower index first among equal q), the slot-order sum from 0.
#pragma once

#include "routing_kernel_common.cuh"
#include "routing_lane_scores.cuh"
#include "routing_register_path.cuh"  // round_select, for rows with too many candidates

namespace musespark::cuda {

constexpr int kFilterBlockThreads = 128;
constexpr int kFilterWarps = kFilterBlockThreads / 32;
constexpr int kFilterCandidates = 32;  // per row; more are selected in phase A

// Row codes in FilterScratch::count besides a candidate count.
constexpr int kFilterRowPadded = -1;
constexpr int kFilterRowOverflow = -2;  // too many candidates: selected and written after phase A

// A warp's rows between the phases: each candidate one 8-byte store. The
// +1 pitch staggers the rows' banks when the lanes read their own rows in
// phase B.
struct FilterScratch {
  float2 cand[kFilterMaxRows][kFilterCandidates + 1];  // logit x (sigmoid) or exp term (softmax), expert (bits)
  float row_sum[kFilterMaxRows];                       // softmax: the row's sum (NaN for a NaN row)
  int count[kFilterMaxRows];                           // candidates, or a row code
};

// Inserts `key` (with its unbiased score) into a descending list of K
// 64-bit selection keys; keys are unique, 0 means empty.
template <int K>
__device__ __forceinline__ void insert_key(std::uint64_t (&top)[K], float (&top_score)[K], std::uint64_t key,
                                           float score) {
  bool above[K];
#pragma unroll
  for (int m = 0; m < K; ++m) above[m] = key > top[m];
#pragma unroll
  for (int m = K - 1; m > 0; --m) {
    top[m] = above[m - 1] ? top[m - 1] : (above[m] ? key : top[m]);
    top_score[m] = above[m - 1] ? top_score[m - 1] : (above[m] ? score : top_score[m]);
  }
  top[0] = above[0] ? key : top[0];
  top_score[0] = above[0] ? score : top_score[0];
}

// Phase B for the calling lane's row: the exact top k of its candidates,
// then the outputs. Candidates number at least k (see above).
template <int K, bool kSoftmax>
__device__ __forceinline__ void filter_rank_row(const KernelParams& p, const FilterScratch& sc, int r,
                                                std::int64_t row) {
  const int n = sc.count[r];
  const int k = p.topk;
  if (n == kFilterRowPadded) {
    for (int j = 0; j < k; ++j) store_slot(p, row, j, 0.0f, -1);
    return;
  }
  if (n == kFilterRowOverflow) return;
  std::uint64_t top[K];
  float top_score[K];
#pragma unroll
  for (int m = 0; m < K; ++m) top[m] = 0, top_score[m] = 0.0f;
  const float sum = kSoftmax ? sc.row_sum[r] : 0.0f;
  for (int j = 0; j < n; ++j) {
    const float2 c = sc.cand[r][j];
    const float v = c.x;
    const std::uint32_t e = __float_as_uint(c.y);
    const float s = kSoftmax ? rm::softmax_share(v, sum) : rm::sigmoid(v);
    insert_key<K>(top, top_score, rm::selection_key(s + __ldg(p.bias + e), e), s);
  }
  float selected_sum = 0.0f;
#pragma unroll
  for (int m = 0; m < K; ++m)
    if (m < k) selected_sum += top_score[m];
  const float denominator = rm::weight_denominator(selected_sum, p.has_eps, p.eps);
  float w[K];
  std::int32_t id[K];
#pragma unroll
  for (int m = 0; m < K; ++m) {
    w[m] = rm::routing_weight(top_score[m], denominator, p.route_scale);
    id[m] = static_cast<std::int32_t>(rm::key_expert(top[m]));
  }
  store_slots<K>(p, row, 0, w, id);
}

// A row with too many candidates, after phase A (rare: ties en masse, NaN
// rows): its logits loaded again, exact scores and the register path's
// round selection, the outputs written. Out of the row loop, which stays
// small that way (inlined into it, the selection's registers spilled).
template <typename T, int P, int V, bool kSoftmax, typename ExpertOf>
__device__ __forceinline__ void filter_row_exactly(const KernelParams& p, const float (&b)[P],
                                                   const bool (&valid)[P], ExpertOf expert_of, std::int64_t row) {
  const int lane = threadIdx.x % 32;
  const int k = p.topk;
  float s[P];
  load_lane_logits<T, P, V>(p, static_cast<const T*>(p.logits) + row * p.logits_row_stride, valid,
                            [lane](int c) { return (c * 32 + lane) * V; }, s);
  if constexpr (!kSoftmax) {
    sigmoid_scores(s);
  } else {
    bool row_nan;
    const std::uint64_t fixed = group_softmax_terms<32>(s, valid, row_nan);
    softmax_shares(s, fixed, row_nan);
  }
  float q[P];
#pragma unroll
  for (int i = 0; i < P; ++i) q[i] = valid[i] ? s[i] + b[i] : __int_as_float(0x7FFFFFFF);
  std::int32_t slot_id[1] = {};
  float slot_score[1] = {};
  float selected_sum = 0.0f;
  round_select<32, P, V, 1>(q, s, valid, expert_of, k, slot_id, slot_score, selected_sum);
  const float denominator = rm::weight_denominator(selected_sum, p.has_eps, p.eps);
  if (lane < k) store_slot(p, row, lane, rm::routing_weight(slot_score[0], denominator, p.route_scale), slot_id[0]);
}

// Phase A for one live row: x[] its logits (scaled), b[] the lane's bias.
// Returns whether the row has too many candidates (warp-uniform); it is
// then left to filter_row_exactly.
// Registers without an expert (valid[i] false) have a NaN estimate, which
// the lane maximum drops, and are never candidates.
template <int P, int V, int K, bool kSoftmax, typename ExpertOf>
__device__ __forceinline__ bool filter_row(const KernelParams& p, float (&x)[P], const float (&b)[P],
                                           const bool (&valid)[P], float margin, ExpertOf expert_of,
                                           FilterScratch& sc, int r) {
  const int lane = threadIdx.x % 32;
  const int k = p.topk;
  float qa[P], sum;
  estimate_inputs<P, kSoftmax>(x, b, valid, qa, sum);  // softmax: x holds the exp terms now
  if constexpr (kSoftmax) {
    if (lane == 0) sc.row_sum[r] = sum;
  }
  const std::uint32_t tau_ord = kth_lane_max_ord<K>(qa, k);
  // Not (qa < keep_from): NaN estimates are candidates too, and a NaN bound
  // (infinite margin) keeps every expert.
  const float keep_from = tau_ord == 0 ? -INFINITY : rm::score_from_ordered(tau_ord) - margin;
  bool keep[P];
#pragma unroll
  for (int i = 0; i < P; ++i) keep[i] = valid[i] && !(qa[i] < keep_from);

  // Compaction into the row's slice. Up to 4 experts per lane, one ballot
  // per register gives each candidate its place (register-major order; the
  // ranking compares full keys, so any order serves); from 8, a prefix sum
  // of the lanes' counts is fewer instructions.
  int n = 0;
  if constexpr (P <= 4) {
    const std::uint32_t below = (1u << lane) - 1u;
    std::uint32_t votes[P];
#pragma unroll
    for (int i = 0; i < P; ++i) votes[i] = __ballot_sync(0xFFFFFFFFu, keep[i]);
#pragma unroll
    for (int i = 0; i < P; ++i) n += __popc(votes[i]);
    if (n > kFilterCandidates) return true;
    int base = 0;
#pragma unroll
    for (int i = 0; i < P; ++i) {
      if (keep[i]) {
        const int slot = base + __popc(votes[i] & below);
        sc.cand[r][slot] = make_float2(x[i], __uint_as_float(static_cast<std::uint32_t>(expert_of(i))));
      }
      base += __popc(votes[i]);
    }
  } else {
    int count = 0;
#pragma unroll
    for (int i = 0; i < P; ++i) count += keep[i] ? 1 : 0;
    // Usually no lane holds two candidates (about 10 of 256 experts are
    // kept, spread over 32 lanes): one ballot places them, and each lane
    // stores its one, instead of a prefix sum and a predicated store per
    // register. The order is the prefix sum's all the same.
    if (__all_sync(0xFFFFFFFFu, count <= 1)) {
      const std::uint32_t holders = __ballot_sync(0xFFFFFFFFu, count == 1);
      n = __popc(holders);  // <= 32: never too many
      if (count == 1) {
        float value = 0.0f;
        std::uint32_t expert = 0;
#pragma unroll
        for (int i = 0; i < P; ++i) {
          value = keep[i] ? x[i] : value;
          expert = keep[i] ? static_cast<std::uint32_t>(expert_of(i)) : expert;
        }
        sc.cand[r][__popc(holders & ((1u << lane) - 1u))] = make_float2(value, __uint_as_float(expert));
      }
      if (lane == 0) sc.count[r] = n;
      return false;
    }
    int inclusive = count;
#pragma unroll
    for (int off = 1; off < 32; off *= 2) {
      const int t = __shfl_up_sync(0xFFFFFFFFu, inclusive, off);
      if (lane >= off) inclusive += t;
    }
    n = __shfl_sync(0xFFFFFFFFu, inclusive, 31);
    if (n > kFilterCandidates) return true;
    int slot = inclusive - count;
#pragma unroll
    for (int i = 0; i < P; ++i) {
      if (keep[i]) {
        sc.cand[r][slot] = make_float2(x[i], __uint_as_float(static_cast<std::uint32_t>(expert_of(i))));
        ++slot;
      }
    }
  }
  if (lane == 0) sc.count[r] = n;
  return false;
}

// Phase A's loads: each row is copied into a per-warp ring of row buffers
// in shared memory by cp.async, kRing - 1 rows ahead of the row being
// filtered, so that a warp keeps up to ~4 KB of loads in flight without
// holding registers for them (a ring of registers needed the row loop
// unrolled by its depth, and that code was slower than what it hid).
constexpr int kFilterRingBytes = 4096;  // per warp

template <typename T, int P>
struct FilterRing {
  static constexpr int kRowBytes = 32 * P * static_cast<int>(sizeof(T));  // E * sizeof(T), a multiple of 16
  static constexpr int kFit = kFilterRingBytes / kRowBytes;  // a task has at most kFilterMaxRows rows
  static constexpr int kRows = kFit < 2 ? 2 : (kFit > kFilterMaxRows ? kFilterMaxRows : kFit);
  alignas(16) unsigned char row[kRows][kRowBytes];
};

__device__ __forceinline__ void copy_async_16(void* smem, const void* gmem) {
  const auto dst = static_cast<std::uint32_t>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(gmem));
}
// No memory clobber on the issue and the commit (with one, every kernel
// parameter was loaded again for each row); the wait has one, so that no
// read of a staged row moves above it, and the buffer a copy overwrites was
// last read before a __syncwarp.
__device__ __forceinline__ void copy_async_commit() { asm volatile("cp.async.commit_group;"); }
template <int N>
__device__ __forceinline__ void copy_async_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory"); }

// Blocks per SM the compiler must fit: six (24 warps) where ptxas fits
// them in 80 registers without a spill (up to 8 experts per lane); at 12
// and 16 six spilled 24-92 bytes, so four.
template <int P>
inline constexpr int kFilterMinBlocks = P >= 12 ? 4 : 6;

// The launch sets p.filter_rows (R) and a grid of warps that each take
// tasks of R consecutive rows.
template <typename T, int P, int V, int K, bool kSoftmax, bool kFull>
__global__ void __launch_bounds__(kFilterBlockThreads, kFilterMinBlocks<P>) route_filter_kernel(const KernelParams p) {
  static_assert(P % V == 0 && K <= kFilterMaxTopK, "filter tier shape");
  constexpr int kBiasVec = V < 4 ? V : 4;
  using Ring = FilterRing<T, P>;
  // 16-byte copies per row (E * sizeof(T) is a multiple of 16).
  const int chunks = kFull ? Ring::kRowBytes / 16 : p.num_experts * static_cast<int>(sizeof(T)) / 16;
  __shared__ FilterScratch scratch[kFilterWarps];
  __shared__ Ring rings[kFilterWarps];

  pdl_trigger_early(p.trigger_first);  // the wait: before the first global read (pdl_trigger_early)

  const int lane = threadIdx.x % 32;
  FilterScratch& sc = scratch[threadIdx.x / 32];
  Ring& ring = rings[threadIdx.x / 32];
  auto expert_of = [lane](int i) { return ((i / V) * 32 + lane) * V + i % V; };
  const int R = p.filter_rows;
  // Which registers hold an expert. E is a multiple of V, so a vector is
  // whole or empty.
  bool valid[P];
#pragma unroll
  for (int i = 0; i < P; ++i) valid[i] = kFull || expert_of(i) < p.num_experts;

  // The bias and the margin, once per warp.
  pdl_wait_then_trigger(p.trigger_first);
  float b[P];
#pragma unroll
  for (int c = 0; c < P / kBiasVec; ++c) {
    Vec<float, kBiasVec> vec{};
    if (valid[c * kBiasVec]) vec = *reinterpret_cast<const Vec<float, kBiasVec>*>(p.bias + expert_of(c * kBiasVec));
#pragma unroll
    for (int v = 0; v < kBiasVec; ++v) b[c * kBiasVec + v] = vec.v[v];
  }
  float max_abs_bias = 0.0f;
#pragma unroll
  for (int i = 0; i < P; ++i) max_abs_bias = fmaxf(max_abs_bias, fabsf(b[i]));
  const float margin = estimate_margin<kSoftmax>(group_max_f32<32>(max_abs_bias));

  const std::int64_t tasks = (p.num_tokens + R - 1) / R;
  for (std::int64_t task = static_cast<std::int64_t>(blockIdx.x) * kFilterWarps + threadIdx.x / 32; task < tasks;
       task += static_cast<std::int64_t>(gridDim.x) * kFilterWarps) {
    const std::int64_t row0 = task * R;
    const int rows = static_cast<int>(p.num_tokens - row0 < R ? p.num_tokens - row0 : R);
    const std::uint32_t padded_rows = __ballot_sync(0xFFFFFFFFu, lane < rows && row_is_padded(p, row0 + lane));

    // ---- phase A: filter the task's rows, one at a time ------------------
    // One commit group per row (empty past the task), so that waiting for
    // all but the newest kRows - 1 groups is waiting for row r. Padded
    // rows are copied too (they are in bounds) and ignored.
    const auto* task_src =
        reinterpret_cast<const unsigned char*>(static_cast<const T*>(p.logits) + row0 * p.logits_row_stride);
    const std::int64_t row_bytes = p.logits_row_stride * static_cast<std::int64_t>(sizeof(T));
    auto fetch = [&](int r) {
      if (r < rows) {
        const unsigned char* src = task_src + r * row_bytes;
        for (int c = lane; c < chunks; c += 32) copy_async_16(ring.row[r % Ring::kRows] + 16 * c, src + 16 * c);
      }
      copy_async_commit();
    };
    std::uint32_t overflow_rows = 0;  // warp-uniform
#pragma unroll 1
    for (int d = 0; d < Ring::kRows - 1; ++d) fetch(d);
#pragma unroll 1
    for (int r = 0; r < rows; ++r) {
      fetch(r + Ring::kRows - 1);
      copy_async_wait<Ring::kRows - 1>();
      __syncwarp();  // every lane's copies of row r are visible
      if ((padded_rows >> r) & 1u) {  // warp-uniform
        if (lane == 0) sc.count[r] = kFilterRowPadded;
      } else {
        const T* staged = reinterpret_cast<const T*>(ring.row[r % Ring::kRows]);
        float x[P];
#pragma unroll
        for (int c = 0; c < P / V; ++c) {
          Vec<T, V> vec{};
          if (valid[c * V]) vec = *reinterpret_cast<const Vec<T, V>*>(staged + (c * 32 + lane) * V);
#pragma unroll
          for (int v = 0; v < V; ++v) x[c * V + v] = apply_multiplier(p, LogitTraits<T>::widen(vec.v[v]));
        }
        if (filter_row<P, V, K, kSoftmax>(p, x, b, valid, margin, expert_of, sc, r)) {
          overflow_rows |= 1u << r;
          if (lane == 0) sc.count[r] = kFilterRowOverflow;
        }
      }
      __syncwarp();  // row r's buffer is refilled by the next iteration's fetch
    }
    copy_async_wait<0>();  // only empty groups are left; nothing in flight crosses tasks
    __syncwarp();
    for (; overflow_rows != 0; overflow_rows &= overflow_rows - 1)
      filter_row_exactly<T, P, V, kSoftmax>(p, b, valid, expert_of, row0 + __ffs(overflow_rows) - 1);

    // ---- phase B: each lane ranks one row's candidates -------------------
    if (lane < rows) filter_rank_row<K, kSoftmax>(p, sc, lane, row0 + lane);
    __syncwarp();  // the next task overwrites the scratch
  }
}

}  // namespace musespark::cuda

// A lane's share of a row's scores (SPEC steps 1-2), for the kernels that
// hold P experts per lane in registers: the register path and the split-row
// path. Each kernel decides which experts a lane holds and how the softmax
// reductions cross lanes (and, in the split-row path, warps); the per-lane
// arithmetic here is the same in both, so their bits are too.
#pragma once

#include "routing_kernel_common.cuh"

namespace musespark::cuda {

// s[i] = the logit of the lane's i-th expert, widened to fp32 and scaled by
// the multiplier; 0 where valid[i] is false (nothing is loaded there).
// chunk_start(c) is the first expert of the lane's c-th run of V
// consecutive experts; with V > 1 the caller guarantees contiguous,
// V-aligned logits and E % V == 0, so a valid run is valid throughout.
template <typename T, int P, int V, typename ChunkStart>
__device__ __forceinline__ void load_lane_logits(const KernelParams& p, const T* row_ptr, const bool (&valid)[P],
                                                 ChunkStart chunk_start, float (&s)[P]) {
  static_assert(P % V == 0, "whole vectors per lane");
#pragma unroll
  for (int c = 0; c < P / V; ++c) {
    const int e0 = chunk_start(c);
    if constexpr (V > 1) {
      if (valid[c * V]) {
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
}

// The whole warp calls it. When every lane's logits are above
// kSigmoidInRangeMin (any real router's are; empty registers hold 0), the
// range checks of the reciprocal are left out: the same bits, ~6 fewer
// instructions per expert, for one min per expert and a vote.
template <int P>
__device__ __forceinline__ void sigmoid_scores(float (&s)[P]) {
  float lowest = s[0];
#pragma unroll
  for (int i = 1; i < P; ++i) lowest = fminf(lowest, s[i]);  // NaN dropped; all NaN fails the test
  if (__all_sync(0xFFFFFFFFu, lowest > rm::kSigmoidInRangeMin)) {
#pragma unroll
    for (int i = 0; i < P; ++i) s[i] = rm::sigmoid_in_range(s[i]);
  } else {
#pragma unroll
    for (int i = 0; i < P; ++i) s[i] = rm::sigmoid(s[i]);
  }
}

// Softmax, first half: the lane's maximum, NaN when the lane holds a NaN
// (max.NaN, one instruction per expert). Registers without an expert count
// as -inf. The reductions that combine the lanes' maxima keep the NaN
// (group_max_keep_nan, and the block crossings of block_softmax_shares),
// so the row's maximum is NaN exactly when the row holds one, and that is
// the row's NaN flag: no reduction of a flag of its own.
template <int P>
__device__ __forceinline__ float lane_softmax_max(const float (&s)[P], const bool (&valid)[P]) {
  float mx = -INFINITY;
#pragma unroll
  for (int i = 0; i < P; ++i) mx = fmax_keep_nan(mx, valid[i] ? s[i] : -INFINITY);  // exact in any order
  return mx;
}

// Softmax, second half: s[i] = exp(s[i] - row max) (0 where no expert) and
// the lane's fixed-point sum of the terms (exact, so any order of the later
// cross-lane sum gives the same bits). No NaN test: where a term is NaN,
// softmax_row_has_nan already holds and the sum is replaced by NaN, so what
// the sum makes of that term never reaches a bit. A register without an
// expert adds its 0.
template <int P>
__device__ __forceinline__ rm::SoftmaxFixedSum lane_softmax_exp(float (&s)[P], const bool (&valid)[P],
                                                                float row_max) {
  rm::SoftmaxFixedSum fixed;
#pragma unroll
  for (int i = 0; i < P; ++i) {
    const float e = rm::exp_f32(s[i] - row_max);
    s[i] = valid[i] ? e : 0.0f;
    fixed.add(s[i]);
  }
  return fixed;
}

// Softmax over a row that G lanes of one warp share, the first two halves
// with their reductions: s[i] = the exp terms, row_nan = whether the row
// holds a NaN, and the row's fixed-point sum returned (the register path,
// the filter path's exact rows and the estimates all start this way).
template <int G, int P>
__device__ __forceinline__ std::uint64_t group_softmax_terms(float (&s)[P], const bool (&valid)[P], bool& row_nan) {
  const float row_max = group_max_keep_nan<G>(lane_softmax_max(s, valid));
  row_nan = softmax_row_has_nan(isnan(row_max), row_max);
  return group_sum_fixed<G>(lane_softmax_exp(s, valid, row_max));
}

// Softmax, last step: each term over the row's sum (NaN when the row held one).
template <int P>
__device__ __forceinline__ void softmax_shares(float (&s)[P], std::uint64_t row_fixed, bool row_has_nan) {
  const float sum = row_has_nan ? __int_as_float(0x7FFFFFFF) : rm::softmax_sum_from_fixed(row_fixed);
#pragma unroll
  for (int i = 0; i < P; ++i) s[i] = rm::softmax_share(s[i], sum);
}

// The estimates qa[] of the lane's selection inputs (NaN where a register
// holds no expert). s[] holds the lane's logits (widened and scaled); with
// softmax it holds the exp terms afterwards and sum the row's sum (NaN for
// a NaN row), from which exact_scores_after_estimates finishes the shares.
template <int P, bool kSoftmax>
__device__ __forceinline__ void estimate_inputs(float (&s)[P], const float (&b)[P], const bool (&valid)[P],
                                                float (&qa)[P], float& sum) {
  const float kNoExpert = __int_as_float(0x7FFFFFFF);
  sum = 0.0f;
  if constexpr (!kSoftmax) {
#pragma unroll
    for (int i = 0; i < P; ++i) qa[i] = valid[i] ? rm::sigmoid_estimate(s[i]) + b[i] : kNoExpert;
  } else {
    bool row_nan;
    const std::uint64_t fixed = group_softmax_terms<32>(s, valid, row_nan);  // s: the exp terms now
    sum = row_nan ? kNoExpert : rm::softmax_sum_from_fixed(fixed);
    const float inv = rm::reciprocal_estimate(sum);
#pragma unroll
    for (int i = 0; i < P; ++i) qa[i] = valid[i] ? fmaf(s[i], inv, b[i]) : kNoExpert;
  }
}

// tau of the filter path and the estimated selection: the k-th largest of
// the 32 lanes' maxima of q (NaN dropped), as an ordered score; 0 when
// fewer than k lanes hold a number. k <= K rounds of redux.sync, unrolled
// so that no loop sits in the row's chain; equal maxima leave together, so
// tau can only come out lower than the k-th largest, never higher.
template <int K, int P>
__device__ __forceinline__ std::uint32_t kth_lane_max_ord(const float (&q)[P], int k) {
  float lane_max = q[0];
#pragma unroll
  for (int i = 1; i < P; ++i) lane_max = fmaxf(lane_max, q[i]);  // NaN dropped
  std::uint32_t v = rm::ordered_score(lane_max);                 // all NaN -> 0
  std::uint32_t tau_ord = 0;
#pragma unroll
  for (int round = 0; round < K; ++round) {
    if (round < k) {
      const std::uint32_t m = __reduce_max_sync(0xFFFFFFFFu, v);
      tau_ord = m;
      v = v == m ? 0u : v;
    }
  }
  return tau_ord;
}

// How far below tau an estimated selection input may lie and still belong
// to the top k, from B = the largest |bias| of the row: 2^-9 (1 + B) for
// sigmoid, 2^-17 (1 + B) for softmax, at least twice the estimates' error
// on both sides (routing_filter_path.cuh derives them). The filter path and
// the register path's estimated selection use it.
template <bool kSoftmax>
__device__ __forceinline__ float estimate_margin(float max_abs_bias) {
  return (kSoftmax ? rm::kSoftmaxEstimateMarginFactor : rm::kSigmoidEstimateMarginFactor) * (1.0f + max_abs_bias);
}

// Softmax over a row that the W warps of a block share (the split-row,
// block-rank and block-threshold paths): the maximum and the fixed-point
// sum cross the warps through shared memory (BlockSoftmaxScratch, one
// entry per warp), one barrier each; both are exact, so the order in which
// warps combine them changes no bit.
//
// Two forms of the crossing, the kernel's choice (the scratch's type
// names it). In the lanes' form lane w < W reads warp w's entry and one
// warp reduction combines them (one shared load and one redux.sync per
// value in each thread); in the loop form each thread loops over the W
// entries. The lanes' form keeps each warp's maximum as the
// order-preserving key its redux.sync produced (no conversion back and
// forth around the barrier) and its sum as the two 32-bit halves of
// rm::SoftmaxFixedSum: a row of E <= 512 terms adds at most 2^29 to either
// half, so the halves of all W warps sum exactly in 32 bits, one
// redux.sync each, where 64-bit sums would take three redux.sync over
// 22-bit pieces and the splitting and recombining around them. The loop
// form keeps floats and 64-bit sums.
//
// Measured on the H200 (decode cells T = 1, 16, 128, E = 128-512, k = 1,
// 4, 8, both dtypes, three rounds each): the lanes' form from 16 warps
// took 0.88-0.92x the time of 22-bit pieces at E = 512 on the 16-warp
// block-threshold kernel; at 8 warps it took 0.89-0.93x the loop form's
// time on the block-threshold path's E = 512, k = 8 pair kernel (8 warps,
// two experts a thread) and 0.98-1.00x at E = 256, but 1.08-1.14x on the
// split-row path's E = 512, k = 1 cells and 1.03-1.04x at bf16 k = 4; the
// loop form with the lanes' storage took 1.03-1.08x on the split-row
// path. Hence the block-threshold path from 8 warps, the split-row and
// block-rank paths from 16.
constexpr int kBlockSoftmaxLanesFrom = 16;
constexpr int kBlockThresholdSoftmaxLanesFrom = 8;

template <int W, bool kByLanes = (W >= kBlockSoftmaxLanesFrom)>
struct BlockSoftmaxScratch;

template <int W>
struct BlockSoftmaxScratch<W, true> {
  std::uint32_t max_ord[W];  // nan_high_ordered_score of each warp's maximum
  std::uint32_t sum_high[W];  // rm::SoftmaxFixedSum halves
  std::uint32_t sum_low[W];
};

template <int W>
struct BlockSoftmaxScratch<W, false> {
  float max[W];  // NaN for a warp that holds a NaN
  std::uint64_t sum[W];
};

template <int W, bool kByLanes, int P>
__device__ __forceinline__ void block_softmax_shares(float (&s)[P], const bool (&valid)[P],
                                                     BlockSoftmaxScratch<W, kByLanes>& scratch) {
  static_assert(W >= 1 && W <= 32, "one warp's lanes read the W entries");
  static_assert(32 * W * P <= rm::kSoftmaxFixedSumMaxTerms, "the halves of the block's sum fit 32 bits");
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const float lane_max = lane_softmax_max(s, valid);
  // The NaN flag rides in the maximum (group_max_keep_nan, nan_high_ordered_score):
  // mx comes out NaN exactly when the row holds a NaN, so the crossing takes
  // one reduction, one shared entry and one read per warp instead of two of
  // each. H100, against the flag reduced beside the maximum (candidates,
  // three rounds, T = 1-8192, E = 8-512, k = 1 / 4 / 8, both dtypes,
  // softmax): the block-threshold path's cells 0.968-0.976x the time (E =
  // 512 k = 4 / 8 at 16 rows 2.00-2.03 -> 1.90-1.93 us), the register
  // path's 0.986x at 8192 rows and even at decode, the filter path's
  // 0.992x. Each warp's sum halves in one 8-byte entry besides (a store and
  // a load fewer) took the block-threshold cells to 0.981-0.984x only:
  // another schedule, not kept.
  float mx;
  if constexpr (kByLanes) {
    const std::uint32_t warp_ord = __reduce_max_sync(0xFFFFFFFFu, nan_high_ordered_score(lane_max));
    if (lane == 0) scratch.max_ord[warp] = warp_ord;
    __syncthreads();
    mx = rm::score_from_ordered(__reduce_max_sync(0xFFFFFFFFu, lane < W ? scratch.max_ord[lane] : 0u));  // NaN: the key above +inf's
  } else {
    mx = group_max_keep_nan<32>(lane_max);
    if (lane == 0) scratch.max[warp] = mx;
    __syncthreads();
#pragma unroll
    for (int w = 0; w < W; ++w) mx = fmax_keep_nan(mx, scratch.max[w]);
  }
  const bool row_nan = isnan(mx);  // softmax_row_has_nan adds the inf rows below
  rm::SoftmaxFixedSum fixed = lane_softmax_exp(s, valid, mx);
  fixed.high = __reduce_add_sync(0xFFFFFFFFu, fixed.high);
  fixed.low = __reduce_add_sync(0xFFFFFFFFu, fixed.low);
  std::uint64_t row_fixed;
  if constexpr (kByLanes) {
    if (lane == 0) scratch.sum_high[warp] = fixed.high, scratch.sum_low[warp] = fixed.low;
    __syncthreads();
    fixed.high = __reduce_add_sync(0xFFFFFFFFu, lane < W ? scratch.sum_high[lane] : 0u);
    fixed.low = __reduce_add_sync(0xFFFFFFFFu, lane < W ? scratch.sum_low[lane] : 0u);
    row_fixed = fixed.value();
  } else {
    if (lane == 0) scratch.sum[warp] = fixed.value();
    __syncthreads();
    row_fixed = 0;
#pragma unroll
    for (int w = 0; w < W; ++w) row_fixed += scratch.sum[w];
  }
  softmax_shares(s, row_fixed, softmax_row_has_nan(row_nan, mx));
}

}  // namespace musespark::cuda

// Selection from estimated scores on the register path's one-warp-per-row
// tiers (E in (128, 512] with 8+ experts per lane, registers past E holding
// no expert on the tiers that are not full; k >= 4 also at E = 128, four
// per lane): the register path's kernel compiled with kEstimate
// calls these in place of the exact scores and the selection.
//
// Why. The exact score of every expert is most of a row's instructions:
// the sigmoid's exp and correctly rounded reciprocal (about fourteen
// instructions per expert), softmax's correctly rounded division per share.
// Only the k winners' scores are output, and only experts near the k-th
// best can win. So each expert gets the filter path's estimate qa (four
// instructions for the sigmoid; for softmax the share's division replaced
// by a multiply with the reciprocal estimate of the sum), tau = the k-th
// largest of the 32 lanes' maxima of qa, and the experts with qa >= tau -
// margin are the candidates: the filter path's proof (routing_filter_path.cuh,
// estimate_margin) says the exact top k is among them. Each candidate is
// scored exactly, by the functions every path uses, and ranked in the
// 64-bit key order: the same experts, slots and bits as the exact
// selection.
//  - k = 1 (top1_by_estimates): tau is the row's largest qa and a lane
//    rarely holds two candidates; each lane scores its one, and one
//    group-wide round picks the best key.
//  - k in [2, 8] (topk_by_estimates; the tier table sends it k >= 4,
//    estimate_select_preferred): k rounds over the lane maxima give
//    tau; the candidates (k plus a few) are compacted into shared memory,
//    lane j scores candidate j and counts the candidates above it by
//    shuffles: its rank, which is its slot when below k.
// Rows the estimates leave undecided (a lane with two candidates at k = 1;
// fewer than k lanes holding a number or more than 32 candidates at k >= 2:
// constant rows, NaN rows, a bias so large that the margin keeps
// everything) go, warp-uniformly, to the exact scores and the caller's
// selection.
#pragma once

#include "routing_kernel_common.cuh"
#include "routing_lane_scores.cuh"
#include "routing_threshold_select.cuh"  // ThresholdScratch, kThresholdMaxCandidates

namespace musespark::cuda {

// Which selection a register-path kernel compiles (its kEstimate).
constexpr int kEstimateOff = 0;   // exact scores, then the selections of routing_register_path.cuh
constexpr int kEstimateTop1 = 1;  // top1_by_estimates
constexpr int kEstimateTopK = 2;  // topk_by_estimates

// The exact scores (into s[]) and selection inputs q[] after
// estimate_inputs, for the rows the estimates leave undecided: the same
// bits as the register path's scoring from the logits.
template <int P, bool kSoftmax>
__device__ __forceinline__ void exact_scores_after_estimates(float (&s)[P], const float (&b)[P],
                                                             const bool (&valid)[P], float sum, float (&q)[P]) {
  if constexpr (!kSoftmax) {
    sigmoid_scores(s);
  } else {
#pragma unroll
    for (int i = 0; i < P; ++i) s[i] = rm::softmax_share(s[i], sum);
  }
#pragma unroll
  for (int i = 0; i < P; ++i) q[i] = valid[i] ? s[i] + b[i] : __int_as_float(0x7FFFFFFF);
}

// The exact score of an expert from what estimate_inputs left in s[].
template <bool kSoftmax>
__device__ __forceinline__ float exact_score(float x, float sum) {
  return kSoftmax ? rm::softmax_share(x, sum) : rm::sigmoid(x);
}

// The margin from the lanes' bias (registers without an expert hold 0).
template <bool kSoftmax, int P>
__device__ __forceinline__ float row_estimate_margin(const float (&b)[P]) {
  float max_abs_bias = fabsf(b[0]);
#pragma unroll
  for (int i = 1; i < P; ++i) max_abs_bias = fmaxf(max_abs_bias, fabsf(b[i]));  // NaN dropped
  return estimate_margin<kSoftmax>(group_max_f32<32>(max_abs_bias));
}

// k = 1. Writes the winner to lane 0's slot 0 and selected_sum = 0 + its
// score (the rounds' sum), as round_select does for k = 1.
// exact_select(q, s) is the caller's exact selection for undecided rows.
template <int P, int V, bool kSoftmax, typename ExpertOf, typename ExactSelect>
__device__ __forceinline__ void top1_by_estimates(float (&s)[P], const float (&b)[P], const bool (&valid)[P],
                                                  ExpertOf expert_of, std::int32_t& slot_id, float& slot_score,
                                                  float& selected_sum, ExactSelect exact_select) {
  const int lane = threadIdx.x % 32;
  float qa[P], sum;
  estimate_inputs<P, kSoftmax>(s, b, valid, qa, sum);
  // tau = the row's largest estimate. No number in the row (tau NaN) or an
  // infinite margin: keep_from is NaN or -inf, every expert is kept and the
  // row goes to exact_select.
  const float keep_from = rm::score_from_ordered(kth_lane_max_ord<1>(qa, 1)) - row_estimate_margin<kSoftmax>(b);

  int count = 0;
  float x = 0.0f, bias = 0.0f;  // the lane's candidate, if it has one
  std::uint32_t expert = 0xFFFFFFFFu;
#pragma unroll
  for (int i = 0; i < P; ++i) {
    const bool keep = valid[i] && !(qa[i] < keep_from);
    count += keep ? 1 : 0;
    x = keep ? s[i] : x;
    bias = keep ? b[i] : bias;
    expert = keep ? static_cast<std::uint32_t>(expert_of(i)) : expert;
  }

  if (__all_sync(0xFFFFFFFFu, count <= 1)) {
    float score = 0.0f;
    std::uint32_t ord = 0u;  // 0: no candidate in this lane
    if (count == 1) {
      score = exact_score<kSoftmax>(x, sum);
      ord = rm::ordered_score(score + bias) + 1u;  // NaN maps to 1, as in the rounds
    }
    const std::uint32_t winner = group_round_pick<32>(ord, expert).expert;
    score = __shfl_sync(0xFFFFFFFFu, score, static_cast<int>((winner / V) % 32));
    selected_sum = 0.0f + score;
    if (lane == 0) slot_id = static_cast<std::int32_t>(winner), slot_score = score;
    return;
  }
  float q[P];
  exact_scores_after_estimates<P, kSoftmax>(s, b, valid, sum, q);
  exact_select(q, s);
}

// k in [2, kEstimateMaxTopK], a live row (the caller skips others: one warp
// per row, so liveness is warp-uniform). Lane j < k gets output slot j in
// slot_id / slot_score; selected_sum is the slot-order sum from 0.
template <int P, bool kSoftmax, typename ExpertOf, typename ExactSelect>
__device__ __forceinline__ void topk_by_estimates(float (&s)[P], const float (&b)[P], const bool (&valid)[P],
                                                  ExpertOf expert_of, int k, ThresholdScratch& sc,
                                                  std::int32_t& slot_id, float& slot_score, float& selected_sum,
                                                  ExactSelect exact_select) {
  const int lane = threadIdx.x % 32;
  float qa[P], sum;
  estimate_inputs<P, kSoftmax>(s, b, valid, qa, sum);

  const std::uint32_t tau_ord = kth_lane_max_ord<kEstimateMaxTopK>(qa, k);
  // Not (qa < keep_from): NaN estimates are kept, and a NaN bound (an
  // infinite margin) keeps every expert, which sends the row to
  // exact_select.
  const float keep_from = rm::score_from_ordered(tau_ord) - row_estimate_margin<kSoftmax>(b);
  bool keep[P];
  int count = 0;
#pragma unroll
  for (int i = 0; i < P; ++i) {
    keep[i] = valid[i] && !(qa[i] < keep_from);
    count += keep[i] ? 1 : 0;
  }
  const int n = static_cast<int>(__reduce_add_sync(0xFFFFFFFFu, static_cast<std::uint32_t>(count)));
  // Fewer than k lanes hold a number (tau_ord 0), or too many candidates.
  if (tau_ord == 0 || n > kThresholdMaxCandidates) {
    float q[P];
    exact_scores_after_estimates<P, kSoftmax>(s, b, valid, sum, q);
    exact_select(q, s);
    return;
  }

  // ---- the candidates into shared memory: logit or exp term, expert, bias
  int inclusive = count;
#pragma unroll
  for (int off = 1; off < 32; off *= 2) {
    const int t = __shfl_up_sync(0xFFFFFFFFu, inclusive, off);
    if (lane >= off) inclusive += t;
  }
  __syncwarp();  // the previous row's readers of the scratch are done
  float4* out = sc.cand + (inclusive - count);
#pragma unroll
  for (int i = 0; i < P; ++i) {
    if (keep[i]) *out++ = make_float4(s[i], __uint_as_float(static_cast<std::uint32_t>(expert_of(i))), b[i], 0.0f);
  }
  __syncwarp();

  // ---- lane j scores candidate j exactly and counts the candidates above it
  std::uint32_t ord = 0u, expert = 0xFFFFFFFFu;
  float score = 0.0f;
  if (lane < n) {
    const float4 c = sc.cand[lane];
    score = exact_score<kSoftmax>(c.x, sum);
    ord = rm::ordered_score(score + c.z) + 1u;  // NaN maps to 1, as in the rounds
    expert = __float_as_uint(c.y);
  }
  int rank = 0;
  for (int j = 0; j < n; ++j) {  // n is warp-uniform
    const std::uint32_t o = __shfl_sync(0xFFFFFFFFu, ord, j);
    const std::uint32_t e = __shfl_sync(0xFFFFFFFFu, expert, j);
    rank += (o > ord || (o == ord && e < expert)) ? 1 : 0;
  }
  if (lane < n && rank < k) sc.slot[rank] = make_float2(__uint_as_float(expert), score);
  __syncwarp();

  // The same slot-order sum as the round selection, bit for bit.
  selected_sum = 0.0f;
  for (int j = 0; j < k; ++j) selected_sum += sc.slot[j].y;
  const float2 mine = sc.slot[lane];
  slot_id = static_cast<std::int32_t>(__float_as_uint(mine.x));
  slot_score = mine.y;
}

}  // namespace musespark::cuda

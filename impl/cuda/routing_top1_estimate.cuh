// k = 1 on the register path's one-warp-per-row tiers (8+ experts per
// lane: E = 256, 384, 512), from estimated scores: the register path's kernel compiled with
// kTop1Estimate calls it in place of the exact scores and the selection.
//
// Why. With k = 1 the selection is one group-wide max, and the exact score
// of every expert is most of a row's instructions: the sigmoid's exp and
// correctly rounded reciprocal (about fourteen instructions per expert),
// softmax's correctly rounded division per share. Only the winner's score
// is output, and only experts near the best can win. So each expert gets
// the filter path's estimate qa (four instructions for the sigmoid; for
// softmax the share's division replaced by a multiply with the reciprocal
// estimate of the sum), tau = the row's largest qa, and the experts with qa
// >= tau - margin are the candidates (estimate_margin: the filter path's
// proof with k = 1 says the exact winner is among them). Each candidate is
// scored exactly, by the functions every path uses, and the usual
// group-wide round picks the best 64-bit key among them: the same winner
// and the same bits as the exact selection.
//
// A lane that holds two candidates (near ties within a lane, constant rows,
// NaN rows, a bias so large that the margin keeps everything) sends the
// whole row (warp-uniform) to the exact scores and the caller's selection.
#pragma once

#include "routing_kernel_common.cuh"
#include "routing_lane_scores.cuh"

namespace musespark::cuda {

// One warp per row. s[] holds the lane's logits (widened and scaled), b[]
// its bias, valid[] which registers hold an expert. Writes the winner to
// lane 0's slot 0 and selected_sum = 0 + its score (the rounds' sum), as
// round_select does for k = 1. exact_select(q, s) is the caller's exact
// selection for the rows the estimates leave undecided; s[] then holds the
// exact scores.
template <int P, int V, bool kSoftmax, typename ExpertOf, typename ExactSelect>
__device__ __forceinline__ void top1_by_estimates(float (&s)[P], const float (&b)[P], const bool (&valid)[P],
                                                  ExpertOf expert_of, std::int32_t& slot_id, float& slot_score,
                                                  float& selected_sum, ExactSelect exact_select) {
  const int lane = threadIdx.x % 32;
  const float kNoExpert = __int_as_float(0x7FFFFFFF);
  float qa[P];
  float sum = 0.0f;  // softmax: the row's sum (NaN for a NaN row)
  if constexpr (!kSoftmax) {
#pragma unroll
    for (int i = 0; i < P; ++i) qa[i] = valid[i] ? rm::sigmoid_estimate(s[i]) + b[i] : kNoExpert;
  } else {
    std::uint32_t has_nan = 0;
    const float row_max = group_max_f32<32>(lane_softmax_max(s, valid, has_nan));
    const bool row_nan = softmax_row_has_nan(group_max_u32<32>(has_nan) != 0, row_max);
    const std::uint64_t fixed = group_sum_u64<32>(lane_softmax_exp(s, valid, row_max));  // s: the exp terms now
    sum = row_nan ? kNoExpert : rm::softmax_sum_from_fixed(fixed);
    const float inv = rm::reciprocal_estimate(sum);
#pragma unroll
    for (int i = 0; i < P; ++i) qa[i] = valid[i] ? fmaf(s[i], inv, b[i]) : kNoExpert;
  }

  float lane_max = qa[0], max_abs_bias = fabsf(b[0]);  // NaN dropped by fmaxf
#pragma unroll
  for (int i = 1; i < P; ++i) lane_max = fmaxf(lane_max, qa[i]), max_abs_bias = fmaxf(max_abs_bias, fabsf(b[i]));
  // No number in the row (tau NaN) or an infinite margin: keep_from is NaN
  // or -inf, every expert is kept and the row goes to exact_select.
  const float keep_from = group_max_f32<32>(lane_max) - estimate_margin(group_max_f32<32>(max_abs_bias));

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
      score = kSoftmax ? rm::softmax_share(x, sum) : rm::sigmoid(x);
      ord = rm::ordered_score(score + bias) + 1u;  // NaN maps to 1, as in the rounds
    }
    const std::uint32_t winner = group_round_pick<32>(ord, expert).expert;
    score = __shfl_sync(0xFFFFFFFFu, score, static_cast<int>((winner / V) % 32));
    selected_sum = 0.0f + score;
    if (lane == 0) slot_id = static_cast<std::int32_t>(winner), slot_score = score;
    return;
  }

  if constexpr (!kSoftmax) {
    sigmoid_scores(s);
  } else {
#pragma unroll
    for (int i = 0; i < P; ++i) s[i] = rm::softmax_share(s[i], sum);
  }
  float q[P];
#pragma unroll
  for (int i = 0; i < P; ++i) q[i] = valid[i] ? s[i] + b[i] : kNoExpert;
  exact_select(q, s);
}

}  // namespace musespark::cuda

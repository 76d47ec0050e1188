// Threshold selection for the register path at G = 32 (one warp per row):
// the experts at or above a threshold tau, ranked by pairwise compares.
//
// Why it is exact. Let C be the experts whose q is not NaN and q >= tau. If
// |C| >= k, every expert outside C (q < tau, or NaN) ranks below at least k
// experts of C, so the top-k lies inside C, whatever tau is. An expert's
// rank in C under the key order (q descending, then expert index ascending;
// float compares treat -0 and +0 as equal, as the 64-bit keys do) is its
// slot when below k, and the scores are summed in slot order, so the result
// equals the round selection's bit for bit.
//
// Why it is cheap. tau is the k-th largest of the 32 lanes' maxima (k <=
// 32): k distinct experts reach it, so |C| >= k whenever k lanes hold a
// non-NaN expert, and |C| is usually k plus a few. The per-expert work is
// one max, one compare and a predicated store; ranking costs |C| shared-
// memory reads per candidate lane. When the rounds that find tau took one
// lane each and exactly k experts reach it, they have ranked the candidates
// already and the stores and ranking are skipped. The round selection
// instead keeps a sorted 3-entry list per lane (~18 instructions per
// expert) and spends ~30 instructions per round (docs/performance_log.md).
// Rows with fewer than k lanes holding a non-NaN expert, or more than 32
// candidates (constant rows, mass ties), return false and the caller
// selects them by rounds.
#pragma once

#include "routing_kernel_common.cuh"

namespace musespark::cuda {

constexpr int kThresholdMaxCandidates = 32;  // one per lane when ranking

// Per-warp scratch.
struct ThresholdScratch {
  float4 cand[kThresholdMaxCandidates];     // q, expert (bits), unbiased score, unused
  float2 slot[kThresholdMaxCandidates];     // slot j: expert (bits), score; k <= 32
};

// q[i]: the selection input of the lane's i-th expert, NaN for registers
// that hold no expert (past E, or a row that is not live); s[i]: its
// unbiased score; expert_of(i): its index. On true, slot_id[0] /
// slot_score[0] hold output slot `lane` (k <= 32) and selected_sum the
// slot-order sum of the k scores. Returns the same value in every lane; on
// false nothing but the scratch was written.
template <int P, int kSlotsPerLane, typename ExpertOf>
__device__ __forceinline__ bool threshold_select(const float (&q)[P], const float (&s)[P], ExpertOf expert_of,
                                                 int k, bool live, ThresholdScratch& sc,
                                                 std::int32_t (&slot_id)[kSlotsPerLane],
                                                 float (&slot_score)[kSlotsPerLane], float& selected_sum) {
  const int lane = threadIdx.x % 32;

  // ---- tau: the k-th largest lane maximum ---------------------------------
  float lane_max = q[0];
#pragma unroll
  for (int i = 1; i < P; ++i) lane_max = fmaxf(lane_max, q[i]);  // fmaxf drops NaN
  std::uint32_t v = rm::ordered_score(lane_max);               // NaN (empty lane) -> 0
  std::uint32_t tau_ord = 0;
  int my_round = -1;  // the round that took this lane's maximum
  for (int r = 0; r < k; ++r) {
    const std::uint32_t m = __reduce_max_sync(0xFFFFFFFFu, v);
    tau_ord = m;
    my_round = v == m && m != 0 ? r : my_round;
    v = v == m ? 0u : v;  // equal maxima leave together: tau can only go lower
  }
  // 0: fewer than k lanes hold an expert; every non-NaN expert is a candidate.
  const float tau = tau_ord == 0 ? -INFINITY : rm::score_from_ordered(tau_ord);

  int count = 0;
#pragma unroll
  for (int i = 0; i < P; ++i) count += q[i] >= tau ? 1 : 0;
  const int n = static_cast<int>(__reduce_add_sync(0xFFFFFFFFu, static_cast<std::uint32_t>(count)));
  if (!__all_sync(0xFFFFFFFFu, !live || (n >= k && n <= kThresholdMaxCandidates))) return false;
  if (!live) return true;  // warp-uniform: nothing to select, nothing is written for this row

  // ---- exactly k candidates, k lanes, one per round: the rounds ranked them
  // All k rounds found a lane (tau_ord != 0) and k lanes were taken in all,
  // so each round took exactly one (no equal maxima, which leave together);
  // with n == k no other expert reaches tau, so the candidates are the k
  // lane maxima, each its lane's only one, and round r's is the r-th largest
  // q: slot r. Common when the top-k lies in k different lanes (about 0.4 of
  // random rows at E = 256, k = 8; every row without ties at k = 1).
  const int lanes_taken = __popc(__ballot_sync(0xFFFFFFFFu, my_round >= 0));
  __syncwarp();  // the previous row's readers of the scratch are done
  if (tau_ord != 0 && n == k && lanes_taken == k) {
    int idx = 0;
    float score = 0.0f;
#pragma unroll
    for (int i = P - 1; i >= 0; --i) {  // the lane's unique maximum
      const bool hit = q[i] == lane_max;
      idx = hit ? i : idx;
      score = hit ? s[i] : score;
    }
    if (my_round >= 0)
      sc.slot[my_round] = make_float2(__uint_as_float(static_cast<std::uint32_t>(expert_of(idx))), score);
    __syncwarp();
  } else {
    // ---- candidates to shared memory, then each ranked against all -------
    int inclusive = count;
#pragma unroll
    for (int off = 1; off < 32; off *= 2) {
      const int t = __shfl_up_sync(0xFFFFFFFFu, inclusive, off);
      if (lane >= off) inclusive += t;
    }
    float4* out = sc.cand + (inclusive - count);
#pragma unroll
    for (int i = 0; i < P; ++i) {
      if (q[i] >= tau) *out++ = make_float4(q[i], __uint_as_float(static_cast<std::uint32_t>(expert_of(i))), s[i], 0.0f);
    }
    __syncwarp();
    const float4 me = sc.cand[lane < n ? lane : 0];
    const std::uint32_t my_expert = __float_as_uint(me.y);
    int rank = 0;
    for (int i = 0; i < n; ++i) {  // n is warp-uniform
      const float4 other = sc.cand[i];
      rank += (other.x > me.x || (other.x == me.x && __float_as_uint(other.y) < my_expert)) ? 1 : 0;
    }
    if (lane < n && rank < k) sc.slot[rank] = make_float2(me.y, me.z);
    __syncwarp();
  }

  // The same slot-order sum as the round selection, bit for bit.
  selected_sum = 0.0f;
  for (int j = 0; j < k; ++j) selected_sum += sc.slot[j].y;
  const float2 mine = sc.slot[lane];
  slot_id[0] = static_cast<std::int32_t>(__float_as_uint(mine.x));
  slot_score[0] = mine.y;
  return true;
}

}  // namespace musespark::cuda

// Threshold selection for the register path: a row's top-k from a small
// candidate set instead of k group-wide rounds over every expert.
//
// Why it is exact. Let tau be any float and C the experts whose q is not NaN
// and q >= tau. If |C| >= k, every expert outside C (q < tau, or NaN) ranks
// below at least k experts of C, so the top-k lies inside C; ranking C by
// the key order (q descending, then expert index ascending; float compares
// treat -0 and +0 as equal, as the 64-bit keys do) gives the top-k exactly.
// tau only decides how small C is. Here tau is the k-th largest of the G
// lanes' maxima (k <= G): k distinct experts reach it, so |C| >= k whenever
// k lanes hold a non-NaN expert. Rows with too few such lanes, or with more
// candidates than the scratch holds (constant rows, mass ties), return false
// and the caller selects by rounds.
//
// Cost per row: one max per expert, k cheap rounds of 32-bit group maxima
// (no pops, no lists), a compare per expert, a prefix sum, and a rank per
// candidate by comparing it with every other (|C| is usually k + a few).
// The per-expert work of the round selection (a sorted 3-entry list per
// lane, ~18 instructions per expert) and its ~30 instructions per round are
// gone; that work bounded the large-batch cells (docs/performance.md).
#pragma once

#include "routing_kernel_common.cuh"

namespace musespark::cuda {

// Per-warp scratch: each of the 32 / G groups of a warp owns a slice.
template <int G, int C>
struct ThresholdScratch {
  static constexpr int kGroups = 32 / G;
  struct Candidate {
    float q;
    std::uint32_t expert;
  };
  Candidate cand[kGroups][C];      // the row's candidates, unordered
  float cand_score[kGroups][C];    // their unbiased scores
  std::uint32_t slot_expert[kGroups][G];  // slot j = the candidate of rank j (k <= G)
  float slot_score[kGroups][G];
};

// Candidates per group the scratch holds: enough for k + a tail at G = 8
// (E = 64 in the many-rows tier sees about 20 at k = 8), 64 from G = 16.
template <int G>
inline constexpr int kThresholdCapacity = 4 * G < 64 ? 4 * G : 64;

// q[i]: the selection input of the lane's i-th expert, NaN for experts the
// lane does not hold (past E, or a row that is not live); s[i]: its unbiased
// score. On true, slot_id / slot_score hold this lane's output slots
// (slot c * G + lane) and selected_sum the slot-order sum of the k scores,
// exactly as the round selection produces them. Returns the same value in
// every lane of the warp; on false nothing was written but scratch.
template <int G, int P, int kSlotsPerLane, typename ExpertOf>
__device__ __forceinline__ bool threshold_select(const float (&q)[P], const float (&s)[P], ExpertOf expert_of,
                                                 int k, bool live, ThresholdScratch<G, kThresholdCapacity<G>>& sc,
                                                 std::int32_t (&slot_id)[kSlotsPerLane],
                                                 float (&slot_score)[kSlotsPerLane], float& selected_sum) {
  constexpr int C = kThresholdCapacity<G>;
  const int lane = threadIdx.x % G;
  const int group = (threadIdx.x % 32) / G;

  // ---- tau: the k-th largest lane maximum ---------------------------------
  float lane_max = q[0];
#pragma unroll
  for (int i = 1; i < P; ++i) lane_max = fmaxf(lane_max, q[i]);  // fmaxf drops NaN
  std::uint32_t v = rm::ordered_score(lane_max);               // NaN (empty lane) -> 0
  std::uint32_t tau_ord = 0;
  for (int r = 0; r < k; ++r) {
    const std::uint32_t m = group_max_u32<G>(v);
    tau_ord = m;
    v = v == m ? 0u : v;  // equal maxima leave together: tau can only go lower
  }
  // 0: fewer than k lanes had an expert; every non-NaN expert is a candidate.
  const float tau = tau_ord == 0 ? -INFINITY : rm::score_from_ordered(tau_ord);

  // ---- candidates: count, offsets, and the all-groups check ---------------
  int count = 0;
#pragma unroll
  for (int i = 0; i < P; ++i) count += q[i] >= tau ? 1 : 0;
  int inclusive = count;
#pragma unroll
  for (int off = 1; off < G; off *= 2) {
    const int t = __shfl_up_sync(0xFFFFFFFFu, inclusive, off, G);
    if (lane >= off) inclusive += t;
  }
  const int n = __shfl_sync(0xFFFFFFFFu, inclusive, G - 1, G);
  const bool ok = !live || (n >= k && n <= C);
  if (!__all_sync(0xFFFFFFFFu, ok)) return false;

  __syncwarp();  // the previous row's readers of this scratch are done
  int pos = inclusive - count;
#pragma unroll
  for (int i = 0; i < P; ++i) {
    if (q[i] >= tau) {
      sc.cand[group][pos] = {q[i], static_cast<std::uint32_t>(expert_of(i))};
      sc.cand_score[group][pos] = s[i];
      ++pos;
    }
  }
  __syncwarp();

  // ---- rank each candidate against all others; rank < k is its slot -------
  for (int c = lane; c < n; c += G) {
    const auto me = sc.cand[group][c];
    int rank = 0;
    for (int i = 0; i < n; ++i) {
      const auto other = sc.cand[group][i];
      rank += (other.q > me.q || (other.q == me.q && other.expert < me.expert)) ? 1 : 0;
    }
    if (rank < k) {
      sc.slot_expert[group][rank] = me.expert;
      sc.slot_score[group][rank] = sc.cand_score[group][c];
    }
  }
  __syncwarp();

  // The same slot-order sum as the round selection, bit for bit.
  selected_sum = 0.0f;
  for (int j = 0; j < k; ++j) selected_sum += sc.slot_score[group][j];
#pragma unroll
  for (int c = 0; c < kSlotsPerLane; ++c) {
    const int j = c * G + lane;
    if (j < k) {
      slot_id[c] = static_cast<std::int32_t>(sc.slot_expert[group][j]);
      slot_score[c] = sc.slot_score[group][j];
    }
  }
  return true;
}

}  // namespace musespark::cuda

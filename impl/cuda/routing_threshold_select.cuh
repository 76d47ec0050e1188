// Threshold selection for the register path: k rounds over the lanes' best
// candidates, where a candidate is an expert at or above a threshold tau.
//
// Why it is exact. Let C be the experts whose q is not NaN and q >= tau. If
// |C| >= k, every expert outside C (q < tau, or NaN) ranks below at least k
// experts of C, so the top-k lies inside C, for any tau. Each lane's head is
// its best remaining candidate by the key order (q descending, then expert
// index ascending; float compares treat -0 and +0 as equal, as the 64-bit
// keys do), so a round's group-wide best head is the next expert in key
// order, and k rounds give the top-k in order, with the scores summed in
// slot order exactly as the round selection sums them.
//
// Why it is cheap. tau is the k-th largest of the G lanes' maxima (k <= G):
// k distinct experts reach it, so |C| >= k whenever k lanes hold a non-NaN
// expert, and C is usually k plus a few. A lane's first head is its maximum,
// which tau needs anyway; a lane looks at its registers again only when its
// head is taken and it still holds candidates (rare). The round selection's
// per-expert work (a sorted 3-entry list per lane, ~18 instructions per
// expert) is gone. Rows where fewer than k lanes hold a non-NaN expert
// return false and the caller selects them by rounds.
#pragma once

#include "routing_kernel_common.cuh"

namespace musespark::cuda {

// The lane's best expert among the bits of `mask` (all non-NaN): the
// largest q, the lowest register index among equal q (registers grow with
// the expert index). Returns the register index; q and s of it by reference.
template <int P>
__device__ __forceinline__ int best_in_mask(const float (&q)[P], const float (&s)[P], std::uint32_t mask,
                                            float& best_q, float& best_s) {
  float m = -INFINITY;
#pragma unroll
  for (int i = 0; i < P; ++i) m = (mask >> i) & 1u ? fmaxf(m, q[i]) : m;
  int idx = 0;
  float sc = 0.0f;
#pragma unroll
  for (int i = P - 1; i >= 0; --i) {  // descending, so the lowest index wins
    const bool hit = ((mask >> i) & 1u) && q[i] == m;
    idx = hit ? i : idx;
    sc = hit ? s[i] : sc;
  }
  best_q = m;
  best_s = sc;
  return idx;
}

template <int G>
__device__ __forceinline__ int group_sum_i32(int v) {
  if constexpr (G == 32) {
    return static_cast<int>(__reduce_add_sync(0xFFFFFFFFu, static_cast<std::uint32_t>(v)));
  } else {
#pragma unroll
    for (int off = G / 2; off > 0; off /= 2) v += __shfl_xor_sync(0xFFFFFFFFu, v, off, G);
    return v;
  }
}

// q[i]: the selection input of the lane's i-th expert, NaN for registers
// that hold no expert (past E, or a row that is not live); s[i]: its
// unbiased score; expert_of(i): its index (increasing in i). Requires
// k <= G. On true, slot_id / slot_score hold this lane's output slots
// (slot c * G + lane) and selected_sum the slot-order sum of the k scores,
// bit for bit what round_select produces. Returns the same value in every
// lane of the warp.
template <int G, int P, int V, int kSlotsPerLane, typename ExpertOf>
__device__ __forceinline__ bool threshold_select(const float (&q)[P], const float (&s)[P], ExpertOf expert_of,
                                                 int k, bool live, std::int32_t (&slot_id)[kSlotsPerLane],
                                                 float (&slot_score)[kSlotsPerLane], float& selected_sum) {
  static_assert(P <= 32, "candidate mask is 32 bits");
  const int lane = threadIdx.x % G;

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
  // 0: fewer than k lanes hold an expert; every non-NaN expert is a candidate.
  const float tau = tau_ord == 0 ? -INFINITY : rm::score_from_ordered(tau_ord);

  std::uint32_t mask = 0;  // the lane's candidates not yet taken, by register
#pragma unroll
  for (int i = 0; i < P; ++i) mask |= (q[i] >= tau ? 1u : 0u) << i;
  const int n = group_sum_i32<G>(__popc(mask));
  if (!__all_sync(0xFFFFFFFFu, !live || n >= k)) return false;

  // ---- the lane's head: its maximum when that is a candidate --------------
  // (+1 on the ordered score so that 0 means "no head", as in round_select)
  std::uint32_t head_ord = 0, head_expert = 0xFFFFFFFFu;
  float head_score = 0.0f;
  {
    int idx = 0;
#pragma unroll
    for (int i = P - 1; i >= 0; --i) {
      const bool hit = q[i] == lane_max;  // false for every register when lane_max is NaN
      idx = hit ? i : idx;
      head_score = hit ? s[i] : head_score;
    }
    if (mask != 0) {  // then lane_max >= tau: the head is a candidate
      head_ord = rm::ordered_score(lane_max) + 1u;
      head_expert = static_cast<std::uint32_t>(expert_of(idx));
      mask &= ~(1u << idx);
    }
  }

  // ---- k rounds over the heads ---------------------------------------------
  selected_sum = 0.0f;
  for (int j = 0; j < k; ++j) {  // k <= G: slot j is slot_id[0] of lane j
    const std::uint32_t best = group_max_u32<G>(head_ord);
    const std::uint32_t mine = head_ord == best ? head_expert : 0xFFFFFFFFu;
    const std::uint32_t expert = group_min_u32<G>(mine);
    const float score = __shfl_sync(0xFFFFFFFFu, head_score, static_cast<int>((expert / V) % G), G);
    const bool won = mine == expert && best != 0;
    if (won) head_ord = 0;
    // The winner takes its next candidate, if it has one and a later round
    // could use it; only then does the warp spend the pass over registers.
    const bool refill = won && mask != 0 && j + 1 < k;
    if (__any_sync(0xFFFFFFFFu, refill) && refill) {
      float next_q;
      const int idx = best_in_mask<P>(q, s, mask, next_q, head_score);
      head_ord = rm::ordered_score(next_q) + 1u;
      head_expert = static_cast<std::uint32_t>(expert_of(idx));
      mask &= ~(1u << idx);
    }
    selected_sum += score;
    if (lane == j) slot_id[0] = static_cast<std::int32_t>(expert), slot_score[0] = score;
  }
  return true;
}

}  // namespace musespark::cuda

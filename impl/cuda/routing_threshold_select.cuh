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
// Why it is cheap. tau is the k-th largest of the G lanes' maxima (k <= G):
// k distinct experts reach it, so |C| >= k whenever k lanes hold a non-NaN
// expert, and |C| is usually k plus a few. The per-expert work is
// one max, one compare and a predicated store; ranking costs |C| shared-
// memory reads per candidate lane. The round selection instead keeps a
// sorted 3-entry list per lane (~18 instructions per expert) and spends
// ~30 instructions per round (docs/performance.md). Rows with fewer than k
// lanes holding a non-NaN expert, or more than 32 candidates (constant rows,
// mass ties), make the warp return false and select by rounds. With G = 16
// two rows share a warp and the per-row work (tau, the scan, the ranking
// loop, the sum) is issued once for both.
#pragma once

#include "routing_kernel_common.cuh"

namespace musespark::cuda {

constexpr int kThresholdMaxCandidates = 32;  // per row

// Per-warp scratch; group g of the warp (the row of lanes [g G, (g+1) G)) owns
// index g.
template <int G>
struct ThresholdScratch {
  static constexpr int kGroups = 32 / G;
  float4 cand[kGroups][kThresholdMaxCandidates];  // q, expert (bits), unbiased score, unused
  float2 slot[kGroups][G];                        // slot j: expert (bits), score; k <= G
};

// q[i]: the selection input of the lane's i-th expert, NaN for registers
// that hold no expert (past E, or a row that is not live); s[i]: its
// unbiased score; expert_of(i): its index. Requires k <= G. On true,
// slot_id[0] / slot_score[0] hold output slot `lane` (lane < k) and
// selected_sum the slot-order sum of the k scores. Returns the same value in
// every lane of the warp; on false nothing but the scratch was written.
template <int G, int P, int kSlotsPerLane, typename ExpertOf>
__device__ __forceinline__ bool threshold_select(const float (&q)[P], const float (&s)[P], ExpertOf expert_of,
                                                 int k, bool live, ThresholdScratch<G>& sc,
                                                 std::int32_t (&slot_id)[kSlotsPerLane],
                                                 float (&slot_score)[kSlotsPerLane], float& selected_sum) {
  static_assert(G == 16 || G == 32, "threshold selection: 16 or 32 lanes per row");
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
  // 0: fewer than k lanes hold an expert; every non-NaN expert is a candidate.
  const float tau = tau_ord == 0 ? -INFINITY : rm::score_from_ordered(tau_ord);

  // ---- candidates: count, offsets, the check, the stores ------------------
  int count = 0;
#pragma unroll
  for (int i = 0; i < P; ++i) count += q[i] >= tau ? 1 : 0;
  int inclusive = count;
#pragma unroll
  for (int off = 1; off < G; off *= 2) {
    const int t = __shfl_up_sync(0xFFFFFFFFu, inclusive, off, G);
    if (lane >= off) inclusive += t;
  }
  // Every lane takes part in the shuffle (with G = 16 the two rows of a warp
  // can differ in liveness); a row that is not live has no candidates.
  const int total = __shfl_sync(0xFFFFFFFFu, inclusive, G - 1, G);
  const int n = live ? total : 0;
  if (!__all_sync(0xFFFFFFFFu, !live || (n >= k && n <= kThresholdMaxCandidates))) return false;

  __syncwarp();  // the previous row's readers of the scratch are done
  if (live) {
    float4* out = sc.cand[group] + (inclusive - count);
#pragma unroll
    for (int i = 0; i < P; ++i) {
      if (q[i] >= tau)
        *out++ = make_float4(q[i], __uint_as_float(static_cast<std::uint32_t>(expert_of(i))), s[i], 0.0f);
    }
  }
  __syncwarp();

  // ---- rank: candidate c is ranked by lane c % G --------------------------
  for (int c = lane; c < n; c += G) {
    const float4 me = sc.cand[group][c];
    const std::uint32_t my_expert = __float_as_uint(me.y);
    int rank = 0;
    for (int i = 0; i < n; ++i) {
      const float4 other = sc.cand[group][i];
      rank += (other.x > me.x || (other.x == me.x && __float_as_uint(other.y) < my_expert)) ? 1 : 0;
    }
    if (rank < k) sc.slot[group][rank] = make_float2(me.y, me.z);
  }
  __syncwarp();

  // The same slot-order sum as the round selection, bit for bit.
  selected_sum = 0.0f;
  if (live) {
    for (int j = 0; j < k; ++j) selected_sum += sc.slot[group][j].y;
    const float2 mine = sc.slot[group][lane];
    slot_id[0] = static_cast<std::int32_t>(__float_as_uint(mine.x));
    slot_score[0] = mine.y;
  }
  return true;
}

}  // namespace musespark::cuda

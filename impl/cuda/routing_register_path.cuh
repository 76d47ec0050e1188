// Register path of the router kernel (E <= 512): G lanes own one row, each
// lane holds P experts in registers; 32 / G rows share a warp.
//
// Expert e lives in lane (e / V) % G, register (e / (V*G)) * V + e % V, so a
// lane's experts grow with the register index.
//
// Selection. With one warp per row, 8+ experts per lane and many rows
// (routing_tier_table.cuh decides), rows are first tried by threshold
// selection (routing_threshold_select.cuh): the experts at or above a
// threshold, ranked by pairwise compares. Elsewhere, and for rows it does
// not take (too few or too many candidates), the round selection below
// runs, which is exact for any row. With one warp per row and one expert
// per lane (E <= 32, decode) rows with k > 4 are ranked instead
// (warp_row_rank_select), and so are the rows of the E <= 32 tiers that
// share a warp between rows, from k = 4 (k = 8 at E > 16;
// group_row_rank_select).
//
// Round selection. Each lane keeps a sorted list of its best M candidates
// (M = min(P, 3)); a round is a group-wide max over the list heads, a
// group-wide min over the expert index among equal heads (the exact order of
// the 64-bit keys of routing_math.h), and a pop in the winning lane. A lane
// whose list runs dry while it still has experts refills it from its
// registers with the experts ranked below its last pop; the lane's pops are
// its best experts in key order, so "below the last pop" is exactly "not yet
// taken". Refills are rare when P is small against k and cost one pass over
// the lane's registers.
//
// All groups of a warp iterate rows in lockstep (rows past T or padded take
// part with no experts), so G < 32 reductions can use full-warp shuffles.
#pragma once

#include "routing_kernel_common.cuh"
#include "routing_lane_scores.cuh"
#include "routing_threshold_select.cuh"
#include "routing_estimate_select.cuh"

namespace musespark::cuda {

// Inserts (o, e, sc) into a lane's list, sorted by key descending. Callers
// visit a lane's experts in increasing index order, so every entry already
// in the list has a lower index and an equal score stays above: a strict
// comparison on the score is the exact key order. o == 0 never enters.
template <int M>
__device__ __forceinline__ void insert_candidate(std::uint32_t (&top_ord)[M], std::uint32_t (&top_expert)[M],
                                                 float (&top_score)[M], std::uint32_t o, std::uint32_t e, float sc) {
  bool above[M];
#pragma unroll
  for (int m = 0; m < M; ++m) above[m] = o > top_ord[m];
#pragma unroll
  for (int m = M - 1; m > 0; --m) {
    top_ord[m] = above[m - 1] ? top_ord[m - 1] : (above[m] ? o : top_ord[m]);
    top_expert[m] = above[m - 1] ? top_expert[m - 1] : (above[m] ? e : top_expert[m]);
    top_score[m] = above[m - 1] ? top_score[m - 1] : (above[m] ? sc : top_score[m]);
  }
  top_ord[0] = above[0] ? o : top_ord[0];
  top_expert[0] = above[0] ? e : top_expert[0];
  top_score[0] = above[0] ? sc : top_score[0];
}

// The round selection: k rounds of a group-wide max over the heads of the
// lanes' sorted candidate lists. q[i] as for threshold_select; valid[i]
// tells held experts (whose q may be NaN) from empty registers.
template <int G, int P, int V, int kSlotsPerLane, typename ExpertOf>
__device__ __forceinline__ void round_select(const float (&q)[P], const float (&s)[P], const bool (&valid)[P],
                                             ExpertOf expert_of, int k, std::int32_t (&slot_id)[kSlotsPerLane],
                                             float (&slot_score)[kSlotsPerLane], float& selected_sum) {
  constexpr int M = P < 3 ? P : 3;
  const int lane = threadIdx.x % G;

  // k = 1: one round over each lane's best expert, no list to build.
  // Only from 4 experts per lane, where the list costs most (H200, A/B:
  // E = 128 k = 1 0.89x); the branch made the 1-2 per lane tiers' k > 1
  // code 1-4% slower, and their lists are 1-2 entries anyway.
  if (P >= 4 && k == 1) {
    const LaneBest mine =
        lane_best<P>([&](int i) { return valid[i] ? rm::ordered_score(q[i]) + 1u : 0u; }, expert_of, s);
    const std::uint32_t expert = group_round_pick<G>(mine.ord, mine.expert).expert;
    const float score = __shfl_sync(0xFFFFFFFFu, mine.score, static_cast<int>((expert / V) % G), G);
    selected_sum = 0.0f + score;  // the rounds' sum from 0, bit for bit
    if (lane == 0) slot_id[0] = static_cast<std::int32_t>(expert), slot_score[0] = score;
    return;
  }
  // The order-preserving image of q, plus one, so that 0 means "no expert"
  // (NaN maps to 1).
  std::uint32_t ord[P];
  int remaining = 0;  // this lane's experts not yet taken
#pragma unroll
  for (int i = 0; i < P; ++i) {
    ord[i] = valid[i] ? rm::ordered_score(q[i]) + 1u : 0u;
    remaining += valid[i] ? 1 : 0;
  }

  std::uint32_t top_ord[M], top_expert[M];
  float top_score[M];
#pragma unroll
  for (int m = 0; m < M; ++m) top_ord[m] = 0, top_expert[m] = 0xFFFFFFFFu, top_score[m] = 0.0f;
#pragma unroll
  for (int i = 0; i < P; ++i)
    insert_candidate<M>(top_ord, top_expert, top_score, ord[i], static_cast<std::uint32_t>(expert_of(i)), s[i]);

  selected_sum = 0.0f;
#pragma unroll
  for (int c = 0; c < kSlotsPerLane; ++c) {
    for (int l = 0; l < G; ++l) {
      const int j = c * G + l;  // warp-uniform
      if (j >= k) break;
      const RoundPick pick = group_round_pick<G>(top_ord[0], top_expert[0]);
      const std::uint32_t expert = pick.expert;
      const float score = __shfl_sync(0xFFFFFFFFu, top_score[0], static_cast<int>((expert / V) % G), G);
      if (pick.taken) {
        const std::uint32_t last_ord = top_ord[0], last_expert = top_expert[0];
#pragma unroll
        for (int m = 0; m + 1 < M; ++m)
          top_ord[m] = top_ord[m + 1], top_expert[m] = top_expert[m + 1], top_score[m] = top_score[m + 1];
        top_ord[M - 1] = 0, top_expert[M - 1] = 0xFFFFFFFFu;
        --remaining;
        if constexpr (P > M) {
          if (top_ord[0] == 0 && remaining > 0 && j + 1 < k) {
#pragma unroll
            for (int i = 0; i < P; ++i) {
              const std::uint32_t e = static_cast<std::uint32_t>(expert_of(i));
              const bool below = ord[i] < last_ord || (ord[i] == last_ord && e > last_expert);
              insert_candidate<M>(top_ord, top_expert, top_score, below ? ord[i] : 0u, e, s[i]);
            }
          }
        }
      }
      selected_sum += score;
      if (lane == l) slot_id[c] = static_cast<std::int32_t>(expert), slot_score[c] = score;
    }
  }
}

// Ranking for the tier of one warp per row and one expert per lane (E <=
// 32, decode: G = 32, P = 1, so expert = lane), in a kernel of its own that
// the launch picks for k >= kRankSelectMinK: each lane counts the experts
// above its own in the key order (ord descending, then lane ascending) by
// one shuffle per lane that holds an expert, all independent, where k
// rounds would chain two reductions and a shuffle each. Rank r < k is slot
// r, as the rounds would fill it; the row has at least k experts, all with
// ord >= 1, so every slot below k is written. The slot-order sum is the
// rounds' sum, bit for bit. On the H200 it took 0.87-0.92x the time of the
// rounds at E = 8, k = 8 (T = 1-1024); compiled into the tier's one kernel
// it left the cells that never rank (k = 1, 4) 2-8% slower at T = 16-128,
// hence a kernel of its own.
constexpr int kRankSelectMinK = 5;

struct RankScratch {
  std::int32_t expert[32];
  float score[32];
};

__device__ __forceinline__ void warp_row_rank_select(const float (&q)[1], const float (&s)[1], const bool (&valid)[1],
                                                     bool live, int E, int k, RankScratch& sc,
                                                     std::int32_t (&slot_id)[1], float (&slot_score)[1],
                                                     float& selected_sum) {
  const int lane = threadIdx.x % 32;
  const std::uint32_t ord = valid[0] ? rm::ordered_score(q[0]) + 1u : 0u;
  const int rank = warp_rank_by_ord(ord, E < 32 ? E : 32);  // only lanes holding an expert are compared
  __syncwarp();  // the previous row's readers of the scratch are done
  if (ord != 0u && rank < k) sc.expert[rank] = lane, sc.score[rank] = s[0];
  __syncwarp();
  if (!live) return;  // warp-uniform: nothing was written for this row
  selected_sum = 0.0f;
  for (int r = 0; r < k; ++r) selected_sum += sc.score[r];
  if (lane < k) slot_id[0] = sc.expert[lane], slot_score[0] = sc.score[lane];
}

// Ranking for the small-E tiers that share a warp between rows (G < 32
// lanes of P experts, E <= G * P <= kGroupRankMaxExperts), in a kernel of its
// own as above: each lane counts, for each of its experts, the row's
// experts above it in the key order (ord descending, then expert
// ascending), from one shuffle per expert of the group, all independent;
// rank r < k goes to slot r through the warp's scratch, where k rounds
// would chain k group reductions and the sorted lists' pops and refills.
// The cost does not grow with k. Ties: an expert of lane l, register r,
// lies below expert i of this lane exactly when its key is smaller, and
// among equal ords the lower expert index is the larger key; whether
// expert (l, r) has the lower index is known at compile time but for the
// comparison of l with this lane, so each compare is `o + before > ord`
// (ord <= 0xFF800001: no overflow). The slot-order sum is the rounds' sum,
// bit for bit.
// Where it runs, from an A/B of two rounds against the rounds (H200,
// 2026-12-02, T = 1024-65536, E = 8 and 16, k = 1 / 2 / 4 / 8, both dtypes
// and normalizations, every cell on the tier the table gives it): k = 8
// 0.75-0.82x the time from 8192 rows (E = 16 at 16384 rows 0.60-0.62x);
// k = 4 0.81-0.96x at E = 8 and 0.81-0.98x at E = 16 (1024-16384 rows);
// k = 2 on four or eight lanes of 2 1.01-1.10x (E = 16 fp32 softmax at
// 65536 rows 1.27x), but on two lanes of 4 (E <= 8 from 32768 rows, whose
// lists of 3 hold most of a lane's experts) 0.88-0.91x. So k >= 4, and on
// four experts per lane k >= 2 (k = 3 not timed). Two lanes of 4 for ranked
// rows at 8192-16384 rows lost (k = 8 1.4-1.5x: each lane compares its
// four experts with all eight), and so did four lanes of 2 at E <= 8 k = 4
// past 32768 rows (1.03-1.30x against two lanes of 4). At E in (16, 32]
// (16 lanes of 2: 32 shuffles and 64 compares per lane) a second A/B (the
// same day, T = 16-65536, k = 4 / 8): k = 8 0.82-0.88x at 4096 rows (up to
// 1024 rows one warp per row takes it), k = 4 0.91x with sigmoid at 512-1024
// rows but 1.08-1.13x at 4096 and softmax even, so there k >= 8 (5-7 not
// timed).
constexpr int kGroupRankMaxExperts = 32;
constexpr int group_rank_min_k(int G, int P) { return P >= 4 ? 2 : (G * P > 16 ? 8 : 4); }

// Whether the tier of G lanes of P experts ranks a row of k (the launch
// then runs a ranking kernel), given that ranking is allowed at all.
constexpr bool register_tier_ranks(int G, int P, int k) {
  if (G == 32) return P == 1 && k >= kRankSelectMinK;
  return G * P <= kGroupRankMaxExperts && k >= group_rank_min_k(G, P);
}

template <int G, int P>
struct GroupRankScratch {
  static constexpr int kRows = 32 / G;
  // [rank][row of the warp]: the rows' reads of one rank fall in
  // consecutive banks.
  std::int32_t expert[G * P][kRows];
  float score[G * P][kRows];
};

template <int G, int P, int V, int kSlotsPerLane, typename ExpertOf>
__device__ __forceinline__ void group_row_rank_select(const float (&q)[P], const float (&s)[P],
                                                      const bool (&valid)[P], ExpertOf expert_of, bool live, int k,
                                                      GroupRankScratch<G, P>& sc,
                                                      std::int32_t (&slot_id)[kSlotsPerLane],
                                                      float (&slot_score)[kSlotsPerLane], float& selected_sum) {
  static_assert(G < 32 && G * P <= kGroupRankMaxExperts, "group ranking: E <= 32, several rows per warp");
  const int lane = threadIdx.x % G;
  const int row = (threadIdx.x % 32) / G;  // the row's index within the warp
  std::uint32_t ord[P];
  int rank[P];
#pragma unroll
  for (int i = 0; i < P; ++i) ord[i] = valid[i] ? rm::ordered_score(q[i]) + 1u : 0u, rank[i] = 0;
#pragma unroll
  for (int l = 0; l < G; ++l) {
    const bool lane_before = l < lane;
#pragma unroll
    for (int r = 0; r < P; ++r) {
      const std::uint32_t o = __shfl_sync(0xFFFFFFFFu, ord[r], l, G);
#pragma unroll
      for (int i = 0; i < P; ++i) {
        // expert (l, r) = ((r / V) * G + l) * V + r % V against (lane, i):
        // a lower vector index precedes; within one, the lower lane, then
        // the lower r % V.
        const bool before = r / V != i / V ? r / V < i / V : lane_before || (l == lane && r % V < i % V);
        rank[i] += o + (before ? 1u : 0u) > ord[i] ? 1 : 0;
      }
    }
  }
  __syncwarp();  // the previous row's readers of the scratch are done
#pragma unroll
  for (int i = 0; i < P; ++i)
    if (ord[i] != 0u && rank[i] < k) sc.expert[rank[i]][row] = expert_of(i), sc.score[rank[i]][row] = s[i];
  __syncwarp();
  if (!live) return;  // nothing was written for this row; its slots are not stored
  selected_sum = 0.0f;
  for (int j = 0; j < k; ++j) selected_sum += sc.score[j][row];
#pragma unroll
  for (int c = 0; c < kSlotsPerLane; ++c) {
    const int j = c * G + lane;
    if (j < k) slot_id[c] = sc.expert[j][row], slot_score[c] = sc.score[j][row];
  }
}

// Blocks per SM the compiler must fit. At 16 experts per lane the kernel
// fits two blocks per SM in ~96 registers with no spill; three keep 24
// warps resident at the price of a spill (28-120 bytes stored, by dtype
// and variant; ptxas, sm_90a). Which one pays depends on the rows: the
// launch picks (kSpillFreeMaxRows in routing_tier_table.cuh).
constexpr int register_min_blocks(int P) { return P >= 16 ? 3 : 1; }
template <int P>
inline constexpr int kRegisterMinBlocks = register_min_blocks(P);

// kFull: E == G * P, every register holds an expert; the validity of a
// register is then the row's liveness, and the per-register bound checks
// (and the predicate registers they spill to) disappear. kSoftmax: the
// normalization, one kernel each, so that a launch carries only the code it
// runs (decode cells 0.975-0.986x the time of one shared kernel, H200).
// kRank: rows are ranked (warp_row_rank_select for G = 32, P = 1;
// group_row_rank_select for G < 32, G * P <= kGroupRankMaxExperts).
// kEstimate: selection from estimated scores (routing_estimate_select.cuh;
// G = 32: k in [2, 8] from P = 4 (kEstimateTopK), k = 1 from P = 8
// (kEstimateTop1), full tiers, and from P = 8 the others (k >= 2 with
// sigmoid only), as the launch takes them), each a kernel of its own so
// that no other kernel carries its code.
template <typename T, int G, int P, int V, bool kSoftmax, bool kFull = false, int kMinBlocks = kRegisterMinBlocks<P>,
          bool kRank = false, int kEstimate = kEstimateOff>
__global__ void __launch_bounds__(kBlockThreads, kMinBlocks) route_register_kernel(const KernelParams p) {
  static_assert(32 % G == 0 && P % V == 0, "tier shape");
  static_assert(kEstimate == kEstimateOff || (G == 32 && P >= 4 && !kRank),
                "estimated selection: one warp per row, 4+ experts per lane");
  constexpr int kRowsPerBlock = kBlockThreads / G;
  constexpr int kMaxK = G * P < kMaxTopK ? G * P : kMaxTopK;  // k <= min(E, 64) <= G * P
  constexpr int kSlotsPerLane = (kMaxK + G - 1) / G;            // output slot j lives in lane j % G
  constexpr int kBiasVec = V < 4 ? V : 4;                       // floats per bias load

  pdl_trigger_early(p.trigger_first);  // the wait: the row loop's first statement (pdl_trigger_early)

  const int lane = threadIdx.x % G;
  const int E = p.num_experts;
  auto expert_of = [lane](int i) { return ((i / V) * G + lane) * V + i % V; };
  // Threshold selection: one warp per row, 8+ experts per lane (the launch
  // decides where it pays), k <= 32 (tau is the k-th largest lane maximum).
  constexpr bool kThresholdTier = G == 32 && P >= 8 && kEstimate == kEstimateOff;
  const bool try_threshold = kThresholdTier && p.threshold_select && p.topk <= 32;

  for (std::int64_t base = static_cast<std::int64_t>(blockIdx.x) * kRowsPerBlock; base < p.num_tokens;
       base += static_cast<std::int64_t>(gridDim.x) * kRowsPerBlock) {
    if (base == static_cast<std::int64_t>(blockIdx.x) * kRowsPerBlock) pdl_wait_then_trigger(p.trigger_first);
    const std::int64_t row = base + threadIdx.x / G;
    const bool in_range = row < p.num_tokens;
    const bool padded = in_range && row_is_padded(p, row);
    const bool live = in_range && !padded;

    // ---- scores ------------------------------------------------------------
    float s[P];
    bool valid[P];
#pragma unroll
    for (int i = 0; i < P; ++i) valid[i] = live && (kFull || expert_of(i) < E);
    // The bias, vectorized like the logits (the launch checks its alignment
    // when V > 1). Each thread usually owns one row (the grid covers T), so
    // loading it outside the row loop would only hold registers longer.
    float b[P];
#pragma unroll
    for (int c = 0; c < P / kBiasVec; ++c) {
      const int e0 = expert_of(c * kBiasVec);
      if constexpr (kBiasVec > 1) {
        Vec<float, kBiasVec> vec{};
        if (valid[c * kBiasVec]) vec = *reinterpret_cast<const Vec<float, kBiasVec>*>(p.bias + e0);
#pragma unroll
        for (int v = 0; v < kBiasVec; ++v) b[c * kBiasVec + v] = vec.v[v];
      } else {
        b[c] = valid[c] ? p.bias[e0] : 0.0f;
      }
    }
    const T* row_ptr = static_cast<const T*>(p.logits) + (live ? row : 0) * p.logits_row_stride;
    load_lane_logits<T, P, V>(p, row_ptr, valid, [lane](int c) { return (c * G + lane) * V; }, s);
    float selected_sum = 0.0f;
    std::int32_t slot_id[kSlotsPerLane] = {};
    float slot_score[kSlotsPerLane] = {};
    // The exact selection for the rows the estimates leave undecided (k a
    // constant in the top-1 kernel, which then carries no sorted lists).
    const int exact_k = kEstimate == kEstimateTop1 ? 1 : p.topk;
    auto exact_rounds = [&](const float (&q)[P], const float (&exact)[P]) {
      round_select<G, P, V, kSlotsPerLane>(q, exact, valid, expert_of, exact_k, slot_id, slot_score, selected_sum);
    };
    if constexpr (kEstimate == kEstimateTop1) {
      top1_by_estimates<P, V, kSoftmax>(s, b, valid, expert_of, slot_id[0], slot_score[0], selected_sum,
                                        exact_rounds);
    } else if constexpr (kEstimate == kEstimateTopK) {
      __shared__ ThresholdScratch estimate_scratch[kBlockThreads / 32];
      if (live)  // warp-uniform (one row per warp)
        topk_by_estimates<P, kSoftmax>(s, b, valid, expert_of, p.topk, estimate_scratch[threadIdx.x / 32],
                                       slot_id[0], slot_score[0], selected_sum, exact_rounds);
    } else {
      if constexpr (!kSoftmax) {
        sigmoid_scores(s);
      } else {
        bool row_nan;
        const std::uint64_t fixed = group_softmax_terms<G>(s, valid, row_nan);
        softmax_shares(s, fixed, row_nan);
      }

      // Selection input q = s + bias; NaN marks registers that hold no expert
      // (threshold_select never takes a NaN; round_select tells them apart by
      // valid[]).
      float q[P];
#pragma unroll
      for (int i = 0; i < P; ++i) q[i] = valid[i] ? s[i] + b[i] : __int_as_float(0x7FFFFFFF);

      bool selected = false;
      if constexpr (kThresholdTier) {  // other tiers allocate no scratch
        __shared__ ThresholdScratch threshold_scratch[kBlockThreads / 32];
        selected = try_threshold && threshold_select<P, kSlotsPerLane>(q, s, expert_of, p.topk, live,
                                                                       threshold_scratch[threadIdx.x / 32], slot_id,
                                                                       slot_score, selected_sum);
      }
      if constexpr (kRank && G == 32) {
        static_assert(P == 1, "ranking with one warp per row: one expert per lane");
        __shared__ RankScratch rank_scratch[kBlockThreads / 32];
        warp_row_rank_select(q, s, valid, live, E, p.topk, rank_scratch[threadIdx.x / 32], slot_id, slot_score,
                             selected_sum);
        selected = true;
      } else if constexpr (kRank) {
        __shared__ GroupRankScratch<G, P> group_rank_scratch[kBlockThreads / 32];
        group_row_rank_select<G, P, V, kSlotsPerLane>(q, s, valid, expert_of, live, p.topk,
                                                      group_rank_scratch[threadIdx.x / 32], slot_id, slot_score,
                                                      selected_sum);
        selected = true;
      }
      if (!selected)
        round_select<G, P, V, kSlotsPerLane>(q, s, valid, expert_of, p.topk, slot_id, slot_score, selected_sum);
    }

    if (in_range) {
      const float denominator = rm::weight_denominator(selected_sum, p.has_eps, p.eps);
#pragma unroll
      for (int c = 0; c < kSlotsPerLane; ++c) {
        const int j = c * G + lane;
        if (j < p.topk) {
          if (padded) store_slot(p, row, j, 0.0f, -1);
          else store_slot(p, row, j, rm::routing_weight(slot_score[c], denominator, p.route_scale), slot_id[c]);
        }
      }
    }
  }
}

}  // namespace musespark::cuda

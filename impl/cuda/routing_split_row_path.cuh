// Split-row path of the router kernel, for few rows and E in (128, 512]:
// one block of W warps owns a row, warp w the experts [64 w, 64 (w + 1)),
// two per lane. A lone warp per row (the register path) runs about a
// thousand dependent instructions at E = 256 and that chain, not memory,
// is the decode latency; here each warp's chain covers 64 experts.
//
// Each warp selects its slice's top-k with the register path's rounds and
// writes them, in key order, to shared memory; then up to 32 entries warp 0
// ranks them by shuffles, up to k = 32 the block ranks them (each entry's
// count of the entries above it split over a few threads), and above that
// warp 0 merges the W sorted lists by rounds (lane w holds the head of list
// w; a round is the same group-wide max / min-index pair). Softmax takes the row maximum and the
// fixed-point sum across warps through shared memory. Keys are unique and
// the sum is fixed point, so the result equals the other paths bit for bit.
#pragma once

#include "routing_register_path.cuh"

namespace musespark::cuda {

constexpr int kSplitRowExpertsPerWarp = 64;

// Warp 0, after a rank: slot r is the entry of rank r (lanes below k hold
// one each); the weights come from the slot-order sum, as the rounds sum.
__device__ __forceinline__ void store_ranked_slots(const KernelParams& p, std::int64_t row, int k,
                                                   const std::uint32_t* ranked_expert, const float* ranked_score) {
  const int lane = threadIdx.x % 32;
  const std::uint32_t slot_expert = lane < k ? ranked_expert[lane] : 0u;
  const float slot_score = lane < k ? ranked_score[lane] : 0.0f;
  float selected_sum = 0.0f;
  for (int r = 0; r < k; ++r) selected_sum += __shfl_sync(0xFFFFFFFFu, slot_score, r);
  if (lane < k) {
    const float denominator = rm::weight_denominator(selected_sum, p.has_eps, p.eps);
    store_slot(p, row, lane, rm::routing_weight(slot_score, denominator, p.route_scale),
               static_cast<std::int32_t>(slot_expert));
  }
}

// kSoftmax: as for the register path. kBlockMerge: the kernel for W * k > 32
// and k <= 32, with the block's rank as its only merge; the others keep
// warp 0's rank and rounds and no block rank (compiled into the same
// kernel, the block rank made rows that never ran it 5-7% slower).
template <typename T, int W, int V, bool kSoftmax, bool kBlockMerge = false>
__global__ void __launch_bounds__(32 * W) route_split_row_kernel(const KernelParams p) {
  constexpr int P = kSplitRowExpertsPerWarp / 32;  // experts per lane
  constexpr int M = P;                             // the lane's list holds all of them: no refills
  constexpr int S = kSplitRowExpertsPerWarp;
  constexpr int kMaxK = W * S < kMaxTopK ? W * S : kMaxTopK;
  constexpr int kSlotsPerLane = (kMaxK + 31) / 32;
  static_assert(P % V == 0 && M == P, "split-row shape");
  // Each warp's top-k in key order; 0 ends a list. The odd pitch puts the
  // same place of different lists in different banks (the block rank reads
  // one place of several lists at once).
  constexpr int kPitch = kBlockMerge ? kMaxK + 1 : kMaxK;
  __shared__ std::uint32_t cand_ord[W][kPitch];
  __shared__ std::uint32_t cand_expert[W][kPitch];
  __shared__ float cand_score[W][kPitch];
  __shared__ BlockSoftmaxScratch<W> softmax_scratch;  // block_softmax_shares'
  __shared__ std::uint32_t ranked_expert[32];  // the rank merge's slots
  __shared__ float ranked_score[32];
  __shared__ uint4 winner[W];  // k = 1, W <= 4: warp w's best (ord, expert, score bits)

  pdl_trigger_early(p.trigger_first);  // the wait: the row loop's first statement (pdl_trigger_early)

  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const int E = p.num_experts;
  auto expert_of = [lane, warp](int i) { return warp * S + ((i / V) * 32 + lane) * V + i % V; };

  for (std::int64_t row = blockIdx.x; row < p.num_tokens; row += gridDim.x) {
    if (row == blockIdx.x) pdl_wait_then_trigger(p.trigger_first);
    if (row_is_padded(p, row)) {  // the whole block takes this branch
      for (int j = threadIdx.x; j < p.topk; j += 32 * W) store_slot(p, row, j, 0.0f, -1);
      continue;
    }

    // ---- scores (as in the register path) ----------------------------------
    float s[P];
    float b[P];
    bool valid[P];
#pragma unroll
    for (int i = 0; i < P; ++i) {
      valid[i] = expert_of(i) < E;
      b[i] = valid[i] ? p.bias[expert_of(i)] : 0.0f;
    }
    const T* row_ptr = static_cast<const T*>(p.logits) + row * p.logits_row_stride;
    load_lane_logits<T, P, V>(p, row_ptr, valid, [lane, warp](int c) { return warp * S + (c * 32 + lane) * V; }, s);

    if constexpr (!kSoftmax) {
      sigmoid_scores(s);
    } else {
      block_softmax_shares<W>(s, valid, softmax_scratch);
    }

    // ---- k = 1: each warp's best expert, then the best of the W ------------
    // No candidate lists and no merge loop: one round per warp, then one
    // over the warps' winners (decode at k = 1 is bound by this chain).
    if (!kBlockMerge && p.topk == 1) {  // block-uniform
      const LaneBest mine =
          lane_best<P>([&](int i) { return valid[i] ? rm::ordered_score(s[i] + b[i]) + 1u : 0u; }, expert_of, s);
      const RoundPick warp_pick = group_round_pick<32>(mine.ord, mine.expert);
      if constexpr (W <= 4) {
        // The winning lane writes its own entry (no shuffle for the score)
        // and thread 0 picks among the W in registers (no warp reductions
        // after the barrier); no barrier after a block's last row. Entries
        // lie in expert order (warp w's slice below warp w + 1's), so a
        // strict compare keeps the lowest expert of equal ords, as the
        // rounds do. H200, against warp 0's rounds over the winners (two
        // rounds, 2026-12-01): E = 256 0.90-0.95x the time at T = 1-128.
        // With W = 8 (E = 512) the same code gained 0.90-0.92x on k = 1
        // but made E = 512 k = 4 softmax, the same kernel, 4-8% slower, and
        // as a kernel of its own it gained nothing at T <= 128 and lost
        // 1.2x at 384 rows: W = 8 keeps the warp's rounds below.
        if (warp_pick.taken || (warp_pick.ord == 0u && lane == 0))  // an empty slice: lane 0 writes
          winner[warp] = make_uint4(warp_pick.ord, warp_pick.expert, __float_as_uint(mine.score), 0u);
        __syncthreads();
        if (threadIdx.x == 0) {
          uint4 best = winner[0];
#pragma unroll
          for (int w = 1; w < W; ++w) {
            const uint4 e = winner[w];
            best = e.x > best.x ? e : best;
          }
          const float score = __uint_as_float(best.z);
          const float denominator = rm::weight_denominator(0.0f + score, p.has_eps, p.eps);  // the rounds' sum
          store_slot(p, row, 0, rm::routing_weight(score, denominator, p.route_scale), static_cast<std::int32_t>(best.y));
        }
        if (row + gridDim.x < p.num_tokens) __syncthreads();  // the winners are reused by the next row
      } else {
        const int owner = static_cast<int>(((warp_pick.expert - static_cast<std::uint32_t>(warp * S)) / V) % 32);
        const float warp_score = __shfl_sync(0xFFFFFFFFu, mine.score, owner);
        if (lane == 0)
          cand_ord[warp][0] = warp_pick.ord, cand_expert[warp][0] = warp_pick.expert, cand_score[warp][0] = warp_score;
        __syncthreads();
        if (warp == 0) {
          const std::uint32_t expert = group_round_pick<32>(lane < W ? cand_ord[lane][0] : 0u,
                                                            lane < W ? cand_expert[lane][0] : 0xFFFFFFFFu).expert;
          const float score = __shfl_sync(0xFFFFFFFFu, lane < W ? cand_score[lane][0] : 0.0f,
                                          static_cast<int>((expert / S) % 32));
          if (lane == 0) {
            const float denominator = rm::weight_denominator(0.0f + score, p.has_eps, p.eps);  // the rounds' sum
            store_slot(p, row, 0, rm::routing_weight(score, denominator, p.route_scale), static_cast<std::int32_t>(expert));
          }
        }
        __syncthreads();  // the winners' slots are reused by the next row
      }
      continue;
    }

    // ---- each warp: its slice's top-k, in key order, to shared memory -------
    std::uint32_t top_ord[M], top_expert[M];
    float top_score[M];
#pragma unroll
    for (int m = 0; m < M; ++m) top_ord[m] = 0, top_expert[m] = 0xFFFFFFFFu, top_score[m] = 0.0f;
#pragma unroll
    for (int i = 0; i < P; ++i) {
      const std::uint32_t o = valid[i] ? rm::ordered_score(s[i] + b[i]) + 1u : 0u;
      insert_candidate<M>(top_ord, top_expert, top_score, o, static_cast<std::uint32_t>(expert_of(i)), s[i]);
    }
    for (int j = 0; j < p.topk; ++j) {
      const RoundPick pick = group_round_pick<32>(top_ord[0], top_expert[0]);
      const std::uint32_t best = pick.ord, expert = pick.expert;
      const int owner_lane = static_cast<int>(((expert - static_cast<std::uint32_t>(warp * S)) / V) % 32);
      const float score = __shfl_sync(0xFFFFFFFFu, top_score[0], owner_lane);
      if (pick.taken) {
#pragma unroll
        for (int m = 0; m + 1 < M; ++m)
          top_ord[m] = top_ord[m + 1], top_expert[m] = top_expert[m + 1], top_score[m] = top_score[m + 1];
        top_ord[M - 1] = 0, top_expert[M - 1] = 0xFFFFFFFFu;
      }
      if (lane == 0) cand_ord[warp][j] = best, cand_expert[warp][j] = expert, cand_score[warp][j] = score;
    }
    __syncthreads();

    // ---- warp 0, W * k <= 32: rank the lists' entries ------------------------
    // Lane c holds entry c (warp c / k, place c % k) and counts the entries
    // above it in the key order (ord descending, then expert ascending;
    // unique among real experts) by one unrolled pass of shuffles: no
    // dependent rounds. Among entries of equal ord the lower lane holds the
    // lower expert (warp w's slice lies below warp w + 1's, and each list is
    // in key order), so only the ords are shuffled. Rank r < k is slot r, as the rounds below would fill
    // it. Empty entries (ord 0, a slice with fewer than k experts) rank below
    // every real one and take no slot; the row has at least k real ones.
    if (!kBlockMerge && W * p.topk <= 32) {  // block-uniform
      if (warp == 0) {
        const int k = p.topk;
        const bool have = lane < W * k;
        const int w = have ? lane / k : 0, j = have ? lane % k : 0;
        const std::uint32_t my_ord = have ? cand_ord[w][j] : 0u;
        const std::uint32_t my_expert = have ? cand_expert[w][j] : 0xFFFFFFFFu;
        const float my_score = have ? cand_score[w][j] : 0.0f;
        int rank = 0;
#pragma unroll
        for (int src = 0; src < 32; ++src) {
          const std::uint32_t o = __shfl_sync(0xFFFFFFFFu, my_ord, src);
          rank += (o > my_ord || (o == my_ord && src < lane)) ? 1 : 0;
        }
        if (my_ord != 0u && rank < k) ranked_expert[rank] = my_expert, ranked_score[rank] = my_score;
        __syncwarp();
        store_ranked_slots(p, row, k, ranked_expert, ranked_score);
      }
      __syncthreads();  // the lists are reused by the next row
      continue;
    }

    // ---- the block, W * k > 32 and k <= 32: rank the entries in parallel -----
    // Warp 0 alone needs k rounds (or 64 shuffles) here, while the other
    // warps wait at the barrier: about half the row's time on the SM at
    // E = 512, k = 8. Instead Q threads share an entry (Q the largest power
    // of two <= min(32 / k, W), so the W * k entries take at most the
    // block's 32 W threads), each counting the entries above it in W / Q of
    // the lists, and the Q counts are added by shuffles. The order and the
    // slots are those of the rank above (entry index w * k + j breaks ties
    // of equal ords, as the lists lie in expert order).
    if constexpr (kBlockMerge) {  // the launch checked W * k > 32 and k <= 32
      const int k = p.topk;
      const int n = W * k;
      int q_log = 0;
      while ((2 << q_log) <= W && (2 << q_log) * k <= 32) ++q_log;
      const int Q = 1 << q_log;
      const int a = threadIdx.x >> q_log;  // this thread's entry
      const int q = threadIdx.x & (Q - 1);  // and its share of the lists
      const bool have = a < n;
      const int my_w = have ? a / k : 0, my_j = have ? a % k : 0;
      const std::uint32_t my_ord = have ? cand_ord[my_w][my_j] : 0u;
      int above = 0;
      const int lists = W >> q_log;
      for (int w = q * lists; w < (q + 1) * lists; ++w)
        for (int j = 0; j < k; ++j) {
          const std::uint32_t o = cand_ord[w][j];
          above += (o > my_ord || (o == my_ord && w * k + j < a)) ? 1 : 0;
        }
      for (int off = 1; off < Q; off *= 2) above += __shfl_xor_sync(0xFFFFFFFFu, above, off);
      if (have && q == 0 && my_ord != 0u && above < k)
        ranked_expert[above] = cand_expert[my_w][my_j], ranked_score[above] = cand_score[my_w][my_j];
      __syncthreads();
      if (warp == 0) {
        store_ranked_slots(p, row, k, ranked_expert, ranked_score);
      }
      __syncthreads();  // the lists and the slots are reused by the next row
      continue;
    } else {
      // ---- warp 0, k > 32: merge the W sorted lists by rounds ----------
      if (warp == 0) {
        int head = 0;
        auto read_head = [&](std::uint32_t& o, std::uint32_t& e, float& sc) {
          const bool have = lane < W && head < p.topk;
          o = have ? cand_ord[lane < W ? lane : 0][have ? head : 0] : 0u;
          e = have ? cand_expert[lane < W ? lane : 0][have ? head : 0] : 0xFFFFFFFFu;
          sc = have ? cand_score[lane < W ? lane : 0][have ? head : 0] : 0.0f;
        };
        std::uint32_t h_ord, h_expert;
        float h_score;
        read_head(h_ord, h_expert, h_score);
        float selected_sum = 0.0f;
        std::int32_t slot_id[kSlotsPerLane] = {};
        float slot_score[kSlotsPerLane] = {};
#pragma unroll
        for (int c = 0; c < kSlotsPerLane; ++c) {
          for (int l = 0; l < 32; ++l) {
            const int j = c * 32 + l;  // warp-uniform
            if (j >= p.topk) break;
            const RoundPick pick = group_round_pick<32>(h_ord, h_expert);
            const std::uint32_t expert = pick.expert;
            const float score = __shfl_sync(0xFFFFFFFFu, h_score, static_cast<int>((expert / S) % 32));
            if (pick.taken) {
              ++head;
              read_head(h_ord, h_expert, h_score);
            }
            selected_sum += score;
            if (lane == l) slot_id[c] = static_cast<std::int32_t>(expert), slot_score[c] = score;
          }
        }
        const float denominator = rm::weight_denominator(selected_sum, p.has_eps, p.eps);
#pragma unroll
        for (int c = 0; c < kSlotsPerLane; ++c) {
          const int j = c * 32 + lane;
          if (j < p.topk) store_slot(p, row, j, rm::routing_weight(slot_score[c], denominator, p.route_scale), slot_id[c]);
        }
      }
      __syncthreads();  // the candidate lists and reductions are reused by the next row
    }
  }
}

}  // namespace musespark::cuda

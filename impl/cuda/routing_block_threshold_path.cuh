// Block-threshold path of the router kernel, for few rows and E <= 512:
// one block of W = E / 32 warps (rounded up) owns a row, one expert per
// thread, as in the block-rank path, but no warp ranks its experts. The
// block-rank path's per-warp ranking (32 shuffles in each of W warps) is
// what made it lose at E = 512, where 16 warps share four schedulers; here
// each warp contributes one reduction:
//  1. each thread scores its expert (the block-rank path's arithmetic);
//  2. each warp's largest key (one redux.sync) goes to shared memory;
//  3. warp 0 takes tau = the k-th largest of the W warp maxima: k warps
//     hold an expert at or above it, so the row's top k all reach it (when
//     k > W, or fewer than k warps hold an expert, tau is 0 and every
//     expert qualifies);
//  4. the experts whose key reaches tau (a few more than k on real rows)
//     are compacted into shared memory: one ballot and one shared-memory
//     atomic per warp, in any order;
//  5. each candidate counts the candidates above it in the 64-bit key order
//     (unique: the expert index breaks ties), in warp 0 when there are at
//     most 32 of them, else one per thread; rank r < k is output slot r;
//  6. the k slot threads sum the selected scores in slot order and write.
// The arithmetic and the key order are every other path's, so the bits are
// too (tested against the shared-memory path).
#pragma once

#include "routing_block_rank_path.cuh"  // block_rank_key, kBlockRankMaxWarps

namespace musespark::cuda {

// kVariant (experiment): 0 = tau in warp 0 + atomic compaction (3 barriers);
// 1 = tau in every warp + per-warp segments (2 barriers, no atomics);
// 2 = tau in every warp + atomic compaction (2 barriers).
template <typename T, int W, bool kSoftmax, int kVariant>
__global__ void __launch_bounds__(32 * W) route_block_threshold_kernel(const KernelParams p) {
  static_assert(W >= 1 && W <= kBlockRankMaxWarps, "block-threshold shape");
  __shared__ std::uint64_t cand_key[W * 32];  // step 4's candidates, in arrival order
  __shared__ float cand_score[W * 32];
  __shared__ std::uint32_t warp_best[W];      // step 2
  __shared__ std::uint32_t row_tau;           // step 3
  __shared__ int cand_count;
  __shared__ int warp_count[W];  // variant 1: candidates of warp w at [32 w, 32 w + warp_count[w])
  __shared__ std::int32_t slot_expert[kMaxTopK];
  __shared__ float slot_score[kMaxTopK];
  __shared__ float warp_max[W];  // block_softmax_shares' scratch
  __shared__ std::uint32_t warp_nan[W];
  __shared__ std::uint64_t warp_sum[W];

  pdl_enter(p.trigger_first);

  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const int expert = threadIdx.x;
  const int E = p.num_experts;
  const int k = p.topk;

  for (std::int64_t row = blockIdx.x; row < p.num_tokens; row += gridDim.x) {
    if (row_is_padded(p, row)) {  // the whole block takes this branch
      if (expert < k) store_slot(p, row, expert, 0.0f, -1);
      continue;
    }
    if (threadIdx.x == 0) cand_count = 0;  // read after the barrier below

    // ---- 1. the thread's expert's score -------------------------------------
    const bool valid[1] = {expert < E};
    const float b = valid[0] ? p.bias[expert] : 0.0f;
    float s[1];
    const T* row_ptr = static_cast<const T*>(p.logits) + row * p.logits_row_stride;
    load_lane_logits<T, 1, 1>(p, row_ptr, valid, [expert](int) { return expert; }, s);
    if constexpr (!kSoftmax) {
      sigmoid_scores(s);
    } else {
      block_softmax_shares<W>(s, valid, warp_max, warp_nan, warp_sum);
    }
    // + 1: ord 0 marks a thread without an expert, below every real key.
    const std::uint32_t ord = valid[0] ? rm::ordered_score(s[0] + b) + 1u : 0u;

    // ---- 2. each warp's largest key -------------------------------------------
    const std::uint32_t best = group_max_u32<32>(ord);
    if (lane == 0) warp_best[warp] = best;
    __syncthreads();

    // ---- 3. tau = the k-th largest warp maximum --------------------------------
    auto warp_tau = [&]() {
      const std::uint32_t mine = lane < W ? warp_best[lane] : 0u;
      const int above = warp_rank_by_ord(mine, W);
      const unsigned at_k = __ballot_sync(0xFFFFFFFFu, lane < W && above == k - 1);
      // No k-th maximum (k > W): 0, every expert qualifies.
      return at_k != 0u ? __shfl_sync(0xFFFFFFFFu, mine, __ffs(at_k) - 1) : 0u;
    };
    std::uint32_t tau;
    if constexpr (kVariant == 0) {
      if (warp == 0) {
        const std::uint32_t t = warp_tau();
        if (lane == 0) row_tau = t;
      }
      __syncthreads();
      tau = row_tau;
    } else {
      tau = warp_tau();
    }

    // ---- 4. the candidates: keys at or above tau -------------------------------
    const bool is_cand = ord != 0u && ord >= tau;
    const unsigned cand_mask = __ballot_sync(0xFFFFFFFFu, is_cand);
    const int below_me = __popc(cand_mask & ((1u << lane) - 1u));
    int n = 0;
    if constexpr (kVariant == 1) {
      if (is_cand) {
        cand_key[warp * 32 + below_me] = block_rank_key(ord, static_cast<std::uint32_t>(expert));
        cand_score[warp * 32 + below_me] = s[0];
      }
      if (lane == 0) warp_count[warp] = __popc(cand_mask);
      __syncthreads();
#pragma unroll
      for (int w = 0; w < W; ++w) n += warp_count[w];
    } else {
      int base = 0;
      if (lane == 0 && cand_mask != 0u) base = atomicAdd(&cand_count, __popc(cand_mask));
      base = __shfl_sync(0xFFFFFFFFu, base, 0);
      if (is_cand) {
        cand_key[base + below_me] = block_rank_key(ord, static_cast<std::uint32_t>(expert));
        cand_score[base + below_me] = s[0];
      }
      __syncthreads();
      n = cand_count;
    }

    // Output slot j from the k slots in shared memory: the slot-order sum,
    // as the rounds of the other paths add.
    auto write_slot = [&](int j) {
      float selected_sum = 0.0f;
      for (int r = 0; r < k; ++r) selected_sum += slot_score[r];
      const float denominator = rm::weight_denominator(selected_sum, p.has_eps, p.eps);
      store_slot(p, row, j, rm::routing_weight(slot_score[j], denominator, p.route_scale), slot_expert[j]);
    };
    // Candidate c's rank among the n: its slot when below k. The row has at
    // least k experts (k <= E) and all of the top k are candidates, so every
    // slot is written.
    auto rank_candidate = [&](int c) {
      const std::uint64_t mine = cand_key[c];
      int above = 0;
#pragma unroll 4
      for (int j = 0; j < n; ++j) above += cand_key[j] > mine ? 1 : 0;
      if (above < k) {
        slot_expert[above] = static_cast<std::int32_t>(0xFFFFFFFFu - static_cast<std::uint32_t>(mine));
        slot_score[above] = cand_score[c];
      }
    };

    // ---- 5 and 6 -------------------------------------------------------------------
    if (kVariant == 1 && n <= 32) {  // the segments' entries gathered into warp 0 by shuffles
      if (warp == 0) {
        // Lane i takes candidate i of the concatenated segments.
        std::uint64_t mine = 0;
        float my_score = 0.0f;
        int off = 0;
#pragma unroll
        for (int w = 0; w < W; ++w) {
          const int c = warp_count[w];
          if (lane >= off && lane < off + c) mine = cand_key[w * 32 + lane - off], my_score = cand_score[w * 32 + lane - off];
          off += c;
        }
        int above = 0;
        for (int j = 0; j < n; ++j) {
          const std::uint64_t o = __shfl_sync(0xFFFFFFFFu, mine, j);
          above += o > mine ? 1 : 0;
        }
        if (lane < n && above < k) {
          slot_expert[above] = static_cast<std::int32_t>(0xFFFFFFFFu - static_cast<std::uint32_t>(mine));
          slot_score[above] = my_score;
        }
        __syncwarp();
        if (lane < k) write_slot(lane);
      }
    } else if (kVariant == 1) {  // many candidates: compact the segments first (rare)
      __syncthreads();
      if (threadIdx.x == 0) {
        int at = 0;
        for (int w = 0; w < W; ++w)
          for (int c = 0; c < warp_count[w]; ++c, ++at)
            cand_key[at] = cand_key[w * 32 + c], cand_score[at] = cand_score[w * 32 + c];
      }
      __syncthreads();
      if (static_cast<int>(threadIdx.x) < n) rank_candidate(threadIdx.x);
      __syncthreads();
      if (expert < k) write_slot(expert);
    } else if (n <= 32) {  // block-uniform; the usual case: no second barrier
      if (warp == 0) {
        if (lane < n) rank_candidate(lane);
        __syncwarp();
        if (lane < k) write_slot(lane);
      }
    } else {  // many candidates (k > W, mass ties): every thread ranks one
      if (static_cast<int>(threadIdx.x) < n) rank_candidate(threadIdx.x);
      __syncthreads();
      if (expert < k) write_slot(expert);
    }
    if (row + gridDim.x < p.num_tokens) __syncthreads();  // shared memory is reused by the next row
  }
}

}  // namespace musespark::cuda

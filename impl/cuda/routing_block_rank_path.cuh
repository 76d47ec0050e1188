// Block-rank path of the router kernel, for few rows and E in (32, 512]
// (block_rank_preferred in routing_tier_table.cuh says where it runs):
// one block of W = E / 32 warps (rounded up) owns a row, one expert per
// thread. Decode is bound by the dependent chain of one row, not by memory
// (and, with many warps per row, by the issue slots they share: the tier
// table keeps this path to E <= 256); no step of that chain here is a
// selection round:
//  1. each thread scores its expert (the same per-lane arithmetic as the
//     register path, with one expert per lane);
//  2. each warp ranks its 32 experts by one pass of 32 independent shuffles
//     and writes its top min(k, 32), in key order, to shared memory;
//  3. each of the W * min(k, 32) listed entries counts the entries above it
//     (one pass over shared memory, independent loads; with up to four
//     warps and 32 entries, by shuffles in warp 0); rank r < k is output
//     slot r;
//  4. the k slot threads sum the selected scores in slot order (the order
//     in which the rounds of the other paths add them) and write.
// The global top-k lies in the union of the warps' top-k, keys are unique
// (expert index breaks ties) and the softmax sum is fixed point, so the
// result equals every other path's bit for bit. k = 1 takes one round per
// warp and one over the W winners instead (two redux.sync each).
#pragma once

#include "routing_lane_scores.cuh"

namespace musespark::cuda {

constexpr int kBlockRankMaxWarps = kRegisterPathMaxExperts / 32;

// The selection key of (ord, expert) as one integer: larger is above in the
// key order (ord descending, then expert ascending). ord 0 (no expert) keys
// lie below every real expert's.
__device__ __forceinline__ std::uint64_t block_rank_key(std::uint32_t ord, std::uint32_t expert) {
  return (static_cast<std::uint64_t>(ord) << 32) | (0xFFFFFFFFu - expert);
}

// Step 1 of the block-per-row paths (this one and the block-threshold
// path), in two parts. block_row_load reads the thread's expert's logit
// (widened, the multiplier applied) and bias; the kernels call it before
// they look at the row's padding flag, so that these loads wait neither
// for that flag's load nor for the row's output addressing (in the SASS
// the logit's load moved from the 123rd instruction to the 79th at E =
// 512). A padded row's values are read and never used (its slots are -1
// and 0). H200, the anchor grid's decode cells, together with the
// block-threshold path's tau from shared memory (A/B against a58136e, two
// rounds): fp32 block-rank cells 0.91-0.97x the time (E = 512 k = 1 1.48
// -> 1.35 us), bf16 sigmoid at E = 128, k = 4 and 8, 1.03-1.04x, the
// other block-rank cells within 3%. Alone, each of the two changes
// measured even on the block-threshold cells, which gain together.
struct BlockRowInputs {
  float x;  // the logit after step 1 (0 for a thread without an expert)
  float b;  // the bias
};

template <typename T>
__device__ __forceinline__ BlockRowInputs block_row_load(const KernelParams& p, std::int64_t row, int expert) {
  const bool valid[1] = {expert < p.num_experts};
  float s[1];
  const T* row_ptr = static_cast<const T*>(p.logits) + row * p.logits_row_stride;
  load_lane_logits<T, 1, 1>(p, row_ptr, valid, [expert](int) { return expert; }, s);
  return {s[0], valid[0] ? p.bias[expert] : 0.0f};
}

// Then the thread's expert's score p (the register path's per-lane
// arithmetic with one expert per lane) and its key, ord + 1 (0 for a
// thread without an expert, below every real key). Every thread of the
// block calls it (the softmax reductions cross the warps).
struct BlockRowScore {
  float score;
  std::uint32_t ord;
};

template <int W, bool kSoftmax, bool kByLanes>
__device__ __forceinline__ BlockRowScore block_row_score(const KernelParams& p, const BlockRowInputs& in, int expert,
                                                         BlockSoftmaxScratch<W, kByLanes>& softmax_scratch) {
  const bool valid[1] = {expert < p.num_experts};
  float s[1] = {in.x};
  if constexpr (!kSoftmax) {
    sigmoid_scores(s);
  } else {
    block_softmax_shares<W>(s, valid, softmax_scratch);
  }
  return {s[0], valid[0] ? rm::ordered_score(s[0] + in.b) + 1u : 0u};
}

// The weight of a selected score over the k slot scores in shared memory,
// summed in slot order as the rounds of the other paths add (so every
// path's weights have the same bits). The first 8 loads are unrolled so
// that they issue together: this sum is on the row's critical path.
__device__ __forceinline__ float slot_order_weight(const KernelParams& p, float score, const float* slot_score,
                                                   int k) {
  float selected_sum = 0.0f;
#pragma unroll
  for (int r = 0; r < 8; ++r)
    if (r < k) selected_sum += slot_score[r];
  for (int r = 8; r < k; ++r) selected_sum += slot_score[r];
  const float denominator = rm::weight_denominator(selected_sum, p.has_eps, p.eps);
  return rm::routing_weight(score, denominator, p.route_scale);
}

// Output slot j of a block-per-row path's row from the k slots in shared
// memory.
__device__ __forceinline__ void store_block_row_slot(const KernelParams& p, std::int64_t row, int j, int k,
                                                     const std::int32_t* slot_expert, const float* slot_score) {
  store_slot(p, row, j, slot_order_weight(p, slot_score[j], slot_score, k), slot_expert[j]);
}

template <typename T, int W, bool kSoftmax>  // kSoftmax: one kernel per normalization, as the register path
__global__ void __launch_bounds__(32 * W) route_block_rank_kernel(const KernelParams p) {
  static_assert(W >= 1 && W <= kBlockRankMaxWarps, "block-rank shape");
  __shared__ std::uint64_t cand_key[W * 32];  // warp w's top min(k, 32) at [w * kc, (w + 1) * kc)
  __shared__ float cand_score[W * 32];
  __shared__ std::int32_t slot_expert[kMaxTopK];
  __shared__ float slot_score[kMaxTopK];
  __shared__ BlockSoftmaxScratch<W> softmax_scratch;  // block_softmax_shares'

  pdl_trigger_early(p.trigger_first);  // the wait: the row loop's first statement (pdl_trigger_early)

  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const int expert = threadIdx.x;
  const int k = p.topk;
  const int kc = k < 32 ? k : 32;  // entries each warp lists

  for (std::int64_t row = blockIdx.x; row < p.num_tokens; row += gridDim.x) {
    if (row == blockIdx.x) pdl_wait_then_trigger(p.trigger_first);
    const BlockRowInputs in = block_row_load<T>(p, row, expert);  // before the padding flag (above)
    if (row_is_padded(p, row)) {  // the whole block takes this branch
      if (expert < k) store_slot(p, row, expert, 0.0f, -1);
      continue;
    }

    // ---- 1. the thread's expert's score ------------------------------------
    const BlockRowScore own = block_row_score<W, kSoftmax>(p, in, expert, softmax_scratch);
    const std::uint32_t ord = own.ord;
    auto write_slot = [&](int j) { store_block_row_slot(p, row, j, k, slot_expert, slot_score); };

    if (k == 1) {  // block-uniform: each warp's best, then the best of the W
      const RoundPick warp_pick = group_round_pick<32>(ord, static_cast<std::uint32_t>(expert));
      const float warp_score = __shfl_sync(0xFFFFFFFFu, own.score, static_cast<int>(warp_pick.expert % 32));
      if (lane == 0) cand_key[warp] = block_rank_key(warp_pick.ord, warp_pick.expert), cand_score[warp] = warp_score;
      __syncthreads();
      if (warp == 0) {
        const std::uint64_t key = lane < W ? cand_key[lane] : 0u;
        const std::uint32_t winner = group_round_pick<32>(static_cast<std::uint32_t>(key >> 32),
                                                          lane < W ? 0xFFFFFFFFu - static_cast<std::uint32_t>(key)
                                                                   : 0xFFFFFFFFu).expert;
        const float score = __shfl_sync(0xFFFFFFFFu, lane < W ? cand_score[lane] : 0.0f, static_cast<int>(winner / 32));
        if (lane == 0) {
          const float denominator = rm::weight_denominator(0.0f + score, p.has_eps, p.eps);  // the rounds' sum
          store_slot(p, row, 0, rm::routing_weight(score, denominator, p.route_scale), static_cast<std::int32_t>(winner));
        }
      }
      if (row + gridDim.x < p.num_tokens) __syncthreads();  // the winners are reused by the next row
      continue;
    }

    // ---- 2. the warp's ranking: experts above mine among the warp's 32 -----
    // Empty lanes (ord 0) rank below every expert, among themselves by lane,
    // so the ranks are 0..31 and the first kc of each list are all written.
    const int rank = warp_rank_by_ord(ord, 32);
    if (rank < kc) {
      cand_key[warp * kc + rank] = block_rank_key(ord, static_cast<std::uint32_t>(expert));
      cand_score[warp * kc + rank] = own.score;
    }
    __syncthreads();

    // ---- 3 and 4 in warp 0, up to four warps, k > 4, <= 32 entries listed --
    // Lane c ranks entry c by 32 shuffles of the entries' ords and the slots
    // go through shared memory within warp 0: no second block barrier.
    // Among entries of equal ord the lower position holds the lower expert
    // (warp w lists experts of [32 w, 32 w + 32) at [w kc, w kc + kc), each
    // list in key order), so (ord descending, position ascending) is the
    // key order without shuffling the experts. On the H200, at E = 128:
    // k = 8 0.91-0.94x (sigmoid) and 0.96-0.97x (softmax) the time; k = 4
    // softmax 1.01-1.035x, hence k > 4. Only compiled up to W = 4: with W = 8
    // (where it would serve k <= 4 only) the branch made the kernel's k = 8
    // rows, which never take it, 17-21% slower (docs/performance_log.md).
    const int listed = W * kc;
    if constexpr (W <= 4) {
      if (listed <= 32 && k > 4) {  // block-uniform
        if (warp == 0) {
          const std::uint64_t mine = lane < listed ? cand_key[lane] : 0u;
          const float my_score = lane < listed ? cand_score[lane] : 0.0f;
          const std::uint32_t hi = static_cast<std::uint32_t>(mine >> 32), lo = static_cast<std::uint32_t>(mine);
          const int above = warp_rank_by_ord(hi, 32);
          if (hi != 0u && above < k)
            slot_expert[above] = static_cast<std::int32_t>(0xFFFFFFFFu - lo), slot_score[above] = my_score;
          __syncwarp();
          if (lane < k) write_slot(lane);
        }
        if (row + gridDim.x < p.num_tokens) __syncthreads();  // the lists and slots are reused by the next row
        continue;
      }
    }

    // ---- 3. each listed entry's rank in the row ------------------------------
    if (static_cast<int>(threadIdx.x) < listed) {
      const std::uint64_t mine = cand_key[threadIdx.x];
      int above = 0;
#pragma unroll 8
      for (int j = 0; j < listed; ++j) above += cand_key[j] > mine ? 1 : 0;
      // A real expert's rank below k is its slot; the row has at least k
      // real experts, all above every empty entry, so each slot is written.
      if ((mine >> 32) != 0u && above < k) {
        slot_expert[above] = static_cast<std::int32_t>(0xFFFFFFFFu - static_cast<std::uint32_t>(mine));
        slot_score[above] = cand_score[threadIdx.x];
      }
    }
    __syncthreads();

    // ---- 4. weights ------------------------------------------------------------
    if (expert < k) write_slot(expert);
    if (row + gridDim.x < p.num_tokens) __syncthreads();  // the lists and slots are reused by the next row
  }
}

}  // namespace musespark::cuda

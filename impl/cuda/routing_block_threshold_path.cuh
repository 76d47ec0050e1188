// Block-threshold path of the router kernel, for few rows, E <= 512
// (block_threshold_preferred in routing_tier_table.cuh says where it
// runs): one block of W = E / 32 warps (rounded up) owns a row, one expert
// per thread, as in the block-rank path, but no warp ranks its experts
// (for E in (384, 512], and at E in (128, 256] for 16-bit logits or k
// above ceil(E / 32), two experts per thread:
// route_block_threshold_multi_kernel below).
// The block-rank path's per-warp ranking (32 shuffles in each of W warps)
// is what made it lose at E = 512, where 16 warps share four schedulers;
// here each warp contributes one reduction:
//  1. each thread scores its expert (the block-rank path's arithmetic);
//  2. each warp's largest key (one redux.sync) goes to shared memory;
//  3. tau = the k-th largest of the W warp maxima: k warps hold an expert
//     at or above it, so the row's top k all reach it (when k > W, or fewer
//     than k warps hold an expert, every expert qualifies);
//  4. the experts whose key reaches tau (a few more than k on real rows)
//     are compacted into shared memory: one ballot and one shared-memory
//     atomic per warp, in any order;
//  5. each candidate counts the candidates above it in the 64-bit key order
//     (unique: the expert index breaks ties), in warp 0 when there are at
//     most 32 of them, else one per thread; rank r < k is output slot r;
//  6. the k slot threads sum the selected scores in slot order and write.
// The arithmetic and the key order are every other path's, so the bits are
// too (tested against the shared-memory path).
//
// Steps 3 and 4 are one test in every thread, without tau itself: a key
// reaches the k-th largest maximum exactly when fewer than k maxima lie
// above it (those above a key at or above tau are above tau, at most k - 1
// of them; a key below tau has the k maxima at or above tau above it),
// and with k > W the count is below k for every key. Each thread reads the
// W maxima (broadcast loads) and compares them with its key: no barrier
// after warp 0's tau, no rank of the maxima. Against tau computed first
// (every warp ranking the maxima for sigmoid; warp 0 and a barrier for
// softmax, where every warp had measured 1.007x / 1.014x): the path's
// decode cells 0.968-0.972x the time, geomean of 30 cells in three rounds
// (H200, E = 128-512, T = 1-1024, k = 1, 4, 8); sigmoid E = 512 k = 8
// 0.94x, softmax E = 256 k = 8 0.96-0.98x, softmax E = 512 k = 8 fp32
// 1.005-1.014x and bf16 0.98-0.99x. Earlier forms, for the record: tau in
// every warp by W shuffles against warp 0 and a barrier, 0.87-0.93x with
// sigmoid at E = 256-512, k = 8, and 1.0-1.06x with softmax; each warp's
// candidates in a segment of its own instead of the atomic, slower than
// both.
#pragma once

#include "routing_block_rank_path.cuh"  // block_rank_key, kBlockRankMaxWarps

namespace musespark::cuda {

// The softmax crossing of both block-threshold kernels: the lanes' form
// from 8 warps (kBlockThresholdSoftmaxLanesFrom says why).
template <int W>
using BlockThresholdSoftmaxScratch = BlockSoftmaxScratch<W, (W >= kBlockThresholdSoftmaxLanesFrom)>;

// Steps 5 and 6 of the block-threshold kernels, after the barrier that
// completes the n candidates. Candidate c's rank among the n is its slot
// when below k: the row has at least k experts (k <= E) and all of the
// top k are candidates, so every slot is written. kPerThread: the
// candidates a thread may hold (its experts), so that with more than 32
// every thread ranks its own share.
//
// The usual case, n <= 32, is warp 0's alone and the end of the row's
// chain, so it is written for latency: lane c reads the 32 candidate
// slots as 16 broadcast 16-byte loads, all issued before the first
// compare (slots past n hold stale keys and are predicated off), where a
// loop over n waited on each group of four; the lane that ranks r < k
// then writes output slot r itself, from its own key and score, and only
// the scores go through shared memory, for the sum in slot order that
// every path adds (slot_order_weight).
template <int kThreads, int kPerThread>
__device__ __forceinline__ void block_threshold_rank_and_store(const KernelParams& p, std::int64_t row, int k, int n,
                                                               int warp, int lane, int tid,
                                                               const std::uint64_t* cand_key, const float* cand_score,
                                                               std::int32_t* slot_expert, float* slot_score) {
  if (n <= 32) {  // block-uniform; the usual case: no further block barrier
    if (warp != 0) return;
    static_assert(kThreads * kPerThread >= 32, "32 candidate slots to read");
    const bool holds = lane < n;
    const std::uint64_t mine = holds ? cand_key[lane] : 0u;
    const float my_score = holds ? cand_score[lane] : 0.0f;
    int above = 0;
#pragma unroll
    for (int j = 0; j < 32; j += 2) {
      const ulonglong2 two = *reinterpret_cast<const ulonglong2*>(cand_key + j);  // 16-byte aligned: the caller's
      above += j < n && two.x > mine ? 1 : 0;
      above += j + 1 < n && two.y > mine ? 1 : 0;
    }
    const bool selected = holds && above < k;
    if (selected) slot_score[above] = my_score;
    __syncwarp();
    if (selected)
      store_slot(p, row, above, slot_order_weight(p, my_score, slot_score, k),
                 static_cast<std::int32_t>(0xFFFFFFFFu - static_cast<std::uint32_t>(mine)));
    return;
  }
  // More than 32 candidates (k > W, mass ties, and k near the group count:
  // `render_report.py candidates` gives the benchmark's E = 192 k = 8 rows
  // 16-46 and E = 224 k = 8 22-61 on the 4-warp form's half-warps): every
  // thread ranks its share, the keys read two at a time (16-byte broadcast
  // loads: the key array is 16-byte aligned and even-sized, so a pair that
  // starts below n lies in it), four loads issued per trip. H100, A/B of
  // two rounds against one key a load: E = 192 k = 8 at 16-128 rows and
  // E = 224 k = 8 sigmoid 0.91-0.96x the time, the other k = 8 cells of
  // E = 160-512 within 2%. Warp 0 ranking up to 64 (two a lane, 32
  // 16-byte loads and 128 compares in one warp) lost even to one key a
  // load: E = 192 k = 8 0.97-1.07x, and E = 224 k = 8 softmax on this path
  // 2.34 us against the block-rank path's 2.19 (session 44,
  // docs/performance_log.md).
  auto rank_candidate = [&](int c) {
    const std::uint64_t mine = cand_key[c];
    int above = 0;
#pragma unroll 4
    for (int j = 0; j < n; j += 2) {
      const ulonglong2 two = *reinterpret_cast<const ulonglong2*>(cand_key + j);
      above += two.x > mine ? 1 : 0;
      above += j + 1 < n && two.y > mine ? 1 : 0;
    }
    if (above < k) {
      slot_expert[above] = static_cast<std::int32_t>(0xFFFFFFFFu - static_cast<std::uint32_t>(mine));
      slot_score[above] = cand_score[c];
    }
  };
#pragma unroll
  for (int i = 0; i < kPerThread; ++i)
    if (tid + i * kThreads < n) rank_candidate(tid + i * kThreads);
  __syncthreads();
  if (tid < k) store_block_row_slot(p, row, tid, k, slot_expert, slot_score);
}

template <typename T, int W, bool kSoftmax>
__global__ void __launch_bounds__(32 * W) route_block_threshold_kernel(const KernelParams p) {
  static_assert(W >= 1 && W <= kBlockRankMaxWarps, "block-threshold shape");
  __shared__ alignas(16) std::uint64_t cand_key[W * 32];  // step 4's candidates, in arrival order
  __shared__ float cand_score[W * 32];
  __shared__ alignas(16) std::uint32_t warp_best[W];  // step 2; aligned for step 3 to read in 16-byte loads
  __shared__ int cand_count;
  __shared__ std::int32_t slot_expert[kMaxTopK];
  __shared__ float slot_score[kMaxTopK];
  __shared__ BlockThresholdSoftmaxScratch<W> softmax_scratch;  // block_softmax_shares'

  pdl_trigger_early(p.trigger_first);  // the wait: the row loop's first statement (pdl_trigger_early)

  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const int expert = threadIdx.x;
  const int k = p.topk;

  for (std::int64_t row = blockIdx.x; row < p.num_tokens; row += gridDim.x) {
    if (row == blockIdx.x) pdl_wait_then_trigger(p.trigger_first);
    const BlockRowInputs in = block_row_load<T>(p, row, expert);  // before the padding flag (block_row_load)
    if (row_is_padded(p, row)) {  // the whole block takes this branch
      if (expert < k) store_slot(p, row, expert, 0.0f, -1);
      continue;
    }
    if (threadIdx.x == 0) cand_count = 0;  // added to after the barrier of step 2

    // ---- 1. the thread's expert's score (block_row_score's arithmetic). The
    // sigmoid written out here compiles to another schedule of the 8-warp
    // kernel: H200, decode, sigmoid E = 256 k = 8 0.94-0.98x the time in four
    // rounds over two calls, the other cells within 3% (softmax unchanged) --
    BlockRowScore own;
    if constexpr (!kSoftmax) {
      float s[1] = {in.x};
      sigmoid_scores(s);
      own = {s[0], expert < p.num_experts ? rm::ordered_score(s[0] + in.b) + 1u : 0u};
    } else {
      own = block_row_score<W, true>(p, in, expert, softmax_scratch);
    }
    const std::uint32_t ord = own.ord;

    // ---- 2. each warp's largest key -------------------------------------------
    const std::uint32_t best = group_max_u32<32>(ord);
    if (lane == 0) warp_best[warp] = best;
    __syncthreads();

    // ---- 3 and 4. the candidates: keys with fewer than k maxima above -----
    int maxima_above = 0;
#pragma unroll
    for (int w = 0; w < W; ++w) maxima_above += warp_best[w] > ord ? 1 : 0;
    const bool is_cand = ord != 0u && maxima_above < k;
    const unsigned cand_mask = __ballot_sync(0xFFFFFFFFu, is_cand);
    int base = 0;
    if (lane == 0 && cand_mask != 0u) base = atomicAdd(&cand_count, __popc(cand_mask));
    base = __shfl_sync(0xFFFFFFFFu, base, 0);
    if (is_cand) {
      const int at = base + __popc(cand_mask & ((1u << lane) - 1u));
      cand_key[at] = block_rank_key(ord, static_cast<std::uint32_t>(expert));
      cand_score[at] = own.score;
    }
    __syncthreads();
    const int n = cand_count;

    block_threshold_rank_and_store<32 * W, 1>(p, row, k, n, warp, lane, expert, cand_key, cand_score, slot_expert,
                                              slot_score);
    if (row + gridDim.x < p.num_tokens) __syncthreads();  // shared memory is reused by the next row
  }
}

// The block-threshold path with P experts per thread on W warps. Thread t
// holds experts t + i * 32W (each of a warp's P loads one coalesced run).
// Step 2's groups are the warp's lanes split into G runs of 32 / G lanes,
// each over all P registers (G = 1: the warp's 32P experts; G = 2:
// half-warps of 16P experts; G = 4: quarter-warps of 8P experts, where k
// would otherwise equal the W * 2 half-warps, as the tier table's
// block_threshold_pair_groups_preferred says), so tau is the k-th largest
// of W * G group maxima; with k no more than the groups that hold experts
// every step above holds as written (past it, every expert qualifies).
// Groups of lanes rather than of registers keep every group non-empty where
// the second register is empty for most threads: at E in (128, 256] on 4
// warps all 8 half-warps hold experts of the first register, where only
// ceil(E / 32) of the 8 register groups did, so k = 6-8 at E = 160-224
// stays here instead of ranking all E experts elsewhere. Two forms run
// (routing_tier_table.cuh, block_threshold_pair_warps_preferred): 8 warps
// of two experts, G = 1, for E in (384, 512], where 16 warps of one expert
// share four schedulers; and 4 warps of two, G = 2, at E in (128, 256] for
// 16-bit logits, whose one-expert threads each load two bytes, and for k
// above ceil(E / 32) (G = 4 where that k is 8). Kept apart from the kernel
// above rather than a template parameter of it: the shared form made that
// kernel's rows 1-5% slower at E = 256 (H200, A/B, two rounds) without a
// line of its path changing. 4 warps of four experts at E = 512 took
// 1.08-1.23x the 8-warp form's time (H100, session 41).
template <typename T, int W, int P, int G, bool kSoftmax>
__global__ void __launch_bounds__(32 * W) route_block_threshold_multi_kernel(const KernelParams p) {
  constexpr int kThreads = 32 * W, kGroups = W * G;
  static_assert(kThreads >= kMaxTopK, "a thread per output slot");
  static_assert(G == 1 || G == 2 || G == 4, "a group is a warp, a half-warp or a quarter-warp");
  __shared__ alignas(16) std::uint64_t cand_key[kThreads * P];  // step 4's candidates, in arrival order
  __shared__ float cand_score[kThreads * P];
  __shared__ alignas(16) std::uint32_t group_best[kGroups];
  __shared__ int cand_count;
  __shared__ std::int32_t slot_expert[kMaxTopK];
  __shared__ float slot_score[kMaxTopK];
  __shared__ BlockThresholdSoftmaxScratch<W> softmax_scratch;  // block_softmax_shares'

  pdl_trigger_early(p.trigger_first);  // the wait: the row loop's first statement (pdl_trigger_early)

  const int tid = threadIdx.x;
  const int lane = tid % 32;
  const int warp = tid / 32;
  const int k = p.topk;
  const auto expert_of = [tid](int i) { return tid + i * kThreads; };  // the thread's i-th expert
  bool valid[P];
#pragma unroll
  for (int i = 0; i < P; ++i) valid[i] = expert_of(i) < p.num_experts;

  for (std::int64_t row = blockIdx.x; row < p.num_tokens; row += gridDim.x) {
    if (row == blockIdx.x) pdl_wait_then_trigger(p.trigger_first);
    // ---- 1. the thread's experts' scores (loaded before the padding flag, as
    // block_row_load) -----------------------------------------------------------
    float s[P], b[P];
    const T* row_ptr = static_cast<const T*>(p.logits) + row * p.logits_row_stride;
    load_lane_logits<T, P, 1>(p, row_ptr, valid, expert_of, s);
#pragma unroll
    for (int i = 0; i < P; ++i) b[i] = valid[i] ? p.bias[expert_of(i)] : 0.0f;
    if (row_is_padded(p, row)) {  // the whole block takes this branch
      if (tid < k) store_slot(p, row, tid, 0.0f, -1);
      continue;
    }
    if (tid == 0) cand_count = 0;  // added to after the barrier of step 2
    if constexpr (!kSoftmax) {
      sigmoid_scores(s);
    } else {
      block_softmax_shares<W>(s, valid, softmax_scratch);
    }
    std::uint32_t ord[P];
#pragma unroll
    for (int i = 0; i < P; ++i) ord[i] = valid[i] ? rm::ordered_score(s[i] + b[i]) + 1u : 0u;

    // ---- 2. each group's largest key ------------------------------------------
    std::uint32_t mine = ord[0];
#pragma unroll
    for (int i = 1; i < P; ++i) mine = ord[i] > mine ? ord[i] : mine;
    if constexpr (G == 1) {
      const std::uint32_t best = group_max_u32<32>(mine);
      if (lane == 0) group_best[warp] = best;
    } else {
      // Each group's maximum from its own full-warp redux.sync, which sees
      // the other groups' keys as 0 (no key): G independent reductions, no
      // shuffle chain.
      const int my_group = lane / (32 / G);
      std::uint32_t best[G];
#pragma unroll
      for (int g = 0; g < G; ++g) best[g] = group_max_u32<32>(my_group == g ? mine : 0u);
      if (lane == 0) {
#pragma unroll
        for (int g = 0; g < G; ++g) group_best[warp * G + g] = best[g];
      }
    }
    __syncthreads();

    // ---- 3 and 4. the candidates: keys with fewer than k maxima above -----
    int maxima_above[P] = {};
#pragma unroll
    for (int g = 0; g < kGroups; ++g) {
      const std::uint32_t m = group_best[g];
#pragma unroll
      for (int i = 0; i < P; ++i) maxima_above[i] += m > ord[i] ? 1 : 0;
    }
    bool is_cand[P];
    unsigned cand_mask[P];
    unsigned any_cand = 0u;
#pragma unroll
    for (int i = 0; i < P; ++i) {
      is_cand[i] = ord[i] != 0u && maxima_above[i] < k;
      cand_mask[i] = __ballot_sync(0xFFFFFFFFu, is_cand[i]);
      any_cand |= cand_mask[i];
    }
    // Tested on the masks, not on a count, so that the counts are made
    // only in lane 0's branch (the pair kernel's code before the merge).
    int offset[P];  // where register i's candidates start in the warp's run
    int total = 0;
#pragma unroll
    for (int i = 0; i < P; ++i) {
      offset[i] = total;
      total += __popc(cand_mask[i]);
    }
    int base = 0;
    if (lane == 0 && any_cand != 0u) base = atomicAdd(&cand_count, total);
    base = __shfl_sync(0xFFFFFFFFu, base, 0);
#pragma unroll
    for (int i = 0; i < P; ++i) {
      if (is_cand[i]) {
        const int at = base + offset[i] + __popc(cand_mask[i] & ((1u << lane) - 1u));
        cand_key[at] = block_rank_key(ord[i], static_cast<std::uint32_t>(expert_of(i)));
        cand_score[at] = s[i];
      }
    }
    __syncthreads();
    block_threshold_rank_and_store<kThreads, P>(p, row, k, cand_count, warp, lane, tid, cand_key, cand_score,
                                                slot_expert, slot_score);
    if (row + gridDim.x < p.num_tokens) __syncthreads();  // shared memory is reused by the next row
  }
}

}  // namespace musespark::cuda

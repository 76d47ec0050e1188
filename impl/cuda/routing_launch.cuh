// Launch helpers of every path: grid and block sizes, the per-tier kernel
// instantiations, shared-memory opt-ins. Which path and tier a call takes
// is decided in routing_tier_table.cuh.
#pragma once

#include <atomic>
#include <cstdint>
#include <type_traits>

#include "routing_kernel_common.cuh"
#include "routing_launch_smem.h"
#include "routing_block_rank_path.cuh"
#include "routing_block_threshold_path.cuh"
#include "routing_filter_path.cuh"
#include "routing_register_path.cuh"
#include "routing_shared_path.cuh"
#include "routing_split_row_path.cuh"
#include "routing_thread_row_path.cuh"

namespace musespark::cuda {

template <typename Kernel>
cudaError_t launch_kernel(Kernel kernel, unsigned blocks, std::size_t smem, cudaStream_t stream,
                          bool pdl, const KernelParams& kp, unsigned threads = kBlockThreads,
                          int carveout_percent = -1) {
  KernelParams launched = kp;
  launched.trigger_first = trigger_first_for(blocks, threads);
  return launch_with_pdl_carveout(kernel, blocks, threads, smem, carveout_percent, stream, pdl, launched);
}

// Enough blocks to cover the rows, capped so a grid-stride loop takes over.
inline unsigned grid_for(std::int64_t work_items) {
  constexpr std::int64_t kMaxBlocks = 1 << 20;
  return static_cast<unsigned>(work_items < kMaxBlocks ? work_items : kMaxBlocks);
}

// Experts per vector load: up to 16 bytes, and a power of two that divides
// P (P = 12 with 16-bit logits loads 4, not 8).
template <typename T, int P>
constexpr int register_tier_vector() {
  int v = 16 / static_cast<int>(sizeof(T));
  while (v > 1 && P % v != 0) v /= 2;
  return v;
}
static_assert(register_tier_vector<float, 8>() == 4 && register_tier_vector<float, 12>() == 4 &&
              register_tier_vector<__nv_bfloat16, 16>() == 8 && register_tier_vector<__nv_bfloat16, 12>() == 4 &&
              register_tier_vector<__half, 2>() == 2 && register_tier_vector<float, 1>() == 1,
              "vector width per tier");

// Whether a register tier of P experts per lane loads its logits and bias
// as vectors (register_tier_vector) for this call's layout.
template <typename T, int P>
bool register_tier_vector_ok(const KernelParams& kp) {
  constexpr int kVec = register_tier_vector<T, P>();
  constexpr int kBiasVec = kVec < 4 ? kVec : 4;  // as in route_register_kernel
  const auto addr = reinterpret_cast<std::uintptr_t>(kp.logits);
  const auto bias_addr = reinterpret_cast<std::uintptr_t>(kp.bias);
  return kVec > 1 && kp.logits_col_stride == 1 && kp.num_experts % kVec == 0 && addr % (kVec * sizeof(T)) == 0 &&
         bias_addr % (kBiasVec * sizeof(float)) == 0 && (kp.num_tokens == 1 || kp.logits_row_stride % kVec == 0);
}

// Grids of one to seven blocks per SM on every register tier: each block
// also requests unused dynamic shared memory, an SM's over the cap less
// its static share, so that at most ceil(blocks / SMs) blocks share an
// SM. Their registers would let more share one, and the block scheduler
// then ran three or four on some SMs while others ran one.
//  - Two per SM on grids of one to two (8+ experts per lane): H200, A/B of
//    two rounds against d047963 (2026-12-03, T = 1024 / 1100 / 1536 /
//    2048, E = 256-512, k = 1 / 4 / 8, both dtypes and normalizations): T
//    = 2048 0.925x / 0.929x the time (E = 320 softmax 0.79-0.81x, E = 384
//    0.84-0.88x, fp32 E = 512 k = 4-8 0.83-0.86x), T = 1100 and 1536 even,
//    no cell slower by > 3%.
//  - Three per SM on grids of two to three, and both caps from 4 experts
//    per lane: H200, A/B of two rounds against cceec3b (2026-12-03, T =
//    1536 / 2048 / 2560 / 3072, E = 128 / 256 / 384 / 512, k = 1 / 8, both
//    dtypes and normalizations): E = 128 T = 3072 0.72-0.89x (k = 8
//    3.88 -> 2.98 us, bf16 sigmoid), E = 256 T = 2560-3072 0.83-0.91x, E
//    = 128 T = 2048 0.97-0.99x, E = 384 even; E = 512 bf16 k = 8 at T =
//    2560-3072 1.05-1.06x in both rounds (fp32 even), so the three-block
//    cap leaves 16 experts per lane out. This rule, against cceec3b (T =
//    1100-4096, E = 128 / 256 / 512, k = 1 / 8): 0.964x / 0.960x over 120
//    cells, one slower by > 3% (E = 128 k = 1 fp32 softmax T = 1100,
//    1.03-1.045x).
//  - The narrower tiers too (fewer than 4 experts per lane, or several
//    rows per warp): H200, A/B of two rounds against ff51f86 (2026-12-03,
//    T = 4096-65536, E = 8 / 64 / 128 / 256 / 512, k = 1 / 4 / 8, both
//    dtypes and normalizations): 0.991x / 0.992x over 300 cells, 22 / 27
//    faster by > 3%, none slower; E = 64 k = 4-8 at 4096 rows 0.89-0.92x,
//    E = 8 k = 1 at 65536 rows 0.89-0.91x (bf16 softmax 2.91 -> 2.58 us).
// Grids of one block per SM or fewer, and of more than seven, are launched
// as before. Returns the cap, or 0 for none.
inline int register_blocks_per_sm_cap(int experts_per_lane, long long blocks, int sms) {
  if (blocks <= sms) return 0;
  // Grids of up to seven blocks per SM to ceil(blocks / SMs), below 16
  // experts per lane: H200, A/B of two rounds against 8880403 (T = 3500 /
  // 4096 / 6144 / 7392 / 8192, E = 128 / 256 / 384, k = 1 / 8, both dtypes
  // and normalizations): 0.988x / 0.993x over 120 cells, none slower by
  // > 3%; E = 128 at 3500 rows 0.85-0.92x (bf16 softmax k = 8 4.66 -> 3.98
  // us; softmax k = 1 even), at 4096 rows sigmoid k = 8 0.87-0.89x; E = 256
  // / 384 and 6144-8192 rows even. Eight blocks of kBlockThreads fill an
  // SM's 2048 threads, so a cap of eight holds nothing back and would only
  // move the SM's L1 / shared memory split.
  static_assert(kBlockThreads == 256, "the seven-block bound assumes 256-thread blocks");
  const long long per_sm = (blocks + sms - 1) / sms;
  const long long max_cap = experts_per_lane < 16 ? 7 : 2;
  return per_sm <= max_cap ? static_cast<int>(per_sm) : 0;
}

// Dynamic shared memory beyond the 48 KB default (static included) needs an
// opt-in per kernel and device; the largest size granted so far is
// remembered per kernel and device so the attribute call is made once, not
// per launch.
template <auto kKernel>
cudaError_t allow_dynamic_smem(std::size_t dynamic_bytes, std::size_t static_bytes) {
  if (dynamic_bytes + static_bytes <= 48 * 1024) return cudaSuccess;
  constexpr int kMaxDevices = 64;
  static std::atomic<std::size_t> granted[kMaxDevices] = {};
  int device = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err != cudaSuccess) return err;
  std::atomic<std::size_t>& slot = granted[device % kMaxDevices];
  if (slot.load(std::memory_order_relaxed) >= dynamic_bytes) return cudaSuccess;
  err = cudaFuncSetAttribute(kKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(dynamic_bytes));
  if (err == cudaSuccess) slot.store(dynamic_bytes, std::memory_order_relaxed);
  return err;
}

// The current device and its SM count for a held launch, or false where a
// query failed (the error cleared, so that it is not mistaken for the
// launch's: the launch then goes unheld).
inline bool current_device_sms(int& device, int& sms) {
  if (cudaGetDevice(&device) == cudaSuccess &&
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) == cudaSuccess)
    return true;
  (void)cudaGetLastError();
  return false;
}

// `device`'s shared memory per SM, or -1 where the query failed (the error
// cleared, as above).
inline long long sm_shared_bytes(int device) {
  int bytes = 0;
  if (cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return -1;
  }
  return bytes;
}

// kKernel's static shared memory, asked once, or -1 where the query failed
// (the error is cleared so that it is not mistaken for a launch's).
template <auto kKernel>
long long kernel_static_smem() {
  static std::atomic<long long> static_bytes{-2};  // -2: not asked yet
  long long bytes = static_bytes.load(std::memory_order_relaxed);
  if (bytes == -2) {
    cudaFuncAttributes attr{};
    if (cudaFuncGetAttributes(&attr, kKernel) != cudaSuccess) {
      (void)cudaGetLastError();
      return -1;
    }
    bytes = static_cast<long long>(attr.sharedSizeBytes);
    static_bytes.store(bytes, std::memory_order_relaxed);
  }
  return bytes;
}

// The dynamic shared memory that holds kKernel to `cap` blocks per SM on
// `device`, opted in through allow_dynamic_smem (one attribute call per
// kernel and device, not per launch), or 0 where a query or the opt-in
// failed: the launch then goes as before, and the error is cleared so that
// it is not mistaken for the launch's.
template <auto kKernel>
std::size_t blocks_per_sm_cap_smem(int device, int cap) {
  const long long static_share = kernel_static_smem<kKernel>();
  if (static_share < 0) return 0;
  const long long per_sm_bytes = sm_shared_bytes(device);
  if (per_sm_bytes < 0) return 0;
  const long long pad = per_sm_bytes / cap - static_share - kReservedSmemPerBlock;
  if (pad <= 0) return 0;
  if (allow_dynamic_smem<kKernel>(static_cast<std::size_t>(pad), static_cast<std::size_t>(static_share)) !=
      cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return static_cast<std::size_t>(pad);
}

// held_launch_smem for kKernel on `device`, opted in (allow_dynamic_smem);
// where a query fails, `need` and no carveout, the error cleared.
template <auto kKernel>
LaunchSmem held_launch_smem_on(int device, int cap, std::size_t need) {
  const long long static_bytes = kernel_static_smem<kKernel>();
  if (static_bytes < 0) return {need, -1};
  const long long per_sm_bytes = sm_shared_bytes(device);
  if (per_sm_bytes < 0) return {need, -1};
  const LaunchSmem held = held_launch_smem(cap, need, static_bytes, per_sm_bytes);
  if (held.carveout_percent >= 0 &&
      allow_dynamic_smem<kKernel>(held.dynamic_bytes, static_cast<std::size_t>(static_bytes)) != cudaSuccess) {
    (void)cudaGetLastError();
    return {need, -1};
  }
  return held;
}

// Launches the register-path kernel kKernel of P experts per lane, held to
// the blocks per SM that register_blocks_per_sm_cap names.
template <int P, auto kKernel>
cudaError_t launch_register_kernel(unsigned blocks, cudaStream_t stream, bool pdl, const KernelParams& kp) {
  std::size_t smem = 0;
  int device = 0, sms = 0;
  if (current_device_sms(device, sms)) {
    const int cap = register_blocks_per_sm_cap(P, blocks, sms);
    if (cap > 0) smem = blocks_per_sm_cap_smem<kKernel>(device, cap);
  }
  return launch_kernel(kKernel, blocks, smem, stream, pdl, kp);
}

// A kernel as a value whose type names it, so that a generic lambda can
// hand it on as a template argument (launch_register_kernel's kKernel).
template <auto kKernel>
using KernelTag = std::integral_constant<decltype(kKernel), kKernel>;

template <typename T, int G, int P, int kMinBlocks, bool kSoftmax>
cudaError_t launch_register_tier_norm(const KernelParams& kp, cudaStream_t stream, bool pdl,
                                      bool allow_vector) {
  constexpr int kRowsPerBlock = kBlockThreads / G;
  constexpr int kVec = register_tier_vector<T, P>();
  const unsigned blocks = grid_for((kp.num_tokens + kRowsPerBlock - 1) / kRowsPerBlock);
  const bool vector_ok = allow_vector && register_tier_vector_ok<T, P>(kp);
  const auto launch = [&](auto kernel) {
    return launch_register_kernel<P, decltype(kernel)::value>(blocks, stream, pdl, kp);
  };
  // The ranking kernels (register_tier_ranks: one warp per row of one
  // expert per lane from k = 5, the E <= 32 tiers that share a warp from
  // group_rank_min_k); P = 1 has no vector loads (kVec = 1).
  if constexpr ((G == 32 && P == 1) || (G < 32 && G * P <= kGroupRankMaxExperts)) {
    if (kp.rank_select && register_tier_ranks(G, P, kp.topk))
      return vector_ok ? launch(KernelTag<route_register_kernel<T, G, P, kVec, kSoftmax, false, kMinBlocks, true>>{})
                       : launch(KernelTag<route_register_kernel<T, G, P, 1, kSoftmax, false, kMinBlocks, true>>{});
  }
  // Where the tier table asks for it (estimate_select_preferred), on the
  // full one-warp-per-row tiers from 4 experts per lane: kernels that
  // select from estimated scores (routing_estimate_select.cuh). The top-1
  // kernel from 8 per lane only: at 4 (E = 128) it lost (H200, anchor
  // grid: 1.02-1.07x the time at T = 1-1024), the estimates saving four
  // exact scores per lane, less than the margin's reduction and the vote.
  // From 8 per lane the tiers that are not full (E = 160, 192, 320, 448)
  // take them too where the tier table asks, with the per-register bound
  // checks; their k >= 2 kernel is compiled for sigmoid only (the table never
  // asks for it with softmax, which lost there).
  if constexpr (G == 32 && P >= 4) {
    if (kp.estimate_select && kp.topk <= kEstimateMaxTopK && vector_ok) {
      const bool full = kp.num_experts == G * P;
      if constexpr (P >= 8) {
        if (kp.topk == 1)
          return full ? launch(KernelTag<route_register_kernel<T, G, P, kVec, kSoftmax, true, kMinBlocks, false,
                                                               kEstimateTop1>>{})
                      : launch(KernelTag<route_register_kernel<T, G, P, kVec, kSoftmax, false, kMinBlocks, false,
                                                               kEstimateTop1>>{});
        if constexpr (!kSoftmax) {
          if (!full)
            return launch(KernelTag<route_register_kernel<T, G, P, kVec, kSoftmax, false, kMinBlocks, false,
                                                          kEstimateTopK>>{});
        }
      }
      if (full && kp.topk >= 2)
        return launch(KernelTag<route_register_kernel<T, G, P, kVec, kSoftmax, true, kMinBlocks, false,
                                                      kEstimateTopK>>{});
    }
  }
  // Full tiers (E == G * P) with 8+ experts per lane, the large-batch tiers,
  // drop their bound checks; others keep one kernel per vector width.
  if constexpr (P >= 8) {
    if (vector_ok && kp.num_experts == G * P)
      return launch(KernelTag<route_register_kernel<T, G, P, kVec, kSoftmax, true, kMinBlocks>>{});
  }
  if (vector_ok)
    return launch(KernelTag<route_register_kernel<T, G, P, kVec, kSoftmax, false, kMinBlocks>>{});
  return launch(KernelTag<route_register_kernel<T, G, P, 1, kSoftmax, false, kMinBlocks>>{});
}

template <typename T, int G, int P, int kMinBlocks = kRegisterMinBlocks<P>>
cudaError_t launch_register_tier(const KernelParams& kp, cudaStream_t stream, bool pdl, bool allow_vector) {
  return kp.softmax ? launch_register_tier_norm<T, G, P, kMinBlocks, true>(kp, stream, pdl, allow_vector)
                    : launch_register_tier_norm<T, G, P, kMinBlocks, false>(kp, stream, pdl, allow_vector);
}

// Split-row path: W warps per row, 64 experts per warp (E <= 64 * W).
// One split-row kernel: the normalization's, with vector loads when the
// layout allows them.
template <typename T, int W, bool kBlockMerge, int kVec>
cudaError_t launch_split_row_kernel(const KernelParams& kp, cudaStream_t stream, bool pdl, bool vector_ok) {
  const unsigned blocks = grid_for(kp.num_tokens);
  if (kp.softmax) {
    if (vector_ok)
      return launch_kernel(route_split_row_kernel<T, W, kVec, true, kBlockMerge>, blocks, 0, stream, pdl, kp, 32 * W);
    return launch_kernel(route_split_row_kernel<T, W, 1, true, kBlockMerge>, blocks, 0, stream, pdl, kp, 32 * W);
  }
  if (vector_ok)
    return launch_kernel(route_split_row_kernel<T, W, kVec, false, kBlockMerge>, blocks, 0, stream, pdl, kp, 32 * W);
  return launch_kernel(route_split_row_kernel<T, W, 1, false, kBlockMerge>, blocks, 0, stream, pdl, kp, 32 * W);
}

template <typename T, int W>
cudaError_t launch_split_row_tier(const KernelParams& kp, cudaStream_t stream, bool pdl) {
  constexpr int kVec = 2;  // two experts per lane
  const auto addr = reinterpret_cast<std::uintptr_t>(kp.logits);
  const bool vector_ok = kp.logits_col_stride == 1 && kp.num_experts % kVec == 0 && addr % (kVec * sizeof(T)) == 0 &&
                         (kp.num_tokens == 1 || kp.logits_row_stride % kVec == 0);
  if constexpr (W > 1) {  // W * k > 32 with k <= 32: the block merges (W = 1 never has both)
    if (W * kp.topk > 32 && kp.topk <= 32) return launch_split_row_kernel<T, W, true, kVec>(kp, stream, pdl, vector_ok);
  }
  return launch_split_row_kernel<T, W, false, kVec>(kp, stream, pdl, vector_ok);
}

// The block-per-row paths (block-rank, block-threshold): W warps per row,
// one expert per thread (E <= 32 * W). Blocks are capped so that a forced
// launch on many rows also runs the kernels' row loop (the tier table
// sends them few rows only).
constexpr std::int64_t kBlockRankMaxBlocks = 1024;

template <auto kSigmoidKernel, auto kSoftmaxKernel, int W>
cudaError_t launch_block_per_row(const KernelParams& kp, cudaStream_t stream, bool pdl) {
  const unsigned blocks = grid_for(kp.num_tokens < kBlockRankMaxBlocks ? kp.num_tokens : kBlockRankMaxBlocks);
  return launch_kernel(kp.softmax ? kSoftmaxKernel : kSigmoidKernel, blocks, 0, stream, pdl, kp, 32 * W);
}

// Calls launch(std::integral_constant<int, W>) with the block-per-row
// paths' warps per row for E.
template <typename Launch>
cudaError_t with_block_row_warps(int E, Launch launch) {
  if (E <= 64) return launch(std::integral_constant<int, 2>{});
  if (E <= 128) return launch(std::integral_constant<int, 4>{});
  if (E <= 256) return launch(std::integral_constant<int, 8>{});
  if (E <= 384) return launch(std::integral_constant<int, 12>{});
  return launch(std::integral_constant<int, 16>{});
}

template <typename T>
cudaError_t launch_block_rank(const KernelParams& kp, cudaStream_t stream, bool pdl) {
  return with_block_row_warps(kp.num_experts, [&](auto w) {
    constexpr int W = decltype(w)::value;
    return launch_block_per_row<route_block_rank_kernel<T, W, false>, route_block_rank_kernel<T, W, true>, W>(
        kp, stream, pdl);
  });
}

// pair_warps: 8 or 4, the kernel of two experts per thread on that many
// warps (the tier table's block_threshold_pair_warps_preferred); 0, one
// expert per thread. groups: the groups of lanes a warp of that kernel
// splits into (block_threshold_pair_groups_preferred): 1 on 8 warps, 2 or
// 4 on 4 warps.
template <typename T>
cudaError_t launch_block_threshold(const KernelParams& kp, cudaStream_t stream, bool pdl, int pair_warps,
                                   int groups) {
  if (pair_warps == 8 && groups == 1)
    return launch_block_per_row<route_block_threshold_multi_kernel<T, 8, 2, 1, false>,
                                route_block_threshold_multi_kernel<T, 8, 2, 1, true>, 8>(kp, stream, pdl);
  if (pair_warps == 4 && groups == 2)
    return launch_block_per_row<route_block_threshold_multi_kernel<T, 4, 2, 2, false>,
                                route_block_threshold_multi_kernel<T, 4, 2, 2, true>, 4>(kp, stream, pdl);
  if (pair_warps == 4 && groups == 4)
    return launch_block_per_row<route_block_threshold_multi_kernel<T, 4, 2, 4, false>,
                                route_block_threshold_multi_kernel<T, 4, 2, 4, true>, 4>(kp, stream, pdl);
  if (pair_warps != 0) return cudaErrorInvalidValue;  // the tier table gives 8 x 1, 4 x 2, 4 x 4 or 0
  return with_block_row_warps(kp.num_experts, [&](auto w) {
    constexpr int W = decltype(w)::value;
    return launch_block_per_row<route_block_threshold_kernel<T, W, false>, route_block_threshold_kernel<T, W, true>,
                                W>(kp, stream, pdl);
  });
}

template <typename T>
cudaError_t launch_split_row(const KernelParams& kp, cudaStream_t stream, bool pdl) {
  const int E = kp.num_experts;
  if (E <= 64) return launch_split_row_tier<T, 1>(kp, stream, pdl);
  if (E <= 128) return launch_split_row_tier<T, 2>(kp, stream, pdl);
  if (E <= 256) return launch_split_row_tier<T, 4>(kp, stream, pdl);
  return launch_split_row_tier<T, 8>(kp, stream, pdl);
}

template <typename T>
cudaError_t launch_shared_path(const KernelParams& kp, cudaStream_t stream, bool pdl) {
  const std::size_t smem = static_cast<std::size_t>(kp.num_experts) * (sizeof(std::uint64_t) + sizeof(float));
  const cudaError_t err = allow_dynamic_smem<route_shared_kernel<T>>(smem, sizeof(BlockScratch));
  if (err != cudaSuccess) return err;
  return launch_kernel(route_shared_kernel<T>, grid_for(kp.num_tokens), smem, stream, pdl, kp);
}

// Row-per-thread grids held below what the registers allow, by a shared
// memory request sized to a carveout (held_launch_smem, which leaves the
// kernel as much L1 as the hold allows), or 0 for none. Only the sigmoid
// kernels of 16-bit logits are held: at 95-96 registers ten blocks of
// theirs fit an SM where the others' 108-128 fit eight.
//  - One lane per row: eight blocks per SM. H200, A/B of two rounds against
//    main (b712971's kernels; 2026-12-03, 65536 rows): bf16 sigmoid E = 64
//    / 128 0.94-0.96x (E = 64 k = 8 1.015x); unheld, the same kernels took
//    1.10-1.16x (session 29).
//  - Two or four lanes per row on grids of two to ten blocks per SM (one
//    wave of these kernels): ceil(blocks / SMs), so that no SM runs more
//    than its share. Same A/B, 16384 rows: E = 320 k = 1 / 8 1.04x and E =
//    192 k = 1 / 4 1.10-1.14x, where unheld these cells took 1.12-1.23x
//    (session 29).
//    Held to eight on bigger grids: 65536 rows E = 192 / 320 1.04-1.07x the
//    time of unheld (candidates B and C of the same A/B), so those are not.
// Holding the fp32 and softmax kernels, whose registers already allow eight
// blocks, to min(8, ceil(blocks / SMs)) was even (within 2%, candidate C).
inline bool thread_row_kernel_held(int logit_bytes, bool softmax) { return logit_bytes == 2 && !softmax; }

inline int thread_row_blocks_per_sm_cap(int logit_bytes, bool softmax, int lanes_per_row, long long blocks,
                                        int sms) {
  if (!thread_row_kernel_held(logit_bytes, softmax)) return 0;
  if (lanes_per_row == 1) return 8;
  const long long per_sm = (blocks + sms - 1) / sms;
  return blocks > sms && per_sm <= 10 ? static_cast<int>(per_sm) : 0;
}

// The row-per-thread grid: 64 / G rows a block.
inline unsigned thread_row_grid(std::int64_t rows, int lanes_per_row) {
  const std::int64_t rows_per_block = kThreadRowBlockThreads / lanes_per_row;
  return grid_for((rows + rows_per_block - 1) / rows_per_block);
}

template <typename T, int K, int G>
cudaError_t launch_thread_row_tier(const KernelParams& kp, cudaStream_t stream, bool pdl) {
  const std::size_t smem = thread_row_smem_bytes<T>(kp.num_experts, G, kThreadRowBiasShared<T, K, G>);
  const unsigned blocks = thread_row_grid(kp.num_tokens, G);
  const auto launch = [&](auto kernel) {
    constexpr auto kKernel = decltype(kernel)::value;
    LaunchSmem held{smem, -1};
    if (thread_row_kernel_held(sizeof(T), kp.softmax)) {  // the device queries only where a hold can apply
      int device = 0, sms = 0;
      if (current_device_sms(device, sms)) {
        const int cap = thread_row_blocks_per_sm_cap(sizeof(T), kp.softmax, G, blocks, sms);
        if (cap > 0) held = held_launch_smem_on<kKernel>(device, cap, smem);
      }
    }
    if (held.carveout_percent < 0) {
      const cudaError_t err = allow_dynamic_smem<kKernel>(smem, 0);
      if (err != cudaSuccess) return err;
    }
    return launch_kernel(kKernel, blocks, held.dynamic_bytes, stream, pdl, kp, kThreadRowBlockThreads,
                         held.carveout_percent);
  };
  if (kp.softmax) return launch(KernelTag<route_thread_row_kernel<T, K, G, true>>{});
  return launch(KernelTag<route_thread_row_kernel<T, K, G, false>>{});
}

template <typename T, int G>
cudaError_t launch_thread_row_lanes(const KernelParams& kp, cudaStream_t stream, bool pdl) {
  if (kp.topk == 1) return launch_thread_row_tier<T, 1, G>(kp, stream, pdl);
  if (kp.topk <= 4) return launch_thread_row_tier<T, 4, G>(kp, stream, pdl);
  return launch_thread_row_tier<T, 8, G>(kp, stream, pdl);
}

// The caller has checked thread_row_unsupported, and `lanes` (1, 2 or 4,
// thread_row_launch_lanes in routing_tier_table.cuh) against E. K tiers:
// the sorted list costs K compares per listed expert.
template <typename T>
cudaError_t launch_thread_row(const KernelParams& kp, cudaStream_t stream, bool pdl, int lanes) {
  switch (lanes) {
    case 4: return launch_thread_row_lanes<T, 4>(kp, stream, pdl);
    case 2: return launch_thread_row_lanes<T, 2>(kp, stream, pdl);
    default: return launch_thread_row_lanes<T, 1>(kp, stream, pdl);
  }
}

// Filter path: rows per warp task. A task's rows are filtered one after
// another and ranked one per lane, so more rows per task make phase B's
// lanes busier, and fewer make more tasks to spread over the SMs: R = T /
// 2048 within [4, 16]. Measured on the H200 at 65536 rows (E = 256-512):
// 16 rows 0.80-0.85x the time of 32; at 8192 rows 4 rows 0.55-0.6x of 16.
inline int filter_rows_for(std::int64_t rows, int requested) {
  if (requested > 0) return requested;
  const std::int64_t r = rows / 2048;
  return static_cast<int>(r < 4 ? 4 : (r > kFilterMaxRows ? kFilterMaxRows : r));
}

template <typename T, int P, int K, bool kFull>
cudaError_t launch_filter_tier(const KernelParams& kp, cudaStream_t stream, bool pdl) {
  constexpr int kVec = register_tier_vector<T, P>();
  const std::int64_t tasks = (kp.num_tokens + kp.filter_rows - 1) / kp.filter_rows;
  const unsigned blocks = grid_for((tasks + kFilterWarps - 1) / kFilterWarps);
  if (kp.softmax)
    return launch_kernel(route_filter_kernel<T, P, kVec, K, true, kFull>, blocks, 0, stream, pdl, kp,
                         kFilterBlockThreads);
  return launch_kernel(route_filter_kernel<T, P, kVec, K, false, kFull>, blocks, 0, stream, pdl, kp,
                       kFilterBlockThreads);
}

template <typename T, int P, bool kFull>
cudaError_t launch_filter_lists(const KernelParams& kp, cudaStream_t stream, bool pdl) {
  if (kp.topk == 1) return launch_filter_tier<T, P, 1, kFull>(kp, stream, pdl);
  if (kp.topk <= 4) return launch_filter_tier<T, P, 4, kFull>(kp, stream, pdl);
  return launch_filter_tier<T, P, 8, kFull>(kp, stream, pdl);
}

template <typename T, int P>
cudaError_t launch_filter_tier_of(const KernelParams& kp, cudaStream_t stream, bool pdl) {
  if (kp.num_experts == 32 * P) return launch_filter_lists<T, P, true>(kp, stream, pdl);
  if constexpr (P > 2) return launch_filter_lists<T, P, false>(kp, stream, pdl);
  return cudaErrorInvalidValue;  // unreachable: E = 64 is the only multiple of 32 in [64, 64]
}

// The caller has checked filter_unsupported (E a multiple of 32 in
// [64, 512], k <= 8). Tiers: the fewest experts per lane that hold E.
template <typename T>
cudaError_t launch_filter(const KernelParams& kp_in, cudaStream_t stream, bool pdl, int requested_rows) {
  KernelParams kp = kp_in;
  kp.filter_rows = filter_rows_for(kp.num_tokens, requested_rows);
  const int E = kp.num_experts;
  if (E <= 64) return launch_filter_tier_of<T, 2>(kp, stream, pdl);
  if (E <= 128) return launch_filter_tier_of<T, 4>(kp, stream, pdl);
  if (E <= 256) return launch_filter_tier_of<T, 8>(kp, stream, pdl);
  if (E <= 384) return launch_filter_tier_of<T, 12>(kp, stream, pdl);
  return launch_filter_tier_of<T, 16>(kp, stream, pdl);
}

}  // namespace musespark::cuda

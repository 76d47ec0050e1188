// The CUDA router kernel of SPEC section 1: parameters, tiers and launch.
//
// Seven kernel shapes share the per-element arithmetic of routing_math.h
// (routing_tier_table.cuh says which takes a call; `musespark path` prints
// it):
//  * the register path (E <= 512): a group of G lanes owns one row, each lane
//    holds P experts in registers; top-k is k rounds of a group-wide max over
//    64-bit selection keys;
//  * the block-threshold path (few rows: up to 256, 64 < E <= 512, k in
//    [2, 8], the cells routing_tier_table.cuh gives it): a block of E / 32
//    warps per row, one expert per thread; the experts with fewer than k
//    warp maxima above them are the candidates, ranked in one warp;
//  * the block-rank path (few rows, 64 < E <= 128 with k > 1 where the
//    block-threshold path does not run, 128 < E <= 256 with k > 8, sigmoid
//    k = 1 for E in (256, 512] up to 16 rows): the same block, but each
//    warp ranks its experts by shuffles and the warps' lists are ranked
//    through shared memory;
//  * the split-row path (few rows, 128 < E <= 512 where neither block path
//    runs): a block of E / 64 warps per row, each warp's top-k merged by a
//    rank or by rounds;
//  * the shared-memory path (512 < E <= kSharedPathMaxExperts): one block
//    per row, scores staged in shared memory, block-wide rounds;
//  * the row-per-thread path (large batches, E % 16 == 0, E <= 512, k <= 8):
//    one to four lanes per row, a threshold from per-bucket maxima and exact
//    sorted lists of the experts that reach it;
//  * the filter path (large batches, E a multiple of 32 in [64, 512], k <= 8):
//    a warp filters its rows' candidates from estimated scores, one row at
//    a time, then each lane ranks one row's candidates by exact scores.
// The register and split-row kernels are compiled once per normalization,
// and the E <= 32 tier of one warp per row (k >= 5) and the tiers that
// share a warp between rows up to E = 32 (k >= 4 at E <= 16, k >= 2 on two
// lanes of 4, k >= 8 above 16 experts) have kernels of their own that rank
// rows: time follows the code a kernel carries (docs/performance_log.md).
// Selection keys are unique and the softmax sum is fixed point, so which
// path, tier, kernel or vector width runs never changes a bit of the result.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "musespark/routing_params.h"

namespace musespark::cuda {

// Device-side copy of one call, scalars already rounded to fp32.
struct KernelParams {
  const void* logits;          // [T, E] logits, element strides below
  std::int64_t logits_row_stride;
  std::int64_t logits_col_stride;
  const float* bias;           // [E] fp32, contiguous
  const bool* is_padding;      // [T] with padding_stride, or nullptr
  std::int64_t padding_stride;
  float* weights;              // [>=T, >=k] fp32
  std::int64_t weights_row_stride;
  std::int64_t weights_col_stride;
  void* ids;                   // [>=T, >=k] int32 or int64
  std::int64_t ids_row_stride;
  std::int64_t ids_col_stride;
  std::int64_t num_tokens;     // T
  std::int32_t num_experts;    // E
  std::int32_t topk;           // k
  float route_scale;
  float multiplier;            // 1 without a multiplier (apply_multiplier_unconditional relies on it)
  float eps;                   // used when has_eps
  bool has_multiplier;
  bool has_eps;
  bool softmax;                // false: sigmoid
  bool ids_int64;
  bool threshold_select;       // register path, G = 32: try threshold selection first
  bool rank_select;            // launch only: the ranking kernels of the E <= 32 tiers (off for forced rounds)
  bool estimate_select;        // launch only: k <= 8 from estimated scores on full G = 32 tiers (off for forced rounds)
  std::int32_t filter_rows;    // filter path: rows per warp task (1-32), set by its launch
  bool slots_vec4;             // weights and int32 ids contiguous along k, every row 16-byte aligned
  bool trigger_first;          // launch only: PDL trigger before the wait (pdl_trigger_early), set by launch_kernel
};

struct LaunchOptions {
  // Programmatic dependent launch on sm_90+: the kernel's launch overlaps the
  // previous kernel's tail and waits (griddepcontrol.wait) before reading.
  bool enable_pdl = true;
  // Forces a path, for tests that prove the paths agree: 0 = automatic,
  // 1 = register path (E <= 512), 2 = shared-memory path, 3 = register path
  // with scalar loads even when vector loads are possible, 4 = split-row
  // path (E <= 512), 5 = row-per-thread path (thread_row_unsupported says
  // when it cannot run), 6 = block-rank path (E <= 512), 7 = filter path
  // (filter_unsupported says when it cannot run), 8 = block-threshold path
  // (E <= 512).
  int force_path = 0;
  // Filter path: rows per warp task (1-16); 0 lets the launch choose. For
  // tuning.
  int filter_rows = 0;
  // Row-per-thread path: lanes per row (1, 2 or 4; num_experts a multiple
  // of 16 times it, checked whatever the path); 0 lets the launch choose
  // (thread_row_launch_lanes in routing_tier_table.cuh). For tuning.
  int thread_row_lanes = 0;
  // Register path: select every row by k group-wide rounds from exact
  // scores, never by the threshold filter, the ranking or the selection from
  // estimated scores, for tests that prove the selections agree.
  bool force_round_selection = false;
  // Register path: try threshold selection on every row count where the
  // tier has it (one warp per row, 8+ experts per lane), for tuning where it
  // starts to pay. Ignored when force_round_selection is set.
  bool force_threshold_selection = false;
};

// A tier of the register path: `lanes` lanes own a row, each holding
// `experts_per_lane` experts in registers (E <= lanes * experts_per_lane),
// in a build that fits `min_blocks` blocks of 256 threads per SM.
struct RegisterTier {
  int lanes;
  int experts_per_lane;
  int min_blocks;
  constexpr bool operator==(const RegisterTier& o) const {
    return lanes == o.lanes && experts_per_lane == o.experts_per_lane && min_blocks == o.min_blocks;
  }
};

// The kernel's paths, numbered as LaunchOptions::force_path numbers them.
enum class RoutingPath : int {
  kRegister = 1,
  kShared = 2,
  kRegisterScalarLoads = 3,
  kSplitRow = 4,
  kThreadRow = 5,
  kBlockRank = 6,
  kFilter = 7,
  kBlockThreshold = 8,
};

// "register", "shared", "register-scalar-loads", "split-row",
// "row-per-thread", "block-rank", "filter" or "block-threshold".
const char* routing_path_name(RoutingPath path);

constexpr std::int64_t kRegisterPathMaxExperts = 512;
constexpr std::int64_t kSharedPathMaxExperts = 16384;
constexpr std::int64_t kMaxTopK = 64;
constexpr int kFilterMaxTopK = 8;   // filter path: the sorted list a lane keeps
constexpr int kEstimateMaxTopK = 8;  // register path, selection from estimated scores: k rounds unrolled
constexpr int kFilterMaxRows = 16;  // filter path: rows of a warp task, one per lane when ranked

// Why the row-per-thread path cannot take `kp` (logits of `logit_bytes`
// each), or nullptr when it can.
const char* thread_row_unsupported(const KernelParams& kp, int logit_bytes);
const char* thread_row_unsupported(const RoutingParams& p);

// Why the filter path cannot take `kp`, or nullptr when it can.
const char* filter_unsupported(const KernelParams& kp, int logit_bytes);
const char* filter_unsupported(const RoutingParams& p);

// Validates `p` (device kCuda), then launches on `stream`. Allocation-free
// and free of host synchronization, so it can be captured in a CUDA graph.
// Returns the CUDA error of the launch; argument errors throw ArgumentError.
cudaError_t launch_routing(const RoutingParams& p, cudaStream_t stream,
                           const LaunchOptions& options = {});

// The path launch_routing takes for `p` with `options`: the forced one, or
// the tier table's choice. Validates as launch_routing does (the same
// ArgumentError for the same bad call) and makes no CUDA call, so it
// answers without a device: for benchmark labels and the tier table's
// tests.
RoutingPath chosen_path(const RoutingParams& p, const LaunchOptions& options = {});

// Whether the tier table asks the register path to select `p` from
// estimated scores (estimate_select_preferred, off under
// force_round_selection). The launch then also needs a one-warp-per-row
// tier (E = 128 below 4096 rows, E in (128, 512]; k = 1 from 8 experts per
// lane) and vector loads. Host only, like chosen_path.
bool estimated_selection_preferred(const RoutingParams& p, const LaunchOptions& options = {});

// Whether the tier table asks the register path to try threshold selection
// first (threshold_select_preferred: k >= 2 at E > 128 from 1024 rows,
// k = 2-3 earlier; forced on or off by the options). It applies where the
// register path runs a warp-per-row tier and the estimated selection does
// not take the call. Host only, like chosen_path.
bool threshold_selection_preferred(const RoutingParams& p, const LaunchOptions& options = {});

// The warps of the block-threshold path's two-experts-per-thread kernel
// where `p` runs that path (chosen or forced) on it: 8 or 4; 0 where it
// runs one expert per thread, or another path (routing_tier_table.cuh,
// block_threshold_pair_warps_preferred). Host only, like chosen_path.
int block_threshold_pair_warps(const RoutingParams& p, const LaunchOptions& options = {});

// The groups of lanes each warp of that kernel takes a maximum over: 1, 2
// or 4; 0 where block_threshold_pair_warps is 0 (routing_tier_table.cuh,
// block_threshold_pair_groups_preferred). Host only.
int block_threshold_pair_groups(const RoutingParams& p, const LaunchOptions& options = {});

// The register path's tier for `p` (routing_tier_table.cuh,
// choose_register_tier), where chosen_path says the register path runs.
// Host only, like chosen_path.
RegisterTier register_tier(const RoutingParams& p, const LaunchOptions& options = {});

// Whether the launch has a build of `tier` (routing_tier_table.cuh,
// kRegisterTiers); it refuses any other. Host only.
bool register_tier_built(const RegisterTier& tier);

// Whether that tier ranks `p`'s rows instead of selecting them in k rounds
// (the ranking kernels of the E <= 32 tiers; off under
// force_round_selection). Host only, like chosen_path.
bool register_rows_ranked(const RoutingParams& p, const LaunchOptions& options = {});

// The blocks per SM to which the register path's launch of `p` holds its
// grid on a GPU of `sm_count` SMs, or 0 where it sets no cap
// (register_blocks_per_sm_cap in routing_launch.cuh: grids of one to seven
// blocks per SM, three or more below 16 experts per lane). Host only, like
// chosen_path.
int register_blocks_per_sm(const RoutingParams& p, int sm_count, const LaunchOptions& options = {});

// The blocks per SM to which the row-per-thread launch of `p` holds its
// grid on a GPU of `sm_count` SMs, or 0 where it sets no hold
// (thread_row_blocks_per_sm_cap in routing_launch.cuh: the sigmoid kernels
// of 16-bit logits). Host only, like chosen_path.
int thread_row_blocks_per_sm(const RoutingParams& p, int sm_count, const LaunchOptions& options = {});

// The lanes that own a row where the row-per-thread path takes `p` (1, 2
// or 4: thread_row_launch_lanes in routing_tier_table.cuh), or 0 where
// another path does. Host only, like chosen_path.
int thread_row_lanes(const RoutingParams& p, const LaunchOptions& options = {});

// Whether the lanes that own whole rows (the row-per-thread path, the
// filter path's ranking) write `p`'s slots by 16- and 8-byte stores: ids
// int32, weights and ids contiguous along k, every row's start 16-byte
// aligned (base and row stride); otherwise one store per slot. Host only,
// like chosen_path.
bool slot_vector_stores(const RoutingParams& p);

// Per-dtype entry points, one translation unit each; `pdl` is already
// resolved against the device.
cudaError_t launch_routing_fp32(const KernelParams& kp, cudaStream_t stream,
                                const LaunchOptions& options, bool pdl);
cudaError_t launch_routing_bf16(const KernelParams& kp, cudaStream_t stream,
                                const LaunchOptions& options, bool pdl);
cudaError_t launch_routing_fp16(const KernelParams& kp, cudaStream_t stream,
                                const LaunchOptions& options, bool pdl);

}  // namespace musespark::cuda

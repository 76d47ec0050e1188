// The tier table of the router kernel: which path and tier each call
// takes, with the measurements behind every threshold (H200, same-call
// A/Bs; docs/performance_log.md has the tables). Its dispatch,
// launch_routing_typed_impl, is built once per logits dtype by
// routing_kernel_{fp32,bf16,fp16}.cu and calls the launches of
// routing_path_instances.h, whose kernels cuda/instances/ builds;
// routing_kernel.cuh has the kernel's interface.
#pragma once

#include <cstdint>
#include <utility>

#include "routing_launch.cuh"
#include "routing_path_instances.h"
#include "thread_row_lane_bands.h"

namespace musespark::cuda {

// Where the block-rank path runs (one block per row, one expert per
// thread, no selection rounds in the row's chain). Measured on the H200
// against the tier table before it, anchor grid, T = 1-128
// (docs/performance_log.md): k = 8 at E = 128 0.77-0.85x the time (register
// path, 8 rounds) and at E = 256 0.81-0.92x (threshold selection); k = 4 at
// E = 128 0.91-0.99x. It lost elsewhere: E = 64 (one warp per row, two
// experts per lane: 1.0-1.2x), k = 1 (1.0-1.18x, softmax most: its two
// block-wide reductions), E = 256 k = 4 (even) and E = 512 (k = 4 1.18-1.25x:
// 16 warps share four schedulers); at 1024 rows 1.2-1.8x (a block per row
// issues more than a warp per row, and issue bounds there).
// E in (128, 512] with k in [2, 8] has since gone to the block-threshold
// path, checked first (block_threshold_preferred).
constexpr std::int64_t kBlockRankMaxRows = 128;

// Past kBlockRankMaxRows and up to this many rows (129-256, "medium"), each
// block path keeps the cells where it still won, forced against the tier
// table that sent them all to the register path (H200, 2026-12-01, T =
// 256, E = 128 / 256 / 512, k = 1 / 2 / 4 / 8, both dtypes and
// normalizations, `gpu_run.sh paths`, PATHS_FORCE="0 1 4 6 8"): the
// split-row path E = 512 k <= 4 0.78-0.94x the time and E = 256 k = 1
// 0.94-0.97x; the block-threshold path E = 256 k = 2-8 0.88-0.95x (softmax
// k = 2 lost, 1.03x fp32), E = 512 k = 8 sigmoid 0.90-0.97x (softmax
// 1.03-1.08x), E = 128 sigmoid k = 4 0.92-0.96x (k = 2 even); the
// block-rank path E = 128 k = 8 0.89-0.94x. The A/B of these rules against
// the table before them (T = 160 and 256, the same axes, two rounds in one
// call): 0.933x / 0.942x geomean over the 96 cells, 30-33 faster by > 3%
// per row count; E = 128 k = 2 sigmoid on the block-threshold path lost
// there (1.05-1.06x bf16) and went back to the register path. Forced at
// 384 and 512 rows (one round, not yet in the table): at 384 rows the
// split-row path took 0.76-0.90x the time at E = 512 k <= 2 and 0.93x at
// E = 256 k = 1; at 512 rows no path won by more than 5-6%.
constexpr std::int64_t kMediumRowsMax = 256;

// Past kMediumRowsMax, the wins of the forced round at 384 and 512 rows
// above: the split-row path for E > 256 with k <= 2 up to 384 rows and for
// E in (128, 256] with k = 1 up to 512; the block-threshold path for E in
// (64, 128], fp32 sigmoid, k = 3-4, up to 512. A/B against the table without
// them (H200, 2026-12-01, T = 320 / 384 / 512, E = 128 / 256 / 512, k = 1 /
// 2 / 4, both dtypes and normalizations, two rounds in one call): E = 512
// k <= 2 0.76-0.83x the time with sigmoid and 0.87-0.93x with softmax; E =
// 256 k = 1 sigmoid 0.92-0.97x, softmax 0.98-1.01x; E = 128 k = 4 0.91-0.95x
// (k = 3: block_threshold_preferred); no cell slower by more than 3%. Past
// these limits they lost (a second A/B, T = 448 / 512 / 768 at E = 512
// k <= 2 and E = 256 k = 1: up to 1.25x; forced at 640-2048 rows, the
// split-row path lost or tied everywhere).
constexpr std::int64_t kSplitRowSmallKMaxRows = 384;
constexpr std::int64_t kSplitRowTop1MaxRows = 512;
constexpr std::int64_t kBlockThresholdWideMaxRows = 512;

inline bool medium_rows(const KernelParams& kp) {
  return kp.num_tokens > kBlockRankMaxRows && kp.num_tokens <= kMediumRowsMax;
}

// Whether k exceeds the number of 32-expert groups that hold experts,
// ceil(E / 32): the block-threshold path declines those calls (every expert
// would be a candidate; block_threshold_preferred). For E > 128 the
// split-row path takes them with sigmoid up to kMediumRowsMax rows and with
// softmax at medium rows; softmax at T <= 128 stays on the block-rank path
// (split_row_preferred declines E <= 128 itself). Against the
// block-rank path (T <= 128) and the register path (160 / 256 rows), E =
// 160 / 192 / 224, k = 6 / 8, both dtypes, two rounds (H200, 2026-12-01):
// sigmoid 0.88-0.97x the time at T <= 128, sigmoid and softmax 0.91-0.97x
// at 160-256 rows; softmax at T <= 128 0.97-1.06x (fp32 lost), so left.
// Up to 128 rows the block-threshold path's 4-warp form has since taken
// most of these calls (half_warp_groups_cover_k).
inline bool k_exceeds_groups(const KernelParams& kp) { return kp.topk > (kp.num_experts + 31) / 32; }

// Where the block-threshold path's 4-warp two-experts form takes k above
// ceil(E / 32) (k_exceeds_groups): at E in (128, 256] all 8 of its
// half-warp groups hold experts (route_block_threshold_multi_kernel), so k
// up to 8 is a threshold selection there. H100, A/B against the table
// before it (two rounds, T = 1 / 16 / 128, E = 160 / 192 / 224 / 256, k =
// 2 / 6 / 8, both dtypes and normalizations): E = 160 k = 6-8 0.74-0.89x
// the time (2.07-2.39 us -> 1.56-2.00), E = 192 k = 8 0.74-0.97x, E = 224
// k = 8 sigmoid 0.93-0.97x; E = 224 k = 8 softmax lost then (1.00-1.05x:
// its rows had 42-46 candidates, each then ranked by every thread) and is
// taken here since k = 8 splits the warps into quarter-warps
// (block_threshold_pair_groups_preferred): H100, three rounds against the
// block-rank path, T = 1 / 16 / 128, both dtypes, 0.78-0.85x the time
// (2.14-2.43 us -> 1.74-2.00). Up to kBlockRankMaxRows
// rows, where it was measured. four_warp_pairs_fit: the shapes whose 8
// half-warp groups all hold experts and number at least k, the form's
// domain (block_threshold_pair_warps_preferred).
inline bool four_warp_pairs_fit(const KernelParams& kp) {
  return kp.num_experts > 128 && kp.num_experts <= 256 && kp.topk <= 8;
}

inline bool half_warp_groups_cover_k(const KernelParams& kp) {
  return four_warp_pairs_fit(kp) && kp.num_tokens <= kBlockRankMaxRows;
}

inline bool block_rank_preferred(const KernelParams& kp) {
  const int E = kp.num_experts;
  if (E > 128 && k_exceeds_groups(kp) && !kp.softmax) return false;  // the split-row path's (above)
  // E in (256, 512], k = 1, sigmoid, up to 16 rows: 0.945-0.977x the
  // split-row path's time in both rounds of an A/B (H200, 2026-11-30);
  // about even at 128 rows, softmax 1.16x.
  if (E > 256 && E <= kRegisterPathMaxExperts && kp.topk == 1 && !kp.softmax) return kp.num_tokens <= 16;
  if (medium_rows(kp)) return E > 64 && E <= 128 && kp.topk > 4 && kp.topk <= 8;
  // E in (64, 128] softmax k = 2 goes to the register path: 0.89-0.94x the
  // time with 16-bit logits at T = 1-128, fp32 0.93-1.02x (the decode sweep
  // under kMediumRowsMax; its A/B 0.90-0.97x bf16, 0.94-1.02x fp32).
  const bool small_k_ok = E <= 128 && kp.topk > 1 && !(kp.softmax && kp.topk == 2);
  return E > 64 && E <= 256 && kp.num_tokens <= kBlockRankMaxRows && (kp.topk > 4 || small_k_ok);
}

// Where the block-threshold path runs (checked before the block-rank
// path): E in (128, 512], k in [2, 8], up to kBlockRankMaxRows rows; E in
// (64, 128] with sigmoid and k in [2, 4]; at medium rows (kMediumRowsMax)
// fewer cells.
// Forced against the tier table before it on the H200 (2026-11-30,
// T = 1 and 128, both dtypes and normalizations, E = 128 / 256 / 512,
// k = 1 / 4 / 8): E = 512 k = 8 0.86-0.88x the time with sigmoid and
// 0.92-0.94x with softmax (the split-row path before), E = 256 k = 8
// 0.91-0.92x sigmoid and 0.97-0.99x softmax (the block-rank path before).
// It lost at k = 1 (1.4-1.6x: its steps after the scores take about
// 0.4 us more than one round over the warp winners) and at E = 128 k = 8,
// where k > W = 4 makes every expert a candidate (1.7-2x).
// k in [2, 4] came with the candidates counted against the warp maxima
// (no tau, routing_block_threshold_path.cuh): forced against the split-row
// path (H200, 2026-12-01, T = 1, 16, 64, 128, fp32 and bf16, E = 192, 256,
// 384, 512; docs/performance_log.md) it took 0.86-0.98x the time with sigmoid
// and 0.91-1.00x with softmax up to E = 384; with softmax at E = 512 it
// lost (1.02-1.12x: its two block barriers for the sum at W = 16).
// E in (64, 128] (W = 4 warps) with sigmoid and k in [2, 4], forced
// against the block-rank path (H200, 2026-12-01, session 15's sweep):
// 0.91-0.97x the time; softmax 0.96-1.02x (its block-wide sum stays in the
// chain), k > W 1.4-1.7x (every expert is a candidate), E = 64 lost.
inline bool block_threshold_preferred(const KernelParams& kp, int logit_bytes) {
  const int E = kp.num_experts;
  if (E <= 64 || E > kRegisterPathMaxExperts) return false;
  // k above the number of 32-expert groups that hold experts (E = 160-224
  // at k = 6-8, E = 65-96 at k = 3-4) makes every expert a candidate, and
  // the block then ranks all E of them: E = 192 k = 8 took 4.2-5.2 us at one
  // row (H200, 2026-12-01), where the other cells of its size take 2.
  if (k_exceeds_groups(kp) && !half_warp_groups_cover_k(kp)) return false;
  // Past 128 rows E <= 128 keeps k = 4 (and k = 3 with fp32 logits): k = 2
  // lost in the A/B (kMediumRowsMax); k = 3 fp32 sigmoid took 0.92-0.97x
  // the register path's time at 192-512 rows (H200, A/B of two rounds,
  // 2026-12-01), bf16 0.975-0.997x forced (one round), softmax none.
  const bool e128_wide_k = kp.topk == 4 || (kp.topk == 3 && logit_bytes == 4);
  if (kp.num_tokens > kMediumRowsMax)
    return kp.num_tokens <= kBlockThresholdWideMaxRows && E <= 128 && !kp.softmax && e128_wide_k && logit_bytes == 4;
  if (E <= 128) return !kp.softmax && (medium_rows(kp) ? e128_wide_k : kp.topk >= 2 && kp.topk <= 4);
  if (medium_rows(kp)) {  // kMediumRowsMax has the measurements
    if (kp.topk > 8) return false;
    if (E > 256) return !kp.softmax && kp.topk > 4;
    return kp.topk >= (kp.softmax ? 4 : 2);
  }
  // k in [2, 4], softmax above E = 384 included: the pair kernel. On the
  // H100 (the speed issue's GPU; 2026-12-05, forced paths, two rounds, T =
  // 1 / 16 / 128, E = 512) it took 0.81-0.88x the split-row path's time
  // with bf16 logits at k = 4 and 0.93-0.95x at k = 2 with both dtypes. On
  // the H200 these cells had gone the other way (session 22: bf16 k = 3-4
  // 1.01-1.05x, k = 2 lost with both dtypes; fp32 k = 3-4 0.96-1.00x, the
  // only ones taken then), so the H100 decides.
  return kp.topk >= 2 && kp.topk <= 8;
}

// Where the block-threshold path runs two experts per thread
// (route_block_threshold_multi_kernel, 8 warps): E in (384, 512], k <= 8,
// whatever the logits' type. H200, against 16 warps of one expert each
// (A/B of two rounds, T = 1 / 16 / 128 / 256, E = 448 / 512, k = 2 / 4 /
// 8, both dtypes and normalizations):
// bf16 sigmoid k = 2-4 0.86-0.92x the time, softmax k = 8 0.92-0.97x,
// sigmoid k = 8 at 256 rows 0.84-0.92x, fp32 sigmoid k = 2-4 0.96-0.99x;
// fp32 sigmoid k = 8 up to 128 rows 1.00-1.05x, so that cell kept 16 warps
// until the H100 (the speed issue's GPU) said otherwise: candidates, three
// rounds, T = 1 / 16 / 64 / 128, E = 448 / 512, k = 5 / 6 / 8, fp32
// sigmoid, 0.91-0.98x the time on every cell (E = 512 k = 8 at 128 rows
// 1.99-2.03 -> 1.85-1.88 us, at one row 1.76-1.79 -> 1.68-1.71; session
// 47, docs/performance_log.md). At E = 320-384 (a quarter or more of the
// pairs half empty) it lost up to 1.17x.
inline bool block_threshold_pairs_preferred(const KernelParams& kp) {
  return kp.num_experts > 384 && kp.num_experts <= 512 && kp.topk <= 8;
}

// The warps of the block-threshold path's two-experts-per-thread kernel
// (route_block_threshold_multi_kernel), 0 for its one-expert kernel: 8
// where block_threshold_pairs_preferred says, 4 for 16-bit logits at E in
// (128, 256] with k <= 8 (the kernel's 8 groups), and for fp32 there where
// k exceeds the one-expert kernel's groups (half_warp_groups_cover_k). H100, against one
// expert on each of 8 warps (candidates, three rounds, T = 1 / 16 / 128 /
// 256, E = 160 / 256, k = 2 / 4 / 8, both normalizations): bf16
// 0.91-0.99x the time (0.91-0.94x at 256 rows, sigmoid E = 256 k = 2 at
// 16 rows 1.72 -> 1.62 us); fp32 0.98-1.03x, so fp32 keeps one expert a
// thread where the warps number at least k. fp16 logits follow bf16 (not
// timed).
inline int block_threshold_pair_warps_preferred(const KernelParams& kp, int logit_bytes) {
  if (block_threshold_pairs_preferred(kp)) return 8;
  const bool narrow_pairs = four_warp_pairs_fit(kp) && (logit_bytes != 4 || k_exceeds_groups(kp));
  return narrow_pairs ? 4 : 0;
}

// The groups of lanes each warp of that kernel splits into for step 2
// (route_block_threshold_multi_kernel's G): a warp on 8 warps; on 4 warps
// half-warps, but quarter-warps at k = 8 above ceil(E / 32) (E in (128,
// 224]). There k equals the 8 half-warp maxima, so tau is their least and
// the benchmark's rows have 14-61 candidates (`render_report.py candidates
// --warps 4 --per-thread 2`; over 32 is every thread's ranking, not warp
// 0's); the 16 quarter-warp maxima make tau their 8th largest and the
// same rows 9-16 candidates. The cost: two more redux.sync and 16 maxima
// to compare instead of 8. k <= 7 leaves at most 12 candidates on
// half-warps already. H100, three rounds against half-warps (T = 1 / 16 /
// 128, E = 160 / 192 / 224, k = 8, both dtypes and normalizations): E =
// 224 sigmoid 0.86-0.88x the time, E = 192 at 16-128 rows 0.89-0.95x,
// softmax at E = 160 and at E = 192 one row 0.95-0.99x; sigmoid there,
// whose half-warps left at most 32 candidates on most rows, 1.01-1.03x
// (the two more redux.sync). On 8 warps half-warps at k = 8 with sigmoid
// (8-15 candidates on the benchmark's rows against 10-41) lost: bf16 E =
// 448 / 512 1.03-1.08x the time at 1-128 rows, 1.05-1.10x at 256 (H100,
// three rounds, session 46), so 8 warps keep one group each.
inline int block_threshold_pair_groups_preferred(const KernelParams& kp, int pair_warps) {
  if (pair_warps != 4) return 1;
  return kp.topk == 8 && k_exceeds_groups(kp) ? 4 : 2;
}

// Up to this many rows, E in (128, 512] takes the split-row path where the
// block paths do not (k = 1): a block of E / 64 warps per row shortens
// the dependent chain that bounds decode. On the H200 it took 0.56-0.80x
// the register path's time at T <= 128 and 1.12-1.18x at T = 1024
// (docs/performance_log.md).
constexpr std::int64_t kSplitRowMaxRows = 128;

// Where the register path tries threshold selection first (one warp per
// row, 8 or more experts per lane): from 1024 rows it issues fewer
// instructions per row, which bounds large batches (0.80-0.86x the time at
// E = 256-512, 8192+ rows, on the H200); below that its shared-memory round
// trips lengthen the dependent chain that bounds decode, and with 2 or 4
// experts per lane (E <= 128) the ranking costs more than the rounds it
// replaces (1.05-1.3x). docs/performance_log.md has the measurements.
constexpr std::int64_t kThresholdSelectMinRows = 1024;
constexpr int kThresholdSelectMinExperts = 129;
// k = 2 (and k = 3 above 256 experts) take it from here: the estimated
// selection (k = 1, 4-8) does not apply to them. A/B against the rounds
// (H200, 2026-12-01, two rounds, T = 160-16384, E = 192-512, k = 1-3, both
// dtypes and normalizations: 0.979x / 0.973x the time over 720 cells, none
// slower by > 3% on the register path): k = 2 0.80-0.96x at 384-768 rows
// (E = 192 at 768 0.93-1.02x) and 0.90-0.94x at 160-256 rows where the
// register path runs (softmax, E <= 256); k = 3 0.79-0.98x at E = 320-512,
// 384-768 rows. k = 3 at E = 192-256 was mixed when forced (0.87-1.05x).
constexpr std::int64_t kThresholdSelectSmallKMinRows = 129;

// Where the register path selects from estimated scores
// (routing_estimate_select.cuh; its launch also needs one warp per row and
// vector loads, and a full tier at 4 experts per lane: E = 128 below 4096
// rows, E in (128, 512] on the 8-, 12- and 16-per-lane tiers, those not
// full with sigmoid only at k >= 2; the top-1 kernel from 8 per lane).
// Against exact scores on the H200 (2026-12-01: the anchor grid's A/B, and
// T = 256-4096 at E = 128-512, k = 2 / 4 / 8, both dtypes and
// normalizations, the same calls): k = 1 0.85-0.92x the time at E =
// 256-512 (T = 1024 and 8192; 1.02-1.07x at E = 128, which the launch
// leaves out), k = 4-8 0.76-0.95x at 256-8192 rows for E = 256-512; at
// E = 128 k = 8 0.81-0.93x at 256-4095 rows and k = 4 0.93-0.985x from
// 2048 rows but 1.0-1.05x at 256-1024. Left to the exact scores: k = 2
// (0.86-1.02x at 256-512 rows but 1.0-1.07x from 2048, up to 1.29x at
// E = 512) and k = 3 (not measured); E = 512 softmax k = 4 from 1024 rows
// (1.03-1.16x in five of six cells); E = 128 k = 4 below 2048 rows. k =
// 5-7 are between the measured 4 and 8. fp32 E = 512 at 2048 rows lost at
// k = 4 and 8 (1.07-1.16x) where 1024 and 4096 rows gained: the blocks'
// spread over the SMs, which register_blocks_per_sm_cap (routing_launch.cuh)
// now evens out (0.83-0.86x the time there but softmax k = 4, even).
// The tiers that are not full (E in (128, 512] but 256, 384, 512: registers
// past E hold no expert, each with its bound check) take it with sigmoid
// and k = 4-8 up to kEstimatePartialTierMaxRows (below 256 experts at any
// row count), and with k = 1 from 4096 rows (8192 on the 12-per-lane tier).
// Against the exact scores (H200, 2026-12-01, two A/Bs of two rounds, E =
// 160 / 192 / 320 / 448, T = 384-12288, k = 1 / 4 / 8, both dtypes and
// normalizations): sigmoid k = 4-8 up to 2048 rows 0.80-0.98x the time
// (E = 448 fp32 k = 4 at 768-1024 rows 1.005-1.03x), from 4096 rows E =
// 160-192 0.89-0.93x but E = 320 1.13-1.17x at 8192 in one A/B (even in the
// other) and E = 448 even; softmax up to 1.22x (fp32 E = 160-192 at 2048
// rows); k = 1 1.03-1.17x at 768-1024 rows, even at 2048, 0.85-0.98x from
// 4096 (E = 320: 1.02-1.05x at 4096, 0.92-0.97x from 8192).
constexpr std::int64_t kEstimatePartialTierMaxRows = 2048;
constexpr std::int64_t kEstimatePartialTierTop1MinRows = 4096;
constexpr std::int64_t kEstimateTwelvePerLaneTop1MinRows = 8192;  // E in (256, 384)
inline bool register_tier_full(int E) { return E == 128 || E == 256 || E == 384 || E == 512; }

inline bool estimate_select_preferred(const KernelParams& kp) {
  if (kp.topk > kEstimateMaxTopK) return false;
  if (kp.num_experts <= 128) return kp.topk > 4 || (kp.topk == 4 && kp.num_tokens >= 2048);
  if (!register_tier_full(kp.num_experts)) {
    if (kp.topk == 1)
      return kp.num_tokens >= (kp.num_experts > 256 && kp.num_experts < 384 ? kEstimateTwelvePerLaneTop1MinRows
                                                                             : kEstimatePartialTierTop1MinRows);
    return !kp.softmax && kp.topk >= 4 && (kp.num_tokens <= kEstimatePartialTierMaxRows || kp.num_experts < 256);
  }
  if (kp.topk == 1) return true;
  if (kp.topk < 4) return false;
  return !(kp.num_experts == 512 && kp.softmax && kp.topk <= 4 && kp.num_tokens >= 1024);
}

// The launch's kp.estimate_select (and cuda::estimated_selection_preferred's
// answer): the preference above, off when the rounds are forced.
inline bool estimate_select_enabled(const KernelParams& kp, const LaunchOptions& options) {
  return !options.force_round_selection && estimate_select_preferred(kp);
}

// Decode exception to the two limits above: for E in (128, 256] and k > 4
// the warp-per-row tier with threshold selection beats the split-row path
// at any row count (H200, fp32, T <= 128, k = 8: sigmoid 0.80-0.84x the
// time, softmax 0.90-0.92x; k = 4 and E = 512 are not faster, so they keep
// the split-row path; docs/performance_log.md). Up to kBlockRankMaxRows the
// block-threshold path, checked first, takes these cells with k <= 8.
inline bool decode_prefers_threshold(const KernelParams& kp) {
  return kp.num_experts >= kThresholdSelectMinExperts && kp.num_experts <= 256 && kp.topk > 4;
}

// Whether the register path tries threshold selection first (forced
// options aside): never for k = 1, where one round is a single argmax (the
// rounds took 0.88-0.97x its time at E = 192, 320 and 448 from 1024 rows in
// the A/B above; E = 256, 384 and 512 select k = 1 from estimated scores);
// else the decode exception, the small k above, or any k from
// kThresholdSelectMinRows.
inline bool threshold_select_preferred(const KernelParams& kp) {
  if (kp.num_experts < kThresholdSelectMinExperts || kp.topk == 1) return false;
  if (decode_prefers_threshold(kp) || kp.num_tokens >= kThresholdSelectMinRows) return true;
  const bool small_k = kp.topk == 2 || (kp.topk == 3 && kp.num_experts > 256);
  return small_k && kp.num_tokens >= kThresholdSelectSmallKMinRows;
}

// The launch's kp.threshold_select (and cuda::threshold_selection_preferred's
// answer): the preference above unless the rounds or the threshold are forced.
inline bool threshold_select_enabled(const KernelParams& kp, const LaunchOptions& options) {
  return !options.force_round_selection && (options.force_threshold_selection || threshold_select_preferred(kp));
}

// Where the split-row path runs (checked after the block paths): E in
// (128, 512] up to kSplitRowMaxRows rows but where decode prefers the
// threshold selection; at medium rows (kMediumRowsMax has the
// measurements) E > 256 with k <= 4 and E <= 256 with k = 1.
inline bool split_row_preferred(const KernelParams& kp) {
  const int E = kp.num_experts;
  if (E <= 128 || E > kRegisterPathMaxExperts) return false;
  if (kp.num_tokens > kMediumRowsMax)
    return E > 256 ? kp.topk <= 2 && kp.num_tokens <= kSplitRowSmallKMaxRows
                   : kp.topk == 1 && kp.num_tokens <= kSplitRowTop1MaxRows;
  if (medium_rows(kp)) return E > 256 ? kp.topk <= 4 : kp.topk == 1 || k_exceeds_groups(kp);
  return kp.num_tokens <= kSplitRowMaxRows && (!decode_prefers_threshold(kp) || (k_exceeds_groups(kp) && !kp.softmax));
}

// Where E <= 32 takes one warp per row (one expert per lane): a round of
// the selection is then two redux.sync and a shuffle, where 4-16 lanes per
// row need two shuffle trees, but a warp does 1 row instead of 8-2. Measured
// at E = 8 on the H200 against 4 lanes per row (docs/performance_log.md): T <= 16
// 0.83-1.01x the time; T = 128 k >= 4 0.90-0.97x, k = 1 1.0-1.08x; T = 1024
// k = 8 0.92-0.95x, k <= 4 1.01-1.08x. E = 16 (two device calls of the
// same day, fp32): 0.79-1.0x where the rule applies. E = 32 untimed against
// its old tier (16 lanes, 2 experts each).
inline bool small_e_prefers_warp_row(const KernelParams& kp) {
  const std::int64_t rows = kp.num_tokens;
  return kp.num_experts <= 32 &&
         (rows <= 16 || (rows <= 128 && kp.topk >= 4) || (rows <= 1024 && kp.topk > 4));
}

// Where the row-per-thread path runs by itself. It executes ~45% fewer
// instructions per row than the register path (E = 256: 444 against 806
// warp instructions under ncu), but a thread's row is one long dependent
// stream and each row keeps E 16-bit keys in shared memory, so it needs many
// rows and resident warps; 16-bit logits halve its staging. Measured on the
// H200 against the register path (docs/performance_log.md, "row-per-thread"):
//  - E <= 128 (one lane per row): sigmoid from 32768 rows 0.59-0.99x the
//    time (one cell 1.04x); softmax with 16-bit logits from 65536 rows
//    0.73-0.95x; fp32 softmax up to 1.1x.
//  - E = 256, 384 and 512, where the register tier is full (every register
//    an expert, no bound checks): 2 and 4 lanes per row win only for sigmoid
//    at E = 256 from 32768 rows with 16-bit logits or k >= 4 (0.77-0.91x;
//    fp32 k = 1 1.02-1.05x); softmax 1.05-1.65x; E = 512 0.96-1.23x; E = 384
//    0.78-1.6x, below 1 only for 16-bit sigmoid at 65536 rows (0.94x).
//  - E in (128, 512] between the full tiers, 2 or 4 lanes per row (E = 192,
//    and E = 384 before its full tier, measured): sigmoid 0.59-0.79x from
//    16384 rows (fp32 E <= 256 from 32768: 1.04x at 16384, k = 1); softmax
//    from 32768 rows 0.73-0.94x, and E > 256 with 16-bit logits from 16384
//    (0.81-0.89x); fp32 softmax at E > 256 0.92-1.03x, left to the register
//    path. E = 320 (12-per-lane tier, not full) at 8192 rows: 0.92-1.02x
//    sigmoid, 1.16-1.49x softmax.
//  - Re-swept for E <= 256 once the register path had its estimated
//    selection and softmax reductions (H200, 2026-12-01, T = 16384-65536,
//    E = 64 / 128 / 256, k = 1 / 4 / 8, both dtypes and normalizations,
//    `gpu_run.sh paths` with PATHS_FORCE="0 1 5 7"): at k = 1 the register
//    path now wins softmax with 16-bit logits at 65536 rows (0.82-0.87x
//    the time) and sigmoid at 32768 rows (0.85-0.87x fp32, 0.95-0.98x bf16);
//    fp32 softmax at 65536 rows with k >= 4 goes the other way (this path
//    0.88-0.96x the register path's time).
//  - Sigmoid re-swept after this path's kernels per normalization (session
//    30) and its tanh estimate (session 31) (H200, 2026-12-03, T = 8192-
//    65536, E = 128-512, k = 1 / 4 / 8, both dtypes, `gpu_run.sh paths`
//    with PATHS_FORCE="0 1 5 7"): this path against the table's choice
//    took 0.87x / 0.93x (bf16 / fp32) at E = 128 k = 1 and 32768 rows;
//    0.70-0.74x at E = 192 fp32 from 16384 rows; at E = 256, 16384 rows,
//    k = 4 0.87x and k = 8 0.91x / 0.97x (k = 1 1.04-1.08x), at 32768
//    rows fp32 k = 1 0.87x, and at 65536 rows bf16 k = 4 0.87x of the
//    filter path (fp32 1.01x); at E = 320 and 8192 rows 0.62-0.90x. So
//    sigmoid takes this path from those rows (E = 64 k = 1 and E = 256
//    k = 2-3 were not swept and keep their rows).
//  - Softmax, the same sweep (T = 8192-65536, E = 128 / 192 / 256 / 320):
//    E = 128 k >= 4 at 32768 rows 0.69-0.87x (k = 1 loses but for bf16 at
//    65536 rows, 0.91x); E = 192 at 16384 rows 0.65-0.84x (fp32 k = 1
//    0.95x); E = 256 k >= 4 at 32768 rows 0.78-0.90x (at 16384 fp32 loses,
//    bf16 0.94-0.96x), and at 65536 rows bf16 k = 8 0.90x of the filter
//    path (k = 4 even, fp32 1.16-1.24x); E = 320 fp32 from 16384 rows
//    0.71-0.87x (at 65536 rows 0.74-0.80x), bf16 at 8192 rows 0.82-0.92x
//    (fp32 there 0.90-1.11x).
//  - E = 64 and k = 2-3, the same sweep on 26e801c's kernels (session 32,
//    T = 8192-65536, E = 64 / 128 / 256, k = 1 / 2 / 3 / 4 / 8): this path
//    against the table's choice took, at E = 64, 0.91-0.93x with sigmoid
//    k = 1 at 32768 rows, 0.73-0.87x with softmax k >= 2 at 32768 rows,
//    0.69-0.72x with fp32 softmax k = 2-3 at 65536 rows and 0.92x with
//    bf16 softmax k = 1 at 65536 (fp32 1.02x); at E = 128 softmax k = 2-3
//    0.77-0.85x at 32768 rows and fp32 0.71-0.74x at 65536; at E = 256
//    sigmoid k = 3 0.81x / 0.94x (fp32 / bf16) at 16384 rows, fp32 k = 2-3
//    0.62-0.77x at 32768 rows (k = 2 at 16384 0.96-0.98x, left), softmax
//    k = 2-3 at 32768 rows 0.82-0.97x (bf16 k = 4 at 16384 0.95x, left).
//    At 16384 rows E <= 128 lost (1.16-2.6x). E < 64 was not swept and
//    keeps its rows.
//  - Lanes per row by rows, session 38 (`gpu_run.sh paths`,
//    PATHS_FORCE="0 5:1 5:2 5:4", two rounds, T = 8192-65536, E = 64 /
//    128 / 192 / 256 / 320 / 512, k = 1 / 2 / 4 / 8, both dtypes and
//    normalizations; docs/performance_log.md): below a wave of rows the
//    table's lanes per row left too few warps, and more lanes per row won
//    where thread_row_lanes_preferred sends them (figures there); at
//    65536 rows and at E = 512 the table's choices stayed fastest.

// Where the row-per-thread path runs with more lanes per row than
// thread_row_lanes_per_row gives E: thread_row_lane_bands.h, the bands
// with their measurements (host code, so test_tier_table reads the table).

// The row-per-thread launch's lanes per row: the requested ones
// (LaunchOptions::thread_row_lanes), else thread_row_lanes_preferred's,
// else the table's for E.
inline int thread_row_launch_lanes(const KernelParams& kp, const LaunchOptions& options, int logit_bytes) {
  if (options.thread_row_lanes != 0) return options.thread_row_lanes;
  const int preferred = thread_row_lanes_preferred(kp, logit_bytes);
  return preferred != 0 ? preferred : thread_row_lanes_per_row(kp.num_experts);
}

inline bool thread_row_preferred(const KernelParams& kp, int logit_bytes) {
  const int E = kp.num_experts;
  const std::int64_t rows = kp.num_tokens;
  const bool narrow = logit_bytes == 2;
  if (thread_row_lanes_preferred(kp, logit_bytes) != 0) return true;
  if (E <= 128) {
    // fp32 E = 64 k = 2-3 from 24576 rows, one lane: 0.90 / 0.83x the
    // register path's time there (session 52, H100; k = 1 1.03x).
    const bool e64_fp32_small_k = E == 64 && !narrow && (kp.topk == 2 || kp.topk == 3);
    if (!kp.softmax) return rows >= (kp.topk == 1 && E < 64 ? 65536 : e64_fp32_small_k ? 24576 : 32768);
    // E = 96 softmax k = 1 past the two-lane band (to 32768 rows), where
    // the register path ran: on this path (two lanes to 61439 rows, then
    // one; thread_row_lane_bands.h): H100, session 56, 0.61-0.76x the
    // register path's time at 36864-65536 rows (fp32 at 65536 25.9 ->
    // 15.8 us).
    if (kp.topk == 1) return E >= 64 && ((narrow && rows >= 65536) || (E == 96 && rows > 32768));
    if (E >= 64) return rows >= 32768;
    return rows >= 65536 && (narrow || kp.topk >= 4);
  }
  if (E == 384 || E == 512) return false;  // full register tiers
  if (E == 256) {
    if (kp.softmax) return kp.topk >= 2 && rows >= 32768;  // the filter path takes 65536 but bf16 k > 4
    // fp32 k = 3 from 12288 rows on the table's two lanes: 0.90x the
    // register path's time at 12288 (session 52, H100).
    if (kp.topk == 3 && !narrow) return rows >= 12288;
    return rows >= (kp.topk >= 3 ? 16384 : 32768);         // the filter path takes 65536 for k <= 3
  }
  if (E > 512 || thread_row_lanes_per_row(E) == 1) return false;  // not measured
  if (!kp.softmax) return rows >= (E > 256 ? 8192 : 16384);
  // fp32 at 8192 rows, session 38's sweep (four lanes, as thread_row_lanes_per_row
  // gives E = 320): k = 2-8 0.81-0.90x the register path's time; k = 1 0.97x.
  if (E > 256) return rows >= (narrow || kp.topk >= 2 ? 8192 : 16384);
  return rows >= 16384;
}

// Where the filter path runs by itself (routing_filter_path.cuh). Forced
// against the tier table before it on the H200 (docs/performance_log.md):
//  - 2026-11-30, at the first form (T = 8192-65536, E = 64-512, k = 1, 4, 8,
//    fp32 and bf16, both normalizations): E = 384 and 512 0.60-0.80x the
//    time at 65536 rows, 0.69-0.83x at 32768 and 0.81-0.99x at 16384
//    (E = 384 with k = 8 there 1.03-1.09x, so from 32768); E = 256 with
//    softmax 0.68-0.79x at 65536 rows and 0.74-0.93x at 32768 (1.07-1.33x at
//    16384); E = 256 sigmoid k = 1 at 65536 rows 0.70x (fp32) and 0.92x
//    (bf16); E <= 128 0.9-2.5x, most above 1.2x (with 2 or 4 experts per
//    lane a warp's per-row steps outweigh what the estimates save).
//  - 2026-11-30, the final kernel (six blocks per SM up to 8 experts per
//    lane, 8-byte candidate stores), T = 1024 and 8192 at E = 256 / 512 with
//    tasks of 1, 2 and 4 rows, T = 16384-65536 at E = 128 / 256: E = 512
//    k <= 4 at 8192 rows 0.73-0.87x with tasks of 4 rows (the launch's
//    choice there), k = 8 0.95-1.12x; E = 256 at 8192 rows 1.02-1.68x and
//    every cell at 1024 rows 1.16-1.96x (tasks of one row were the best
//    there; a task's bias load and margin are per warp); E = 256 sigmoid
//    k = 4 at 65536 rows 0.93x (fp32) and 0.99x (bf16) against the
//    row-per-thread path, k = 8 1.0x and 1.14x, at 32768 rows 1.26-1.41x;
//    E = 128 1.0-1.7x but two cells (0.92x and 0.99x).
//  - 2026-12-01, against the register path's estimated top-1 kernel
//    (routing_estimate_select.cuh), k = 1, E = 256-512, T = 256-65536, both
//    dtypes and normalizations: that kernel took 0.84-0.85x the filter
//    path's time at E = 256 softmax, 32768 rows (both dtypes), so k = 1
//    there starts at 65536 rows; everywhere else the filter path kept its
//    rows (the top-1 kernel 0.99-1.06x at E = 512 and 8192 rows, 1.07-1.33x
//    from 16384 rows at E = 384-512 and at 65536 rows at E = 256).
//  - 2026-12-01, the re-sweep above (thread_row_preferred): at E = 256
//    softmax, 32768 rows, the register path (estimated selection) took
//    0.93x this path's time at k = 4 and 0.82-0.84x at k = 8, so E = 256
//    softmax starts at 65536 rows for every k.
//  - 2026-12-03, the re-sweeps above: E = 256 sigmoid k = 4 at 65536 rows
//    goes to the row-per-thread path (bf16 0.87x, fp32 1.01x of this
//    path's time); k <= 3 stays here (k = 1: this path 0.90-0.93x the
//    row-per-thread path's time; k = 2-3 not swept). Softmax stays here but
//    for 16-bit logits with k > 4 (the row-per-thread path 0.90x at k = 8).
inline bool filter_preferred(const KernelParams& kp, int logit_bytes) {
  const int E = kp.num_experts;
  const std::int64_t rows = kp.num_tokens;
  // The bands where thread_row_lanes_preferred names lanes were timed
  // against this path too (E = 512 16-bit sigmoid k >= 5 at 12288-24575
  // rows, session 52): they keep the row-per-thread path.
  if (thread_row_lanes_preferred(kp, logit_bytes) != 0) return false;
  if (E == 512) return rows >= (kp.topk <= 4 ? 8192 : 16384);
  if (E == 384) return rows >= (kp.topk > 4 ? 32768 : 16384);
  if (E == 256) {
    if (rows < 65536) return false;
    return kp.softmax ? !(logit_bytes == 2 && kp.topk > 4) : kp.topk <= 3;
  }
  return false;
}

// E in (384, 512] on the register path: up to this many rows (256 blocks of
// 8 rows, all resident at two blocks per SM on a 132-SM H100 or H200) the
// third block per SM has nothing to hold, so the build without a spill
// runs; above it the three-block build's extra warps pay for its spill.
// H200, two blocks per SM against three (docs/performance_log.md): T = 1024
// 0.84-0.91x the time with 16-bit logits, 0.97-0.98x fp32; T = 8192
// 1.05-1.19x and T = 65536 1.11-1.27x.
constexpr std::int64_t kSpillFreeMaxRows = 2048;

// E in (32, 64] past decode: how many lanes share a row. One warp per row
// (32 lanes, 2 experts each) keeps the most warps resident; fewer lanes per
// row spend fewer instructions on a row's loads, scores and stores, which
// bounds k = 1 (a single round), and from 16384 rows enough rows remain
// for every k. H200, A/B of two rounds against one warp per row
// (2026-12-02, T = 2048-16384, E = 64 / 128, k = 1 / 4 / 8, both dtypes and
// normalizations): 16 lanes of 4 at k = 1 0.81-0.88x the time at 4096
// rows and 0.78-0.80x at 8192 (2048 rows even), but k = 4-8 at 4096 rows
// 1.03-1.10x; 8 lanes of 8 at 16384 rows k = 1 0.61-0.69x, k = 4-8
// 0.79-0.91x, except fp32 sigmoid k = 8 1.17x (as at 65536 rows before
// the row-per-thread path took it); at 8192 rows k = 4-8 1.01-1.54x.
constexpr std::int64_t kE64QuarterWarpTop1MinRows = 4096;
constexpr std::int64_t kE64GroupsOfEightMinRows = 16384;
constexpr std::int64_t kE64GroupsOfEightFp32SigmoidMinRows = 32768;  // k > 4, as before

// k = 1 at E in (32, 64] from 32768 rows: four lanes per row, 16 experts
// each. H200, A/B of two rounds against eight lanes of 8 (2026-12-02):
// 0.91-0.95x the time with softmax and bf16 sigmoid at 32768-65536 rows,
// fp32 sigmoid even (where the row-per-thread path does not take it).
constexpr std::int64_t kE64Top1FourLanesMinRows = 32768;

inline int e64_lanes_per_row(const KernelParams& kp, int logit_bytes) {
  const std::int64_t rows = kp.num_tokens;
  const bool fp32_sigmoid_wide_k = logit_bytes == 4 && !kp.softmax && kp.topk > 4;
  if (kp.topk == 1 && rows >= kE64Top1FourLanesMinRows) return 4;
  if (rows >= (fp32_sigmoid_wide_k ? kE64GroupsOfEightFp32SigmoidMinRows : kE64GroupsOfEightMinRows)) return 8;
  return kp.topk == 1 && rows >= kE64QuarterWarpTop1MinRows ? 16 : 32;
}

// E in (64, 128] from 4096 rows (two rows per warp, below) with sigmoid and
// k = 8: one warp per row with the estimated selection instead, where that
// kernel runs (E = 128, vector loads). H200, A/Bs of two rounds against two
// rows per warp (2026-12-02, T = 2048-16384): k = 8 sigmoid 0.90-0.95x the
// time at 4096-16384 rows; k = 5 sigmoid 1.01-1.05x, softmax k = 8
// 0.99-1.03x and k = 4 1.02-1.16x, so those keep two rows per warp (k = 6
// and 7 not timed). `vector4_ok`: the call loads its logits and bias as
// vectors on the four-per-lane tier.
inline bool e128_estimates_past_4096(const KernelParams& kp, bool vector4_ok) {
  return kp.num_experts == 128 && kp.estimate_select && !kp.softmax && kp.topk == 8 && vector4_ok;
}

// k = 1 at E in (64, 128] from 8192 rows: eight lanes per row, 16 experts
// each (two blocks per SM: no spill), the one round paid once per four
// rows. H200, E = 128, A/B of two rounds against 16 lanes of 8 (2026-12-02, T =
// 8192-65536): bf16 0.91-0.95x the time, fp32 softmax 0.93-0.95x; fp32
// sigmoid 1.01-1.03x, so it keeps 16 lanes.
constexpr std::int64_t kE128Top1EighthLanesMinRows = 8192;
inline bool e128_top1_eight_lanes(const KernelParams& kp, int logit_bytes) {
  return kp.topk == 1 && kp.num_tokens >= kE128Top1EighthLanesMinRows && (kp.softmax || logit_bytes != 4);
}

// k = 1 at E = 256 from 8192 rows: 16 lanes per row, 16 experts each (two
// blocks per SM: no spill), exact scores and one round, instead of one warp
// per row with the estimated top-1. H200, A/B of two rounds (2026-12-02,
// T = 4096-65536): 0.92-0.93x the time with softmax and bf16 sigmoid at
// 8192-32768 rows, fp32 sigmoid 0.95-0.985x; 4096 rows even. The tiers
// that are not full (E in (128, 256)) keep theirs (not timed).
constexpr std::int64_t kE256Top1HalfWarpMinRows = 8192;
inline bool e256_top1_half_warp(const KernelParams& kp) {
  return kp.num_experts == 256 && kp.topk == 1 && kp.num_tokens >= kE256Top1HalfWarpMinRows;
}

// E <= 8 with k <= 4 from 32768 rows (k = 1 from 16384): two lanes per
// row, 4 experts each (16 rows per warp) instead of four lanes of 2. H200,
// A/B of two rounds (2026-12-02, T = 8192-65536, k = 1 / 2 / 4 / 5 / 8,
// both dtypes and normalizations): k = 1 0.74-0.81x the time at
// 32768-65536 rows, k = 2-4 0.81-0.97x; at 8192 rows 1.02-1.27x, at 16384
// k = 1 0.90-0.99x (0.92-0.98x in a second call) but k = 2-4 up to 1.08x;
// k = 5 0.91-1.02x and k = 8 1.22-1.59x everywhere (its lists of 3 run dry
// and refill).
constexpr std::int64_t kE8TwoLanesMinRows = 32768;
constexpr std::int64_t kE8TwoLanesTop1MinRows = 16384;
inline bool e8_two_lanes_per_row(const KernelParams& kp) {
  return kp.topk <= 4 && kp.num_tokens >= (kp.topk == 1 ? kE8TwoLanesTop1MinRows : kE8TwoLanesMinRows);
}

// The tier table. A register tier is (group lanes G, experts per lane P),
// E <= G * P. Few rows: one warp per row for E <= 32 and from E = 64
// (G = 32), the shortest dependent chain per row. Many rows: eight experts
// per lane, so 32 / G rows share a warp and the k rounds of group
// reductions are paid once per warp.
// Where "many" starts was measured on the H200 (docs/performance_log.md): for
// E = 128 from 4096 rows (but sigmoid k > 4: e128_estimates_past_4096);
// for E = 64 it depends on k (e64_lanes_per_row). Above 128 experts one warp
// per row with 8, 12 or 16 experts per lane: a full tier (E = 256, 384,
// 512) has no per-register bound checks, and E = 384 on the 16-per-lane
// tier (a quarter of its registers empty) took 1.2-1.5x the time of its
// own 12-per-lane tier at 1024-65536 rows (H200).
//
// Every tier the table names, each a kernel build (launch_register_tier_of);
// test_tier_table checks that choose_register_tier names no other.
inline constexpr RegisterTier kRegisterTiers[] = {
    {32, 1, 1}, {2, 4, 1},   {4, 2, 1},   {8, 2, 1},  {16, 2, 1},  {4, 16, 2},  {8, 8, 1},   {16, 4, 1},  {32, 2, 1},
    {8, 16, 2}, {16, 8, 1},  {32, 4, 1},  {16, 16, 2}, {32, 8, 1}, {32, 12, 1}, {32, 16, 2}, {32, 16, 3},
};
inline constexpr std::size_t kRegisterTierCount = sizeof(kRegisterTiers) / sizeof(kRegisterTiers[0]);

// The register path's tier for a call of E <= kRegisterPathMaxExperts with
// logits of `logit_bytes` (kp's estimate_select as the launch sets it);
// `vector4_ok`: the call loads its logits and bias as vectors on the
// four-per-lane tier.
inline RegisterTier choose_register_tier(const KernelParams& kp, int logit_bytes, bool vector4_ok) {
  const int E = kp.num_experts;
  const std::int64_t rows = kp.num_tokens;
  const auto tier = [](int lanes, int per_lane, int min_blocks = 0) {
    return RegisterTier{lanes, per_lane, min_blocks != 0 ? min_blocks : register_min_blocks(per_lane)};
  };
  if (small_e_prefers_warp_row(kp)) return tier(32, 1);
  if (E <= 8) return e8_two_lanes_per_row(kp) ? tier(2, 4) : tier(4, 2);
  if (E <= 16) return tier(8, 2);
  if (E <= 32) return tier(16, 2);
  if (E <= 64) {
    switch (e64_lanes_per_row(kp, logit_bytes)) {
      case 4: return tier(4, 16, 2);
      case 8: return tier(8, 8);
      case 16: return tier(16, 4);
      default: return tier(32, 2);
    }
  }
  if (E <= 128 && e128_top1_eight_lanes(kp, logit_bytes)) return tier(8, 16, 2);
  if (E <= 128) return rows >= 4096 && !e128_estimates_past_4096(kp, vector4_ok) ? tier(16, 8) : tier(32, 4);
  if (E <= 256) return e256_top1_half_warp(kp) ? tier(16, 16, 2) : tier(32, 8);
  if (E <= 384) return tier(32, 12);
  return rows <= kSpillFreeMaxRows ? tier(32, 16, 2) : tier(32, 16);
}

// Launches the build of tier `t` (one of kRegisterTiers); any other tier is
// refused with cudaErrorInvalidValue rather than launched as something else.
template <typename T, std::size_t... I>
cudaError_t launch_register_tier_of(const RegisterTier& t, const KernelParams& kp, cudaStream_t stream, bool pdl,
                                    bool vec, std::index_sequence<I...>) {
  cudaError_t result = cudaErrorInvalidValue;
  ((t == kRegisterTiers[I] && (result = launch_register_tier_instance<T, I>(kp, stream, pdl, vec), true)) || ...);
  return result;
}

// The launch's choices that the tier table reads besides the shape: which
// selections the register path may use.
inline KernelParams with_selection_choices(KernelParams kp, const LaunchOptions& options) {
  kp.threshold_select = threshold_select_enabled(kp, options);
  kp.rank_select = !options.force_round_selection;
  kp.estimate_select = estimate_select_enabled(kp, options);
  return kp;
}

// The path of a call: the forced one, else the first rule above that
// takes it, else the register path (E <= 512) or the shared-memory path.
inline RoutingPath choose_path(const KernelParams& kp, const LaunchOptions& options, int logit_bytes) {
  if (options.force_path != 0) return static_cast<RoutingPath>(options.force_path);
  const int E = kp.num_experts;
  if (filter_preferred(kp, logit_bytes) && !filter_unsupported(kp, logit_bytes)) return RoutingPath::kFilter;
  if (thread_row_preferred(kp, logit_bytes) && !thread_row_unsupported(kp, logit_bytes)) return RoutingPath::kThreadRow;
  if (block_threshold_preferred(kp, logit_bytes)) return RoutingPath::kBlockThreshold;
  if (block_rank_preferred(kp)) return RoutingPath::kBlockRank;
  if (split_row_preferred(kp)) return RoutingPath::kSplitRow;
  return E <= kRegisterPathMaxExperts ? RoutingPath::kRegister : RoutingPath::kShared;
}

template <typename T>
cudaError_t launch_routing_typed_impl(const KernelParams& kp_in, cudaStream_t stream,
                                      const LaunchOptions& options, bool pdl) {
  const KernelParams kp = with_selection_choices(kp_in, options);
  const RoutingPath path = choose_path(kp, options, sizeof(T));
  switch (path) {
    case RoutingPath::kFilter: return launch_filter_instance<T>(kp, stream, pdl, options.filter_rows);
    case RoutingPath::kThreadRow:
      return launch_thread_row_instance<T>(kp, stream, pdl, thread_row_launch_lanes(kp, options, sizeof(T)));
    case RoutingPath::kBlockThreshold:
    {
      const int pair_warps = block_threshold_pair_warps_preferred(kp, sizeof(T));
      return launch_block_threshold_instance<T>(kp, stream, pdl, pair_warps,
                                                block_threshold_pair_groups_preferred(kp, pair_warps));
    }
    case RoutingPath::kBlockRank: return launch_block_rank_instance<T>(kp, stream, pdl);
    case RoutingPath::kSplitRow: return launch_split_row_instance<T>(kp, stream, pdl);
    case RoutingPath::kShared: return launch_shared_instance<T>(kp, stream, pdl);
    case RoutingPath::kRegister:
    case RoutingPath::kRegisterScalarLoads: break;
  }
  if (kp.num_experts > kRegisterPathMaxExperts) return launch_shared_instance<T>(kp, stream, pdl);  // forced 1 or 3 is refused earlier
  const bool vec = path != RoutingPath::kRegisterScalarLoads;
  const RegisterTier tier = choose_register_tier(kp, sizeof(T), vec && register_tier_vector_ok<T, 4>(kp));
  return launch_register_tier_of<T>(tier, kp, stream, pdl, vec,
                                    std::make_index_sequence<kRegisterTierCount>{});
}

}  // namespace musespark::cuda

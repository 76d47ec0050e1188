// The row-per-thread path's lanes per row between a wave of rows and the
// rows where the table's lanes fill the GPU: one table of bands, each with
// the sweep that set it. Host code with no CUDA in it, so that
// test_tier_table can read the table itself (routing_tier_table.cuh uses
// thread_row_lanes_preferred for the path and its launch).
#pragma once

#include <cstdint>

#include "routing_kernel.cuh"  // KernelParams

namespace musespark::cuda {

// Where the row-per-thread path runs with more lanes per row than
// thread_row_lanes_per_row gives E: G lanes keep G times the warps on the
// same rows, and between a wave of rows and the rows where one lane per
// row fills the GPU that pays. 0: the table's lanes. Against the table's
// choice before (the register path below these rows, the row-per-thread
// path's lanes for E above them), H200, medians of two rounds:
// (Swept at 8192, 12288, 16384, 24576, 32768 and 65536 rows; a band runs
// from its first row count that won to below the first that did not.)
//  - E = 64, k >= 4, 12288-32767 rows, two lanes: 0.62-0.96x the time
//    (16384 rows 0.68-0.90x); at 32768 rows one lane is as fast (k = 8
//    1.00-1.02x) and stays; k <= 2 gained only with bf16 sigmoid.
//  - E = 128, k >= 2 or sigmoid, 16384-32768 rows, two lanes: 0.57-0.98x
//    (fp32 softmax k = 2 at 24576 rows 1.03x); at 65536 rows one lane
//    stays (two: 1.01-1.18x); softmax k = 1 lost (1.13-1.32x).
//  - E = 192, four lanes: softmax at 8192-24576 rows 0.78-0.96x (fp32
//    k = 1 at 12288 rows 1.03x), sigmoid at 8192-12288 rows 0.69-0.94x;
//    at 32768 rows two lanes (1.05-1.18x for four).
//  - E = 256 softmax k >= 4 at 16384-32767 rows, four lanes: 0.88-0.95x
//    but fp32 k = 8 (1.00-1.02x), which stays on the register path.
// The E between them, session 39 (H100, the same sweep at T = 8192-32768,
// E = 96 / 160 / 224 / 288 / 352 / 416 / 480, k = 1 / 4 / 8, two rounds):
//  - E = 96, 12288-32768 rows, two lanes: 0.44-0.92x (at 32768 rows, where
//    sigmoid and softmax k = 1 already ran one lane, 0.62-0.97x); at 8192
//    rows only bf16 sigmoid k >= 4 gained (0.80x), the rest 0.92-1.67x.
//  - E = 160, 12288-16383 rows, its two lanes where the register path ran:
//    0.68-0.90x; from 16384 rows the path runs already.
//  - E = 224 sigmoid, the same rows: 0.77-0.92x (softmax 0.97-1.13x, left).
//  - E = 288-480: the table's two lanes stayed within 0.95-1.05x of one
//    lane but for k = 8 at 32768 rows (E = 288 fp32 softmax 0.91x, E = 352
//    bf16 0.92-0.93x; left, narrow).
// 16-bit sigmoid with small k, and E = 512 with k >= 5, session 52 (H100,
// `gpu_run.sh paths`, PATHS_FORCE="0 5:1 5:2 5:4 [7]", three rounds, T =
// 8192-49152; the rounds agreed within 1%), against the table's choice
// (the register path, or the filter path at E = 512). Then as candidates
// against the table before (H100, three interleaved rounds, 120 cells at
// 12288-32768 rows, bf16 and fp16): 0.944x, 36 cells faster by > 3%, none
// slower; the cells that moved 0.68-0.97x, fp16 as bf16.
//  - E = 64, k = 1-3, two lanes: k = 3 from 12288 rows, k <= 2 from 16384
//    (at 12288 1.00-1.02x), to 32767: 0.67-0.91x (24576 rows k = 1 / 2 /
//    3 0.83 / 0.75 / 0.67x); fp32 mixed (0.87-1.07x), left.
//  - E = 256, k = 1-3, four lanes at 12288-24575 rows: 0.77-0.95x (k = 3
//    at 16384, where two lanes ran, 0.99x); two lanes at 24576-32767
//    (k = 1 / 2: 0.76 / 0.69x; four there 0.98 / 0.83x). The H200 had
//    put E = 256 sigmoid k = 1 at 16384 rows at 1.04-1.08x on two lanes
//    (2026-12-03 sweep above); four lanes were not timed there.
//  - E = 512, k = 5-8, 12288-24575 rows, four lanes: 0.84-0.92x; at 8192
//    rows 0.99-1.02x and from 24576 1.02-1.09x (the filter path stays);
//    k = 4 and fp32 lost (1.03-1.38x).
// The E between the anchor rows, session 53 (H100, PATHS_FORCE="0 5:1
// 5:2 5:4", T = 12288 / 16384 / 24576, E = 96-384, k = 1 / 2 / 4 / 8,
// two rounds), then as candidates against the table before (H100, three
// interleaved rounds, T = 12288-28672, E = 128 / 320 / 384, k = 1-8,
// both dtypes and normalizations: 0.985x over 288 cells for a first
// form whose E = 320 band began at 20480 rows and whose fp32 E = 384
// band ran to 32767; the bands below keep the cells that won):
//  - E = 128 16-bit sigmoid k >= 2, four lanes at 12288-16383 where the
//    register path ran: 0.80-0.90x.
//  - E = 128 k = 2 but 16-bit sigmoid, four lanes against the table's
//    two at 16384-32767: 0.82-0.94x to 24576 rows (softmax bf16 at 20480
//    12.2 -> 10.0 us), fp32 softmax 0.97x at 28672.
//  - E = 320 16-bit sigmoid, two lanes against four from 24576 rows:
//    0.75-0.83x there, 0.82-0.92x at 28672; at 20480 k = 2 / 4 lost
//    (1.05-1.11x), so the band starts at 24576.
//  - E = 384 sigmoid k = 8, two lanes against the register path: 16-bit
//    0.67-0.93x at 16384-28672 (24576 rows 23.1 -> 15.5 us); fp32
//    0.84-0.91x at 20480-24576 and 1.22x at 28672, so fp32 stops there.
// Session 54 (H100, PATHS_FORCE="0 5:1 5:2 5:4 7", T = 12288 / 20480 /
// 28672, E = 192 / 256 / 448 / 512, k = 1 / 2 / 4 / 8, two rounds; then an
// H200 sweep at T = 10240-26624 in steps of 2048-4096 for the same E with
// sigmoid; a band keeps what both machines agree on):
//  - E = 192 sigmoid at 12289-16383 rows ran the register path, a gap
//    between the four-lane band and the path's own rows: on the H200 at
//    14336 rows four lanes took 0.69-0.82x its time.
//  - E = 192 fp32 sigmoid k = 2, four lanes to 26623 rows: 0.87x at 20480
//    (H100), 0.83-0.91x at 16384-24576 (H200), 0.98-0.99x at 26624-28672.
//    k = 1 and k = 8 at 10240-16383, two lanes against four: 0.89-0.93x
//    (H100 12288, H200 10240 and 14336).
//  - E = 256 16-bit sigmoid k = 4 / 8 at 12288-16383, four lanes where the
//    register path ran: 0.82 / 0.93x (H100 12288), 0.82 / 0.94x (H200
//    14336); fp32 k = 4 two lanes 0.95x / 0.89x.
//  - At 18432-22528 rows four lanes lose a wave: E = 256 16-bit sigmoid
//    k = 1 on two lanes 0.85x (H100 20480), 0.84-0.89x (H200 18432 /
//    22528), and the H200's A/B of sessions 52-53's bands put four lanes
//    at 1.068x there; E = 512 16-bit sigmoid k = 8 on four lanes 1.056x
//    against the filter path at 20480 (H200), which the sweep put at
//    0.89-0.95x of four lanes at 18432-22528 on both machines.
//  Timed as one change against the table before (session 56, H100, three
//  rounds, T = 10240-26624 in steps of 2048, E = 192 / 256 / 512, k = 1 /
//  2 / 4 / 5 / 8, both widths, sigmoid): 0.979x over 270 cells, 34 faster
//  by > 3% and none slower in any round. E = 192 at 14336 rows 0.69-0.91x
//  (bf16 k = 4 11.56 -> 7.98 us); fp32 E = 192 k = 2 0.83-0.92x at
//  16384-24576, k = 1 / 8 0.89-0.93x at 10240-12288; E = 256 16-bit k = 4
//  0.82x and k = 8 0.93x at 12288-14336 (k = 5 even, 1.008-1.010x), fp32
//  k = 4 0.89-0.95x; bf16 E = 256 k = 1 0.84-0.89x at 18432-22528; bf16
//  E = 512 k = 5 / 8 on the filter path 0.83-0.95x at 18432-22528.
//
// The bands as rows of one table, first match wins: E, the logits and the
// normalization a band holds, k in [k_min, k_max], rows in [rows_min,
// rows_end), and the lanes per row it names. Logits are fp32 or 16-bit
// (validate_routing_params refuses the rest before any path is chosen).
enum class LaneBandLogits : std::uint8_t { kAny, kFp32, k16Bit };
enum class LaneBandNorm : std::uint8_t { kAny, kSigmoid, kSoftmax };
struct ThreadRowLaneBand {
  int experts;
  LaneBandLogits logits;
  LaneBandNorm norm;
  int k_min, k_max;
  std::int64_t rows_min, rows_end;
  int lanes;
};
constexpr int kAnyK = 1 << 30;
inline constexpr ThreadRowLaneBand kThreadRowLaneBands[] = {
    // E = 64: k >= 4 (H200); 16-bit sigmoid k = 3 and k <= 2 (session 52);
    // fp32 sigmoid k = 3 (session 52).
    {64, LaneBandLogits::kAny, LaneBandNorm::kAny, 4, kAnyK, 12288, 32768, 2},
    {64, LaneBandLogits::k16Bit, LaneBandNorm::kSigmoid, 3, 3, 12288, 32768, 2},
    {64, LaneBandLogits::k16Bit, LaneBandNorm::kSigmoid, 1, 2, 16384, 32768, 2},
    // E = 256 and 512, 16-bit sigmoid (session 52).
    // Session 54 first: 16-bit sigmoid E = 256 k = 1 leaves four lanes at
    // 18432 rows, and E = 512 k >= 5 there for the filter path.
    {256, LaneBandLogits::k16Bit, LaneBandNorm::kSigmoid, 1, 1, 18432, 32768, 2},
    {256, LaneBandLogits::k16Bit, LaneBandNorm::kSigmoid, 1, 3, 12288, 24576, 4},
    {256, LaneBandLogits::k16Bit, LaneBandNorm::kSigmoid, 1, 3, 24576, 32768, 2},
    {512, LaneBandLogits::k16Bit, LaneBandNorm::kSigmoid, 5, kAnyK, 12288, 18432, 4},
    // fp32 sigmoid, the same sweep: E = 64 k = 3 two lanes at 12288-24575
    // rows (0.89-0.94x); E = 256 k = 2 four lanes at 16384-32767 (0.85 /
    // 0.92x at 16384 / 24576; at 12288 1.06x).
    {64, LaneBandLogits::kFp32, LaneBandNorm::kSigmoid, 3, 3, 12288, 24576, 2},
    {256, LaneBandLogits::kFp32, LaneBandNorm::kSigmoid, 2, 2, 16384, 32768, 4},
    // Session 53's mid-rows bands (figures above): E = 128, 320 and 384.
    {128, LaneBandLogits::k16Bit, LaneBandNorm::kSigmoid, 2, kAnyK, 12288, 16384, 4},
    {128, LaneBandLogits::kFp32, LaneBandNorm::kAny, 2, 2, 16384, 32768, 4},
    {128, LaneBandLogits::k16Bit, LaneBandNorm::kSoftmax, 2, 2, 16384, 32768, 4},
    {320, LaneBandLogits::k16Bit, LaneBandNorm::kSigmoid, 1, kAnyK, 24576, 32768, 2},
    {384, LaneBandLogits::k16Bit, LaneBandNorm::kSigmoid, 8, 8, 16384, 32768, 2},
    {384, LaneBandLogits::kFp32, LaneBandNorm::kSigmoid, 8, 8, 20480, 28672, 2},
    // The H200 sweep: E = 128 k >= 2 or sigmoid, E = 192, E = 256 softmax
    // k >= 4 but fp32 k > 4.
    {128, LaneBandLogits::kAny, LaneBandNorm::kAny, 2, kAnyK, 16384, 32769, 2},
    {128, LaneBandLogits::kAny, LaneBandNorm::kSigmoid, 1, 1, 16384, 32769, 2},
    {192, LaneBandLogits::kAny, LaneBandNorm::kSoftmax, 1, kAnyK, 8192, 24577, 4},
    // Session 54: fp32 sigmoid E = 192 k = 1 and 8 on two lanes, k = 2 on
    // four to 26623; every E = 192 sigmoid row to 16383 on the path.
    {192, LaneBandLogits::kFp32, LaneBandNorm::kSigmoid, 1, 1, 10240, 16384, 2},
    {192, LaneBandLogits::kFp32, LaneBandNorm::kSigmoid, 8, 8, 10240, 16384, 2},
    {192, LaneBandLogits::kFp32, LaneBandNorm::kSigmoid, 2, 2, 16384, 26624, 4},
    {192, LaneBandLogits::kAny, LaneBandNorm::kSigmoid, 1, kAnyK, 8192, 16384, 4},
    {256, LaneBandLogits::k16Bit, LaneBandNorm::kSoftmax, 4, kAnyK, 16384, 32768, 4},
    {256, LaneBandLogits::kFp32, LaneBandNorm::kSoftmax, 4, 4, 16384, 32768, 4},
    // Session 54: E = 256 sigmoid k >= 4 below 16384 rows, where the
    // register path ran: 16-bit on four lanes, fp32 k = 4 on two.
    {256, LaneBandLogits::k16Bit, LaneBandNorm::kSigmoid, 4, 8, 12288, 16384, 4},
    {256, LaneBandLogits::kFp32, LaneBandNorm::kSigmoid, 4, 4, 12288, 16384, 2},
    // Session 39's E between them: E = 96, E = 160, E = 224 sigmoid.
    {96, LaneBandLogits::kAny, LaneBandNorm::kAny, 1, kAnyK, 12288, 32769, 2},
    // Session 56 (H100, three rounds, T = 32768-65536): softmax k = 1 past
    // the band above ran the register path (thread_row_preferred now sends
    // those rows to this path); two lanes against it 0.64-0.76x at
    // 36864-53248 rows, one lane 0.68-1.01x there; at 61440 one lane
    // 0.61-0.64x, two 0.62-0.66x, so two lanes stop there.
    {96, LaneBandLogits::kAny, LaneBandNorm::kSoftmax, 1, 1, 32769, 61440, 2},
    {160, LaneBandLogits::kAny, LaneBandNorm::kAny, 1, kAnyK, 12288, 16384, 2},
    {224, LaneBandLogits::kAny, LaneBandNorm::kSigmoid, 1, kAnyK, 12288, 16384, 2},
    // 16-bit sigmoid from 8192 rows (session 39's sweep, two rounds: E = 96
    // k >= 4 0.80-0.81x, E = 160 0.86-0.92x; fp32 and softmax lost there).
    {96, LaneBandLogits::k16Bit, LaneBandNorm::kSigmoid, 4, kAnyK, 8192, 12288, 2},
    {160, LaneBandLogits::k16Bit, LaneBandNorm::kSigmoid, 1, kAnyK, 8192, 12288, 2},
};

inline bool lane_band_holds(const ThreadRowLaneBand& b, const KernelParams& kp, int logit_bytes) {
  const bool logits_match = b.logits == LaneBandLogits::kAny ||
                            (b.logits == LaneBandLogits::kFp32 && logit_bytes == 4) ||
                            (b.logits == LaneBandLogits::k16Bit && logit_bytes == 2);
  const bool norm_match = b.norm == LaneBandNorm::kAny || (b.norm == LaneBandNorm::kSoftmax) == kp.softmax;
  return b.experts == kp.num_experts && logits_match && norm_match && kp.topk >= b.k_min && kp.topk <= b.k_max &&
         kp.num_tokens >= b.rows_min && kp.num_tokens < b.rows_end;
}

inline int thread_row_lanes_preferred(const KernelParams& kp, int logit_bytes) {
  for (const ThreadRowLaneBand& band : kThreadRowLaneBands)
    if (lane_band_holds(band, kp, logit_bytes)) return band.lanes;
  return 0;
}

}  // namespace musespark::cuda

// Calls that GPU tests expect the tier table to send to a path without
// being forced (they run them there against the reference). test_tier_table
// checks every one on the host, so a change to the table that moves one
// fails in the CPU suite, before device time is spent on it: a new band
// between the anchor rows once moved a shape of the filter path's test to
// the row-per-thread path, and only a GPU run noticed (session 53).
#pragma once

#include <cstdint>

#include "musespark/dtype.h"
#include "musespark/routing_params.h"

namespace musespark::testing {

struct AutomaticPathShape {
  std::int64_t tokens, experts, topk;
  DType dtype;
  Normalization norm;
  int lanes = 0;  // the row-per-thread path's lanes per row to expect; 0: not checked
};

// Just past each of filter_preferred's row thresholds: E = 512 with k <= 4
// from 8192 rows and k > 4 from 16384 (16-bit sigmoid k >= 5 from 24576),
// E = 384 with k <= 4 from 16384 and k > 4 from 32768. E = 256 starts at
// 65536 rows, too large for a quick GPU test; test_tier_table checks it.
inline constexpr AutomaticPathShape kFilterPathShapes[] = {
    {32800, 384, 8, DType::kBFloat16, Normalization::kSoftmax},
    {16400, 384, 4, DType::kFloat32, Normalization::kSigmoid},
    {16400, 512, 8, DType::kFloat32, Normalization::kSigmoid},
    {24600, 512, 8, DType::kBFloat16, Normalization::kSigmoid},
    {8200, 512, 4, DType::kBFloat16, Normalization::kSoftmax},
};

// thread_row_preferred at a wave of rows (one lane per row at E <= 128,
// two at 192 and 256, four at 320), and below it with the lanes of
// thread_row_lanes_preferred (two at E = 128, four at E = 192 softmax).
inline constexpr AutomaticPathShape kThreadRowPathShapes[] = {
    {65600, 64, 8, DType::kBFloat16, Normalization::kSigmoid},
    {65600, 128, 8, DType::kBFloat16, Normalization::kSigmoid},
    {65600, 192, 8, DType::kBFloat16, Normalization::kSigmoid},
    {65600, 256, 8, DType::kBFloat16, Normalization::kSigmoid},
    {65600, 320, 8, DType::kBFloat16, Normalization::kSigmoid},
    {16400, 128, 8, DType::kFloat32, Normalization::kSoftmax, 2},
    {16400, 192, 8, DType::kFloat32, Normalization::kSoftmax, 4},
};

// The grids launch_thread_row_tier holds below what the registers allow
// (16-bit sigmoid), all on the row-per-thread path by themselves.
inline constexpr AutomaticPathShape kThreadRowHeldShapes[] = {
    {65536, 64, 4, DType::kBFloat16, Normalization::kSigmoid},
    {40000, 128, 4, DType::kFloat16, Normalization::kSigmoid},
    {16384, 192, 1, DType::kBFloat16, Normalization::kSigmoid},
    {16384, 192, 4, DType::kFloat16, Normalization::kSigmoid},
    {16384, 320, 8, DType::kBFloat16, Normalization::kSigmoid},
    {16384, 320, 1, DType::kFloat16, Normalization::kSigmoid},
};

}  // namespace musespark::testing

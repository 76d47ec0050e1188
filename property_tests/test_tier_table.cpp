// The CUDA kernel's tier table, as cuda::chosen_path answers it: which path
// each kind of call takes (routing_tier_table.cuh has the measurements
// behind every rule). Host code only, so it runs on a machine without a
// GPU; a change to the table that these cells do not expect fails here
// before any device time is spent.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "automatic_path_shapes.h"
#include "musespark/errors.h"
#include "routing_kernel.cuh"
#include "thread_row_lane_bands.h"

namespace musespark {
namespace {

// Addresses that chosen_path checks (alignment, non-null) but never reads.
alignas(16) unsigned char g_fake_buffer[64];

struct Call {
  std::int64_t tokens, experts, topk;
  DType dtype = DType::kFloat32;
  Normalization norm = Normalization::kSigmoid;
  std::size_t logits_offset = 0;  // bytes: 4 misaligns the 16-byte vectors
};

RoutingParams params_of(const Call& c) {
  return shape_only_params(c.tokens, c.experts, c.topk, c.dtype, c.norm, g_fake_buffer + c.logits_offset,
                           g_fake_buffer);
}

std::string path_of(const Call& c, const cuda::LaunchOptions& options = {}) {
  return cuda::routing_path_name(cuda::chosen_path(params_of(c), options));
}

std::string where(const Call& c) {
  return "T=" + std::to_string(c.tokens) + " E=" + std::to_string(c.experts) + " k=" + std::to_string(c.topk) +
         " " + std::string(dtype_name(c.dtype)) + " " + std::string(normalization_name(c.norm));
}

void expect_path(const Call& c, const std::string& want) { EXPECT_EQ(path_of(c), want) << where(c); }

constexpr auto kBf16 = DType::kBFloat16;
constexpr auto kSoftmax = Normalization::kSoftmax;

TEST(TierTable, DecodeCells) {
  expect_path({1, 8, 1}, "register");         // one warp per row, one expert per lane
  expect_path({1, 64, 8}, "register");        // one warp, two experts per lane
  expect_path({1, 128, 1}, "register");       // k = 1: no block path gains
  expect_path({1, 128, 4}, "block-threshold");  // E in (64, 128], sigmoid, k in [2, 4]
  expect_path({128, 96, 2, kBf16}, "block-threshold");
  expect_path({257, 128, 4, kBf16}, "register");
  expect_path({1, 64, 4}, "register");
  expect_path({1, 128, 4, DType::kFloat32, kSoftmax}, "block-rank");  // softmax: E in (64, 128], k > 2
  expect_path({1, 128, 2, kBf16, kSoftmax}, "register");
  expect_path({128, 128, 3, kBf16, kSoftmax}, "block-rank");
  expect_path({1, 128, 5}, "block-rank");                              // k > W = 4 warps
  expect_path({128, 128, 8}, "block-rank");
  expect_path({1, 256, 1}, "split-row");
  expect_path({1, 192, 3}, "block-threshold");  // E in (128, 512], k in [2, 8]
  expect_path({128, 256, 2}, "block-threshold");
  expect_path({128, 256, 4, kBf16}, "block-threshold");
  expect_path({128, 256, 4, DType::kFloat32, kSoftmax}, "block-threshold");
  expect_path({1, 384, 4, DType::kFloat32, kSoftmax}, "block-threshold");
  expect_path({1, 256, 8}, "block-threshold");
  expect_path({128, 512, 8, kBf16, kSoftmax}, "block-threshold");
  expect_path({1, 512, 4}, "block-threshold");
  expect_path({1, 512, 4, kBf16, kSoftmax}, "block-threshold");          // softmax above E = 384, k in [2, 4]:
  expect_path({1, 512, 2, DType::kFloat32, kSoftmax}, "block-threshold");  // the pair kernel (H100)
  expect_path({1, 512, 4, DType::kFloat32, kSoftmax}, "block-threshold");
  expect_path({128, 512, 2, kBf16, kSoftmax}, "block-threshold");
  expect_path({129, 512, 2, kBf16, kSoftmax}, "split-row");              // medium rows: unchanged
  expect_path({16, 512, 1}, "block-rank");    // E > 256, k = 1, sigmoid, up to 16 rows
  expect_path({17, 512, 1}, "split-row");
  expect_path({1, 512, 1, DType::kFloat32, kSoftmax}, "split-row");
}

// The block-threshold path's candidates are the experts with fewer than k
// of the groups' maxima above them: with k above the number of groups
// holding experts, that is every expert. The one-expert kernel's groups are
// warps (ceil(E / 32)); up to 128 rows at E in (128, 256] the 4-warp
// form's 8 half-warp groups take k up to 8; elsewhere those calls go to
// other paths.
TEST(TierTable, BlockThresholdNeedsKGroups) {
  expect_path({1, 192, 6}, "block-threshold");  // 6 groups, k = 6
  expect_path({1, 192, 7}, "block-threshold");  // 8 half-warp groups
  expect_path({1, 160, 5, kBf16, kSoftmax}, "block-threshold");
  expect_path({1, 160, 6, kBf16, kSoftmax}, "block-threshold");
  expect_path({128, 224, 8, DType::kFloat32, kSoftmax}, "block-threshold");
  expect_path({16, 224, 8}, "block-threshold");
  expect_path({16, 225, 8}, "block-threshold");
  expect_path({1, 224, 8, kBf16, kSoftmax}, "block-threshold");  // softmax too
  expect_path({1, 192, 8, kBf16, kSoftmax}, "block-threshold");
  expect_path({128, 96, 3}, "block-threshold");  // 3 groups
  expect_path({128, 96, 4}, "block-rank");       // E <= 128: the block-rank path
  expect_path({128, 128, 8}, "block-rank");
  expect_path({256, 192, 8}, "split-row");       // medium rows, either normalization
  expect_path({129, 160, 6, kBf16, kSoftmax}, "split-row");
  expect_path({129, 192, 7}, "split-row");
  expect_path({257, 192, 8}, "register");
}

TEST(TierTable, RowCountEdges) {
  expect_path({128, 256, 8}, "block-threshold");
  expect_path({257, 256, 8}, "register");  // warp per row, threshold selection
  expect_path({257, 512, 4}, "register");
  expect_path({257, 512, 3}, "register");
  expect_path({257, 128, 8}, "register");
}

// 257-512 rows: the three rules past kMediumRowsMax.
TEST(TierTable, PastMediumRows) {
  expect_path({257, 512, 1}, "split-row");                            // E > 256, k <= 2, to 384 rows
  expect_path({384, 512, 2, kBf16, kSoftmax}, "split-row");
  expect_path({385, 512, 2}, "register");
  expect_path({384, 384, 1}, "split-row");
  expect_path({512, 256, 1, DType::kFloat32, kSoftmax}, "split-row");  // E in (128, 256], k = 1, to 512 rows
  expect_path({513, 256, 1}, "register");
  expect_path({300, 256, 2}, "register");
  expect_path({512, 128, 4}, "block-threshold");                      // E in (64, 128], fp32 sigmoid k = 3-4
  expect_path({513, 128, 4}, "register");
  expect_path({512, 128, 4, kBf16}, "register");
  expect_path({512, 128, 4, DType::kFloat32, kSoftmax}, "register");
  expect_path({512, 128, 3}, "block-threshold");                      // ... and k = 3
  expect_path({512, 128, 3, kBf16}, "register");
  expect_path({200, 128, 3}, "block-threshold");
  expect_path({200, 128, 3, kBf16}, "register");
  expect_path({200, 128, 3, DType::kFloat32, kSoftmax}, "register");
  expect_path({512, 64, 4}, "register");
}

// 129-256 rows: each block path keeps the cells where it still won
// (kMediumRowsMax in routing_tier_table.cuh).
TEST(TierTable, MediumRows) {
  expect_path({129, 512, 1}, "split-row");                              // E > 256, k <= 4
  expect_path({256, 512, 4, kBf16, kSoftmax}, "split-row");
  expect_path({256, 512, 8}, "block-threshold");                        // E > 256 k > 4 sigmoid
  expect_path({256, 512, 8, DType::kFloat32, kSoftmax}, "register");
  expect_path({200, 256, 1, kBf16, kSoftmax}, "split-row");             // E <= 256 k = 1
  expect_path({200, 256, 2}, "block-threshold");                        // E in (128, 256]: sigmoid k >= 2
  expect_path({200, 256, 2, DType::kFloat32, kSoftmax}, "register");    // ... softmax k >= 4
  expect_path({200, 256, 4, DType::kFloat32, kSoftmax}, "block-threshold");
  expect_path({200, 256, 8, kBf16, kSoftmax}, "block-threshold");
  expect_path({200, 192, 8, kBf16, kSoftmax}, "split-row");             // k > 6 groups (below)
  expect_path({256, 128, 4}, "block-threshold");                        // E <= 128 sigmoid k = 4
  expect_path({256, 128, 2}, "register");
  expect_path({129, 96, 3, kBf16}, "register");
  expect_path({256, 128, 4, DType::kFloat32, kSoftmax}, "register");
  expect_path({256, 128, 8, kBf16, kSoftmax}, "block-rank");            // E <= 128 k in (4, 8]
  expect_path({256, 128, 9}, "register");
  expect_path({256, 128, 1}, "register");
  expect_path({8191, 512, 4}, "register");
  expect_path({8192, 512, 4}, "filter");   // E = 512, k <= 4 from 8192 rows
  expect_path({8192, 512, 8}, "register");
  expect_path({16384, 512, 8}, "filter");
}

TEST(TierTable, LargeBatchCells) {
  expect_path({32768, 64, 8}, "row-per-thread");                      // E <= 128 sigmoid k > 1 from 32768 rows
  expect_path({32767, 112, 2}, "register");
  expect_path({32768, 64, 1}, "row-per-thread");                      // E = 64 sigmoid k = 1 from 32768 rows
  expect_path({32767, 64, 1}, "register");
  expect_path({32768, 48, 1}, "register");                            // ... E < 64 from 65536 (not swept)
  expect_path({65536, 48, 1}, "row-per-thread");
  expect_path({32767, 112, 1}, "register");                           // E in (64, 128]: from 32768
  expect_path({32768, 128, 1}, "row-per-thread");
  expect_path({32769, 96, 1, DType::kFloat32, kSoftmax}, "row-per-thread");  // E = 96 softmax k = 1: two lanes,
  expect_path({65536, 96, 1, DType::kFloat32, kSoftmax}, "row-per-thread");  // ... then one (both widths)
  expect_path({65536, 96, 1, kBf16, kSoftmax}, "row-per-thread");
  expect_path({32769, 112, 1, DType::kFloat32, kSoftmax}, "register");       // ... E = 96 alone
  expect_path({65536, 128, 1}, "row-per-thread");
  expect_path({32768, 64, 2, DType::kFloat32, kSoftmax}, "row-per-thread");  // E in [64, 128] softmax k > 1 from 32768
  expect_path({32767, 64, 2, DType::kFloat32, kSoftmax}, "register");
  expect_path({32768, 64, 8, DType::kFloat32, kSoftmax}, "row-per-thread");
  expect_path({65536, 48, 2, DType::kFloat32, kSoftmax}, "register");  // ... E < 64: fp32 only from k = 4
  expect_path({65536, 48, 4, DType::kFloat32, kSoftmax}, "row-per-thread");
  expect_path({65536, 48, 2, kBf16, kSoftmax}, "row-per-thread");     // ... 16-bit k > 1 from 65536
  expect_path({32768, 48, 8, kBf16, kSoftmax}, "register");
  expect_path({65536, 64, 1, DType::kFloat32, kSoftmax}, "register");  // softmax k = 1: the register path ...
  expect_path({65536, 128, 1, DType::kFloat32, kSoftmax}, "register");
  expect_path({65536, 64, 1, kBf16, kSoftmax}, "row-per-thread");     // ... but 16-bit E in [64, 128] at 65536
  expect_path({65536, 128, 1, kBf16, kSoftmax}, "row-per-thread");
  expect_path({65536, 48, 1, kBf16, kSoftmax}, "register");           // ... not E < 64
  expect_path({32768, 128, 4, DType::kFloat32, kSoftmax}, "row-per-thread");
  expect_path({32767, 112, 8, kBf16, kSoftmax}, "register");
  expect_path({32768, 128, 3, kBf16, kSoftmax}, "row-per-thread");
  expect_path({65536, 256, 3}, "filter");                             // E = 256 sigmoid k <= 3 at 65536
  expect_path({65536, 256, 1, kBf16}, "filter");
  expect_path({65536, 256, 4}, "row-per-thread");                     // E = 256 sigmoid, k >= 4 from 16384
  expect_path({65536, 256, 8}, "row-per-thread");
  expect_path({16384, 256, 4}, "row-per-thread");
  expect_path({16383, 256, 8}, "register");
  expect_path({32768, 256, 1}, "row-per-thread");                     // ... k = 1 from 32768, both dtypes
  expect_path({32767, 256, 1}, "register");
  expect_path({32768, 256, 2}, "row-per-thread");                     // ... k = 2 from 32768, both dtypes
  expect_path({16383, 256, 2}, "register");                           // ... fp32 k = 2 from 16384 on four lanes
  expect_path({16384, 256, 2}, "row-per-thread");
  expect_path({12288, 256, 2, kBf16}, "row-per-thread");              // ... 16-bit k <= 3 from 12288
  expect_path({12287, 256, 2, kBf16}, "register");
  expect_path({16384, 256, 3}, "row-per-thread");                     // ... k = 3 from 16384
  expect_path({12288, 256, 3}, "row-per-thread");                    // ... fp32 k = 3 from 12288
  expect_path({12287, 256, 3}, "register");
  expect_path({24576, 64, 2}, "row-per-thread");                      // fp32 E = 64 k = 2-3 from 24576, one lane
  expect_path({24575, 64, 2}, "register");
  expect_path({24575, 64, 1}, "register");
  expect_path({16384, 192, 1}, "row-per-thread");                     // E in (128, 256) sigmoid from 16384
  expect_path({8191, 192, 8}, "register");                          // ... below that, the lanes bands from 8192
  expect_path({8192, 320, 4}, "row-per-thread");                      // E > 256, not full: from 8192
  expect_path({8191, 320, 4, kBf16}, "register");
  expect_path({16384, 192, 1, DType::kFloat32, kSoftmax}, "row-per-thread");  // softmax, E in (128, 256): from 16384
  expect_path({12287, 160, 4, kBf16, kSoftmax}, "register");
  expect_path({16384, 320, 4, DType::kFloat32, kSoftmax}, "row-per-thread");  // E in (256, 512): fp32 from 16384
  expect_path({16383, 320, 1, DType::kFloat32, kSoftmax}, "register");  // ... k = 1
  expect_path({8192, 320, 2, DType::kFloat32, kSoftmax}, "row-per-thread");  // ... k >= 2 from 8192
  expect_path({8191, 320, 8, DType::kFloat32, kSoftmax}, "register");
  expect_path({8192, 320, 1, kBf16, kSoftmax}, "row-per-thread");     // ... 16-bit from 8192
  expect_path({32768, 256, 8, DType::kFloat32, kSoftmax}, "row-per-thread");  // E = 256 softmax k >= 4 from 32768
  expect_path({32767, 256, 2, kBf16, kSoftmax}, "register");
  expect_path({65536, 256, 8, DType::kFloat32, kSoftmax}, "filter");  // ... the filter path at 65536 rows
  expect_path({65536, 256, 4, kBf16, kSoftmax}, "filter");
  expect_path({65536, 256, 8, kBf16, kSoftmax}, "row-per-thread");    // ... but 16-bit k > 4
  expect_path({32768, 256, 2, DType::kFloat32, kSoftmax}, "row-per-thread");  // ... and k = 2-3 (session 32)
  expect_path({32767, 256, 3, DType::kFloat32, kSoftmax}, "register");
  expect_path({65536, 256, 4, DType::kFloat32, kSoftmax}, "filter");
  expect_path({32768, 256, 1, DType::kFloat32, kSoftmax}, "register");  // k = 1: the estimated top-1 kernel
  expect_path({65536, 256, 1, DType::kFloat32, kSoftmax}, "filter");  // ... up to 65536 rows
  expect_path({65536, 512, 1}, "filter");
  expect_path({65536, 384, 8}, "filter");
  expect_path({16384, 512, 8, kBf16}, "row-per-thread");  // 16-bit sigmoid k >= 5, 12288-18431 rows
  expect_path({18432, 512, 8, kBf16}, "filter");
  expect_path({16384, 512, 8}, "filter");
}

// Lanes per row of the row-per-thread path by rows
// (thread_row_lanes_preferred): more lanes between a wave of rows and the
// rows where the table's lanes fill the GPU; 0 where another path runs.
TEST(TierTable, RowPerThreadLanesByRows) {
  auto lanes = [](const Call& c) { return cuda::thread_row_lanes(params_of(c)); };
  EXPECT_EQ(lanes({12288, 64, 4}), 2);  // E = 64, k >= 4: two lanes from 12288 rows
  EXPECT_EQ(lanes({12287, 64, 4}), 0);
  EXPECT_EQ(lanes({32767, 64, 8, kBf16, kSoftmax}), 2);
  EXPECT_EQ(lanes({32768, 64, 8}), 1);  // ... one from 32768
  EXPECT_EQ(lanes({16384, 64, 2}), 0);  // ... not k <= 2
  EXPECT_EQ(lanes({16384, 128, 4, DType::kFloat32, kSoftmax}), 2);  // E = 128, k >= 2: 16384-32768 rows
  EXPECT_EQ(lanes({16383, 128, 8}), 0);
  EXPECT_EQ(lanes({32768, 128, 8}), 2);
  EXPECT_EQ(lanes({32769, 128, 8}), 1);
  EXPECT_EQ(lanes({24576, 128, 1}), 2);                              // ... k = 1 with sigmoid only
  EXPECT_EQ(lanes({24576, 128, 1, DType::kFloat32, kSoftmax}), 0);
  EXPECT_EQ(lanes({65536, 128, 1, kBf16, kSoftmax}), 1);
  EXPECT_EQ(lanes({8192, 192, 1, DType::kFloat32, kSoftmax}), 4);    // E = 192: four lanes, softmax 8192-24576
  EXPECT_EQ(lanes({24576, 192, 8, kBf16, kSoftmax}), 4);
  EXPECT_EQ(lanes({24577, 192, 8, kBf16, kSoftmax}), 2);
  EXPECT_EQ(lanes({12288, 192, 4}), 4);                              // ... sigmoid 8192-16383
  EXPECT_EQ(lanes({16383, 192, 4, kBf16}), 4);
  EXPECT_EQ(lanes({12288, 192, 1}), 2);                              // ... but fp32 k = 1 and 8 two lanes from 10240
  EXPECT_EQ(lanes({16383, 192, 8}), 2);
  EXPECT_EQ(lanes({10239, 192, 8}), 4);
  EXPECT_EQ(lanes({12288, 192, 8, kBf16}), 4);
  EXPECT_EQ(lanes({16384, 192, 2}), 4);                              // ... and fp32 k = 2 four lanes to 26623
  EXPECT_EQ(lanes({26623, 192, 2}), 4);
  EXPECT_EQ(lanes({26624, 192, 2}), 2);
  EXPECT_EQ(lanes({16384, 192, 2, kBf16}), 2);
  EXPECT_EQ(lanes({16384, 192, 4}), 2);
  EXPECT_EQ(lanes({8191, 192, 4}), 0);
  EXPECT_EQ(lanes({16384, 256, 4, DType::kFloat32, kSoftmax}), 4);   // E = 256 softmax k >= 4: 16384-32767
  EXPECT_EQ(lanes({16384, 256, 8, DType::kFloat32, kSoftmax}), 0);   // ... but fp32 k > 4
  EXPECT_EQ(lanes({32767, 256, 8, kBf16, kSoftmax}), 4);
  EXPECT_EQ(lanes({32768, 256, 8, kBf16, kSoftmax}), 2);
  EXPECT_EQ(lanes({16384, 256, 4}), 2);                              // ... sigmoid keeps two
  EXPECT_EQ(lanes({8192, 320, 4}), 4);
  EXPECT_EQ(lanes({65536, 64, 8}), 1);
  EXPECT_EQ(lanes({12288, 96, 1, DType::kFloat32, kSoftmax}), 2);   // E = 96: two lanes, 12288-32768
  EXPECT_EQ(lanes({32768, 96, 8}), 2);
  EXPECT_EQ(lanes({32769, 96, 8}), 1);
  EXPECT_EQ(lanes({12287, 96, 8}), 0);
  EXPECT_EQ(lanes({32769, 96, 1, DType::kFloat32, kSoftmax}), 2);   // ... softmax k = 1 to 61439
  EXPECT_EQ(lanes({61439, 96, 1, kBf16, kSoftmax}), 2);
  EXPECT_EQ(lanes({61440, 96, 1, kBf16, kSoftmax}), 1);           // ... from 61440: one lane, both widths
  EXPECT_EQ(lanes({61440, 96, 1, DType::kFloat32, kSoftmax}), 1);
  EXPECT_EQ(lanes({65536, 96, 1, DType::kFloat32, kSoftmax}), 1);
  EXPECT_EQ(lanes({32769, 96, 2, DType::kFloat32, kSoftmax}), 1);   // ... but k > 1: one lane, the path's own
  EXPECT_EQ(lanes({12288, 160, 1, kBf16, kSoftmax}), 2);            // E = 160: from 12288 rows
  EXPECT_EQ(lanes({12287, 160, 8, kBf16}), 2);                       // ... 16-bit sigmoid from 8192
  EXPECT_EQ(lanes({12287, 160, 8}), 0);
  EXPECT_EQ(lanes({8192, 96, 4, kBf16}), 2);
  EXPECT_EQ(lanes({8192, 96, 1, kBf16}), 0);
  EXPECT_EQ(lanes({8191, 160, 8, kBf16}), 0);
  EXPECT_EQ(lanes({12288, 224, 4}), 2);                              // E = 224: sigmoid only
  EXPECT_EQ(lanes({12288, 224, 4, DType::kFloat32, kSoftmax}), 0);
  EXPECT_EQ(lanes({16384, 224, 4, DType::kFloat32, kSoftmax}), 2);  // ... softmax's own rows from 16384
  EXPECT_EQ(lanes({12288, 64, 3, kBf16}), 2);                        // 16-bit sigmoid, E = 64 k = 3: two lanes
  EXPECT_EQ(lanes({12287, 64, 3, kBf16}), 0);
  EXPECT_EQ(lanes({16384, 64, 1, kBf16}), 2);                        // ... k <= 2 from 16384
  EXPECT_EQ(lanes({16383, 64, 2, kBf16}), 0);
  EXPECT_EQ(lanes({32767, 64, 3, DType::kFloat16}), 2);
  EXPECT_EQ(lanes({32768, 64, 1, kBf16}), 1);                        // ... the table's one from 32768
  EXPECT_EQ(lanes({16384, 64, 2, kBf16, kSoftmax}), 0);              // ... not softmax
  EXPECT_EQ(lanes({12288, 256, 1, kBf16}), 4);                       // E = 256 k <= 3: four lanes to 24575
  EXPECT_EQ(lanes({24575, 256, 3, kBf16}), 4);
  EXPECT_EQ(lanes({18431, 256, 1, kBf16}), 4);                       // ... k = 1 only to 18431, then two
  EXPECT_EQ(lanes({18432, 256, 1, kBf16}), 2);
  EXPECT_EQ(lanes({24576, 256, 2, kBf16}), 2);                       // ... two to 32767
  EXPECT_EQ(lanes({32768, 256, 1, kBf16}), 2);                       // ... the table's two, as before
  EXPECT_EQ(lanes({12287, 256, 1, kBf16}), 0);
  EXPECT_EQ(lanes({16384, 256, 1}), 0);                              // ... not fp32
  EXPECT_EQ(lanes({16384, 256, 4, kBf16}), 2);                       // ... nor k >= 4 from 16384
  EXPECT_EQ(lanes({12288, 256, 4, kBf16}), 4);                       // 16-bit k = 4-8 four lanes at 12288-16383
  EXPECT_EQ(lanes({16383, 256, 8, kBf16}), 4);
  EXPECT_EQ(lanes({12287, 256, 8, kBf16}), 0);
  EXPECT_EQ(lanes({12288, 256, 4}), 2);                              // ... fp32 k = 4 two lanes there
  EXPECT_EQ(lanes({12288, 256, 8}), 0);
  EXPECT_EQ(lanes({12288, 512, 5, kBf16}), 4);                       // E = 512 k >= 5: four lanes, 12288-18431
  EXPECT_EQ(lanes({18431, 512, 8, kBf16}), 4);
  EXPECT_EQ(lanes({18432, 512, 8, kBf16}), 0);                       // ... the filter path from 18432
  EXPECT_EQ(lanes({16384, 512, 4, kBf16}), 0);                       // ... not k = 4
  EXPECT_EQ(lanes({16384, 512, 8}), 0);                              // ... nor fp32
  EXPECT_EQ(lanes({12287, 512, 8, kBf16}), 0);
  EXPECT_EQ(lanes({12288, 64, 3}), 2);                               // fp32 E = 64 k = 3: two lanes, 12288-24575
  EXPECT_EQ(lanes({24576, 64, 3}), 1);                               // ... then one
  EXPECT_EQ(lanes({12288, 64, 2}), 0);
  EXPECT_EQ(lanes({16384, 256, 2}), 4);                              // fp32 E = 256 k = 2: four lanes, 16384-32767
  EXPECT_EQ(lanes({32767, 256, 2}), 4);
  EXPECT_EQ(lanes({32768, 256, 2}), 2);
  EXPECT_EQ(lanes({12288, 256, 3}), 2);                              // ... k = 3 the table's two from 12288
  EXPECT_EQ(lanes({12288, 128, 2, kBf16}), 4);                       // E = 128 16-bit sigmoid k >= 2: four lanes, 12288-16383
  EXPECT_EQ(lanes({16383, 128, 8, DType::kFloat16}), 4);
  EXPECT_EQ(lanes({12287, 128, 4, kBf16}), 0);
  EXPECT_EQ(lanes({12288, 128, 1, kBf16}), 0);                       // ... not k = 1
  EXPECT_EQ(lanes({12288, 128, 4}), 0);                              // ... nor fp32
  EXPECT_EQ(lanes({16384, 128, 2, DType::kFloat32, kSoftmax}), 4);  // E = 128 k = 2: four lanes, 16384-32767
  EXPECT_EQ(lanes({32767, 128, 2}), 4);
  EXPECT_EQ(lanes({32768, 128, 2, kBf16, kSoftmax}), 2);             // ... the band's two at 32768
  EXPECT_EQ(lanes({16384, 128, 2, kBf16}), 2);                       // ... 16-bit sigmoid keeps two
  EXPECT_EQ(lanes({24576, 320, 4, kBf16}), 2);                       // E = 320 16-bit sigmoid: two lanes, 24576-32767
  EXPECT_EQ(lanes({32767, 320, 1, DType::kFloat16}), 2);
  EXPECT_EQ(lanes({24575, 320, 4, kBf16}), 4);                       // ... the table's four around it
  EXPECT_EQ(lanes({32768, 320, 8, kBf16}), 4);
  EXPECT_EQ(lanes({24576, 320, 4}), 4);                              // ... not fp32
  EXPECT_EQ(lanes({24576, 320, 4, kBf16, kSoftmax}), 4);             // ... nor softmax
  EXPECT_EQ(lanes({16384, 384, 8, kBf16}), 2);                       // E = 384 sigmoid k = 8: two lanes, 16-bit from 16384
  EXPECT_EQ(lanes({16383, 384, 8, kBf16}), 0);
  EXPECT_EQ(lanes({20480, 384, 8}), 2);                              // ... fp32 from 20480
  EXPECT_EQ(lanes({20479, 384, 8}), 0);
  EXPECT_EQ(lanes({28671, 384, 8}), 2);                              // ... to 28671
  EXPECT_EQ(lanes({28672, 384, 8}), 0);
  EXPECT_EQ(lanes({32767, 384, 8, DType::kFloat16}), 2);             // ... 16-bit to 32767
  EXPECT_EQ(lanes({32768, 384, 8, kBf16}), 0);                       // ... the filter path from 32768
  EXPECT_EQ(lanes({24576, 384, 4, kBf16}), 0);                       // ... not k < 8
  EXPECT_EQ(lanes({24576, 384, 8, kBf16, kSoftmax}), 0);             // ... nor softmax
  // A requested count wins over the table's.
  EXPECT_EQ(cuda::thread_row_lanes(params_of({16384, 64, 8}), {.thread_row_lanes = 1}), 1);
}

// Every band of the lanes table (thread_row_lane_bands.h) is well formed
// and one the row-per-thread path runs: its first call (fewest rows,
// smallest k) lies in the band and takes that path with the table's lanes
// (the band's, or an earlier band's where one holds the call too). A band naming
// lanes the kernel refuses would otherwise fall back to another path
// without a word.
TEST(TierTable, EveryLaneBandRuns) {
  std::size_t i = 0;
  for (const cuda::ThreadRowLaneBand& b : cuda::kThreadRowLaneBands) {
    SCOPED_TRACE("band " + std::to_string(i));
    EXPECT_TRUE(b.lanes == 2 || b.lanes == 4);
    EXPECT_LE(b.k_min, b.k_max);
    EXPECT_LT(b.rows_min, b.rows_end);
    const bool fp32 = b.logits == cuda::LaneBandLogits::kFp32;
    const Call c{b.rows_min, b.experts, b.k_min, fp32 ? DType::kFloat32 : kBf16,
                 b.norm == cuda::LaneBandNorm::kSoftmax ? kSoftmax : Normalization::kSigmoid};
    EXPECT_EQ(path_of(c, {.force_path = 5, .thread_row_lanes = b.lanes}), "row-per-thread") << where(c);
    expect_path(c, "row-per-thread");
    cuda::KernelParams kp{};
    kp.num_experts = static_cast<int>(c.experts);
    kp.topk = static_cast<int>(c.topk);
    kp.num_tokens = c.tokens;
    kp.softmax = c.norm == kSoftmax;
    const int logit_bytes = fp32 ? 4 : 2;
    EXPECT_TRUE(cuda::lane_band_holds(b, kp, logit_bytes)) << where(c);
    EXPECT_EQ(cuda::thread_row_lanes(params_of(c)), cuda::thread_row_lanes_preferred(kp, logit_bytes)) << where(c);
    ++i;
  }
}

// The register path's selection from estimated scores: where the tier
// table asks for it (the launch adds the full-tier and vector-load checks).
TEST(TierTable, EstimatedSelection) {
  auto preferred = [](const Call& c, const cuda::LaunchOptions& options = {}) {
    const RoutingParams p = params_of(c);
    return cuda::estimated_selection_preferred(p, options);
  };
  EXPECT_TRUE(preferred({1024, 256, 1}));                      // k = 1 from 8 experts per lane
  EXPECT_TRUE(preferred({8192, 512, 8, kBf16, kSoftmax}));     // k = 4-8
  EXPECT_TRUE(preferred({1024, 512, 4}));                      // E = 512 sigmoid k = 4
  EXPECT_FALSE(preferred({1024, 512, 4, DType::kFloat32, kSoftmax}));  // ... not softmax from 1024 rows
  EXPECT_TRUE(preferred({512, 512, 4, DType::kFloat32, kSoftmax}));
  EXPECT_TRUE(preferred({2048, 192, 4}));                      // tiers that are not full: sigmoid k >= 4
  EXPECT_TRUE(preferred({65536, 192, 4}));                     // ... below 256 experts at any row count
  EXPECT_FALSE(preferred({2049, 320, 4}));                     // ... else to 2048 rows
  EXPECT_FALSE(preferred({1024, 448, 8, DType::kFloat32, kSoftmax}));  // ... not softmax
  EXPECT_FALSE(preferred({4095, 192, 1}));                     // ... k = 1 from 4096 rows
  EXPECT_TRUE(preferred({4096, 448, 1}));
  EXPECT_FALSE(preferred({4096, 320, 1}));                     // ... 8192 on the 12-per-lane tier
  EXPECT_TRUE(preferred({8192, 320, 1}));
  EXPECT_FALSE(preferred({1024, 256, 2}));                     // k = 2-3: exact
  EXPECT_FALSE(preferred({1024, 256, 3}));
  EXPECT_FALSE(preferred({1024, 256, 9}));                     // past the unrolled rounds
  EXPECT_TRUE(preferred({1024, 128, 8}));                      // E = 128: k = 5-8
  EXPECT_FALSE(preferred({1024, 128, 4}));                     // ... k = 4 from 2048 rows
  EXPECT_TRUE(preferred({2048, 128, 4}));
  EXPECT_FALSE(preferred({1024, 128, 1}));                     // ... no top-1 at four per lane
  EXPECT_FALSE(preferred({1024, 256, 8}, {.force_round_selection = true}));
}

// Where the block-threshold path runs its kernel of 8 warps with two
// experts per thread: E in (384, 512], k <= 8.
TEST(TierTable, BlockThresholdPairs) {
  auto pairs = [](const Call& c, const cuda::LaunchOptions& options = {}) {
    const RoutingParams p = params_of(c);
    return cuda::block_threshold_pair_warps(p, options) == 8;
  };
  EXPECT_TRUE(pairs({1, 512, 4}));                                 // fp32 sigmoid k <= 4
  EXPECT_TRUE(pairs({1, 512, 8}));                                 // ... and k > 4
  EXPECT_TRUE(pairs({128, 512, 8}));
  EXPECT_TRUE(pairs({256, 512, 8}));
  EXPECT_TRUE(pairs({1, 512, 8, kBf16}));                          // bf16: every k <= 8
  EXPECT_TRUE(pairs({128, 512, 8, DType::kFloat32, kSoftmax}));    // softmax k = 8
  EXPECT_TRUE(pairs({1, 385, 8, kBf16, kSoftmax}));                // from 385 experts
  EXPECT_FALSE(pairs({1, 384, 8, kBf16, kSoftmax}));
  EXPECT_TRUE(pairs({1, 512, 4, kBf16, kSoftmax}));                // softmax k in [2, 4]: the pairs
  EXPECT_TRUE(pairs({1, 512, 2, DType::kFloat32, kSoftmax}));
  EXPECT_FALSE(pairs({129, 512, 2, kBf16, kSoftmax}));             // medium rows: the split-row path's
  EXPECT_FALSE(pairs({1, 512, 9}, {.force_path = 8}));             // forced, k > 8: one per thread
  EXPECT_TRUE(pairs({1030, 500, 2}, {.force_path = 8}));           // forced, within the rule
  EXPECT_FALSE(pairs({1030, 500, 2}));                             // not the path there
}

// And on 4 warps: E in (128, 256], k <= 8, where the block-threshold path
// runs, for 16-bit logits; fp32 keeps one expert per thread unless k is
// above its ceil(E / 32) warps.
TEST(TierTable, BlockThresholdPairsOnFourWarps) {
  auto warps = [](const Call& c, const cuda::LaunchOptions& options = {}) {
    const RoutingParams p = params_of(c);
    return cuda::block_threshold_pair_warps(p, options);
  };
  EXPECT_EQ(warps({1, 256, 8, kBf16, kSoftmax}), 4);
  EXPECT_EQ(warps({16, 256, 2, kBf16}), 4);
  EXPECT_EQ(warps({1, 160, 4, DType::kFloat16, kSoftmax}), 4);     // fp16 follows bf16
  EXPECT_EQ(warps({1, 129, 4, kBf16, kSoftmax}), 4);               // from 129 experts
  EXPECT_EQ(warps({1, 256, 8, DType::kFloat32, kSoftmax}), 0);     // fp32: one per thread
  EXPECT_EQ(warps({1, 192, 6, DType::kFloat32, kSoftmax}), 0);     // ... where the warps cover k
  EXPECT_EQ(warps({1, 192, 7, DType::kFloat32, kSoftmax}), 4);     // ... else the half-warp groups
  EXPECT_EQ(warps({128, 160, 8}), 4);
  EXPECT_EQ(warps({129, 160, 8}), 0);                              // not the path past 128 rows
  EXPECT_EQ(warps({1, 257, 8, kBf16, kSoftmax}), 0);               // past 256: one per thread
  EXPECT_EQ(warps({1, 256, 9, kBf16}, {.force_path = 8}), 0);      // forced, k > 8: one per thread
  EXPECT_EQ(warps({1, 512, 8, kBf16}), 8);                         // E in (384, 512]: 8 warps
  EXPECT_EQ(warps({65536, 256, 8, kBf16}), 0);                     // not the path there
}

// The groups of lanes of that kernel's warps: a warp on 8 warps, half-warps
// on 4, quarter-warps at k = 8 above ceil(E / 32) (tau would otherwise be
// the least of the 8 half-warp maxima).
TEST(TierTable, BlockThresholdPairGroups) {
  auto groups = [](const Call& c, const cuda::LaunchOptions& options = {}) {
    return cuda::block_threshold_pair_groups(params_of(c), options);
  };
  EXPECT_EQ(groups({1, 512, 8, kBf16}), 1);                        // 8 warps
  EXPECT_EQ(groups({1, 256, 8, kBf16, kSoftmax}), 2);              // k = 8 = ceil(E / 32)
  EXPECT_EQ(groups({1, 192, 7}), 2);                               // k = 7 above 6 warps
  EXPECT_EQ(groups({1, 192, 8}), 4);                               // k = 8 above 6 warps
  EXPECT_EQ(groups({128, 160, 8, DType::kFloat32, kSoftmax}), 4);
  EXPECT_EQ(groups({16, 224, 8, kBf16}), 4);
  EXPECT_EQ(groups({1, 129, 8, kBf16}), 4);                        // k = 8 above 5 warps
  EXPECT_EQ(groups({1, 256, 8, DType::kFloat32, kSoftmax}), 0);    // fp32 E = 256: one expert per thread
  EXPECT_EQ(groups({1, 512, 8}), 1);                               // fp32 sigmoid k > 4: 8 warps too
  EXPECT_EQ(groups({129, 160, 8}), 0);                             // not the path past 128 rows
}

TEST(TierTable, ThresholdSelection) {
  auto preferred = [](const Call& c, const cuda::LaunchOptions& options = {}) {
    const RoutingParams p = params_of(c);
    return cuda::threshold_selection_preferred(p, options);
  };
  EXPECT_TRUE(preferred({1024, 192, 4}));     // any k >= 2 from 1024 rows
  EXPECT_FALSE(preferred({1023, 192, 4}));
  EXPECT_FALSE(preferred({1024, 128, 4}));    // 2 or 4 experts per lane: never
  EXPECT_FALSE(preferred({8192, 192, 1}));    // k = 1: one round is an argmax
  EXPECT_FALSE(preferred({65536, 448, 1}));
  EXPECT_TRUE(preferred({129, 192, 2}));      // k = 2 from 129 rows
  EXPECT_FALSE(preferred({128, 192, 2}));
  EXPECT_TRUE(preferred({129, 320, 3}));      // k = 3 above 256 experts
  EXPECT_FALSE(preferred({768, 256, 3}));     // ... not at 256 below 1024 rows
  EXPECT_TRUE(preferred({1024, 256, 3}));
  EXPECT_TRUE(preferred({1, 256, 8}));        // the decode exception
  EXPECT_FALSE(preferred({1, 384, 8}));
  EXPECT_FALSE(preferred({8192, 256, 8}, {.force_round_selection = true}));
  EXPECT_TRUE(preferred({1, 192, 1}, {.force_threshold_selection = true}));
}

// Register grids of one to seven blocks per SM are held to ceil(blocks /
// SMs) blocks per SM, three or more only below 16 experts per lane (132
// SMs: an H100 SXM or H200; 256 / lanes rows a block). 0: no cap.
TEST(TierTable, RegisterGridsHeldToTheirBlocksPerSm) {
  constexpr int kSms = 132;
  auto cap = [](const Call& c) { return cuda::register_blocks_per_sm(params_of(c), kSms); };
  EXPECT_EQ(cap({1056, 512, 8}), 0);  // 132 blocks: one per SM
  EXPECT_EQ(cap({1057, 512, 8}), 2);
  EXPECT_EQ(cap({2048, 512, 8}), 2);
  EXPECT_EQ(cap({2112, 384, 4, kBf16, kSoftmax}), 2);  // 264 blocks
  EXPECT_EQ(cap({2113, 384, 4}), 3);                    // 265
  EXPECT_EQ(cap({3168, 384, 4}), 3);                    // 396
  EXPECT_EQ(cap({3169, 384, 4}), 4);                    // 397
  EXPECT_EQ(cap({7392, 128, 8}), 7);                    // 924: seven per SM
  EXPECT_EQ(cap({7393, 128, 8}), 0);                    // 925: eight would hold nothing back
  EXPECT_EQ(cap({8192, 128, 8}), 0);                    // the anchor grid's 1024 blocks
  EXPECT_EQ(cap({2113, 512, 8}), 0);                    // 16 experts per lane: two at most
  EXPECT_EQ(cap({3072, 512, 1, kBf16}), 0);
  EXPECT_EQ(cap({2048, 256, 1}), 2);
  EXPECT_EQ(cap({3072, 256, 8, DType::kFloat32, kSoftmax}), 3);
  EXPECT_EQ(cap({2048, 320, 8, DType::kFloat32, kSoftmax}), 2);
  EXPECT_EQ(cap({1057, 128, 1}), 2);                    // four experts per lane
  EXPECT_EQ(cap({3072, 128, 8}), 3);
  EXPECT_EQ(cap({2048, 64, 8}), 2);                     // two experts per lane
  EXPECT_EQ(cap({4096, 64, 8}), 4);
  EXPECT_EQ(cap({65536, 8, 1}), 4);                     // two lanes per row: 512 blocks of 128 rows
  EXPECT_EQ(cap({8192, 8, 1}), 0);                      // four lanes per row: 128 blocks of 64 rows
  EXPECT_EQ(cap({16, 512, 8}), 0);                      // another path
  EXPECT_EQ(cap({8192, 512, 8}), 0);
}

// Row-per-thread grids: the sigmoid kernels of 16-bit logits are held, one
// lane per row to eight blocks per SM, two or four lanes to ceil(blocks /
// SMs) on grids of up to ten per SM (64 / lanes rows a block). 0: no hold.
TEST(TierTable, RowPerThreadGridsHeldToTheirBlocksPerSm) {
  constexpr int kSms = 132;
  auto cap = [](const Call& c) { return cuda::thread_row_blocks_per_sm(params_of(c), kSms); };
  EXPECT_EQ(cap({65536, 64, 4, kBf16}), 8);  // one lane per row
  EXPECT_EQ(cap({65536, 128, 1, DType::kFloat16}), 8);
  EXPECT_EQ(cap({65536, 64, 4}), 0);                    // fp32: the registers hold eight
  EXPECT_EQ(cap({65536, 64, 4, kBf16, kSoftmax}), 0);   // softmax: likewise
  EXPECT_EQ(cap({16384, 192, 1, kBf16}), 4);            // two lanes: 512 blocks
  EXPECT_EQ(cap({16384, 320, 1, kBf16}), 8);            // four lanes: 1024 blocks
  EXPECT_EQ(cap({65536, 320, 1, kBf16}), 0);            // 4096 blocks: more than a wave
  EXPECT_EQ(cap({1, 64, 4, kBf16}), 0);                 // another path
}

// The register path's tiers (lanes per row x experts per lane, blocks per
// SM) and where their rows are ranked: the rules of routing_tier_table.cuh
// by k and the row count at E = 8, 16, 32, 64, 128, 256 and 512.
TEST(TierTable, RegisterTiers) {
  auto tier_of = [](const Call& c, const cuda::LaunchOptions& options = {}) {
    const RoutingParams p = params_of(c);
    const cuda::RegisterTier t = cuda::register_tier(p, options);
    return std::to_string(t.lanes) + "x" + std::to_string(t.experts_per_lane) + "/" + std::to_string(t.min_blocks) +
           (cuda::register_rows_ranked(p, options) ? " ranked" : "");
  };
  auto expect_tier = [&](const Call& c, const std::string& want, const cuda::LaunchOptions& options = {}) {
    EXPECT_EQ(tier_of(c, options), want) << where(c);
  };
  expect_tier({1, 8, 4}, "32x1/1");                  // one warp per row at few rows
  expect_tier({1, 8, 5}, "32x1/1 ranked");           // ... ranked from k = 5
  expect_tier({1024, 8, 8}, "32x1/1 ranked");        // k > 4 up to 1024 rows
  expect_tier({1024, 8, 4}, "4x2/1 ranked");         // four lanes of 2, ranked from k = 4
  expect_tier({8192, 8, 2}, "4x2/1");                // ... k = 2-3 by rounds
  expect_tier({65536, 8, 8}, "4x2/1 ranked");
  expect_tier({16384, 8, 1}, "2x4/1");               // two lanes of 4: k = 1 from 16384 rows
  expect_tier({32768, 8, 2}, "2x4/1 ranked");        // ... k <= 4 from 32768, ranked from k = 2
  expect_tier({16384, 8, 2}, "4x2/1");
  expect_tier({4096, 16, 4}, "8x2/1 ranked");
  expect_tier({4096, 32, 4}, "16x2/1");              // E > 16: ranked from k = 8
  expect_tier({4096, 32, 8}, "16x2/1 ranked");
  expect_tier({1, 64, 8}, "32x2/1");
  expect_tier({4096, 64, 1}, "16x4/1");              // E = 64 k = 1: 16 lanes from 4096 rows
  expect_tier({8192, 64, 4}, "32x2/1");              // ... k > 1 keeps one warp up to 16383 rows
  expect_tier({16384, 64, 4}, "8x8/1");              // eight lanes of 8 from 16384
  expect_tier({16384, 64, 8}, "32x2/1");             // ... fp32 sigmoid k > 4 from 32768
  expect_tier({16384, 64, 8, kBf16}, "8x8/1");
  expect_tier({32768, 64, 1}, "4x16/2");             // four lanes of 16 for k = 1 from 32768
  expect_tier({1024, 128, 4}, "32x4/1");
  expect_tier({4096, 128, 4}, "16x8/1");             // two rows per warp from 4096
  expect_tier({4096, 128, 8}, "32x4/1");             // ... but sigmoid k = 8 (estimated selection)
  expect_tier({4096, 128, 8, DType::kFloat32, kSoftmax}, "16x8/1");
  expect_tier({8192, 128, 1, kBf16}, "8x16/2");      // k = 1: eight lanes of 16 from 8192
  expect_tier({8192, 128, 1}, "16x8/1");             // ... but fp32 sigmoid
  expect_tier({8192, 256, 1}, "16x16/2");            // E = 256 k = 1: 16 lanes from 8192
  expect_tier({8192, 256, 2}, "32x8/1");
  expect_tier({1024, 384, 8}, "32x12/1");
  expect_tier({2048, 512, 8}, "32x16/2");            // two blocks per SM up to 2048 rows
  expect_tier({2049, 512, 8}, "32x16/3");
  expect_tier({8192, 8, 8}, "4x2/1", {.force_round_selection = true});  // forced rounds: never ranked
  expect_tier({1, 8, 8}, "32x1/1", {.force_round_selection = true});
  // Every tier the table names has a build, and holds the row.
  for (std::int64_t E : {1, 3, 8, 9, 16, 17, 32, 33, 64, 65, 100, 128, 129, 200, 256, 257, 320, 384, 385, 448, 512})
    for (std::int64_t T : {1, 16, 128, 1024, 2048, 4096, 8192, 16384, 32768, 65536})
      for (std::int64_t k : {1, 2, 4, 5, 8, 32})
        for (DType dtype : {DType::kFloat32, kBf16})
          for (Normalization norm : {Normalization::kSigmoid, kSoftmax}) {
            if (k > E) continue;
            const Call c{T, E, k, dtype, norm};
            const cuda::RegisterTier t = cuda::register_tier(params_of(c));
            EXPECT_TRUE(cuda::register_tier_built(t)) << where(c) << ": " << tier_of(c);
            EXPECT_GE(t.lanes * t.experts_per_lane, E) << where(c) << ": " << tier_of(c);
          }
}

TEST(TierTable, LayoutTheVectorPathsCannotLoadFallsBack) {
  // 4 bytes off the 16-byte vectors: the row-per-thread and filter paths
  // cannot load it, so the register path takes the call.
  expect_path({65536, 64, 8, DType::kFloat32, Normalization::kSigmoid, 4}, "register");
  expect_path({65536, 512, 1, DType::kFloat32, Normalization::kSigmoid, 4}, "register");
}

TEST(TierTable, PastTheRegisterPathTheSharedPath) {
  expect_path({1, 1000, 8}, "shared");
  expect_path({65536, 4096, 8}, "shared");
}

// The call with `options` is refused with an ArgumentError whose message
// holds `needle`.
void expect_refused(const Call& c, const cuda::LaunchOptions& options, const std::string& needle) {
  try {
    const std::string path = path_of(c, options);
    ADD_FAILURE() << where(c) << " force_path " << options.force_path << ": took " << path << ", not refused";
  } catch (const ArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(TierTable, ForcedPathsAreTakenOrRefusedByName) {
  EXPECT_EQ(path_of({1, 8, 1}, {.force_path = 2}), "shared");
  EXPECT_EQ(path_of({1, 8, 1}, {.force_path = 3}), "register-scalar-loads");
  EXPECT_EQ(path_of({1, 100, 8}, {.force_path = 8}), "block-threshold");
  expect_refused({4, 8, 1}, {.force_path = 7}, "the filter path was forced but num_experts is not a multiple of 32");
  expect_refused({1, 8, 1}, {.force_path = 9}, "force_path = 9");
  expect_refused({1, 1000, 8}, {.force_path = 8}, "the block-threshold path was forced but num_experts = 1000");
}

TEST(TierTable, RowPerThreadLanesAreTakenOrRefusedByName) {
  EXPECT_EQ(path_of({8192, 64, 8}, {.force_path = 5, .thread_row_lanes = 4}), "row-per-thread");
  expect_refused({8192, 64, 8}, {.force_path = 5, .thread_row_lanes = 3}, "thread_row_lanes = 3 is not 0, 1, 2 or 4");
  expect_refused({8192, 96, 8}, {.force_path = 5, .thread_row_lanes = 4},
                 "thread_row_lanes = 4 needs num_experts a multiple of 64; num_experts = 96");
  // The launch's grid and hold follow the requested lanes: 8192 rows of
  // bf16 sigmoid at E = 64 take 128 blocks of 64 rows on one lane, 512 of
  // 16 rows on four (held to ceil(512 / 132) = 4 per SM).
  constexpr int kSms = 132;
  const RoutingParams p = params_of({8192, 64, 4, kBf16});
  EXPECT_EQ(cuda::thread_row_blocks_per_sm(p, kSms, {.force_path = 5, .thread_row_lanes = 1}), 8);
  EXPECT_EQ(cuda::thread_row_blocks_per_sm(p, kSms, {.force_path = 5, .thread_row_lanes = 4}), 4);
}

// The shapes that the GPU tests run as the table's own choice of a path
// (automatic_path_shapes.h): a table change that moves one fails here.
TEST(TierTable, TheGpuTestsShapesTakeTheirPaths) {
  const auto expect_shapes = [](const auto& shapes, const std::string& want) {
    for (const testing::AutomaticPathShape& s : shapes) {
      const Call c{s.tokens, s.experts, s.topk, s.dtype, s.norm};
      expect_path(c, want);
      if (s.lanes != 0) EXPECT_EQ(cuda::thread_row_lanes(params_of(c)), s.lanes) << where(c);
    }
  };
  expect_shapes(testing::kFilterPathShapes, "filter");
  expect_shapes(testing::kThreadRowPathShapes, "row-per-thread");
  expect_shapes(testing::kThreadRowHeldShapes, "row-per-thread");
}

}  // namespace
}  // namespace musespark

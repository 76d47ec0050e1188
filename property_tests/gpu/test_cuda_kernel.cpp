// The CUDA router kernel against the float64 reference and against itself
// (paths, graphs, PDL, batch invariance, 64-bit offsets). Every test skips
// with the reason when no CUDA device is usable.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <limits>
#include <vector>

#include "harness/cuda_case.h"
#include "harness/implementations.h"
#include "musespark/errors.h"
#include "../test_support.h"
#include "cuda_test_support.h"

namespace musespark {
namespace {

using harness::CaseConfig;
using harness::RoutingCase;
using harness::RoutingOutput;

using testing::expect_bitwise_equal;

// ---- the reference grid of issue 3 ---------------------------------------
std::vector<CaseConfig> kernel_grid() {
  const std::int64_t experts[] = {1, 2, 3, 7, 8, 31, 32, 33, 64, 127, 128, 255, 256, 257, 384, 512, 1000, 1024, 2048, 4096};
  const std::int64_t tokens[] = {0, 1, 2, 31, 32, 33, 1000};
  const harness::LogitsDistribution dists[] = {
      harness::LogitsDistribution::kNormal, harness::LogitsDistribution::kQuantized,
      harness::LogitsDistribution::kInfinities, harness::LogitsDistribution::kNaNs,
      harness::LogitsDistribution::kHuge, harness::LogitsDistribution::kWide};
  std::vector<CaseConfig> grid;
  std::uint64_t i = 0;
  for (std::int64_t E : experts) {
    const std::int64_t k_max = std::min<std::int64_t>(E, 64);
    // k sampled: 1, 2, a middle value, the maximum.
    std::vector<std::int64_t> ks = {1, std::min<std::int64_t>(2, k_max), std::max<std::int64_t>(1, k_max / 2), k_max};
    ks.erase(std::unique(ks.begin(), ks.end()), ks.end());
    for (std::int64_t k : ks)
      for (DType dtype : {DType::kFloat32, DType::kBFloat16, DType::kFloat16})
        for (Normalization norm : {Normalization::kSigmoid, Normalization::kSoftmax}) {
          CaseConfig c;
          c.experts = E;
          c.topk = k;
          c.logits_dtype = dtype;
          c.normalization = norm;
          c.tokens = tokens[i % 7];
          if (E >= 2048 && c.tokens > 33) c.tokens = 33;  // keeps the float64 reference quick
          c.layout = static_cast<harness::LogitsLayout>(i % 3);
          c.padding = static_cast<harness::PaddingMode>((i / 3) % 3);
          c.padding_stride = 1 + static_cast<std::int64_t>(i % 2);
          c.logits = dists[i % 6];
          c.bias = static_cast<harness::BiasDistribution>((i / 2) % 6);
          if (i % 3 == 0) c.multiplier = 0.17677669529663687;
          if (i % 4 == 1) c.eps = 1e-15;
          c.route_scale = (i % 5 == 0) ? 2.5 : 1.0;
          c.extra_rows = i % 2;
          c.extra_cols = (i / 2) % 2;
          c.ids_dtype = (i % 7 == 3) ? DType::kInt64 : DType::kInt32;
          c.seed = testing::test_seed() * 7919 + i;
          grid.push_back(c);
          ++i;
        }
  }
  // A large batch on a few shapes.
  for (std::int64_t E : {8, 64, 256}) {
    CaseConfig c;
    c.experts = E;
    c.topk = std::min<std::int64_t>(8, E);
    c.tokens = 65537;
    c.logits_dtype = DType::kBFloat16;
    c.padding = harness::PaddingMode::kSparse;
    c.seed = testing::test_seed() + static_cast<std::uint64_t>(E);
    grid.push_back(c);
  }
  return grid;
}

class CudaGrid : public ::testing::TestWithParam<CaseConfig> {};

TEST_P(CudaGrid, MatchesReference) {
  SKIP_WITHOUT_GPU();
  const RoutingCase c(GetParam());
  EXPECT_TRUE(testing::Passes(harness::compare_output(c, harness::run_cuda_case(c))));
}

INSTANTIATE_TEST_SUITE_P(Kernel, CudaGrid, ::testing::ValuesIn(kernel_grid()),
                         [](const auto& info) { return "case" + std::to_string(info.index); });

// ---- paths agree bit for bit ----------------------------------------------
TEST(CudaKernel, RegisterSharedAndScalarPathsAreBitwiseIdentical) {
  SKIP_WITHOUT_GPU();
  // 300 rows take the few-rows tiers (the split-row path by default for
  // E in (128, 512]; forced, the register path's two-block build at
  // E > 256); 4100 the many-rows tiers (two rows per warp at E = 128 but
  // sigmoid k = 8, which keeps one warp per row and its estimated selection;
  // the three-block build at E > 256). The tiers that depend on k and the
  // rows (routing_tier_table.cuh): at E = 64, 4100 rows with k = 1 take 16
  // lanes per row, 16400 eight (fp32 sigmoid k = 8 from 32800 only) and
  // 32800 four at k = 1; at E = 128 k = 1 softmax, 8200 rows eight lanes,
  // and at E = 256 k = 1 sixteen; at E = 8, two lanes from 16400 rows with
  // k = 1 and 32800 with k <= 4. Each path is also forced on every shape.
  const auto many_rows_tier_at = [](std::int64_t E, std::int64_t tokens) {
    if (tokens <= 4100) return true;
    if (tokens == 8200) return E == 128 || E == 256;
    if (tokens == 16400) return E == 8 || E == 64;
    return E == 8 || E == 64;  // 32800
  };
  for (std::int64_t E : {3, 8, 16, 32, 64, 128, 256, 384, 512}) {
    for (std::int64_t tokens : {300, 4100, 8200, 16400, 32800}) {
      if (!many_rows_tier_at(E, tokens)) continue;
      for (auto [norm, k_cap] : {std::pair{Normalization::kSigmoid, 8}, std::pair{Normalization::kSoftmax, 8},
                                 std::pair{Normalization::kSigmoid, 64}, std::pair{Normalization::kSigmoid, 1},
                                 std::pair{Normalization::kSoftmax, 1}}) {
        CaseConfig cfg;
        cfg.experts = E;
        cfg.topk = std::min<std::int64_t>(E, k_cap);
        cfg.tokens = tokens;
        cfg.normalization = norm;
        cfg.logits = harness::LogitsDistribution::kQuantized;
        cfg.seed = E;
        const RoutingCase c(cfg);
        const RoutingOutput reg = harness::run_cuda_case(c, {.force_path = 1});
        const RoutingOutput shared = harness::run_cuda_case(c, {.force_path = 2});
        const RoutingOutput scalar = harness::run_cuda_case(c, {.force_path = 3});
        const RoutingOutput split = harness::run_cuda_case(c, {.force_path = 4});
        const RoutingOutput block_rank = harness::run_cuda_case(c, {.force_path = 6});
        const RoutingOutput rounds = harness::run_cuda_case(c, {.force_path = 1, .force_round_selection = true});
        const std::string where = "E=" + std::to_string(E) + " k=" + std::to_string(cfg.topk) + " T=" + std::to_string(tokens);
        expect_bitwise_equal(reg, shared, "register vs shared, " + where);
        expect_bitwise_equal(reg, scalar, "vector vs scalar loads, " + where);
        expect_bitwise_equal(reg, split, "register vs split-row, " + where);
        expect_bitwise_equal(reg, block_rank, "register vs block-rank, " + where);
        expect_bitwise_equal(reg, rounds, "threshold vs round selection, " + where);
      }
    }
  }
}

// A lane's candidate list holds 3 experts; when one lane owns the whole
// top-k (or more of it than 3) the list is refilled from its registers. Here
// every row puts its best experts in a single lane of the register layout
// (lane 0 under the vector layout of each tier), with exact ties among them,
// so each row needs several refills; the result must equal the reference
// and the shared-memory path bit for bit.
TEST(CudaKernel, OneLaneHoldingTheTopKRefillsItsCandidates) {
  SKIP_WITHOUT_GPU();
  for (std::int64_t E : {8, 16, 32, 64, 128, 256, 512}) {
    for (std::int64_t k : {std::int64_t{4}, std::int64_t{8}, std::min<std::int64_t>(E, 64)}) {
      if (k > E) continue;
      CaseConfig cfg;
      cfg.experts = E;
      cfg.topk = k;
      cfg.tokens = E == 64 ? 32800 : 4100;  // the many-rows tiers: narrow groups, eight experts per lane
      cfg.seed = E * 100 + k;
      RoutingCase c(cfg);
      // Lane 0 of a G-lane group holds experts e with (e / V) % G == 0; V is
      // 4 (fp32) and G <= 32, so e % 128 < 4 lies in lane 0 for every tier.
      for (std::int64_t t = 0; t < cfg.tokens; ++t)
        for (std::int64_t e = 0; e < E; ++e)
          if (e % 128 < 4) c.set_logit(t, e, t % 3 == 0 ? 4.0f : 3.0f + 0.01f * static_cast<float>((e * 7 + t) % 5));
      const RoutingOutput reg = harness::run_cuda_case(c, {.force_path = 1});
      EXPECT_TRUE(testing::Passes(harness::compare_output(c, reg))) << "E=" << E << " k=" << k;
      expect_bitwise_equal(reg, harness::run_cuda_case(c, {.force_path = 2}),
                           "register vs shared, E=" + std::to_string(E) + " k=" + std::to_string(k));
      expect_bitwise_equal(reg, harness::run_cuda_case(c, {.force_path = 4}),
                           "register vs split-row, E=" + std::to_string(E) + " k=" + std::to_string(k));
      expect_bitwise_equal(reg, harness::run_cuda_case(c, {.force_path = 6}),
                           "register vs block-rank, E=" + std::to_string(E) + " k=" + std::to_string(k));
    }
  }
}

// Threshold selection runs from 1024 rows for E in (128, 512] (8 or 16
// experts per lane, some registers empty when E is not a multiple of 32) and
// hands rows it cannot take (NaN-heavy rows, mass ties: more candidates than
// lanes) to the round selection. Both must give the reference's answer and
// each other's bits on every distribution.
TEST(CudaKernel, ThresholdSelectionEqualsRoundSelection) {
  SKIP_WITHOUT_GPU();
  const harness::LogitsDistribution dists[] = {
      harness::LogitsDistribution::kNormal, harness::LogitsDistribution::kQuantized,
      harness::LogitsDistribution::kInfinities, harness::LogitsDistribution::kNaNs, harness::LogitsDistribution::kWide};
  std::uint64_t seed = testing::test_seed();
  for (std::int64_t E : {129, 200, 256, 257, 500, 512})
    for (std::int64_t k : {1, 8, 32})
      for (auto dist : dists) {
        CaseConfig cfg;
        cfg.experts = E;
        cfg.topk = k;
        cfg.tokens = 2048;
        cfg.logits = dist;
        cfg.normalization = (seed % 2) ? Normalization::kSoftmax : Normalization::kSigmoid;
        cfg.padding = harness::PaddingMode::kSparse;
        cfg.seed = seed++;
        const RoutingCase c(cfg);
        const RoutingOutput automatic = harness::run_cuda_case(c);
        const std::string where = "E=" + std::to_string(E) + " k=" + std::to_string(k) + " logits " +
                                  std::to_string(static_cast<int>(dist));
        EXPECT_TRUE(testing::Passes(harness::compare_output(c, automatic))) << where;
        expect_bitwise_equal(automatic, harness::run_cuda_case(c, {.force_round_selection = true}),
                             "threshold vs round selection, " + where);
      }
}

// Threshold selection takes a row without shared-memory ranking when its k
// rounds over the lane maxima each took one lane and exactly k experts reach
// tau. Rows here sit at the edges of that test: exactly k non-NaN experts
// (tau from every round) with two of them tied across lanes, ties inside a
// lane, k distinct lanes, and one lane short of k.
TEST(CudaKernel, ThresholdSelectionFastPathEdges) {
  SKIP_WITHOUT_GPU();
  for (std::int64_t E : {256, 512}) {
    for (std::int64_t k : {1, 2, 8}) {
      CaseConfig cfg;
      cfg.experts = E;
      cfg.topk = k;
      cfg.tokens = 2048;
      cfg.bias = harness::BiasDistribution::kZero;
      cfg.seed = static_cast<std::uint64_t>(E * 10 + k);
      RoutingCase c(cfg);
      const float nan = std::numeric_limits<float>::quiet_NaN();
      for (std::int64_t t = 0; t < cfg.tokens; ++t) {
        const int shape = static_cast<int>(t % 4);
        if (shape == 3) continue;  // a plain random row
        // Experts e * 4 (e < 32) sit in distinct lanes under every vector
        // width of the E >= 256 tiers (lane = (e / V) % 32, V <= 4 for fp32).
        for (std::int64_t e = 0; e < E; ++e) c.set_logit(t, e, nan);
        const std::int64_t live = shape == 2 ? k - 1 : k;  // shape 2: fewer than k
        for (std::int64_t j = 0; j < std::max<std::int64_t>(live, 1); ++j)
          c.set_logit(t, j * 4, 1.0f + 0.25f * static_cast<float>(j));
        if (shape == 0 && k >= 2) c.set_logit(t, 4, c.logit(t, 0));       // tie across lanes
        if (shape == 1) c.set_logit(t, 1, c.logit(t, 4 * (k - 1)));       // tie inside lane 0 (experts 0-3)
      }
      const RoutingOutput automatic = harness::run_cuda_case(c);
      const std::string where = "E=" + std::to_string(E) + " k=" + std::to_string(k);
      EXPECT_TRUE(testing::Passes(harness::compare_output(c, automatic))) << where;
      expect_bitwise_equal(automatic, harness::run_cuda_case(c, {.force_round_selection = true}),
                           "threshold vs round selection, " + where);
    }
  }
}

// Decode tiers (routing_tier_table.cuh): few rows at E <= 32 take one warp
// per row, E in (128, 512] with k 5-8 the block-threshold path, E in
// (64, 128] with k > 1 (and E up to 256 with k > 8) the block-rank path,
// and E in (128, 256] with k > 4 threshold selection from 129 rows; with
// one expert per lane (E <= 32) rows with
// k > 4 are ranked. E = 33, 40 and 64 run the tier of two experts per lane
// (33: scalar loads; 40: lanes past 20 empty). Whatever the tier table picks must equal the
// reference, the shared-memory path and the round selection bit for bit;
// force_threshold_selection (a tuning switch) must not change a bit either.
TEST(CudaKernel, DecodeTiersEqualTheOtherPaths) {
  SKIP_WITHOUT_GPU();
  const harness::LogitsDistribution dists[] = {harness::LogitsDistribution::kNormal,
                                               harness::LogitsDistribution::kQuantized,
                                               harness::LogitsDistribution::kNaNs};
  std::uint64_t seed = testing::test_seed();
  for (std::int64_t E : {3, 8, 16, 32, 33, 40, 64, 129, 200, 256, 512})
    for (std::int64_t tokens : {1, 16, 128})
      for (std::int64_t k : {1, 4, 5, 8, 32}) {
        if (k > E) continue;
        for (auto dist : dists) {
          CaseConfig cfg;
          cfg.experts = E;
          cfg.topk = k;
          cfg.tokens = tokens;
          cfg.logits = dist;
          cfg.normalization = (seed % 2) ? Normalization::kSoftmax : Normalization::kSigmoid;
          cfg.seed = seed++;
          const RoutingCase c(cfg);
          const std::string where = "E=" + std::to_string(E) + " k=" + std::to_string(k) + " T=" +
                                    std::to_string(tokens) + " logits " + std::to_string(static_cast<int>(dist));
          const RoutingOutput automatic = harness::run_cuda_case(c);
          EXPECT_TRUE(testing::Passes(harness::compare_output(c, automatic))) << where;
          expect_bitwise_equal(automatic, harness::run_cuda_case(c, {.force_path = 2}), "tier table vs shared, " + where);
          expect_bitwise_equal(automatic, harness::run_cuda_case(c, {.force_round_selection = true}),
                               "tier table vs round selection, " + where);
          expect_bitwise_equal(automatic, harness::run_cuda_case(c, {.force_path = 1, .force_threshold_selection = true}),
                               "tier table vs forced threshold selection, " + where);
        }
      }
}

// A ranked-rows case: ties across lanes (quantized logits), padded rows,
// the normalization alternating with the seed.
CaseConfig ranked_rows_case(std::int64_t E, std::int64_t k, std::int64_t tokens, std::uint64_t seed) {
  CaseConfig cfg;
  cfg.experts = E;
  cfg.topk = k;
  cfg.tokens = tokens;
  cfg.logits = harness::LogitsDistribution::kQuantized;
  cfg.padding = harness::PaddingMode::kSparse;
  cfg.normalization = (seed % 2) ? Normalization::kSoftmax : Normalization::kSigmoid;
  cfg.seed = seed;
  return cfg;
}

// The tier table's launch of `cfg` against the reference and, bit for bit,
// against the round selection.
void expect_ranked_rows_equal_rounds(const CaseConfig& cfg, const std::string& what) {
  const RoutingCase c(cfg);
  const RoutingOutput automatic = harness::run_cuda_case(c);
  EXPECT_TRUE(testing::Passes(harness::compare_output(c, automatic))) << harness::describe(cfg);
  expect_bitwise_equal(automatic, harness::run_cuda_case(c, {.force_round_selection = true}),
                       what + " vs round selection, " + harness::describe(cfg));
}

// The E <= 32 tier's ranking kernel (k >= 5) on every row count the tier
// takes it (up to 1024 rows: several rows per block and rows past T in the
// last block) and with padded rows, which it must skip and mark.
TEST(CudaKernel, RankingKernelOnEveryRowCountItTakes) {
  SKIP_WITHOUT_GPU();
  std::uint64_t seed = testing::test_seed();
  for (std::int64_t E : {5, 8, 32})
    for (std::int64_t k : {5, 8, 32})
      for (std::int64_t tokens : {1, 129, 1024})
        if (k <= E) expect_ranked_rows_equal_rounds(ranked_rows_case(E, k, tokens, seed++), "ranking");
}

// The group ranking kernel of the small-E tiers that share a warp between
// rows (four or two lanes of 2 or 4 experts at E <= 8, eight lanes of 2 at
// E <= 16, 16 lanes of 2 at E <= 32; k >= 4, k >= 2 on two lanes of 4 from
// 32768 rows, k >= 8 at E > 16; smaller k the rounds) at row counts that
// take each tier, with padded rows, rows past T in the last block, ties
// across lanes, NaN in every third case and bf16 logits in half of them.
TEST(CudaKernel, GroupRankingKernelOnTheSmallExpertTiers) {
  SKIP_WITHOUT_GPU();
  std::uint64_t seed = testing::test_seed();
  for (std::int64_t E : {5, 8, 13, 16, 17, 32})
    for (std::int64_t k : {2, 3, 4, 8, 16, 32})
      for (std::int64_t tokens : {1030, 8200, 32800}) {
        if (k > E) continue;
        CaseConfig cfg = ranked_rows_case(E, k, tokens, seed);
        if (seed % 3 == 0) cfg.logits = harness::LogitsDistribution::kNaNs;
        cfg.logits_dtype = (seed % 4) < 2 ? DType::kFloat32 : DType::kBFloat16;
        ++seed;
        expect_ranked_rows_equal_rounds(cfg, "group ranking");
      }
}

// Every (E, k, tokens) with k <= E, the logits distribution (normal,
// quantized: ties, infinities, NaNs), dtype, normalization and layout
// rotating with a seed that the test seed pins, padded rows past one token:
// the forced path against the reference and, bit for bit, the shared-memory
// path.
void expect_forced_path_equals_shared(int path, const std::string& name, std::initializer_list<std::int64_t> experts,
                                      std::initializer_list<std::int64_t> topks,
                                      std::initializer_list<std::int64_t> tokens_list) {
  const harness::LogitsDistribution dists[] = {
      harness::LogitsDistribution::kNormal, harness::LogitsDistribution::kQuantized,
      harness::LogitsDistribution::kInfinities, harness::LogitsDistribution::kNaNs};
  std::uint64_t seed = testing::test_seed();
  for (std::int64_t E : experts)
    for (std::int64_t k : topks) {
      if (k > E) continue;
      for (std::int64_t tokens : tokens_list) {
        CaseConfig cfg;
        cfg.experts = E;
        cfg.topk = k;
        cfg.tokens = tokens;
        cfg.logits = dists[seed % 4];
        cfg.logits_dtype = seed % 3 == 0 ? DType::kBFloat16 : DType::kFloat32;
        cfg.normalization = (seed / 4) % 2 ? Normalization::kSoftmax : Normalization::kSigmoid;
        cfg.padding = tokens > 1 ? harness::PaddingMode::kSparse : harness::PaddingMode::kNone;
        cfg.layout = static_cast<harness::LogitsLayout>(seed % 3);
        cfg.seed = seed++;
        const RoutingCase c(cfg);
        const std::string where = "E=" + std::to_string(E) + " k=" + std::to_string(k) + " T=" + std::to_string(tokens) +
                                  " logits " + std::to_string(static_cast<int>(cfg.logits));
        testing::expect_reference_and_same_bits(c, harness::run_cuda_case(c, {.force_path = path}), {.force_path = 2},
                                                name + " vs shared, " + where);
      }
    }
}

// Case i of the blocks-per-SM sweeps below: dtype, normalization and ties
// turn with i, padded rows throughout.
CaseConfig held_grid_case(std::int64_t E, std::int64_t k, std::int64_t tokens, std::uint64_t i) {
  CaseConfig cfg;
  cfg.experts = E;
  cfg.topk = k;
  cfg.tokens = tokens;
  cfg.logits_dtype = i % 2 ? DType::kBFloat16 : DType::kFloat32;
  cfg.normalization = (i / 2) % 2 ? Normalization::kSoftmax : Normalization::kSigmoid;
  cfg.logits = i % 3 == 0 ? harness::LogitsDistribution::kQuantized : harness::LogitsDistribution::kNormal;
  cfg.padding = harness::PaddingMode::kSparse;
  cfg.seed = testing::test_seed() + i;
  return cfg;
}

// The register tiers hold a grid of one to seven blocks per SM (two at 16
// experts per lane) to ceil(blocks / SMs) per SM by requesting dynamic
// shared memory (register_blocks_per_sm_cap); here the tiers of one warp
// per row with 4+ experts per lane (E >= 128). On an H100
// or H200 1100 and 2048 rows are held to two, 2560 and 3072 to three,
// 3500 and 4096 to four, 7392 to seven (all but at E = 512), 1024 and
// 8448 rows are not held. The results must not move:
// against the reference and, bit for bit, the round selection (launched on
// the same grid), with padded rows and ties.
TEST(CudaKernel, RegisterTiersHeldToTheirBlocksPerSm) {
  SKIP_WITHOUT_GPU();
  std::uint64_t i = 0;
  for (std::int64_t E : {128, 256, 320, 384, 512})
    for (std::int64_t k : {1, 4, 8})
      for (std::int64_t tokens : {1024, 1100, 2048, 2560, 3072, 3500, 4096, 7392, 8448}) {
        expect_ranked_rows_equal_rounds(held_grid_case(E, k, tokens, i++), "blocks per SM held");
      }
}

// The narrower register tiers under the same cap: two experts per lane (E
// = 64, held at 1057-7392 rows), lanes of one expert and rows that share a
// warp (E <= 32; E = 8 k = 1 at 65536 rows is held to four blocks per SM on
// 132 SMs). Against the reference and, bit for bit, the round selection;
// the count of held cases on this GPU keeps the test from passing without
// a cap (it needs at least 9 SMs).
TEST(CudaKernel, NarrowRegisterTiersHeldToTheirBlocksPerSm) {
  SKIP_WITHOUT_GPU();
  int device = 0, sms = 0;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), cudaSuccess);
  std::uint64_t i = 0;
  int held = 0;
  for (std::int64_t E : {8, 16, 32, 48, 64})
    for (std::int64_t k : {1, 2, 4, 8})
      for (std::int64_t tokens : {2048, 3000, 4096, 7392, 65536}) {
        if (k > E) continue;
        const CaseConfig cfg = held_grid_case(E, k, tokens, i++);
        // The hold reads the shape, dtype and alignment, not the data: a
        // 16-byte aligned stand-in spares an upload of the case.
        alignas(16) static unsigned char stand_in[16];
        if (cuda::register_blocks_per_sm(shape_only_params(tokens, E, k, cfg.logits_dtype, cfg.normalization,
                                                           stand_in, stand_in),
                                         sms) > 0)
          ++held;
        expect_ranked_rows_equal_rounds(cfg, "blocks per SM held (narrow tiers)");
      }
  EXPECT_GT(held, 0) << "no case held to a blocks-per-SM cap on " << sms << " SMs";
}

// The block-rank path (one block per row, one expert per thread) on every
// width it has (2-16 warps, the last one partly or wholly empty), k across
// the 32-entry warp lists (k = 31-33: a warp lists all its experts from
// k = 32), forced on 1030 rows too, where a block takes several rows (the
// grid is capped) and padded rows sit between them. Equal to the reference
// and, bit for bit, to the shared-memory path.
TEST(CudaKernel, BlockRankPathEqualsTheOtherPaths) {
  SKIP_WITHOUT_GPU();
  expect_forced_path_equals_shared(6, "block-rank", {33, 40, 64, 100, 128, 129, 200, 256, 300, 384, 500, 512},
                                   {1, 2, 8, 31, 32, 33, 64}, {1, 3, 1030});
}

// The split-row path's three ways to merge the warps' lists: warp 0's rank
// (W * k <= 32), the block's rank (W * k > 32, k <= 32: k = 5-32 across
// W = 2-8 warps, one to four threads per entry) and warp 0's rounds
// (k > 32), with ties (quantized logits), infinities and NaNs, and slices
// past E that hold no expert (E = 65, 200, 300, 500). Equal to the
// reference and, bit for bit, to the shared-memory path.
TEST(CudaKernel, SplitRowPathEqualsTheOtherPaths) {
  SKIP_WITHOUT_GPU();
  expect_forced_path_equals_shared(4, "split-row", {65, 128, 200, 256, 300, 384, 500, 512}, {2, 5, 8, 9, 16, 17, 32, 33},
                                   {1, 3, 130});
}

// The block-threshold path on every width it has (2-16 warps, the last
// partly or wholly empty), k below, at and above the warp count (k > W:
// tau 0, every expert a candidate), more than 32 candidates (ties,
// infinities, k > W: every thread ranks one), forced on 1030 rows too,
// where a block takes several rows and padded rows sit between them.
TEST(CudaKernel, BlockThresholdPathEqualsTheOtherPaths) {
  SKIP_WITHOUT_GPU();
  expect_forced_path_equals_shared(8, "block-threshold", {33, 40, 64, 100, 128, 129, 200, 256, 300, 384, 500, 512},
                                   {1, 2, 4, 8, 9, 16, 17, 33, 64}, {1, 3, 1030});
}

// The block-threshold path's 4-warp form (two experts a thread, 8 half-warp
// groups) at E in (128, 256] with k around and above ceil(E / 32), where
// the half-warps' second register is empty for most lanes (E = 129: one
// lane holds two experts): through the tier table and forced, every dtype
// the form runs for and both normalizations, against the shared-memory
// path bit for bit.
TEST(CudaKernel, BlockThresholdHalfWarpGroupsEqualTheOtherPaths) {
  SKIP_WITHOUT_GPU();
  const harness::LogitsDistribution dists[] = {
      harness::LogitsDistribution::kNormal, harness::LogitsDistribution::kQuantized,
      harness::LogitsDistribution::kInfinities, harness::LogitsDistribution::kNaNs};
  std::uint64_t seed = testing::test_seed();
  for (std::int64_t E : {129, 160, 192, 200, 224, 256})
    for (std::int64_t k : {5, 6, 7, 8})
      for (std::int64_t tokens : {1, 3, 130})
        for (DType dtype : {DType::kFloat32, DType::kBFloat16})
          for (Normalization norm : {Normalization::kSigmoid, Normalization::kSoftmax}) {
            CaseConfig cfg;
            cfg.experts = E;
            cfg.topk = k;
            cfg.tokens = tokens;
            cfg.logits = dists[seed % 4];
            cfg.logits_dtype = dtype;
            cfg.normalization = norm;
            cfg.padding = tokens > 1 ? harness::PaddingMode::kSparse : harness::PaddingMode::kNone;
            cfg.seed = seed++;
            const RoutingCase c(cfg);
            testing::expect_reference_and_same_bits(c, harness::run_cuda_case(c, {}), {.force_path = 2},
                                                    "tier table vs shared, " + describe(cfg));
            testing::expect_reference_and_same_bits(c, harness::run_cuda_case(c, {.force_path = 8}), {.force_path = 2},
                                                    "block-threshold vs shared, " + describe(cfg));
          }
}

// The block-threshold path's softmax on many rows of every logits
// distribution, with the biases that put q values closest (tiny and
// all-equal biases: near and exact ties in q), on both kernels (one expert
// per thread; 8 warps of two experts at E > 384), 1030 rows each: the
// softmax crossings, the count of warp maxima above each key and the
// candidates' rank, against the shared-memory path bit for bit.
TEST(CudaKernel, BlockThresholdSoftmaxOnEveryDistribution) {
  SKIP_WITHOUT_GPU();
  const harness::LogitsDistribution dists[] = {
      harness::LogitsDistribution::kNormal,     harness::LogitsDistribution::kWide,
      harness::LogitsDistribution::kQuantized,  harness::LogitsDistribution::kConstant,
      harness::LogitsDistribution::kInfinities, harness::LogitsDistribution::kNaNs,
      harness::LogitsDistribution::kHuge};
  const harness::BiasDistribution biases[] = {harness::BiasDistribution::kTiny, harness::BiasDistribution::kAllEqual,
                                              harness::BiasDistribution::kNormal, harness::BiasDistribution::kZero};
  std::uint64_t seed = testing::test_seed();
  for (std::int64_t E : {256, 300, 449, 512})
    for (std::int64_t k : {1, 4, 8})
      for (std::size_t d = 0; d < std::size(dists); ++d) {
        CaseConfig cfg;
        cfg.experts = E;
        cfg.topk = k;
        cfg.tokens = 1030;
        cfg.logits = dists[d];
        cfg.bias = biases[(d + static_cast<std::size_t>(k)) % std::size(biases)];
        cfg.logits_dtype = seed % 2 ? DType::kBFloat16 : DType::kFloat32;
        cfg.normalization = Normalization::kSoftmax;
        cfg.seed = seed++;
        const RoutingCase c(cfg);
        testing::expect_reference_and_same_bits(c, harness::run_cuda_case(c, {.force_path = 8}), {.force_path = 2},
                                                "block-threshold softmax vs shared, " + describe(cfg));
      }
}

// The block-threshold path's ranking bands by candidate count: warp 0
// alone up to 32 (broadcast loads of the 32 slots, stale ones predicated
// off), every thread its share past that (keys read in 16-byte pairs: at
// an odd count the last pair's second key is predicated off). Row r holds
// n = 32, 33, 40, 63, 64 or 65 experts tied at the row's top value,
// spread at an even stride, the others distinct and well below: at least
// k of the groups hold a tied expert (k <= 8), so tau is the tied value
// and exactly those n are candidates, whatever the kernel's form (one or
// two experts a thread, warp or half-warp groups). Forced, against the
// shared-memory path bit for bit.
TEST(CudaKernel, BlockThresholdRanksEveryCandidateCountBand) {
  SKIP_WITHOUT_GPU();
  const std::int64_t counts[] = {32, 33, 40, 63, 64, 65};
  std::uint64_t seed = testing::test_seed();
  for (std::int64_t E : {65, 128, 200, 256, 384, 512})
    for (std::int64_t k : {4, 8})
      for (DType dtype : {DType::kFloat32, DType::kBFloat16})
        for (Normalization norm : {Normalization::kSigmoid, Normalization::kSoftmax}) {
          CaseConfig cfg;
          cfg.experts = E;
          cfg.topk = k;
          cfg.tokens = 2 * static_cast<std::int64_t>(std::size(counts));
          cfg.logits_dtype = dtype;
          cfg.normalization = norm;
          cfg.seed = seed++;
          harness::RoutingCase c = harness::RoutingCase::blank(cfg);
          for (std::int64_t t = 0; t < cfg.tokens; ++t) {
            const std::int64_t n = std::min(E, counts[t % std::size(counts)]);
            for (std::int64_t e = 0; e < E; ++e) c.set_logit(t, e, -4.0f + 2.0f * static_cast<float>(e) / E);
            for (std::int64_t j = 0; j < n; ++j) c.set_logit(t, j * E / n, 1.0f);
          }
          testing::expect_reference_and_same_bits(c, harness::run_cuda_case(c, {.force_path = 8}), {.force_path = 2},
                                                  "block-threshold candidate bands vs shared, " + describe(cfg));
        }
}

TEST(CudaKernel, PdlOnEqualsPdlOff) {
  SKIP_WITHOUT_GPU();
  CaseConfig cfg;
  cfg.experts = 256;
  cfg.topk = 8;
  cfg.tokens = 4096;
  const RoutingCase c(cfg);
  expect_bitwise_equal(harness::run_cuda_case(c, {.enable_pdl = true}),
                       harness::run_cuda_case(c, {.enable_pdl = false}), "PDL on vs off");
}

TEST(CudaKernel, GraphReplayEqualsDirectLaunch) {
  SKIP_WITHOUT_GPU();
  CaseConfig cfg;
  cfg.experts = 128;
  cfg.topk = 6;
  cfg.tokens = 1000;
  cfg.padding = harness::PaddingMode::kSparse;
  cfg.logits_dtype = DType::kBFloat16;
  const RoutingCase c(cfg);
  const RoutingOutput direct = harness::run_cuda_case(c);

  harness::CudaCase dev(c);
  cudaStream_t stream;
  harness::check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  harness::check_cuda(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "begin capture");
  for (int i = 0; i < 3; ++i) harness::check_cuda(cuda::launch_routing(dev.params(), stream), "captured launch");
  harness::check_cuda(cudaStreamEndCapture(stream, &graph), "end capture");
  harness::check_cuda(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
  harness::check_cuda(cudaGraphLaunch(exec, stream), "replay");
  harness::check_cuda(cudaStreamSynchronize(stream), "replay sync");
  expect_bitwise_equal(direct, dev.read_output(), "graph replay vs direct");
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

// ---- batch invariance -------------------------------------------------------
TEST(CudaKernel, ARowAloneEqualsTheRowEmbedded) {
  SKIP_WITHOUT_GPU();
  for (std::int64_t E : {8, 64, 256, 1000}) {
    CaseConfig cfg;
    cfg.experts = E;
    cfg.topk = std::min<std::int64_t>(E, 8);
    cfg.tokens = 513;
    cfg.normalization = E % 2 ? Normalization::kSigmoid : Normalization::kSoftmax;
    cfg.layout = harness::LogitsLayout::kTransposed;
    const RoutingCase big(cfg);
    const RoutingOutput all = harness::run_cuda_case(big);
    for (std::int64_t t : {0, 1, 255, 512}) {
      CaseConfig one_cfg = cfg;
      one_cfg.tokens = 1;
      one_cfg.layout = harness::LogitsLayout::kContiguous;
      RoutingCase one(one_cfg);
      for (std::int64_t e = 0; e < E; ++e) {
        one.set_logit(0, e, big.logit(t, e));
        one.set_bias(e, big.bias()[e]);
      }
      const RoutingOutput alone = harness::run_cuda_case(one);
      for (std::int64_t j = 0; j < cfg.topk; ++j) {
        EXPECT_EQ(alone.ids[j], all.ids[t * big.dest_cols() + j]) << "E=" << E << " row " << t;
        EXPECT_EQ(std::memcmp(&alone.weights[j], &all.weights[t * big.dest_cols() + j], 4), 0)
            << "E=" << E << " row " << t << " slot " << j;
      }
    }
  }
}

TEST(CudaKernel, TwoRunsAreBitwiseIdentical) {
  SKIP_WITHOUT_GPU();
  CaseConfig cfg;
  cfg.experts = 2048;
  cfg.topk = 64;
  cfg.tokens = 200;
  cfg.normalization = Normalization::kSoftmax;
  const RoutingCase c(cfg);
  expect_bitwise_equal(harness::run_cuda_case(c), harness::run_cuda_case(c), "run to run");
}

// ---- range and errors ---------------------------------------------------------
TEST(CudaKernel, OutOfRangeConfigurationsAreClearErrors) {
  SKIP_WITHOUT_GPU();
  CaseConfig cfg;
  cfg.experts = 20000;
  cfg.topk = 4;
  const RoutingCase big(cfg);
  harness::CudaCase dev(big);
  try {
    (void)cuda::launch_routing(dev.params(), nullptr);
    ADD_FAILURE() << "no error for E=20000";
  } catch (const ArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("num_experts = 20000 is above the kernel's maximum 16384"), std::string::npos) << e.what();
  }
  cfg.experts = 128;
  cfg.topk = 100;
  const RoutingCase wide_k(cfg);
  harness::CudaCase dev2(wide_k);
  EXPECT_THROW((void)cuda::launch_routing(dev2.params(), nullptr), ArgumentError);
}

// ---- 64-bit offsets -------------------------------------------------------------
TEST(CudaKernel, RowOffsetsBeyond2To31Elements) {
  SKIP_WITHOUT_GPU();
  // Three bf16 rows 2^30 elements apart: the last row starts at element 2^31.
  constexpr std::int64_t E = 64, k = 8, T = 3, kStride = std::int64_t{1} << 30;
  CaseConfig cfg;
  cfg.experts = E;
  cfg.topk = k;
  cfg.tokens = T;
  cfg.logits_dtype = DType::kBFloat16;
  const RoutingCase compact(cfg);

  const std::size_t elements = static_cast<std::size_t>((T - 1) * kStride + E);
  harness::DeviceBuffer logits(elements * 2);
  for (std::int64_t t = 0; t < T; ++t)
    harness::check_cuda(cudaMemcpy(static_cast<std::uint16_t*>(logits.get()) + t * kStride,
                                   compact.logits_bytes().data() + t * E * 2, E * 2, cudaMemcpyHostToDevice),
                        "upload row");
  harness::CudaCase dev(compact);
  RoutingParams p = dev.params();
  p.logits = logits.get();
  p.logits_row_stride = kStride;
  harness::check_cuda(cuda::launch_routing(p, nullptr), "launch");
  EXPECT_TRUE(testing::Passes(harness::compare_output(compact, dev.read_output())));
}

// ---- a small set for compute-sanitizer (memcheck, racecheck) -------------------
TEST(Sanitizer, RepresentativeSubset) {
  SKIP_WITHOUT_GPU();
  // 449 (odd: softmax) and 512 (sigmoid) run the block-threshold path's
  // pair kernel at 1030 rows.
  for (std::int64_t E : {7, 64, 256, 449, 512, 1000}) {
    for (int path : {0, 2, 4, 6, 8}) {
      if (path != 0 && E > 512) continue;
      CaseConfig cfg;
      cfg.experts = E;
      cfg.topk = std::min<std::int64_t>(E, 8);
      // 1030: threshold selection's shared memory too, and the block-rank
      // and block-threshold paths' row loop (their grid is capped at 1024
      // blocks).
      cfg.tokens = (path == 0 && E > 128 && E <= 512) || path >= 6 ? 1030 : 67;
      cfg.normalization = E % 2 ? Normalization::kSoftmax : Normalization::kSigmoid;
      cfg.padding = harness::PaddingMode::kSparse;
      cfg.extra_cols = 1;
      cfg.layout = harness::LogitsLayout::kColumnStrided;
      const RoutingCase c(cfg);
      EXPECT_TRUE(testing::Passes(harness::compare_output(c, harness::run_cuda_case(c, {.force_path = path}))));
    }
  }
}

// The register tiers that the tier table picks by k and the row count
// (routing_tier_table.cuh: two lanes per row at E = 8, 16 / 8 / 4 lanes at
// E = 64, eight lanes at E = 128 k = 1, 16 lanes at E = 256 k = 1, one warp
// per row with the estimates at E = 128 k = 8), and the group ranking kernel
// at E = 8, 16 and 32, each at a row count that takes it, with padded rows and
// contiguous logits (their vector loads).
TEST(Sanitizer, RowDependentRegisterTiers) {
  SKIP_WITHOUT_GPU();
  struct Shape {
    std::int64_t experts, topk, tokens;
    Normalization norm;
    DType dtype = DType::kFloat32;
  };
  for (const Shape& s : {Shape{8, 1, 16400, Normalization::kSigmoid}, Shape{8, 4, 32800, Normalization::kSoftmax},
                         Shape{64, 1, 4100, Normalization::kSoftmax}, Shape{64, 4, 16400, Normalization::kSigmoid},
                         Shape{64, 1, 32800, Normalization::kSigmoid}, Shape{128, 1, 8200, Normalization::kSoftmax},
                         Shape{128, 1, 8200, Normalization::kSigmoid, DType::kBFloat16},
                         Shape{128, 8, 4100, Normalization::kSigmoid}, Shape{256, 1, 8200, Normalization::kSigmoid},
                         Shape{8, 8, 8200, Normalization::kSoftmax}, Shape{16, 4, 8200, Normalization::kSigmoid},
                         Shape{32, 8, 4100, Normalization::kSigmoid, DType::kBFloat16}}) {
    CaseConfig cfg;
    cfg.experts = s.experts;
    cfg.topk = s.topk;
    cfg.tokens = s.tokens;
    cfg.normalization = s.norm;
    cfg.logits_dtype = s.dtype;
    cfg.padding = harness::PaddingMode::kSparse;
    const RoutingCase c(cfg);
    EXPECT_TRUE(testing::Passes(harness::compare_output(c, harness::run_cuda_case(c)))) << harness::describe(cfg);
  }
}

}  // namespace
}  // namespace musespark

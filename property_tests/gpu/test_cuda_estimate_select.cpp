// The register path's selection from estimated scores
// (impl/cuda/routing_estimate_select.cuh: k = 1 and k in [4, 8]; at E = 128
// k >= 4) against the float64 reference and, bit for bit, against the
// exact round selection (force_round_selection): on every one-warp-per-row
// tier it takes, full (E = 128, 256, 384, 512) and not (E = 160, 320, 448:
// registers past E hold no expert; sigmoid k >= 4 there, where the tier
// table takes it), every dtype and normalization, and on rows built for
// its edges: near ties closer than the estimates' error inside a lane and
// across lanes, exact ties, NaN and
// infinite logits, constant rows, fewer than k lanes holding a number,
// more candidates than lanes, a bias so large or infinite that the margin
// keeps every expert.
#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "harness/cuda_case.h"
#include "../test_support.h"
#include "cuda_test_support.h"

namespace musespark {
namespace {

using harness::CaseConfig;
using harness::RoutingCase;
using harness::describe;

constexpr int kRegisterPath = 1;  // cuda::LaunchOptions::force_path

// The register path forced, so the call reaches the k = 1 kernel whatever
// the tier table prefers at this row count; the exact rounds the same way.
void expect_reference_and_rounds(const RoutingCase& c, const std::string& where) {
  testing::expect_reference_and_same_bits(c, harness::run_cuda_case(c, {.force_path = kRegisterPath}),
                                          {.force_path = kRegisterPath, .force_round_selection = true},
                                          "estimated vs exact selection, " + where);
}

TEST(EstimateSelect, MatchesReferenceAndRoundsOnEveryDistribution) {
  SKIP_WITHOUT_GPU();
  std::uint64_t i = 0;
  for (std::int64_t E : {128, 160, 256, 320, 384, 448, 512})
    for (std::int64_t k : {1, 4, 5, 8})  // the k the tier table sends it
      for (auto dist : testing::kSweepDistributions)
        for (Normalization norm : {Normalization::kSigmoid, Normalization::kSoftmax}) {
          CaseConfig cfg;
          cfg.experts = E;
          cfg.topk = k;
          cfg.tokens = 300;
          cfg.logits = dist;
          testing::turn_sweep_settings(cfg, i);
          cfg.normalization = norm;
          cfg.route_scale = i % 5 == 0 ? 2.5 : 1.0;
          cfg.seed = testing::test_seed() * 7919 + i;
          expect_reference_and_rounds(RoutingCase(cfg), describe(cfg));
          ++i;
        }
}

// Rows built for each branch, 8 rows of each shape. Lane l of the warp
// holds the experts e with (e / V) % 32 == l (V = 4 for fp32), so experts
// 0 and 1 share lane 0 and experts 0 and 4 do not; experts 0-39 span ten
// lanes, four each.
TEST(EstimateSelect, EstimateEdges) {
  SKIP_WITHOUT_GPU();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  constexpr int kShapes = 10;
  for (std::int64_t E : {128, 160, 256, 320, 384, 448, 512})
    for (std::int64_t k : {1, 4, 8})
      for (Normalization norm : {Normalization::kSigmoid, Normalization::kSoftmax})
        for (int bias_case = 0; bias_case < 3; ++bias_case) {  // no bias, -1e30 or +inf on one expert
          CaseConfig cfg;
          cfg.experts = E;
          cfg.topk = k;
          cfg.tokens = kShapes * 8;
          cfg.normalization = norm;
          cfg.bias = bias_case == 0 ? harness::BiasDistribution::kZero : harness::BiasDistribution::kNormal;
          cfg.padding = harness::PaddingMode::kSparse;
          cfg.seed = testing::test_seed() + static_cast<std::uint64_t>(E * 100 + k * 10 + bias_case);
          const RoutingCase c = testing::edge_rows_case(cfg, bias_case, [&](int shape, std::int64_t e, float x) {
            const float ef = static_cast<float>(e);
            switch (shape) {
              case 0: return e < 2 ? 2.0f + 1e-7f * ef : x;               // near tie inside lane 0
              case 1: return e == 0 || e == 4 ? 2.0f + 1e-7f * ef : x;    // near tie across lanes 0 and 1
              case 2: return e % 5 == 0 ? 3.0f : x;                       // exact ties among the best
              case 3: return 1.0f;                                        // constant row
              case 4: return e == E - 1 ? inf : (e % 2 ? -inf : nan);     // infinities, NaNs, one +inf
              case 5: return e % 32 < k - 1 ? 0.5f : nan;  // few lanes hold a number (k = 8: fewer than k; k = 1: none)
              case 6: return -inf;                                        // all -inf (softmax: the NaN class)
              case 7: return e < 40 ? 5.0f - 1e-6f * ef : -5.0f;          // 40 near-equal candidates
              case 8: return 80.0f + ef * 1e-3f;                          // sigmoid saturated at 1: ties
              default: return x;                                          // a plain random row
            }
          });
          expect_reference_and_rounds(c, "edges, bias case " + std::to_string(bias_case) + ", " + describe(cfg));
        }
}

// Where the tier table sends these calls to the register path (1100 rows
// here), the automatic call takes the kernels (vector loads; full tiers and
// E = 192, 448 past them); k = 2 and 9 do not, and still match.
TEST(EstimateSelect, AutomaticCallsTakeIt) {
  SKIP_WITHOUT_GPU();
  for (std::int64_t E : {192, 256, 384, 448, 512})
    for (std::int64_t k : {1, 2, 4, 8, 9}) {
      CaseConfig cfg;
      cfg.experts = E;
      cfg.topk = k;
      cfg.tokens = 1100;
      cfg.logits_dtype = DType::kBFloat16;
      cfg.normalization = E == 256 ? Normalization::kSoftmax : Normalization::kSigmoid;
      cfg.seed = testing::test_seed() + static_cast<std::uint64_t>(E * 10 + k);
      const RoutingCase c(cfg);
      const harness::CudaCase dev(c);
      EXPECT_STREQ(cuda::routing_path_name(cuda::chosen_path(dev.params())), "register") << describe(cfg);
      const bool full_tier = E % 128 == 0;  // the others: sigmoid k = 4-8 only (tier table)
      EXPECT_EQ(cuda::estimated_selection_preferred(dev.params()), (k == 1 && full_tier) || (k >= 4 && k <= 8))
          << describe(cfg);
      testing::expect_reference_and_same_bits(c, harness::run_cuda_case(dev, {}), {.force_round_selection = true},
                                              "automatic vs exact rounds, " + describe(cfg));
    }
}

// The top-1 kernel on the tiers that are not full, which the tier table
// takes from 4096 rows (8192 on the 12-per-lane tier, E = 320): the
// automatic call against the reference and, bit for bit, the exact rounds,
// with ties (quantized logits) and without.
TEST(EstimateSelect, PartialTiersTopOneFromManyRows) {
  SKIP_WITHOUT_GPU();
  for (std::int64_t E : {160, 320, 448})
    for (Normalization norm : {Normalization::kSigmoid, Normalization::kSoftmax})
      for (DType dtype : {DType::kFloat32, DType::kBFloat16}) {
        CaseConfig cfg;
        cfg.experts = E;
        cfg.topk = 1;
        cfg.tokens = E == 320 ? 8200 : 4100;
        cfg.logits_dtype = dtype;
        cfg.normalization = norm;
        cfg.logits = dtype == DType::kBFloat16 ? harness::LogitsDistribution::kQuantized
                                               : harness::LogitsDistribution::kNormal;
        cfg.padding = harness::PaddingMode::kSparse;
        cfg.seed = testing::test_seed() + static_cast<std::uint64_t>(E * 10 + (norm == Normalization::kSoftmax ? 1 : 0));
        const RoutingCase c(cfg);
        const harness::CudaCase dev(c);
        EXPECT_TRUE(cuda::estimated_selection_preferred(dev.params())) << describe(cfg);
        testing::expect_reference_and_same_bits(c, harness::run_cuda_case(dev, {}), {.force_round_selection = true},
                                                "automatic vs exact rounds, " + describe(cfg));
      }
}

// For compute-sanitizer (scripts/gpu_run.sh sanitize): every tier of 8+
// experts per lane, full or not, padded rows, rows the estimates leave to
// the exact selection.
TEST(Sanitizer, EstimateSelect) {
  SKIP_WITHOUT_GPU();
  for (std::int64_t E : {160, 256, 320, 384, 448, 512})
    for (std::int64_t k : {1, 8}) {
      CaseConfig cfg = testing::sanitizer_case_config(E);
      cfg.topk = k;
      cfg.logits = harness::LogitsDistribution::kQuantized;  // ties: rows go to the exact selection too
      const RoutingCase c(cfg);
      EXPECT_TRUE(testing::Passes(harness::compare_output(c, harness::run_cuda_case(c, {.force_path = kRegisterPath}))))
          << describe(cfg);
    }
}

}  // namespace
}  // namespace musespark

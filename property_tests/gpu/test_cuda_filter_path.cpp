// The filter path (impl/cuda/routing_filter_path.cuh) against the float64
// reference and, bit for bit, against the register path: on every logits
// distribution and tier (E = 64-512, full and not, k 1-8), with warp tasks of 1 to 16
// rows, and at the edges of its filter: fewer than k lanes holding a
// number, more candidates than a row's slice holds (selected in phase A),
// near ties closer than the estimates' error, a bias so large or infinite
// that the margin keeps every expert, padded rows between the tasks.
#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "harness/cuda_case.h"
#include "musespark/errors.h"
#include "../test_support.h"
#include "cuda_test_support.h"

namespace musespark {
namespace {

using harness::CaseConfig;
using harness::RoutingCase;
using harness::describe;

constexpr int kFilterPath = 7;  // cuda::LaunchOptions::force_path
constexpr int kRegisterPath = 1;

void expect_reference_and_register_path(const RoutingCase& c, int filter_rows, const std::string& where) {
  testing::expect_reference_and_same_bits(
      c, harness::run_cuda_case(c, {.force_path = kFilterPath, .filter_rows = filter_rows}),
      {.force_path = kRegisterPath}, "filter vs register path, rows per task " + std::to_string(filter_rows) + ", " + where);
}

TEST(FilterPath, MatchesReferenceAndRegisterPathOnEveryDistribution) {
  SKIP_WITHOUT_GPU();
  const int rows_per_task[] = {0, 1, 7, 16};  // 0: the launch's choice
  std::uint64_t i = 0;
  // E = 96, 160, 192, 320, 448: the tiers with registers past E.
  for (std::int64_t E : {64, 96, 128, 160, 192, 256, 320, 384, 448, 512})
    for (std::int64_t k : {1, 2, 4, 5, 8})
      for (auto dist : testing::kSweepDistributions) {
        CaseConfig cfg;
        cfg.experts = E;
        cfg.topk = k;
        cfg.tokens = 300;  // not a multiple of any task size but 1
        cfg.logits = dist;
        testing::turn_sweep_settings(cfg, i);
        cfg.normalization = i % 2 ? Normalization::kSoftmax : Normalization::kSigmoid;
        cfg.route_scale = i % 5 == 0 ? 2.5 : 1.0;
        cfg.extra_cols = static_cast<std::int64_t>((i / 2) % 2);
        cfg.seed = testing::test_seed() * 15485863 + i;
        const RoutingCase c(cfg);
        expect_reference_and_register_path(c, rows_per_task[i % 4], describe(cfg));
        ++i;
      }
}

// Rows built for each branch of the filter, 8 rows of each shape, in tasks
// of 5 rows (shapes straddle the tasks).
TEST(FilterPath, FilterEdges) {
  SKIP_WITHOUT_GPU();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  constexpr int kShapes = 9;
  for (std::int64_t E : {64, 160, 256, 448, 512})
    for (std::int64_t k : {1, 4, 8})
      for (Normalization norm : {Normalization::kSigmoid, Normalization::kSoftmax})
        for (int bias_case = 0; bias_case < 3; ++bias_case) {  // a normal bias, -1e30 or +inf on one expert
          CaseConfig cfg;
          cfg.experts = E;
          cfg.topk = k;
          cfg.tokens = kShapes * 8;
          cfg.normalization = norm;
          cfg.bias = harness::BiasDistribution::kNormal;
          cfg.padding = harness::PaddingMode::kSparse;
          cfg.seed = testing::test_seed() + static_cast<std::uint64_t>(E * 100 + k * 10 + bias_case);
          const RoutingCase c = testing::edge_rows_case(cfg, bias_case, [&](int shape, std::int64_t e, float x) {
            const float ef = static_cast<float>(e);
            switch (shape) {
              case 0: return e % 32 < k - 1 ? 0.5f : nan;                     // fewer than k lanes hold a number
              case 1: return 1.0f;                                             // all tied: too many candidates
              case 2: return 2.0f + 1e-7f * static_cast<float>(e % 7);         // near ties below the estimates' error
              case 3: return e % 3 == 0 ? 3.0f : x;                            // exact ties among the best
              case 4: return e == E - 1 ? inf : (e % 2 ? -inf : nan);          // infinities, NaNs, one +inf
              case 5: return -inf;                                             // all -inf (softmax: the NaN class)
              case 6: return e < 40 ? 5.0f - 1e-6f * ef : -5.0f;               // 40 near-equal candidates
              case 7: return 80.0f + ef * 1e-3f;                               // sigmoid saturated at 1: ties
              default: return x;                                               // a plain random row
            }
          });
          expect_reference_and_register_path(c, 5, "edges, bias case " + std::to_string(bias_case) + ", " + describe(cfg));
        }
}

// Large batches with the launch's own task size.
TEST(FilterPath, LargeBatches) {
  SKIP_WITHOUT_GPU();
  for (std::int64_t E : {64, 256, 512}) {
    CaseConfig cfg;
    cfg.experts = E;
    cfg.topk = 8;
    cfg.tokens = 65600;
    cfg.logits_dtype = DType::kBFloat16;
    cfg.normalization = E == 256 ? Normalization::kSoftmax : Normalization::kSigmoid;
    cfg.padding = harness::PaddingMode::kSparse;
    cfg.seed = testing::test_seed() + static_cast<std::uint64_t>(E);
    expect_reference_and_register_path(RoutingCase(cfg), 0, describe(cfg));
  }
}

// Where the tier table sends it (routing_tier_table.cuh, filter_preferred)
// the path runs without being forced (chosen_path must say so), just past
// each row threshold (automatic_path_shapes.h, which test_tier_table checks
// on the host too).
TEST(FilterPath, TakesLargeBatchesByItself) {
  SKIP_WITHOUT_GPU();
  for (const testing::AutomaticPathShape& s : testing::kFilterPathShapes) {
    const CaseConfig cfg =
        testing::case_config_of(s, testing::test_seed() + static_cast<std::uint64_t>(s.experts * 3 + s.topk));
    const RoutingCase c(cfg);
    testing::expect_automatic_path(c, "filter", describe(cfg));
  }
}

TEST(FilterPath, ForcedOnAnUnsupportedCallIsAClearError) {
  SKIP_WITHOUT_GPU();
  testing::expect_clear_errors_when_forced(
      kFilterPath, {{72, 4, harness::LogitsLayout::kContiguous, "num_experts is not a multiple of 32 in [64, 512]"},
                    {544, 4, harness::LogitsLayout::kContiguous, "num_experts is not a multiple of 32 in [64, 512]"},
                    {64, 9, harness::LogitsLayout::kContiguous, "topk > 8"},
                    {64, 4, harness::LogitsLayout::kColumnStrided, "not contiguous along the experts"}});
}

// For compute-sanitizer (scripts/gpu_run.sh sanitize): the scratch slices
// at the largest E, a tier with registers past E (160), full 16-row tasks
// and a partial one, padded rows, rows with too many candidates.
TEST(Sanitizer, FilterPath) {
  SKIP_WITHOUT_GPU();
  for (std::int64_t E : {64, 160, 256, 512}) {
    const CaseConfig cfg = testing::sanitizer_case_config(E);
    const RoutingCase c(cfg);
    EXPECT_TRUE(testing::Passes(
        harness::compare_output(c, harness::run_cuda_case(c, {.force_path = kFilterPath, .filter_rows = 16}))))
        << describe(cfg);
  }
}

}  // namespace
}  // namespace musespark

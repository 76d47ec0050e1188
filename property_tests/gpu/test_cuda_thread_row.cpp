// The row-per-thread path (impl/cuda/routing_thread_row_path.cuh) against
// the float64 reference and, bit for bit, against the register path, on
// every logits distribution, with one, two and four lanes per row, and at
// the edges of its selection: tau = 0 (fewer than k buckets hold a number),
// more listed experts than the list holds, the top experts all in one
// bucket (one lane of a row), ties in the stored key halves.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>
#include <utility>

#include "harness/cuda_case.h"
#include "musespark/errors.h"
#include "../test_support.h"
#include "cuda_test_support.h"

namespace musespark {
namespace {

using harness::CaseConfig;
using harness::RoutingCase;

constexpr int kThreadRowPath = 5;  // cuda::LaunchOptions::force_path
constexpr int kRegisterPath = 1;

using harness::describe;

void expect_reference_and_register_path(const RoutingCase& c, const std::string& where) {
  testing::expect_reference_and_same_bits(c, harness::run_cuda_case(c, {.force_path = kThreadRowPath}),
                                          {.force_path = kRegisterPath}, "row-per-thread vs register path, " + where);
}

TEST(ThreadRowPath, MatchesReferenceAndRegisterPathOnEveryDistribution) {
  SKIP_WITHOUT_GPU();
  std::uint64_t i = 0;
  // E = 160, 256: two lanes per row; 320, 512: four; 208, 272: one (not a
  // multiple of 32 or 64); the rest one.
  for (std::int64_t E : {16, 64, 128, 160, 208, 256, 272, 320, 512})
    for (std::int64_t k : {1, 2, 4, 5, 8})
      for (auto dist : testing::kSweepDistributions) {
        CaseConfig cfg;
        cfg.experts = E;
        cfg.topk = k;
        cfg.tokens = 300;  // not a multiple of the 64-thread block
        cfg.logits = dist;
        testing::turn_sweep_settings(cfg, i);
        cfg.normalization = i % 2 ? Normalization::kSoftmax : Normalization::kSigmoid;
        cfg.extra_cols = static_cast<std::int64_t>((i / 2) % 2);
        cfg.seed = testing::test_seed() * 104729 + i++;
        const RoutingCase c(cfg);
        expect_reference_and_register_path(c, describe(cfg));
      }
}

// Rows built for each branch of the selection, 16 rows of each shape.
TEST(ThreadRowPath, SelectionEdges) {
  SKIP_WITHOUT_GPU();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  for (std::int64_t E : {64, 256, 512})
    for (std::int64_t k : {1, 4, 8}) {
      for (Normalization norm : {Normalization::kSigmoid, Normalization::kSoftmax}) {
        CaseConfig cfg;
        cfg.experts = E;
        cfg.topk = k;
        cfg.tokens = 16 * 8;
        cfg.normalization = norm;
        cfg.bias = harness::BiasDistribution::kZero;
        cfg.seed = testing::test_seed() + static_cast<std::uint64_t>(E * 10 + k);
        RoutingCase c(cfg);
        for (std::int64_t t = 0; t < cfg.tokens; ++t) {
          const int shape = static_cast<int>(t / 16);
          for (std::int64_t e = 0; e < E; ++e) {
            float x = c.logit(t, e);
            switch (shape) {
              case 0: x = e % 16 < k - 1 ? 0.5f : nan; break;                  // fewer than k buckets hold a number: tau = 0
              case 1: x = 1.0f; break;                                          // all tied: more listed than the list holds
              case 2: x = e % 16 == 3 ? 4.0f + 0.001f * static_cast<float>(e) : -4.0f; break;  // the best all in bucket 3
              case 3: x = 2.0f + 1e-6f * static_cast<float>(e % 40); break;     // distinct keys, equal stored halves
              case 4: x = e == E - 1 ? inf : (e % 2 ? -inf : nan); break;       // infinities, NaNs, one +inf
              case 5: x = e % 3 == 0 ? 3.0f : x; break;                         // exact ties among the best
              case 6: x = -inf; break;                                          // all -inf (softmax: the NaN class)
              default: break;                                                   // a plain random row
            }
            c.set_logit(t, e, x);
          }
        }
        expect_reference_and_register_path(c, "edges " + describe(cfg));
      }
    }
}

// Where the tier table sends it (routing_tier_table.cuh,
// thread_row_preferred) the path runs without being forced (chosen_path
// must say so), with the lanes per row thread_row_lanes_preferred names
// (automatic_path_shapes.h; test_tier_table checks each shape's path and
// lanes on the host).
TEST(ThreadRowPath, TakesLargeBatchesByItself) {
  SKIP_WITHOUT_GPU();
  std::uint64_t i = 0;
  for (const testing::AutomaticPathShape& s : testing::kThreadRowPathShapes) {
    const CaseConfig cfg =
        testing::case_config_of(s, testing::test_seed() + static_cast<std::uint64_t>(s.experts) + 7919 * i++);
    testing::expect_automatic_path(RoutingCase(cfg), "row-per-thread", describe(cfg));
  }
}

// The grids that launch_thread_row_tier holds below what the registers
// allow (the sigmoid kernels of 16-bit logits: one lane per row to eight
// blocks per SM, two or four lanes to ceil(blocks / SMs) under a wave), by
// a shared memory request sized to a carveout: the same bits as the
// register path. The count of held cases on this GPU keeps the test from
// passing without a hold.
TEST(ThreadRowPath, HeldGridsMatchTheReference) {
  SKIP_WITHOUT_GPU();
  int device = 0, sms = 0;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), cudaSuccess);
  int held = 0;
  std::uint64_t i = 0;
  for (const testing::AutomaticPathShape& s : testing::kThreadRowHeldShapes) {
    CaseConfig cfg = testing::case_config_of(s, testing::test_seed() + 7919 * i);
    cfg.logits = i++ % 2 ? harness::LogitsDistribution::kQuantized : harness::LogitsDistribution::kNormal;
    alignas(16) static unsigned char stand_in[16];
    if (cuda::thread_row_blocks_per_sm(
            shape_only_params(s.tokens, s.experts, s.topk, s.dtype, s.norm, stand_in, stand_in),
            sms) > 0)
      ++held;
    testing::expect_automatic_path(RoutingCase(cfg), "row-per-thread", describe(cfg));
  }
  EXPECT_GT(held, 0) << "no case held to a blocks-per-SM cap on " << sms << " SMs";
}

// The lanes that own whole rows (this path, and the filter path's ranking)
// write a row's slots by vector stores where cuda::slot_vector_stores
// says; a destination whose rows start 4 bytes past a 16-byte boundary
// (a [T, k + 4] buffer from its column 1, as an engine's slice would be)
// must take one store per slot: the same bits, one column to the right,
// and nothing outside the window written.
TEST(SlotStores, DestinationsOffsetFromAlignmentTakeScalarStores) {
  SKIP_WITHOUT_GPU();
  constexpr int kFilterPath = 7;
  for (const auto& [path, E] : {std::pair{kThreadRowPath, 64}, std::pair{kFilterPath, 256}})
    for (std::int64_t k : {4, 8}) {
      CaseConfig cfg;
      cfg.experts = E;
      cfg.topk = k;
      cfg.tokens = 200;
      cfg.extra_cols = 4;  // rows of k + 4 slots: 16-byte multiples
      cfg.padding = harness::PaddingMode::kSparse;
      cfg.seed = testing::test_seed() + static_cast<std::uint64_t>(E + k);
      const RoutingCase c(cfg);
      const std::string what = "path " + std::to_string(path) + " " + describe(cfg);
      const cuda::LaunchOptions options{.force_path = path};
      const harness::RoutingOutput aligned = harness::run_cuda_case(c, options);
      EXPECT_TRUE(testing::Passes(harness::compare_output(c, aligned))) << what;

      const harness::CudaCase dev(c);
      RoutingParams shifted = dev.params();
      ASSERT_TRUE(cuda::slot_vector_stores(shifted)) << what;
      shifted.weights += 1;
      shifted.ids = static_cast<std::int32_t*>(shifted.ids) + 1;
      shifted.weights_cols -= 1;
      shifted.ids_cols -= 1;
      EXPECT_FALSE(cuda::slot_vector_stores(shifted)) << what;
      ASSERT_EQ(cuda::launch_routing(shifted, nullptr, options), cudaSuccess) << what;
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << what;
      const harness::RoutingOutput got = dev.read_output();

      const std::int64_t cols = c.dest_cols();
      int mismatches = 0;
      for (std::int64_t t = 0; t < c.dest_rows(); ++t)
        for (std::int64_t j = 0; j < cols; ++j) {
          const std::size_t at = static_cast<std::size_t>(t * cols + j);
          const bool inside = t < cfg.tokens && j >= 1 && j <= k;
          std::uint32_t want_bits = harness::kPoisonWeightBits, got_bits;
          std::int64_t want_id = harness::kPoisonId;
          if (inside) {
            std::memcpy(&want_bits, &aligned.weights[at - 1], 4);
            want_id = aligned.ids[at - 1];
          }
          std::memcpy(&got_bits, &got.weights[at], 4);
          if ((got_bits != want_bits || got.ids[at] != want_id) && ++mismatches <= 5)
            ADD_FAILURE() << what << ": row " << t << " column " << j << (inside ? " (window)" : " (outside)")
                          << ": weight bits " << std::hex << got_bits << " id " << std::dec << got.ids[at]
                          << ", want bits " << std::hex << want_bits << " id " << std::dec << want_id;
        }
      EXPECT_EQ(mismatches, 0) << what;
    }
}

// Every lane count a row's experts allow (LaunchOptions::thread_row_lanes,
// for tuning the table's choice) gives the register path's bits: E = 64
// and 128 on one, two and four lanes, 192 on one and two.
TEST(ThreadRowPath, EveryLaneCountMatchesTheRegisterPath) {
  SKIP_WITHOUT_GPU();
  std::uint64_t i = 0;
  for (std::int64_t E : {64, 128, 192})
    for (int lanes : {1, 2, 4})
      for (std::int64_t k : {1, 4, 8}) {
        if (E % (16 * lanes) != 0) continue;
        CaseConfig cfg;
        cfg.experts = E;
        cfg.topk = k;
        cfg.tokens = 700;
        cfg.logits = testing::kSweepDistributions[i % std::size(testing::kSweepDistributions)];
        testing::turn_sweep_settings(cfg, i);
        cfg.normalization = i % 2 ? Normalization::kSoftmax : Normalization::kSigmoid;
        cfg.seed = testing::test_seed() * 7 + i++;
        const RoutingCase c(cfg);
        testing::expect_reference_and_same_bits(
            c, harness::run_cuda_case(c, {.force_path = kThreadRowPath, .thread_row_lanes = lanes}),
            {.force_path = kRegisterPath}, std::to_string(lanes) + " lanes per row vs register path, " + describe(cfg));
      }
}

TEST(ThreadRowPath, ForcedOnAnUnsupportedCallIsAClearError) {
  SKIP_WITHOUT_GPU();
  testing::expect_clear_errors_when_forced(
      kThreadRowPath, {{72, 4, harness::LogitsLayout::kContiguous, "num_experts is not a multiple of 16"},
                       {64, 9, harness::LogitsLayout::kContiguous, "topk > 8"},
                       {64, 4, harness::LogitsLayout::kColumnStrided, "not contiguous along the experts"}});
}

// For compute-sanitizer (scripts/gpu_run.sh sanitize): shared-memory slices
// and candidate lists at the largest E, padding, partial blocks.
TEST(Sanitizer, ThreadRowPath) {
  SKIP_WITHOUT_GPU();
  for (std::int64_t E : {16, 256, 512}) {
    const CaseConfig cfg = testing::sanitizer_case_config(E);
    const RoutingCase c(cfg);
    EXPECT_TRUE(testing::Passes(harness::compare_output(c, harness::run_cuda_case(c, {.force_path = kThreadRowPath}))))
        << describe(cfg);
  }
}

}  // namespace
}  // namespace musespark

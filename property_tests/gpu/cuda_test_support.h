// What the GPU test files share: the skip with a reason when no device is
// usable, a bitwise comparison of two outputs that names the first few
// differing elements (alone, or with the reference comparison of the run
// under test), the compute-sanitizer case of the large-batch paths, and
// the check that a forced path refuses a call it cannot take with an error
// naming why.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <initializer_list>
#include <limits>
#include <string>

#include "../automatic_path_shapes.h"
#include "../test_support.h"
#include "harness/cuda_case.h"
#include "musespark/errors.h"

#define SKIP_WITHOUT_GPU()                                                       \
  do {                                                                           \
    if (const std::string why = harness::cuda_unavailable_reason(); !why.empty()) \
      GTEST_SKIP() << why;                                                       \
  } while (0)

namespace musespark::testing {

inline void expect_bitwise_equal(const harness::RoutingOutput& a, const harness::RoutingOutput& b,
                                 const std::string& what) {
  ASSERT_EQ(a.weights.size(), b.weights.size());
  int shown = 0;
  for (std::size_t i = 0; i < a.weights.size(); ++i) {
    const bool same = std::memcmp(&a.weights[i], &b.weights[i], 4) == 0 && a.ids[i] == b.ids[i];
    if (!same && shown++ < 5)
      ADD_FAILURE() << what << ": element " << i << " differs: (" << a.ids[i] << ", " << a.weights[i]
                    << ") vs (" << b.ids[i] << ", " << b.weights[i] << ")";
  }
}

// `got`, a run of `c`, against the float64 reference and, bit for bit,
// against the run of `c` under `other`.
inline void expect_reference_and_same_bits(const harness::RoutingCase& c, const harness::RoutingOutput& got,
                                           const cuda::LaunchOptions& other, const std::string& what) {
  EXPECT_TRUE(Passes(harness::compare_output(c, got))) << what;
  expect_bitwise_equal(got, harness::run_cuda_case(c, other), what);
}

// A case of one of automatic_path_shapes.h's shapes: its sizes, logits and
// normalization, padded rows between the others, and `seed`.
inline harness::CaseConfig case_config_of(const AutomaticPathShape& s, std::uint64_t seed) {
  harness::CaseConfig cfg;
  cfg.tokens = s.tokens;
  cfg.experts = s.experts;
  cfg.topk = s.topk;
  cfg.logits_dtype = s.dtype;
  cfg.normalization = s.norm;
  cfg.padding = harness::PaddingMode::kSparse;
  cfg.seed = seed;
  return cfg;
}

// The tier table sends `c` to `path` (cuda::routing_path_name), and that
// automatic run equals the reference and, bit for bit, the register path.
inline void expect_automatic_path(const harness::RoutingCase& c, const char* path, const std::string& what) {
  const harness::CudaCase dev(c);
  EXPECT_STREQ(cuda::routing_path_name(cuda::chosen_path(dev.params())), path) << what;
  expect_reference_and_same_bits(c, harness::run_cuda_case(dev, {}),
                                 {.force_path = static_cast<int>(cuda::RoutingPath::kRegister)},
                                 "automatic vs register path, " + what);
}

// The logits distributions the sweeps of the large-batch paths and the
// estimated selection cover: every kind of row the generator makes.
inline constexpr harness::LogitsDistribution kSweepDistributions[] = {
    harness::LogitsDistribution::kNormal,     harness::LogitsDistribution::kWide,
    harness::LogitsDistribution::kQuantized,  harness::LogitsDistribution::kConstant,
    harness::LogitsDistribution::kInfinities, harness::LogitsDistribution::kNaNs,
    harness::LogitsDistribution::kHuge};

// Case i of such a sweep: the settings that turn with i, so that the sweep
// over experts, k and distributions also covers every logits dtype, bias
// kind, sparse padding, the logit multiplier, eps, rows past T and int64
// ids. (Each sweep adds what its path needs besides.)
inline void turn_sweep_settings(harness::CaseConfig& cfg, std::uint64_t i) {
  constexpr DType kDtypes[] = {DType::kFloat32, DType::kBFloat16, DType::kFloat16};
  cfg.logits_dtype = kDtypes[i % 3];
  cfg.bias = static_cast<harness::BiasDistribution>(i % 6);
  cfg.padding = i % 4 == 1 ? harness::PaddingMode::kSparse : harness::PaddingMode::kNone;
  if (i % 3 == 0) cfg.multiplier = 0.17677669529663687;
  if (i % 4 == 2) cfg.eps = 1e-15;
  cfg.extra_rows = static_cast<std::int64_t>(i % 2);
  cfg.ids_dtype = i % 5 == 0 ? DType::kInt64 : DType::kInt32;
}

// The edge tests' case: cfg's rows in shapes of 8 rows; row t holds shape
// t / 8, whose logit of expert e is logit_of(shape, e, x) with x the
// generated one. bias_case 1 puts -1e30 on expert E / 3 (the margin of the
// estimated scores keeps every expert, the scores still differ), 2 puts
// +inf there (an infinite margin); 0 keeps cfg's bias.
template <typename LogitOf>
harness::RoutingCase edge_rows_case(const harness::CaseConfig& cfg, int bias_case, LogitOf logit_of) {
  harness::RoutingCase c(cfg);
  if (bias_case == 1) c.set_bias(cfg.experts / 3, -1e30f);
  if (bias_case == 2) c.set_bias(cfg.experts / 3, std::numeric_limits<float>::infinity());
  for (std::int64_t t = 0; t < cfg.tokens; ++t)
    for (std::int64_t e = 0; e < cfg.experts; ++e)
      c.set_logit(t, e, logit_of(static_cast<int>(t / 8), e, c.logit(t, e)));
  return c;
}

// The case the large-batch paths' Sanitizer.* tests run at E experts
// (scripts/gpu_run.sh sanitize): k = 8, 130 rows with sparse padding
// (partial blocks and tasks), quantized logits at E = 256 (ties: long
// candidate lists), softmax at E = 512.
inline harness::CaseConfig sanitizer_case_config(std::int64_t experts) {
  harness::CaseConfig cfg;
  cfg.experts = experts;
  cfg.topk = 8;
  cfg.tokens = 130;
  cfg.logits = experts == 256 ? harness::LogitsDistribution::kQuantized : harness::LogitsDistribution::kNormal;
  cfg.normalization = experts == 512 ? Normalization::kSoftmax : Normalization::kSigmoid;
  cfg.padding = harness::PaddingMode::kSparse;
  return cfg;
}

// A call a forced path cannot take, and the words its error must contain.
struct UnsupportedCall {
  std::int64_t experts, topk;
  harness::LogitsLayout layout;
  const char* message;
};

inline void expect_clear_errors_when_forced(int force_path, std::initializer_list<UnsupportedCall> calls) {
  for (const UnsupportedCall& bad : calls) {
    harness::CaseConfig cfg;
    cfg.experts = bad.experts;
    cfg.topk = bad.topk;
    cfg.tokens = 4;
    cfg.layout = bad.layout;
    try {
      cuda::LaunchOptions options;
      options.force_path = force_path;
      (void)harness::run_cuda_case(harness::RoutingCase(cfg), options);
      ADD_FAILURE() << "no error for " << harness::describe(cfg);
    } catch (const ArgumentError& e) {
      EXPECT_NE(std::string(e.what()).find(bad.message), std::string::npos) << e.what();
    }
  }
}

}  // namespace musespark::testing

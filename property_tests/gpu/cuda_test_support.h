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
#include <string>

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

// The tier table sends `c` to `path` (cuda::routing_path_name), and that
// automatic run equals the reference and, bit for bit, the register path.
inline void expect_automatic_path(const harness::RoutingCase& c, const char* path, const std::string& what) {
  const harness::CudaCase dev(c);
  EXPECT_STREQ(cuda::routing_path_name(cuda::chosen_path(dev.params())), path) << what;
  expect_reference_and_same_bits(c, harness::run_cuda_case(dev, {}),
                                 {.force_path = static_cast<int>(cuda::RoutingPath::kRegister)},
                                 "automatic vs register path, " + what);
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

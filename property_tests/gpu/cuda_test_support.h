// What the GPU test files share: the skip with a reason when no device is
// usable, a bitwise comparison of two outputs that names the first few
// differing elements, and the check that a forced path refuses a call it
// cannot take with an error naming why.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <initializer_list>
#include <string>

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

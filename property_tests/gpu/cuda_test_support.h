// What the GPU test files share: the skip with a reason when no device is
// usable, and a bitwise comparison of two outputs that names the first few
// differing elements.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "harness/cuda_case.h"

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

}  // namespace musespark::testing

// Small helpers shared by the test files.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "harness/comparator.h"

namespace musespark::testing {

// A seed a variable can pin: MUSESPARK_TEST_SEED=123 ctest ...
inline std::uint64_t test_seed(std::uint64_t fallback = 1) {
  const char* s = std::getenv("MUSESPARK_TEST_SEED");
  return s ? std::strtoull(s, nullptr, 10) : fallback;
}

inline ::testing::AssertionResult Passes(const harness::ComparisonReport& r) {
  if (r.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\n" << r.format();
}

}  // namespace musespark::testing

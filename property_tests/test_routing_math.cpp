// The order-preserving score map that selection keys and the CUDA kernel's
// threshold filter are built on (impl/include/musespark/routing_math.h).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "musespark/routing_math.h"

namespace musespark {
namespace {

namespace rm = routing_math;

// Every 2^12-th bit pattern plus the special values, ascending as floats.
TEST(RoutingMath, OrderedScoreFollowsFloatOrderAndInvertsExactly) {
  std::uint64_t checked = 0;
  for (std::uint64_t u = 0; u <= 0xFFFFFFFFull; u += 4093) {
    const std::uint32_t a_bits = static_cast<std::uint32_t>(u);
    const float a = bits_as_float(a_bits);
    if (std::isnan(a)) {
      ASSERT_EQ(rm::ordered_score(a), 0u) << "NaN bits 0x" << std::hex << a_bits;
      continue;
    }
    const float back = rm::score_from_ordered(rm::ordered_score(a));
    // -0 folds onto +0; everything else comes back bit for bit.
    ASSERT_EQ(float_as_bits(back), a == 0.0f ? 0u : a_bits) << "bits 0x" << std::hex << a_bits;
    const float b = std::nextafter(a, std::numeric_limits<float>::infinity());
    if (b != a && !std::isnan(b)) {
      ASSERT_LT(rm::ordered_score(a), rm::ordered_score(b)) << a << " vs " << b;
      ASSERT_GT(rm::ordered_score(a), 0u);
    }
    ++checked;
  }
  EXPECT_GT(checked, 1000000u);
  EXPECT_EQ(rm::ordered_score(-0.0f), rm::ordered_score(0.0f));
  EXPECT_EQ(rm::score_from_ordered(rm::ordered_score(-INFINITY)), -INFINITY);
  EXPECT_EQ(rm::score_from_ordered(rm::ordered_score(INFINITY)), INFINITY);
  EXPECT_LT(rm::ordered_score(-INFINITY), rm::ordered_score(-std::numeric_limits<float>::max()));
}

// The softmax denominator's fixed-point term: the multiply-and-truncate form
// the kernels use equals the bit-level definition on every fp32 in [0, 1].
TEST(RoutingMath, SoftmaxTermFixedEqualsTheBitLevelDefinitionOnEveryValue) {
  const std::uint32_t one = float_as_bits(1.0f);
  std::uint64_t checked = 0;
  for (std::uint32_t b = 0; b <= one; ++b) {
    const float e = bits_as_float(b);
    const std::uint64_t fast = rm::softmax_term_fixed(e), exact = rm::softmax_term_fixed_by_bits(e);
    if (fast != exact) FAIL() << "e = " << e << " (bits 0x" << std::hex << b << "): " << std::dec << fast << " vs " << exact;
    ++checked;
  }
  EXPECT_EQ(checked, std::uint64_t{one} + 1);
  EXPECT_EQ(rm::softmax_term_fixed(1.0f), std::uint64_t{1} << 40);
  EXPECT_EQ(rm::softmax_term_fixed(0.0f), 0u);
}

}  // namespace
}  // namespace musespark

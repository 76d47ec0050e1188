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

// The warp sum by 22-bit pieces (one 32-bit reduction per piece) equals
// the 64-bit sum modulo 2^64 for up to 1024 values of any size: extremes
// (all ones, single high bits, values just past a piece boundary) and a
// pseudo-random mix, for counts 1, 32 (a warp) and 1024 (the bound).
TEST(RoutingMath, PieceSumsRecombineToTheWrappedSum) {
  std::uint64_t state = 0x9E3779B97F4A7C15ull;
  auto next = [&state] {
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;
    return state;
  };
  const std::uint64_t edges[] = {0, 1, 0x3FFFFF, 0x400000, (1ull << 44) - 1, 1ull << 44, 1ull << 63,
                                 ~0ull, 0x000003FFFFFFFFFFull, (1ull << 40) * 16};
  for (int n : {1, 32, 1024}) {
    for (int pattern = 0; pattern < 12; ++pattern) {
      std::uint64_t wrapped = 0;
      std::uint32_t s[3] = {0, 0, 0};
      for (int i = 0; i < n; ++i) {
        const std::uint64_t v = pattern < 10 ? edges[pattern] : next() >> (pattern == 10 ? 0 : 20);
        wrapped += v;
        for (int piece = 0; piece < 3; ++piece) {
          const std::uint32_t before = s[piece];
          s[piece] += rm::piece22(v, piece);
          ASSERT_GE(s[piece], before) << "piece " << piece << " overflowed at n = " << i + 1;
        }
      }
      EXPECT_EQ(rm::recombine_pieces22(s[0], s[1], s[2]), wrapped) << "n = " << n << ", pattern " << pattern;
    }
  }
}

}  // namespace
}  // namespace musespark

// Exact widening of 16-bit floats and the host-side narrowing used to build inputs.
#include <gtest/gtest.h>

#include <cmath>

#include "musespark/dtype.h"

namespace musespark {
namespace {

TEST(DType, EveryHalfWidensAndNarrowsBackExactly) {
  for (std::uint32_t h = 0; h < 0x10000u; ++h) {
    const float f = fp16_bits_to_float(static_cast<std::uint16_t>(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_to_fp16_bits(f), h) << "half bits 0x" << std::hex << h;
  }
}

TEST(DType, EveryBFloat16WidensAndNarrowsBackExactly) {
  for (std::uint32_t h = 0; h < 0x10000u; ++h) {
    const float f = bf16_bits_to_float(static_cast<std::uint16_t>(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_to_bf16_bits(f), h) << "bf16 bits 0x" << std::hex << h;
  }
}

TEST(DType, HalfSpecialValues) {
  EXPECT_EQ(fp16_bits_to_float(0x3C00), 1.0f);
  EXPECT_EQ(fp16_bits_to_float(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(fp16_bits_to_float(0x7BFF), 65504.0f);
  EXPECT_TRUE(std::isinf(fp16_bits_to_float(0x7C00)));
  EXPECT_EQ(float_to_fp16_bits(65520.0f), 0x7C00);  // rounds to inf
  EXPECT_EQ(float_to_fp16_bits(1.0f + std::ldexp(1.0f, -11)), 0x3C00);  // tie to even
}

}  // namespace
}  // namespace musespark

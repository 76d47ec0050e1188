// Every argument error names the argument and the value it got, and nothing
// is written when a call is refused.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <vector>

#include "musespark/errors.h"
#include "musespark/route.h"

namespace musespark {
namespace {

using ::testing::HasSubstr;

struct Buffers {
  std::vector<float> logits = std::vector<float>(4 * 8, 0.5f);
  std::vector<float> bias = std::vector<float>(8, 0.0f);
  std::vector<float> weights = std::vector<float>(4 * 2, -7.0f);
  std::vector<std::int32_t> ids = std::vector<std::int32_t>(4 * 2, -7);
  bool padding[4] = {false, false, false, false};

  RoutingParams params() {
    RoutingParams p;
    p.logits = logits.data();
    p.logits_row_stride = 8;
    p.num_tokens = 4;
    p.num_experts = 8;
    p.bias = bias.data();
    p.topk = 2;
    set_contiguous_outputs(p, weights.data(), ids.data(), DType::kInt32);
    return p;
  }
  bool untouched() const {
    for (float w : weights) if (w != -7.0f) return false;
    for (std::int32_t i : ids) if (i != -7) return false;
    return true;
  }
};

void expect_error(const std::function<void(RoutingParams&)>& mutate, const std::string& message) {
  Buffers b;
  RoutingParams p = b.params();
  mutate(p);
  try {
    route(p);
    ADD_FAILURE() << "no error; expected one containing: " << message;
  } catch (const ArgumentError& e) {
    EXPECT_THAT(e.what(), HasSubstr(message));
  }
  EXPECT_TRUE(b.untouched()) << "a refused call wrote into its destinations";
}

TEST(Validation, TopkZero) { expect_error([](auto& p) { p.topk = 0; }, "topk must be in [1, num_experts=8], got 0"); }
TEST(Validation, TopkAboveExperts) { expect_error([](auto& p) { p.topk = 9; }, "got 9"); }
TEST(Validation, NoExperts) { expect_error([](auto& p) { p.num_experts = 0; }, "num_experts must be >= 1, got 0"); }
TEST(Validation, TooManyExperts) {
  expect_error([](auto& p) { p.num_experts = (1 << 23) + 1; }, "num_experts = 8388609 exceeds");
}
TEST(Validation, NegativeTokens) { expect_error([](auto& p) { p.num_tokens = -1; }, "num_tokens must be >= 0, got -1"); }
TEST(Validation, LogitsDtype) {
  expect_error([](auto& p) { p.logits_dtype = DType::kInt32; }, "gating_output dtype must be float32, bfloat16 or float16, got int32");
}
TEST(Validation, IdsDtype) { expect_error([](auto& p) { p.ids_dtype = DType::kFloat32; }, "topk_ids dtype must be int32 or int64, got float32"); }
TEST(Validation, NegativeLogitStride) { expect_error([](auto& p) { p.logits_col_stride = -1; }, "gating_output strides must be >= 0, got (8, -1)"); }
TEST(Validation, NonFiniteScale) { expect_error([](auto& p) { p.route_scale = NAN; }, "route_scale must be finite, got nan"); }
// The row-per-thread kernels multiply every logit by the multiplier
// without testing for one: without one it must be exactly 1.
TEST(RoutingScalars, MultiplierIsOneWithoutOne) {
  Buffers b;
  RoutingParams p = b.params();
  const RoutingScalars without = fp32_scalars(p);
  EXPECT_FALSE(without.has_multiplier);
  EXPECT_EQ(without.multiplier, 1.0f);
  p.multiplier = 0.17677669529663687;
  const RoutingScalars with = fp32_scalars(p);
  EXPECT_TRUE(with.has_multiplier);
  EXPECT_EQ(with.multiplier, 0.17677669529663687f);
}

TEST(Validation, InfiniteMultiplier) {
  expect_error([](auto& p) { p.multiplier = INFINITY; }, "router_output_multiplier must be finite, got inf");
}
TEST(Validation, EpsOutsideFp32) {
  expect_error([](auto& p) { p.eps = 1e300; }, "router_score_division_eps = 1e+300 is outside the fp32 range");
}
TEST(Validation, WeightsTooFewRows) {
  expect_error([](auto& p) { p.weights_rows = 3; }, "topk_weights has shape [3, 2], needs at least [4, 2]");
}
TEST(Validation, IdsTooFewColumns) { expect_error([](auto& p) { p.ids_cols = 1; }, "topk_ids has shape [4, 1], needs at least [4, 2]"); }
TEST(Validation, OverlappingDestination) {
  expect_error([](auto& p) { p.weights_row_stride = 1; }, "topk_weights strides (1, 1) make elements of the [4, 2] output window overlap");
}
TEST(Validation, ZeroStrideDestination) { expect_error([](auto& p) { p.ids_col_stride = 0; }, "topk_ids strides (2, 0)"); }
TEST(Validation, NegativePaddingStride) {
  expect_error([](auto& p) { p.padding_stride = -2; }, "is_padding stride must be >= 0, got -2");
}
TEST(Validation, NullLogits) { expect_error([](auto& p) { p.logits = nullptr; }, "gating_output is null with num_tokens = 4"); }
TEST(Validation, NullBias) { expect_error([](auto& p) { p.bias = nullptr; }, "bias is null"); }
TEST(Validation, BadNormalizationNamesTheValue) {
  try {
    parse_normalization("relu");
    ADD_FAILURE();
  } catch (const ArgumentError& e) {
    EXPECT_THAT(e.what(), HasSubstr("must be 'sigmoid' or 'softmax', got 'relu'"));
  }
}

TEST(Validation, ZeroTokensIsAValidCallThatWritesNothing) {
  Buffers b;
  RoutingParams p = b.params();
  p.num_tokens = 0;
  route(p);
  EXPECT_TRUE(b.untouched());
}

TEST(Validation, TransposedDestinationIsAccepted) {
  Buffers b;
  RoutingParams p = b.params();
  p.weights_row_stride = 1;
  p.weights_col_stride = 4;  // [4, 2] stored column-major
  route(p);
  EXPECT_FALSE(b.untouched());
}

TEST(Validation, CudaTensorsWithoutCudaBuildOrDeviceAreRefused) {
  if (built_with_cuda()) GTEST_SKIP() << "this build has the CUDA kernel; the GPU tests cover device dispatch";
  expect_error([](auto& p) { p.device = Device::kCuda; }, "this build has no CUDA kernel");
}

}  // namespace
}  // namespace musespark

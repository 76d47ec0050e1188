// Router configuration checks, routing-method classification, MoE decisions.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "musespark/errors.h"
#include "musespark/moe_config.h"
#include "musespark/router_config.h"

namespace musespark {
namespace {

using ::testing::HasSubstr;

RouterConfig muse_spark() {
  RouterConfig c;
  c.top_k = 8;
  c.num_experts = 256;
  c.route_scale = 2.5;
  c.router_output_multiplier = 0.17677669529663687;
  c.router_score_division_eps = 1e-15;
  return c;
}

void expect_config_error(RouterConfig c, const std::string& message) {
  try {
    validate_router_config(c);
    ADD_FAILURE() << "expected: " << message;
  } catch (const ArgumentError& e) {
    EXPECT_THAT(e.what(), HasSubstr(message));
  }
}

TEST(RouterConfig, MuseSparkIsValid) { EXPECT_NO_THROW(validate_router_config(muse_spark())); }

TEST(RouterConfig, ErrorsNameTheValue) {
  auto c = muse_spark();
  c.router_score_normalization = "tanh";
  expect_config_error(c, "got 'tanh'");
  c = muse_spark();
  c.top_k = 300;
  expect_config_error(c, "top_k must be in [1, num_experts=256], got 300");
  c = muse_spark();
  c.num_experts = 0;
  expect_config_error(c, "num_experts must be >= 1, got 0");
  c = muse_spark();
  c.route_scale = INFINITY;
  expect_config_error(c, "route_scale must be finite, got inf");
  c = muse_spark();
  c.router_score_division_eps = NAN;
  expect_config_error(c, "router_score_division_eps must be finite, got nan");
}

TEST(RoutingMethod, SigmoidWithBiasIsDeepSeekV3) {
  EXPECT_EQ(routing_method_type(muse_spark()), RoutingMethodType::kDeepSeekV3);
}

TEST(RoutingMethod, SoftmaxWithBiasIsCustom) {
  auto c = muse_spark();
  c.router_score_normalization = "softmax";
  EXPECT_EQ(routing_method_type(c), RoutingMethodType::kCustom);
}

TEST(RoutingMethod, VocabularyWithoutBias) {
  RoutingMethodQuery q{Normalization::kSoftmax, 8, true, std::nullopt, false};
  EXPECT_EQ(classify_routing_method(q), RoutingMethodType::kRenormalizeNaive);
  q.renormalize = false;
  EXPECT_EQ(classify_routing_method(q), RoutingMethodType::kDefault);
  RoutingMethodQuery llama{Normalization::kSigmoid, 1, false, std::nullopt, false};
  EXPECT_EQ(classify_routing_method(llama), RoutingMethodType::kLlama4);
  EXPECT_EQ(routing_method_name(RoutingMethodType::kDeepSeekV3), "DeepSeekV3");
}

TEST(MoeConfig, DeferFinalizeWheneverThereAreTokens) {
  EXPECT_FALSE(should_defer_moe_finalize(0));
  EXPECT_TRUE(should_defer_moe_finalize(1));
  EXPECT_TRUE(should_defer_moe_finalize(65536));
  EXPECT_THROW(should_defer_moe_finalize(-1), ArgumentError);
}

TEST(MoeConfig, PreNormAllReduceUnderTensorParallelism) {
  EXPECT_FALSE(needs_pre_norm_all_reduce(1));
  EXPECT_TRUE(needs_pre_norm_all_reduce(2));
  EXPECT_TRUE(needs_pre_norm_all_reduce(8));
  EXPECT_THROW(needs_pre_norm_all_reduce(0), ArgumentError);
}

}  // namespace
}  // namespace musespark

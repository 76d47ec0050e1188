// The float64 reference on cases small enough to compute by hand.
#include <gtest/gtest.h>

#include <cmath>

#include "harness/routing_case.h"
#include "reference/routing_reference.h"

namespace musespark {
namespace {

using harness::CaseConfig;
using harness::RoutingCase;

// A [1, E] fp32 case whose logits and bias the test sets itself.
RoutingCase make_row(std::vector<float> logits, std::vector<float> bias, std::int64_t k,
                     Normalization norm = Normalization::kSigmoid) {
  CaseConfig c;
  c.tokens = 1;
  c.experts = static_cast<std::int64_t>(logits.size());
  c.topk = k;
  c.normalization = norm;
  RoutingCase rc(c);
  for (std::size_t e = 0; e < logits.size(); ++e) {
    rc.set_logit(0, static_cast<std::int64_t>(e), logits[e]);
    rc.set_bias(static_cast<std::int64_t>(e), bias[e]);
  }
  return rc;
}

double sig(double x) { return 1.0 / (1.0 + std::exp(-x)); }

TEST(Reference, SigmoidSelectionUsesBiasWeightsDoNot) {
  // p = sig(0), sig(1), sig(2); bias pushes expert 0 to the top.
  RoutingCase rc = make_row({0.f, 1.f, 2.f}, {1.f, 0.f, 0.f}, 2);
  reference::RoutingReference ref(rc.host_params());
  const auto d = ref.token(0);
  ASSERT_EQ(d.ids, (std::vector<std::int32_t>{0, 2}));
  const double sum = sig(0) + sig(2);
  EXPECT_DOUBLE_EQ(d.weights[0], sig(0) / sum);
  EXPECT_DOUBLE_EQ(d.weights[1], sig(2) / sum);
  EXPECT_DOUBLE_EQ(d.sorted_q[0], sig(0) + 1.0);
  EXPECT_DOUBLE_EQ(d.gaps.back(), d.sorted_q[1] - d.sorted_q[2]);
}

TEST(Reference, ExactTiesGoToTheLowerIndex) {
  RoutingCase rc = make_row({0.5f, 0.5f, 0.5f, 0.5f}, {0.f, 0.f, 0.f, 0.f}, 3);
  reference::RoutingReference ref(rc.host_params());
  EXPECT_EQ(ref.token(0).ids, (std::vector<std::int32_t>{0, 1, 2}));
}

TEST(Reference, NegativeZeroTiesWithPositiveZero) {
  // q = sigmoid(-inf) + b = 0 + (-0.0) and 0 + 0.0: equal, lower index first.
  RoutingCase rc = make_row({-INFINITY, -INFINITY}, {0.0f, -0.0f}, 2);
  reference::RoutingReference ref(rc.host_params());
  EXPECT_EQ(ref.token(0).ids, (std::vector<std::int32_t>{0, 1}));
}

TEST(Reference, NaNRanksBelowMinusInfinityLowerIndexFirst) {
  // q: NaN, -inf (bias -inf), NaN, 0.5
  RoutingCase rc = make_row({NAN, 0.f, NAN, 0.f}, {0.f, -INFINITY, 0.f, 0.f}, 4);
  reference::RoutingReference ref(rc.host_params());
  EXPECT_EQ(ref.token(0).ids, (std::vector<std::int32_t>{3, 1, 0, 2}));
}

TEST(Reference, EpsAndRouteScale) {
  CaseConfig c;
  c.experts = 2;
  c.topk = 2;
  c.eps = 0.5;
  c.route_scale = 3.0;
  RoutingCase rc(c);
  rc.set_logit(0, 0, 0.f);
  rc.set_logit(0, 1, 0.f);
  rc.set_bias(0, 0.f);
  rc.set_bias(1, 0.f);
  reference::RoutingReference ref(rc.host_params());
  // p = 0.5 each; w = 3 * 0.5 / (1 + 0.5) = 1.
  const auto d = ref.token(0);
  EXPECT_DOUBLE_EQ(d.weights[0], 1.0);
  EXPECT_DOUBLE_EQ(d.weights[1], 1.0);
}

TEST(Reference, SigmoidZeroSumGivesNaNWithoutEpsZeroWithEps) {
  RoutingCase no_eps = make_row({-INFINITY, -INFINITY}, {0.f, 0.f}, 2);
  EXPECT_TRUE(std::isnan(reference::RoutingReference(no_eps.host_params()).token(0).weights[0]));
  CaseConfig c;
  c.experts = 2;
  c.topk = 2;
  c.eps = 1e-15;
  RoutingCase with_eps(c);
  with_eps.set_logit(0, 0, -INFINITY);
  with_eps.set_logit(0, 1, -INFINITY);
  const auto d = reference::RoutingReference(with_eps.host_params()).token(0);
  EXPECT_EQ(d.weights[0], 0.0);
  EXPECT_EQ(d.weights[1], 0.0);
}

TEST(Reference, SoftmaxIsStableForHugeLogitsAndNaNForAllMinusInf) {
  RoutingCase huge = make_row({1000.f, 999.f}, {0.f, 0.f}, 1, Normalization::kSoftmax);
  const auto d = reference::RoutingReference(huge.host_params()).token(0);
  EXPECT_NEAR(d.p[0], 1.0 / (1.0 + std::exp(-1.0)), 1e-15);
  RoutingCase dead = make_row({-INFINITY, -INFINITY, -INFINITY}, {0.f, 0.f, 0.f}, 2, Normalization::kSoftmax);
  const auto n = reference::RoutingReference(dead.host_params()).token(0);
  EXPECT_TRUE(std::isnan(n.p[0]));
  EXPECT_EQ(n.ids, (std::vector<std::int32_t>{0, 1}));
  EXPECT_TRUE(std::isnan(n.weights[0]));
}

TEST(Reference, MultiplierScalesLogitsBeforeNormalization) {
  CaseConfig c;
  c.experts = 1;
  c.multiplier = 0.5;
  RoutingCase rc(c);
  rc.set_logit(0, 0, 3.0f);
  EXPECT_DOUBLE_EQ(reference::RoutingReference(rc.host_params()).token(0).p[0], sig(1.5));
}

TEST(Reference, PaddedRowIsMinusOneAndZero) {
  CaseConfig c;
  c.tokens = 2;
  c.experts = 4;
  c.topk = 2;
  c.padding = harness::PaddingMode::kAll;
  RoutingCase rc(c);
  const auto d = reference::RoutingReference(rc.host_params()).token(1);
  EXPECT_TRUE(d.padded);
  EXPECT_EQ(d.ids, (std::vector<std::int32_t>{-1, -1}));
  EXPECT_EQ(d.weights, (std::vector<double>{0.0, 0.0}));
}

}  // namespace
}  // namespace musespark

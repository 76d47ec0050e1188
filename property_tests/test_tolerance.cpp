// The derived tolerances hold for real fp32 arithmetic (every measured error
// is inside its bound) and are not vacuous (the largest measured error uses
// a visible share of the bound).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "harness/tolerance.h"
#include "musespark/routing_math.h"
#include "reference/routing_reference.h"
#include "test_support.h"

namespace musespark {
namespace {

namespace rm = routing_math;

struct Measured {
  double worst_share = 0.0;  // max over samples of error / bound
};

Measured sigmoid_scores(std::optional<double> multiplier, double spread, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, static_cast<float>(spread));
  Measured m;
  for (int i = 0; i < 200000; ++i) {
    const float g = normal(rng);
    const float x32 = multiplier ? static_cast<float>(*multiplier) * g : g;
    const float p32 = rm::sigmoid(x32);
    const double x = multiplier ? *multiplier * static_cast<double>(g) : g;
    const double p = 1.0 / (1.0 + std::exp(-x));
    const double r = (1.0 - p) * ((multiplier ? 2.0 : 0.0) * harness::kUnitRoundoff * std::fabs(x) +
                                  harness::kExpUlps * harness::kUnitRoundoff) +
                     2.0 * harness::kUnitRoundoff;
    const double bound = r * p + harness::kScoreFloor;
    const double err = std::fabs(static_cast<double>(p32) - p);
    EXPECT_LE(err, bound) << "g=" << g << " x=" << x;
    if (err > bound) break;
    m.worst_share = std::max(m.worst_share, err / bound);
  }
  return m;
}

TEST(Tolerance, SigmoidBoundHoldsWithoutMultiplier) {
  const Measured m = sigmoid_scores(std::nullopt, 4.0, testing::test_seed());
  EXPECT_GT(m.worst_share, 0.05) << "the bound is far looser than fp32 needs";
}

TEST(Tolerance, SigmoidBoundHoldsWithMultiplierAndWideLogits) {
  const Measured m = sigmoid_scores(0.17677669529663687, 40.0, testing::test_seed() + 1);
  EXPECT_GT(m.worst_share, 0.05);
}

TEST(Tolerance, DerivedBoundsCoverTheCpuPathSoftmaxScores) {
  // Softmax through the CPU path's own pieces, checked against the per-expert
  // bound the comparator derives.
  std::mt19937_64 rng(testing::test_seed() + 2);
  std::normal_distribution<float> normal(0.0f, 6.0f);
  const int E = 256;
  double worst = 0;
  for (int row = 0; row < 300; ++row) {
    std::vector<float> g(E), bias(E, 0.0f);
    for (float& v : g) v = normal(rng);
    RoutingParams in;
    in.logits = g.data();
    in.num_tokens = 1;
    in.num_experts = E;
    in.logits_row_stride = E;
    in.bias = bias.data();
    in.topk = 1;
    in.normalization = Normalization::kSoftmax;
    in.multiplier = 0.17677669529663687;
    const auto d = reference::RoutingReference(in).token(0);
    const auto tol = harness::derive_tolerance(d, in);

    const float m32 = static_cast<float>(*in.multiplier);
    std::vector<float> e32(E);
    float mx = -INFINITY;
    for (int e = 0; e < E; ++e) mx = std::max(mx, m32 * g[e]);
    std::uint64_t fixed = 0;
    for (int e = 0; e < E; ++e) fixed += rm::softmax_term_fixed(e32[e] = rm::exp_f32(m32 * g[e] - mx));
    const float sum = rm::softmax_sum_from_fixed(fixed);
    for (int e = 0; e < E; ++e) {
      const double err = std::fabs(static_cast<double>(e32[e] / sum) - d.p[e]);
      const double bound = tol.score_rel[e] * d.p[e] + harness::kScoreFloor;
      ASSERT_LE(err, bound) << "row " << row << " expert " << e;
      worst = std::max(worst, err / bound);
    }
  }
  EXPECT_GT(worst, 0.02);
}

TEST(Tolerance, FixedPointSoftmaxSumIsOrderIndependent) {
  std::mt19937_64 rng(testing::test_seed() + 3);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  std::vector<float> terms(4096);
  for (float& t : terms) t = unit(rng) * unit(rng) * unit(rng);
  std::uint64_t forward = 0, backward = 0;
  for (float t : terms) forward += rm::softmax_term_fixed(t);
  for (auto it = terms.rbegin(); it != terms.rend(); ++it) backward += rm::softmax_term_fixed(*it);
  EXPECT_EQ(forward, backward);
  double exact = 0;
  for (float t : terms) exact += t;
  EXPECT_NEAR(rm::softmax_sum_from_fixed(forward), exact, exact * 0x1p-23);
}

TEST(Tolerance, UnresolvableDenominatorIsFlagged) {
  // Every selected sigmoid score underflows fp32: x = -120.
  std::vector<float> g = {-120.0f, -121.0f}, bias = {0.0f, 0.0f};
  RoutingParams in;
  in.logits = g.data();
  in.num_tokens = 1;
  in.num_experts = 2;
  in.logits_row_stride = 2;
  in.bias = bias.data();
  in.topk = 2;
  const auto d = reference::RoutingReference(in).token(0);
  const auto tol = harness::derive_tolerance(d, in);
  const auto b = harness::weight_bound(d, tol, d.ids, d.weights, in);
  EXPECT_FALSE(b.resolvable);
}

}  // namespace
}  // namespace musespark

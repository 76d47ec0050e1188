// A CPU model of the CUDA kernel's filter path (impl/cuda/routing_filter_path.cuh):
// its margin argument, checked against adversarial estimates. Each row
// holds exact selection inputs q (ties, near ties, NaN, infinities) and
// estimates qa that differ from q by up to the bound d the header derives
// (|qa - q| <= d: 2^-19 (1 + B) for softmax, 1.5 * 2^-12 + 2^-23 (1 + B)
// for sigmoid, B the largest |bias|), chosen to mislead: the
// model then takes tau from the lanes' maxima of qa as the kernel does,
// keeps the experts with qa >= tau - filter margin (computed in fp32 as the
// kernel computes it), and ranks them by exact keys. Whatever row it keeps
// at most 32 candidates for must give the exact top k; the rest go to the
// kernel's exact selection. The GPU tests check the kernel itself, and the
// device test checks the hardware estimates against d; this one checks the
// step between them, in CI, where no GPU runs.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <vector>

#include "musespark/routing_math.h"
#include "selection_model_support.h"

namespace musespark {
namespace {

namespace rm = routing_math;
constexpr int kLanes = 32;
constexpr int kVec = 4;              // the fp32 vector width of the filter tiers
constexpr int kMaxCandidates = 32;   // kFilterCandidates

// The kernel's margin (estimate_margin, routing_lane_scores.cuh), in fp32.
float filter_margin(bool softmax, float max_abs_bias) {
  return (softmax ? rm::kSoftmaxEstimateMarginFactor : rm::kSigmoidEstimateMarginFactor) * (1.0f + max_abs_bias);
}

// The bound on |qa - q| that the margin covers (the header's derivation).
double estimate_bound(bool softmax, float max_abs_bias) {
  if (softmax) return std::ldexp(1.0, -19) * (1.0 + max_abs_bias);
  return static_cast<double>(rm::kSigmoidEstimateMaxError) + std::ldexp(1.0, -23) * (1.0 + max_abs_bias);
}

struct Row {
  bool softmax;            // which estimate's bound and margin
  int experts_per_lane;    // P; E = 32 * P
  int k;
  float max_abs_bias;      // B
  std::vector<float> q;    // exact selection inputs
  std::vector<int> skew;   // per expert, the estimate's error in units of d / 4: -4..4
};

int expert_of(int P, int lane, int i) {
  const int v = P % kVec == 0 ? kVec : 2;  // E = 64: two per vector
  return ((i / v) * kLanes + lane) * v + i % v;
}

// qa: q moved by skew * d / 4, kept within d after rounding to fp32; NaN
// and infinities as they are (the estimates keep both).
float estimate(float q, int skew, double d) {
  if (!std::isfinite(q)) return q;
  float qa = static_cast<float>(static_cast<double>(q) + skew * d / 4.0);
  while (std::fabs(static_cast<double>(qa) - q) > d) qa = std::nextafter(qa, q);
  return qa;
}

struct ModelResult {
  bool kept;              // false: more than 32 candidates (exact selection in the kernel)
  int candidates;
  std::vector<int> ids;   // slot order, when kept
};

ModelResult filter_model(const Row& row) {
  const int P = row.experts_per_lane, E = kLanes * P, k = row.k;
  const double d = estimate_bound(row.softmax, row.max_abs_bias);
  std::vector<float> qa(static_cast<std::size_t>(E));
  for (int e = 0; e < E; ++e) qa[e] = estimate(row.q[e], row.skew[e], d);

  std::array<std::uint32_t, kLanes> v{};
  for (int l = 0; l < kLanes; ++l) {
    float m = qa[expert_of(P, l, 0)];
    for (int i = 1; i < P; ++i) m = std::fmax(m, qa[expert_of(P, l, i)]);  // fmaxf drops NaN
    v[l] = rm::ordered_score(m);
  }
  std::uint32_t tau_ord = 0;
  for (int r = 0; r < k; ++r) {
    const std::uint32_t m = *std::max_element(v.begin(), v.end());
    tau_ord = m;
    for (std::uint32_t& x : v) x = x == m ? 0u : x;
  }
  const float keep_from =
      tau_ord == 0 ? -INFINITY : rm::score_from_ordered(tau_ord) - filter_margin(row.softmax, row.max_abs_bias);
  std::vector<std::uint64_t> keys;
  for (int e = 0; e < E; ++e)
    if (!(qa[e] < keep_from)) keys.push_back(rm::selection_key(row.q[e], static_cast<std::uint32_t>(e)));
  const int n = static_cast<int>(keys.size());
  if (n > kMaxCandidates) return {false, n, {}};
  if (n < k) return {true, n, {}};  // never: the caller's assertion reports it
  std::sort(keys.begin(), keys.end(), std::greater<>());
  std::vector<int> ids;
  for (int j = 0; j < k; ++j) ids.push_back(static_cast<int>(rm::key_expert(keys[j])));
  return {true, n, ids};
}

std::vector<int> exact_top_k(const Row& row) {
  return testing::exact_top_k(row.q, static_cast<int>(row.q.size()), row.k);
}

// Values: a pool of ties, clusters of near ties a few ulps to a few d
// apart (the estimates can reorder them), and the special values.
rc::Gen<float> gen_q() {
  return rc::gen::weightedOneOf<float>({
      {6, rc::gen::map(rc::gen::inRange(-20, 21), [](int i) { return 0.05f * static_cast<float>(i); })},
      {6, rc::gen::map(rc::gen::inRange(0, 64), [](int i) { return 0.5f + static_cast<float>(i) * 0x1p-21f; })},
      {3, rc::gen::map(rc::gen::inRange(0, 64), [](int i) { return 0.5f + static_cast<float>(i) * 0x1p-13f; })},
      {3, rc::gen::map(rc::gen::inRange(0, 1 << 20), [](int i) { return static_cast<float>(i) * 1e-6f; })},
      {1, rc::gen::element(std::numeric_limits<float>::quiet_NaN(), INFINITY, -INFINITY, 0.0f, -0.0f)},
  });
}

rc::Gen<Row> gen_row() {
  return rc::gen::mapcat(rc::gen::element(2, 4, 8, 12, 16), [](int P) {
    const int E = kLanes * P;
    return rc::gen::build<Row>(
        rc::gen::set(&Row::softmax), rc::gen::set(&Row::experts_per_lane, rc::gen::just(P)), rc::gen::set(&Row::k, rc::gen::inRange(1, 9)),
        rc::gen::set(&Row::max_abs_bias, rc::gen::element(0.0f, 0.01f, 1.0f, 3.5f)),
        rc::gen::set(&Row::q, rc::gen::container<std::vector<float>>(E, gen_q())),
        rc::gen::set(&Row::skew, rc::gen::container<std::vector<int>>(
                                     E, rc::gen::weightedOneOf<int>({{3, rc::gen::element(-4, 4)},
                                                                     {1, rc::gen::inRange(-4, 5)}}))));
  });
}

RC_GTEST_PROP(FilterSelectionModel, KeptRowsHoldTheExactTopK, ()) {
  const Row row = *gen_row();
  const ModelResult got = filter_model(row);
  RC_CLASSIFY(got.kept, "kept (ranked in phase B)");
  RC_CLASSIFY(!got.kept, "more than 32 candidates (exact selection)");
  RC_TAG(row.experts_per_lane, row.softmax ? "softmax" : "sigmoid");
  if (!got.kept) return;
  RC_ASSERT(got.candidates >= row.k);
  RC_ASSERT(got.ids == exact_top_k(row));
}

// Near ties closer than the estimates' error, the estimates skewed to
// reverse them: the margin must keep the true k-th expert although its
// estimate ranks below k others.
TEST(FilterSelectionModel, ReversedNearTiesAtTheThreshold) {
  for (bool softmax : {false, true})
    for (int P : {2, 8, 16})
      for (int k = 1; k <= 8; ++k) {
        Row row{softmax, P, k, 1.0f, std::vector<float>(static_cast<std::size_t>(kLanes * P), -1.0f),
                std::vector<int>(static_cast<std::size_t>(kLanes * P), 0)};
        // k + 4 experts within 2^-20 of each other, each in its own lane; the
        // higher the true q, the lower its estimate.
        for (int j = 0; j < k + 4; ++j) {
          const int e = expert_of(P, j, 0);
          row.q[e] = 0.75f + static_cast<float>(j) * 0x1p-23f;
          row.skew[e] = j < (k + 4) / 2 ? 4 : -4;
        }
        const ModelResult got = filter_model(row);
        ASSERT_TRUE(got.kept) << "softmax=" << softmax << " P=" << P << " k=" << k;
        ASSERT_EQ(got.ids, exact_top_k(row)) << "softmax=" << softmax << " P=" << P << " k=" << k;
      }
}

// Rows of distinct random scores keep few candidates, as the kernel's cost
// argument assumes (more than 32 would send them to the exact selection).
TEST(FilterSelectionModel, DistinctRowsKeepFewCandidates) {
  std::uint32_t h = 2463534242u;
  auto next = [&] {
    h ^= h << 13, h ^= h >> 17, h ^= h << 5;
    return static_cast<float>(h) * 2.3283064e-10f;
  };
  for (bool softmax : {false, true})
    for (int P : {2, 8, 16}) {
      long total = 0;
      const int rows = 500;
      for (int t = 0; t < rows; ++t) {
        Row row{softmax, P, 8, 1.0f, {}, std::vector<int>(static_cast<std::size_t>(kLanes * P), 4)};
        for (int e = 0; e < kLanes * P; ++e) row.q.push_back(next());
        const ModelResult got = filter_model(row);
        ASSERT_TRUE(got.kept);
        ASSERT_EQ(got.ids, exact_top_k(row));
        total += got.candidates;
      }
      const double mean = static_cast<double>(total) / rows;
      std::printf("%s P=%d: %.2f candidates per row\n", softmax ? "softmax" : "sigmoid", P, mean);
      EXPECT_LT(mean, 20.0) << "mean candidates per row at P=" << P;
    }
}

}  // namespace
}  // namespace musespark

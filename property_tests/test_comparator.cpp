// The comparator must reject each kind of wrong output. Each test plants one
// defect into an otherwise correct output and checks it is reported, with
// its kind and coordinates.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>

#include "harness/comparator.h"
#include "harness/implementations.h"
#include "reference/routing_reference.h"
#include "test_support.h"

namespace musespark {
namespace {

using harness::MismatchKind;

harness::CaseConfig base_config() {
  harness::CaseConfig c;
  c.tokens = 16;
  c.experts = 32;
  c.topk = 4;
  c.eps = 0.5;
  c.route_scale = 2.5;
  c.padding = harness::PaddingMode::kSparse;
  c.extra_rows = 2;
  c.extra_cols = 3;
  c.seed = 7;
  return c;
}

struct Planted {
  harness::RoutingCase c;
  harness::RoutingOutput out;
  explicit Planted(harness::CaseConfig cfg = base_config())
      : c(cfg), out(harness::make_cpu_implementation()->run(c)) {}
  std::int64_t at(std::int64_t t, std::int64_t j) const { return t * c.dest_cols() + j; }
  std::int64_t first_row(bool padded) const {
    const auto p = c.host_params();
    for (std::int64_t t = 0; t < c.config().tokens; ++t)
      if ((p.is_padding && p.is_padding[t * p.padding_stride]) == padded) return t;
    return -1;
  }
  harness::ComparisonReport judge() const { return harness::compare_output(c, out); }
};

void expect_caught(const harness::ComparisonReport& r, MismatchKind kind, std::int64_t row) {
  ASSERT_FALSE(r.ok()) << "planted defect not caught";
  bool found = false;
  for (const auto& m : r.first_mismatches) found |= m.kind == kind && m.row == row;
  EXPECT_TRUE(found) << "expected a " << harness::mismatch_kind_name(kind) << " at row " << row << "\n" << r.format();
}

TEST(Comparator, AcceptsTheCorrectOutput) { EXPECT_TRUE(testing::Passes(Planted().judge())); }

TEST(Comparator, RejectsWrongSet) {
  Planted p;
  const std::int64_t t = p.first_row(false);
  const auto d = reference::RoutingReference(p.c.host_params()).token(t);
  p.out.ids[p.at(t, 3)] = d.ranking.back();  // the worst expert instead of the 4th best
  expect_caught(p.judge(), MismatchKind::kWrongSelection, t);
}

TEST(Comparator, RejectsWrongOrder) {
  Planted p;
  const std::int64_t t = p.first_row(false);
  std::swap(p.out.ids[p.at(t, 0)], p.out.ids[p.at(t, 3)]);
  std::swap(p.out.weights[p.at(t, 0)], p.out.weights[p.at(t, 3)]);
  expect_caught(p.judge(), MismatchKind::kWrongSelection, t);
}

TEST(Comparator, RejectsWeightsFromBiasedScores) {
  Planted p;
  const reference::RoutingReference ref(p.c.host_params());
  const std::int64_t t = p.first_row(false);
  const auto d = ref.token(t);
  double sum = 0;
  for (auto e : d.ids) sum += d.q[e];
  for (int j = 0; j < 4; ++j)
    p.out.weights[p.at(t, j)] = static_cast<float>(2.5 * d.q[d.ids[j]] / (sum + 0.5));
  expect_caught(p.judge(), MismatchKind::kWeightValue, t);
}

TEST(Comparator, RejectsMissingEps) {
  Planted p;
  const reference::RoutingReference ref(p.c.host_params());
  const std::int64_t t = p.first_row(false);
  const auto d = ref.token(t);
  double sum = 0;
  for (auto e : d.ids) sum += d.p[e];
  for (int j = 0; j < 4; ++j) p.out.weights[p.at(t, j)] = static_cast<float>(2.5 * d.p[d.ids[j]] / sum);
  expect_caught(p.judge(), MismatchKind::kWeightValue, t);
}

TEST(Comparator, RejectsAnIgnoredPaddingMask) {
  Planted p;
  const std::int64_t t = p.first_row(true);
  ASSERT_GE(t, 0);
  for (int j = 0; j < 4; ++j) {
    p.out.ids[p.at(t, j)] = j;
    p.out.weights[p.at(t, j)] = 0.25f;
  }
  expect_caught(p.judge(), MismatchKind::kPadding, t);
}

TEST(Comparator, RejectsAWriteOutsideTheWindow) {
  Planted p;
  p.out.weights[p.at(2, 4)] = 0.0f;  // column k of row 2
  expect_caught(p.judge(), MismatchKind::kOutsideWindow, 2);
  Planted q;
  q.out.ids[q.at(16, 0)] = 3;  // row T
  expect_caught(q.judge(), MismatchKind::kOutsideWindow, 16);
}

TEST(Comparator, RejectsAnUnwrittenElement) {
  Planted p;
  std::uint32_t poison = harness::kPoisonWeightBits;
  std::memcpy(&p.out.weights[p.at(5, 1)], &poison, 4);
  expect_caught(p.judge(), MismatchKind::kNotWritten, 5);
}

TEST(Comparator, RejectsDuplicateAndOutOfRangeIds) {
  Planted p;
  const std::int64_t t = p.first_row(false);
  p.out.ids[p.at(t, 1)] = p.out.ids[p.at(t, 0)];
  expect_caught(p.judge(), MismatchKind::kDuplicateId, t);
  Planted q;
  q.out.ids[q.at(t, 2)] = 32;
  expect_caught(q.judge(), MismatchKind::kIdOutOfRange, t);
}

TEST(Comparator, RejectsExactTiesBrokenTowardTheHigherIndex) {
  harness::CaseConfig cfg = base_config();
  cfg.padding = harness::PaddingMode::kNone;
  Planted p(cfg);
  // Row 0: experts 3 and 9 get identical, winning inputs.
  p.c.set_logit(0, 3, 6.0f);
  p.c.set_logit(0, 9, 6.0f);
  p.c.set_bias(3, 1.0f);
  p.c.set_bias(9, 1.0f);
  p.out = harness::make_cpu_implementation()->run(p.c);
  ASSERT_TRUE(testing::Passes(p.judge()));
  ASSERT_EQ(p.out.ids[p.at(0, 0)], 3);
  std::swap(p.out.ids[p.at(0, 0)], p.out.ids[p.at(0, 1)]);
  expect_caught(p.judge(), MismatchKind::kExactTieOrder, 0);
}

TEST(Comparator, RejectsAFiniteWeightWhereTheReferenceIsNaN) {
  harness::CaseConfig cfg = base_config();
  cfg.padding = harness::PaddingMode::kNone;
  cfg.eps.reset();
  Planted p(cfg);
  for (std::int64_t e = 0; e < 32; ++e) p.c.set_logit(1, e, -INFINITY);  // zero sum, no eps: NaN
  p.out = harness::make_cpu_implementation()->run(p.c);
  ASSERT_TRUE(testing::Passes(p.judge()));
  p.out.weights[p.at(1, 0)] = 0.0f;
  expect_caught(p.judge(), MismatchKind::kWeightClass, 1);
}

TEST(Comparator, ReportsCoordinatesGotWantAndMargin) {
  Planted p;
  const std::int64_t t = p.first_row(false);
  const auto d = reference::RoutingReference(p.c.host_params()).token(t);
  p.out.ids[p.at(t, 3)] = d.ranking.back();
  const std::string text = p.judge().format();
  EXPECT_NE(text.find("[row " + std::to_string(t) + ", slot 3] wrong-selection"), std::string::npos) << text;
  EXPECT_NE(text.find("ranks higher by"), std::string::npos) << text;
  EXPECT_NE(text.find("> tolerance"), std::string::npos) << text;
}

}  // namespace
}  // namespace musespark

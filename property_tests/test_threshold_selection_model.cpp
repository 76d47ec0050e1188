// A lane-by-lane CPU model of the CUDA kernel's threshold selection
// (impl/cuda/routing_threshold_select.cuh): the same register layout, tau
// rounds, candidate test, fast-path condition and ranking, run on rows full
// of ties, NaN, infinities and signed zeros. Whatever the model takes must be
// the exact top-k by the 64-bit key order; what it refuses goes to the round
// selection in the kernel. The GPU tests check the kernel itself bit for bit
// against the round selection; this one checks the algorithm's argument on
// the CPU, in CI, where no GPU runs.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "musespark/routing_math.h"
#include "selection_model_support.h"

namespace musespark {
namespace {

namespace rm = routing_math;
constexpr int kLanes = 32;
constexpr int kVec = 4;  // the fp32 vector width of the register tiers

struct Row {
  int experts_per_lane;  // P: 8 or 16
  int k;
  std::vector<float> q;  // [32 * P], NaN past E
  int num_experts;
};

int expert_of(int lane, int i) { return ((i / kVec) * kLanes + lane) * kVec + i % kVec; }

enum class Path { kFast, kRanked, kRefused };

struct ModelResult {
  Path path;
  std::vector<int> ids;  // slot order
};

// Mirrors threshold_select: returns the slots, or kRefused where the kernel
// falls back to rounds.
ModelResult threshold_model(const Row& row) {
  const int P = row.experts_per_lane, k = row.k;
  auto q_at = [&](int lane, int i) {
    const int e = expert_of(lane, i);
    return e < row.num_experts ? row.q[e] : std::numeric_limits<float>::quiet_NaN();
  };
  std::array<float, kLanes> lane_max{};
  std::array<std::uint32_t, kLanes> v{};
  for (int l = 0; l < kLanes; ++l) {
    float m = q_at(l, 0);
    for (int i = 1; i < P; ++i) m = std::fmax(m, q_at(l, i));  // fmaxf drops NaN
    lane_max[l] = m;
    v[l] = rm::ordered_score(m);
  }
  std::uint32_t tau_ord = 0;
  std::array<int, kLanes> round_of{};
  round_of.fill(-1);
  for (int r = 0; r < k; ++r) {
    const std::uint32_t m = *std::max_element(v.begin(), v.end());
    tau_ord = m;
    for (int l = 0; l < kLanes; ++l) {
      if (v[l] == m && m != 0) round_of[l] = r;
      if (v[l] == m) v[l] = 0;
    }
  }
  const float tau = tau_ord == 0 ? -INFINITY : rm::score_from_ordered(tau_ord);
  struct Candidate {
    float q;
    int expert;
  };
  std::vector<Candidate> cand;
  for (int l = 0; l < kLanes; ++l)
    for (int i = 0; i < P; ++i)
      if (q_at(l, i) >= tau) cand.push_back({q_at(l, i), expert_of(l, i)});
  const int n = static_cast<int>(cand.size());
  if (n < k || n > 32) return {Path::kRefused, {}};

  const int lanes_taken = static_cast<int>(std::count_if(round_of.begin(), round_of.end(), [](int r) { return r >= 0; }));
  std::vector<int> slot(k, -1);
  if (tau_ord != 0 && n == k && lanes_taken == k) {
    for (int l = 0; l < kLanes; ++l) {
      if (round_of[l] < 0) continue;
      int idx = 0;
      for (int i = P - 1; i >= 0; --i) idx = q_at(l, i) == lane_max[l] ? i : idx;
      slot.at(round_of[l]) = expert_of(l, idx);
    }
    return {Path::kFast, slot};
  }
  for (const Candidate& me : cand) {
    int rank = 0;
    for (const Candidate& o : cand) rank += (o.q > me.q || (o.q == me.q && o.expert < me.expert)) ? 1 : 0;
    if (rank < k) slot.at(rank) = me.expert;
  }
  return {Path::kRanked, slot};
}

std::vector<int> exact_top_k(const Row& row) {
  return testing::exact_top_k(row.q, row.num_experts, row.k);
}

// Three kinds of row: values from a small pool (many ties) with the special
// values sprinkled in; distinct values (the common case, the fast path);
// and rows that are NaN but for a few pool values (rounds that run out of
// lanes, exactly k candidates with ties among them).
rc::Gen<float> gen_pool_q() {
  return rc::gen::weightedOneOf<float>({
      {9, rc::gen::map(rc::gen::inRange(-40, 41), [](int i) { return 0.05f * static_cast<float>(i); })},
      {1, rc::gen::element(std::numeric_limits<float>::quiet_NaN(), INFINITY, -INFINITY, 0.0f, -0.0f)},
  });
}
rc::Gen<float> gen_distinct_q() {
  return rc::gen::map(rc::gen::inRange(0, 1 << 24), [](int i) { return static_cast<float>(i) * 1e-6f; });
}
rc::Gen<float> gen_sparse_q() {
  return rc::gen::weightedOneOf<float>({{20, rc::gen::just(std::numeric_limits<float>::quiet_NaN())},
                                        {1, gen_pool_q()}});
}

rc::Gen<Row> gen_row() {
  return rc::gen::mapcat(rc::gen::pair(rc::gen::element(8, 16), rc::gen::inRange(0, 3)), [](std::pair<int, int> pm) {
    const auto [P, mode] = pm;
    const int lo = P == 8 ? 129 : 257, hi = 32 * P;
    return rc::gen::mapcat(rc::gen::inRange(lo, hi + 1), [P, mode](int E) {
      const rc::Gen<float> value = mode == 0 ? gen_pool_q() : mode == 1 ? gen_distinct_q() : gen_sparse_q();
      return rc::gen::build<Row>(rc::gen::set(&Row::experts_per_lane, rc::gen::just(P)),
                                 rc::gen::set(&Row::k, rc::gen::inRange(1, 33)),
                                 rc::gen::set(&Row::q, rc::gen::container<std::vector<float>>(E, value)),
                                 rc::gen::set(&Row::num_experts, rc::gen::just(E)));
    });
  });
}

RC_GTEST_PROP(ThresholdSelectionModel, TakenRowsAreTheExactTopK, ()) {
  const Row row = *gen_row();
  const ModelResult got = threshold_model(row);
  RC_CLASSIFY(got.path == Path::kFast, "fast path");
  RC_CLASSIFY(got.path == Path::kRanked, "ranked");
  RC_CLASSIFY(got.path == Path::kRefused, "refused (rounds)");
  if (got.path == Path::kRefused) return;
  RC_ASSERT(got.ids == exact_top_k(row));
}

// Exactly k non-NaN experts, one per lane, two of them equal: the tau
// rounds take the tied pair together and run out of lanes (tau is -inf),
// while exactly k experts reach tau and k lanes were taken. Not a fast-path
// row (two lanes share a round); the condition must see that.
TEST(ThresholdSelectionModel, TiedLaneMaximaWithExactlyKExperts) {
  for (int P : {8, 16})
    for (int k = 2; k <= 32; ++k) {
      Row row{P, k, std::vector<float>(static_cast<std::size_t>(32 * P), std::numeric_limits<float>::quiet_NaN()),
              32 * P};
      for (int j = 0; j < k; ++j) row.q[static_cast<std::size_t>(j * kVec)] = 1.0f + 0.25f * static_cast<float>(j);
      row.q[kVec] = row.q[0];  // lanes 0 and 1 tie
      const ModelResult got = threshold_model(row);
      ASSERT_NE(got.path, Path::kFast) << "P=" << P << " k=" << k;
      if (got.path != Path::kRefused) ASSERT_EQ(got.ids, exact_top_k(row)) << "P=" << P << " k=" << k;
    }
}

// Random rows without ties take the fast path often, as the kernel's cost
// argument assumes; the property above alone could pass with none taken.
TEST(ThresholdSelectionModel, DistinctRowsOftenTakeTheFastPath) {
  std::uint32_t h = 12345;
  auto next = [&] {
    h ^= h << 13, h ^= h >> 17, h ^= h << 5;
    return static_cast<float>(h) * 2.3283064e-10f;
  };
  int fast = 0, rows = 0;
  for (int t = 0; t < 2000; ++t, ++rows) {
    Row row{8, 8, {}, 256};
    for (int e = 0; e < 256; ++e) row.q.push_back(next());
    const ModelResult got = threshold_model(row);
    ASSERT_NE(got.path, Path::kRefused);
    ASSERT_EQ(got.ids, exact_top_k(row));
    fast += got.path == Path::kFast ? 1 : 0;
  }
  EXPECT_GT(fast, rows / 4) << fast << " of " << rows << " rows took the fast path";
}

}  // namespace
}  // namespace musespark

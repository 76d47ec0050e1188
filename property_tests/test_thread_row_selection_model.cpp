// A lane-by-lane CPU model of the CUDA kernel's row-per-thread selection
// (impl/cuda/routing_thread_row_path.cuh) with one, two or four lanes per
// row: the 16 bucket maxima, tau, the 16-bit key halves that list the
// candidates, each lane's sorted list of K and the merge of the lanes'
// lists, run on rows full of ties, NaN, infinities and keys that share their
// high halves. The result must be the exact top-k by the 64-bit key order.
// The GPU tests check the kernel itself bit for bit against the register
// path; this one checks the algorithm's argument on the CPU, in CI.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "musespark/routing_math.h"
#include "sorted_top_keys.h"
#include "selection_model_support.h"

namespace musespark {
namespace {

namespace rm = routing_math;
constexpr int kChunk = 16;       // experts per lane and step, and buckets
constexpr int kCandidates = 32;  // the kernel's per-lane list

struct Row {
  int lanes;             // G: 1, 2 or 4
  int k;                 // 1..8
  std::vector<float> q;  // E = q.size(), a multiple of 16 * G
  // Step 1's key bounds (the kernel's KeyBounds), as distances below and
  // above each expert's exact key; empty: the exact key both ways.
  std::vector<std::uint32_t> below, above;
};

void showValue(const Row& r, std::ostream& os) {
  os << "G=" << r.lanes << " k=" << r.k << " E=" << r.q.size() << " q=[";
  for (float v : r.q) os << v << " ";
  os << "]";
}

struct ModelResult {
  std::vector<int> ids;  // slot order
  bool tau_zero = false;
  bool list_overflow = false;    // some lane listed more than the kernel's list holds
  bool owners_consistent = true; // each winner sat in the lane its chunk index names
};

struct LaneList {  // insert_candidate's list: descending (ord + 1), then index
  std::vector<std::uint32_t> ord;
  std::vector<int> expert;
};

// Inserts in increasing index order, so a strict compare on ord is the key
// order (as the kernel's insert_candidate).
void insert(LaneList& list, int K, std::uint32_t ord, int e) {
  std::size_t pos = 0;
  while (pos < list.ord.size() && list.ord[pos] >= ord) ++pos;
  if (static_cast<int>(pos) >= K) return;
  list.ord.insert(list.ord.begin() + static_cast<std::ptrdiff_t>(pos), ord);
  list.expert.insert(list.expert.begin() + static_cast<std::ptrdiff_t>(pos), e);
  if (static_cast<int>(list.ord.size()) > K) list.ord.pop_back(), list.expert.pop_back();
}

// The k-th largest of the 16 bucket maxima as the kernel takes it
// (impl/cuda/sorted_top_keys.h, its list of K).
template <int K>
std::uint32_t kth_largest(const std::uint32_t (&bucket)[kChunk], int k) {
  std::uint32_t top[K];
  cuda::sorted_top_keys<K>(bucket, top);
  return top[k - 1];
}

ModelResult thread_row_model(const Row& row) {
  const int E = static_cast<int>(row.q.size()), G = row.lanes, k = row.k;
  const int K = k == 1 ? 1 : k <= 4 ? 4 : 8;
  std::vector<std::uint32_t> key(static_cast<std::size_t>(E)), key_lo(key.size()), key_hi(key.size());
  for (int e = 0; e < E; ++e) {
    key[e] = rm::ordered_score(row.q[e]);
    // lo stays NaN (key 0) only for a NaN q and never falls to 0 otherwise;
    // hi of a NaN q is whatever `above` says (the kernel's is arbitrary).
    const std::uint32_t below = row.below.empty() ? 0u : row.below[e];
    const std::uint32_t above = row.above.empty() ? 0u : row.above[e];
    key_lo[e] = key[e] == 0 ? 0u : key[e] - std::min(below, key[e] - 1u);
    key_hi[e] = key[e] == 0 ? above : key[e] + std::min(above, 0xFFFFFFFFu - key[e]);
  }

  // 1-2. bucket maxima of the lower bounds (the G lanes' combined), tau the
  // k-th largest, by the kernel's own comparator network.
  std::uint32_t bucket[kChunk] = {};
  for (int e = 0; e < E; ++e) bucket[e % kChunk] = std::max(bucket[e % kChunk], key_lo[e]);
  const std::uint32_t tau = K == 1 ? kth_largest<1>(bucket, k) : K == 4 ? kth_largest<4>(bucket, k)
                                                                        : kth_largest<8>(bucket, k);
  const std::uint32_t tau_half = tau >> 16;

  ModelResult out;
  out.tau_zero = tau == 0;
  // 3-4. each lane: its experts (chunks part, part + G, ...) in index order.
  std::vector<LaneList> lists(static_cast<std::size_t>(G));
  for (int part = 0; part < G; ++part) {
    int listed = 0;
    for (int s = 0; s * kChunk * G < E; ++s)
      for (int w = 0; w < kChunk; ++w) {
        const int e = (s * G + part) * kChunk + w;
        if ((key_hi[e] >> 16) < tau_half) continue;
        ++listed;
        insert(lists[part], K, key[e] + 1u, e);
      }
    out.list_overflow |= listed > kCandidates;
  }
  // 5. k rounds over the lanes' heads.
  for (int j = 0; j < k; ++j) {
    int best_lane = -1;
    std::uint64_t best = 0;
    for (int part = 0; part < G; ++part) {
      if (lists[part].ord.empty()) continue;
      const std::uint64_t head = (std::uint64_t{lists[part].ord[0]} << 32) |
                                 (0xFFFFFFFFu - static_cast<std::uint32_t>(lists[part].expert[0]));
      if (head > best) best = head, best_lane = part;
    }
    if (best_lane < 0) break;  // a row the kernel could not fill (none here: k <= E)
    const int e = lists[best_lane].expert[0];
    out.owners_consistent &= (e / kChunk) % G == best_lane;
    out.ids.push_back(e);
    lists[best_lane].ord.erase(lists[best_lane].ord.begin());
    lists[best_lane].expert.erase(lists[best_lane].expert.begin());
  }
  return out;
}

std::vector<int> exact_top_k(const Row& row) {
  return testing::exact_top_k(row.q, static_cast<int>(row.q.size()), row.k);
}

// Values from a small pool (ties) with specials; distinct values; NaN rows
// with a few numbers (tau = 0); values 1e-6 apart near 2 (equal 16-bit key
// halves, long candidate lists).
rc::Gen<float> gen_value(int mode) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  switch (mode) {
    case 0:
      return rc::gen::weightedOneOf<float>({
          {9, rc::gen::map(rc::gen::inRange(-40, 41), [](int i) { return 0.05f * static_cast<float>(i); })},
          {1, rc::gen::element(nan, INFINITY, -INFINITY, 0.0f, -0.0f)}});
    case 1:
      return rc::gen::map(rc::gen::inRange(0, 1 << 24), [](int i) { return static_cast<float>(i) * 1e-6f; });
    case 2:
      return rc::gen::weightedOneOf<float>({{20, rc::gen::just(nan)},
                                            {1, rc::gen::map(rc::gen::inRange(0, 8), [](int i) {
                                               return 0.5f * static_cast<float>(i);
                                             })}});
    default:
      return rc::gen::map(rc::gen::inRange(0, 64), [](int i) { return 2.0f + 1e-6f * static_cast<float>(i); });
  }
}

rc::Gen<Row> gen_row() {
  return rc::gen::mapcat(rc::gen::pair(rc::gen::element(1, 2, 4), rc::gen::inRange(0, 4)), [](std::pair<int, int> gm) {
    const auto [G, mode] = gm;
    return rc::gen::mapcat(rc::gen::inRange(1, 512 / (kChunk * G) + 1), [G, mode](int steps) {
      const int E = steps * kChunk * G;
      return rc::gen::build<Row>(rc::gen::set(&Row::lanes, rc::gen::just(G)),
                                 rc::gen::set(&Row::k, rc::gen::inRange(1, std::min(8, E) + 1)),
                                 rc::gen::set(&Row::q, rc::gen::container<std::vector<float>>(E, gen_value(mode))));
    });
  });
}

// The model's selection against the exact top-k, with the generated mix
// shown (lanes per row, tau = 0, overflowing lists).
void check_model_finds_exact_top_k(const Row& row) {
  const ModelResult got = thread_row_model(row);
  RC_TAG(row.lanes);
  RC_CLASSIFY(got.tau_zero, "tau = 0");
  RC_CLASSIFY(got.list_overflow, "a lane's list overflows");
  RC_ASSERT(got.owners_consistent);
  RC_ASSERT(got.ids == exact_top_k(row));
}

RC_GTEST_PROP(ThreadRowSelectionModel, IsTheExactTopK, ()) { check_model_finds_exact_top_k(*gen_row()); }

// Step 1 from bounds instead of exact keys (the kernel's sigmoid bounds):
// buckets of lower bounds, halves of upper bounds, up to 2^20 key steps
// away (the kernel's are about 2^8-2^17 steps at q near 1), NaN experts'
// upper bounds anywhere. Step 4's exact keys must still give the exact top-k.
RC_GTEST_PROP(ThreadRowSelectionModel, IsTheExactTopKFromKeyBounds, ()) {
  Row row = *gen_row();
  const std::size_t E = row.q.size();
  const auto distance = rc::gen::weightedOneOf<std::uint32_t>(
      {{2, rc::gen::just(0u)}, {3, rc::gen::inRange(0u, 1u << 12)}, {1, rc::gen::inRange(0u, 1u << 20)}});
  row.below = *rc::gen::container<std::vector<std::uint32_t>>(E, distance);
  row.above = *rc::gen::container<std::vector<std::uint32_t>>(E, rc::gen::weightedOneOf<std::uint32_t>(
                                                                     {{5, distance}, {1, rc::gen::arbitrary<std::uint32_t>()}}));
  check_model_finds_exact_top_k(row);
}

// The top experts all in bucket 3 (so in one lane of a row for G > 1), the
// rest far below: tau comes from the other buckets and that lane's list
// carries the whole top-k.
TEST(ThreadRowSelectionModel, TopKInOneBucketAndLane) {
  for (int G : {1, 2, 4})
    for (int k = 1; k <= 8; ++k) {
      Row row{G, k, std::vector<float>(static_cast<std::size_t>(kChunk * G * 8), -4.0f)};
      for (std::size_t e = 3; e < row.q.size(); e += kChunk) row.q[e] = 4.0f + 0.001f * static_cast<float>(e);
      const ModelResult got = thread_row_model(row);
      ASSERT_TRUE(got.owners_consistent) << "G=" << G << " k=" << k;
      ASSERT_EQ(got.ids, exact_top_k(row)) << "G=" << G << " k=" << k;
    }
}

}  // namespace
}  // namespace musespark

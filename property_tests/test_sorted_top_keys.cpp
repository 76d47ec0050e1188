// The comparator network that gives the row-per-thread path its tau (and
// step 4 of its K = 8 kernels the ranking of the first 8 candidates)
// (impl/cuda/sorted_top_keys.h), on the CPU. Every 0/1 input of 16 keys:
// by the 0-1 principle a comparator network that is right on all of them
// is right on every input; random inputs with many ties as well, against
// std::sort. Seeds: MUSESPARK_TEST_SEED pins them (test_support.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "sorted_top_keys.h"
#include "test_support.h"

namespace musespark {
namespace {

template <int N>
std::string show(const std::uint32_t (&v)[N]) {
  std::ostringstream os;
  for (int i = 0; i < N; ++i) os << (i ? " " : "") << v[i];
  return os.str();
}

// The first mismatch, with the input, or "".
template <int K, int N>
std::string check_one(const std::uint32_t (&v)[N]) {
  std::uint32_t got[K];
  cuda::sorted_top_keys<K, N>(v, got);
  std::uint32_t want[N];
  std::copy(v, v + N, want);
  std::sort(want, want + N, std::greater<>());
  for (int i = 0; i < K; ++i)
    if (got[i] != want[i]) {
      std::ostringstream os;
      os << "K=" << K << " N=" << N << " input [" << show(v) << "]: out[" << i << "] = " << got[i] << ", want "
         << want[i];
      return os.str();
    }
  return "";
}

template <int K, int N>
void check_every_binary_input() {
  static_assert(N <= 16, "2^N inputs");
  int failures = 0;
  for (std::uint32_t bits = 0; bits < (1u << N); ++bits) {
    std::uint32_t v[N];
    for (int i = 0; i < N; ++i) v[i] = (bits >> i) & 1u;
    const std::string why = check_one<K, N>(v);
    if (!why.empty() && failures++ < 5) ADD_FAILURE() << why;
  }
  EXPECT_EQ(failures, 0) << "K=" << K << " N=" << N;
}

template <int K, int N>
void check_random_inputs(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  int failures = 0;
  for (int t = 0; t < 20000; ++t) {
    // Narrow ranges give ties, the full range keys near 0 and 2^32 - 1.
    const std::uint32_t range = t % 3 == 0 ? 4u : t % 3 == 1 ? 1000u : 0xFFFFFFFFu;
    std::uniform_int_distribution<std::uint32_t> key(0u, range);
    std::uint32_t v[N];
    for (auto& x : v) x = key(rng);
    const std::string why = check_one<K, N>(v);
    if (!why.empty() && failures++ < 5) ADD_FAILURE() << why << " (seed " << seed << ")";
  }
  EXPECT_EQ(failures, 0) << "K=" << K << " N=" << N;
}

TEST(SortedTopKeys, EveryBinaryInputOf16) {
  check_every_binary_input<1, 16>();
  check_every_binary_input<2, 16>();
  check_every_binary_input<4, 16>();
  check_every_binary_input<8, 16>();
  check_every_binary_input<16, 16>();
}

TEST(SortedTopKeys, EveryBinaryInputOfOtherSizes) {
  check_every_binary_input<1, 1>();
  check_every_binary_input<1, 2>();
  check_every_binary_input<2, 2>();
  check_every_binary_input<2, 8>();
  check_every_binary_input<4, 8>();
  check_every_binary_input<8, 8>();
}

TEST(SortedTopKeys, RandomKeysWithTies) {
  const std::uint64_t seed = testing::test_seed(20261204);
  check_random_inputs<1, 16>(seed);
  check_random_inputs<4, 16>(seed + 1);
  check_random_inputs<8, 16>(seed + 2);
  check_random_inputs<16, 16>(seed + 3);
  check_random_inputs<4, 32>(seed + 4);
}

// Step 4 of the row-per-thread kernels: a lane's first N candidates (in
// increasing expert order, as step 3 lists them) ranked by the network on
// KeyedScore must give the list that inserting them one by one gives
// (insert_candidate: a strict compare on ord, so among equal ords the
// earlier, lower expert stays above), scores included, with fewer than N
// candidates (empty slots) and ords drawn from a few values (ties).
struct Inserted {
  std::vector<std::uint32_t> ord, expert;
  std::vector<float> score;
};

Inserted insert_one_by_one(const std::vector<cuda::KeyedScore>& cands, int K) {
  Inserted list{std::vector<std::uint32_t>(K, 0u), std::vector<std::uint32_t>(K, 0xFFFFFFFFu),
                std::vector<float>(K, 0.0f)};
  for (const cuda::KeyedScore& c : cands) {
    int pos = 0;
    while (pos < K && list.ord[pos] >= c.ord()) ++pos;
    if (pos == K) continue;
    list.ord.insert(list.ord.begin() + pos, c.ord()), list.ord.pop_back();
    list.expert.insert(list.expert.begin() + pos, c.expert()), list.expert.pop_back();
    list.score.insert(list.score.begin() + pos, c.score), list.score.pop_back();
  }
  return list;
}

template <int K, int N>
void check_keyed_scores_rank_as_insertion(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  int failures = 0;
  for (int t = 0; t < 20000; ++t) {
    const int n = static_cast<int>(rng() % (N + 1));
    const std::uint32_t ords = t % 2 == 0 ? 3u : 0xFFFFFFFEu;  // ties, or nearly none
    std::vector<cuda::KeyedScore> cands;
    std::uint32_t expert = 0;
    for (int i = 0; i < n; ++i) {
      expert += 1u + static_cast<std::uint32_t>(rng() % 40);  // increasing, E up to about 640
      const std::uint32_t ord = 1u + static_cast<std::uint32_t>(rng() % ords);
      cands.push_back(cuda::KeyedScore::candidate(ord, expert, static_cast<float>(rng() % 1000) / 7.0f));
    }
    cuda::KeyedScore w[N];
    for (int i = 0; i < N; ++i) w[i] = i < n ? cands[i] : cuda::KeyedScore{0u, 0.0f};
    cuda::KeyedScore top[K];
    cuda::sorted_top_keys<K>(w, top);
    const Inserted want = insert_one_by_one(cands, K);
    for (int m = 0; m < K; ++m) {
      if (top[m].ord() == want.ord[m] && top[m].expert() == want.expert[m] && top[m].score == want.score[m]) continue;
      if (failures++ < 5)
        ADD_FAILURE() << "K=" << K << " N=" << N << " n=" << n << " entry " << m << ": network (ord " << top[m].ord()
                      << ", expert " << top[m].expert() << ", score " << top[m].score << "), insertion (ord "
                      << want.ord[m] << ", expert " << want.expert[m] << ", score " << want.score[m] << ") (seed "
                      << seed << ")";
      break;
    }
  }
  EXPECT_EQ(failures, 0) << "K=" << K << " N=" << N;
}

TEST(SortedTopKeys, KeyedScoresRankAsInsertion) {
  const std::uint64_t seed = testing::test_seed(20261205);
  check_keyed_scores_rank_as_insertion<8, 8>(seed);  // the K = 8 kernels' step 4
  check_keyed_scores_rank_as_insertion<8, 16>(seed + 1);
  check_keyed_scores_rank_as_insertion<4, 4>(seed + 2);
  check_keyed_scores_rank_as_insertion<4, 8>(seed + 3);
}

}  // namespace
}  // namespace musespark

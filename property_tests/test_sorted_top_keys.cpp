// The comparator network that gives the row-per-thread path its tau
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

}  // namespace
}  // namespace musespark

// The K largest of N unsigned keys, in decreasing order, by a comparator
// network: no branch and no index known only at run time, so every value
// stays in a register. The row-per-thread path takes its tau (the k-th
// largest of 16 bucket maxima) from it.
//
// Runs of one key are merged pairwise into sorted runs of 2, 4, ... by
// bitonic merges until they hold K keys; from there each merge keeps only
// the top K of the two runs: c[i] = max(a[i], b[K - 1 - i]) holds the K
// largest of a and b, in a bitonic order that half-cleaners sort. For
// K = 8 of 16 that is 60 comparators (plus 8 maxima) against the 16 * 8
// compare-exchanges of inserting each key into a sorted list of 8.
// Host and device: property_tests/test_sorted_top_keys.cpp checks every 0/1
// input (by the 0-1 principle, every input) for each K on the CPU.
#pragma once

#include <cstdint>

#include "musespark/host_device.h"

namespace musespark::cuda {

namespace sorted_top_detail {

// Afterwards a >= b.
MS_HOST_DEVICE inline void compare_exchange(std::uint32_t& a, std::uint32_t& b) {
  const std::uint32_t hi = a > b ? a : b;
  const std::uint32_t lo = a > b ? b : a;
  a = hi;
  b = lo;
}

// Sorts w[base .. base + length) in decreasing order when it is bitonic
// (length a power of two).
template <int N>
MS_HOST_DEVICE inline void bitonic_clean(std::uint32_t (&w)[N], int base, int length) {
#pragma unroll
  for (int h = length / 2; h >= 1; h /= 2)
#pragma unroll
    for (int b = base; b < base + length; b += 2 * h)
#pragma unroll
      for (int i = 0; i < h; ++i) compare_exchange(w[b + i], w[b + i + h]);
}

}  // namespace sorted_top_detail

// out[0] >= out[1] >= ... >= out[K - 1]: the K largest of v. N and K are
// powers of two, K <= N.
template <int K, int N>
MS_HOST_DEVICE inline void sorted_top_keys(const std::uint32_t (&v)[N], std::uint32_t (&out)[K]) {
  static_assert(N > 0 && (N & (N - 1)) == 0 && K > 0 && (K & (K - 1)) == 0 && K <= N, "powers of two, K <= N");
  using sorted_top_detail::compare_exchange;
  std::uint32_t w[N];
#pragma unroll
  for (int i = 0; i < N; ++i) w[i] = v[i];
  // Sorted runs of L -> 2L while 2L <= K: the first level compares i with
  // 2L - 1 - i (run b reversed), which leaves two bitonic halves, each
  // key of the first >= every key of the second.
#pragma unroll
  for (int L = 1; 2 * L <= K; L *= 2)
#pragma unroll
    for (int r = 0; r < N; r += 2 * L) {
#pragma unroll
      for (int i = 0; i < L; ++i) compare_exchange(w[r + i], w[r + 2 * L - 1 - i]);
      if (L > 1) {
        sorted_top_detail::bitonic_clean(w, r, L);
        sorted_top_detail::bitonic_clean(w, r + L, L);
      }
    }
  // Sorted runs of K, halved in number: run r keeps the top K of runs r and
  // r + s.
#pragma unroll
  for (int s = K; s < N; s *= 2)
#pragma unroll
    for (int r = 0; r < N; r += 2 * s) {
#pragma unroll
      for (int i = 0; i < K; ++i) {
        const std::uint32_t other = w[r + s + K - 1 - i];
        w[r + i] = w[r + i] > other ? w[r + i] : other;
      }
      if (K > 1) sorted_top_detail::bitonic_clean(w, r, K);
    }
#pragma unroll
  for (int i = 0; i < K; ++i) out[i] = w[i];
}

}  // namespace musespark::cuda

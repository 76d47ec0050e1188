// The K largest of N unsigned keys, in decreasing order, by a comparator
// network: no branch and no index known only at run time, so every value
// stays in a register. The row-per-thread path takes its tau (the k-th
// largest of 16 bucket maxima) from it, and its step 4 the order of a
// lane's first K candidates (KeyedScore, below; kThreadRowNetworkInputs).
//
// Runs of one key are merged pairwise into sorted runs of 2, 4, ... by
// bitonic merges until they hold K keys; from there each merge keeps only
// the top K of the two runs: c[i] = max(a[i], b[K - 1 - i]) holds the K
// largest of a and b, in a bitonic order that half-cleaners sort. For
// K = 8 of 16 that is 60 comparators (plus 8 maxima) against about 92 for
// inserting each key into a sorted list of 8 that starts at zeros (the
// first seven insertions are shorter); in the fp32 K = 8 softmax kernel 32
// fewer SASS instructions, at K = 4 the same count.
// Host and device: property_tests/test_sorted_top_keys.cpp checks every 0/1
// input (by the 0-1 principle, every input) for each K on the CPU, and the
// row-per-thread selection model (test_thread_row_selection_model.cpp)
// takes its tau from it as the kernel does.
#pragma once

#include <cstdint>

#include "musespark/host_device.h"

namespace musespark::cuda {

namespace sorted_top_detail {

// Afterwards a >= b (VIMNMX on the GPU).
MS_HOST_DEVICE inline void compare_exchange(std::uint32_t& a, std::uint32_t& b) {
  const std::uint32_t hi = a > b ? a : b, lo = a > b ? b : a;
  a = hi;
  b = lo;
}

// a = the larger of a and b.
MS_HOST_DEVICE inline void keep_larger(std::uint32_t& a, std::uint32_t b) { a = a > b ? a : b; }

// Sorts w[B .. B + L) in decreasing order when it is bitonic (L a power of
// two). Every index is a template argument, so the keys stay in registers.
template <int B, int L, int N, typename Key>
MS_HOST_DEVICE inline void bitonic_clean(Key (&w)[N]) {
  if constexpr (L > 1) {
    constexpr int h = L / 2;
#pragma unroll
    for (int i = 0; i < h; ++i) compare_exchange(w[B + i], w[B + i + h]);
    bitonic_clean<B, h>(w);
    bitonic_clean<B + h, h>(w);
  }
}

// Sorted runs of L (each decreasing) merged pairwise into runs of 2L, runs
// from R on. The first level compares i with 2L - 1 - i (run b reversed),
// which leaves two bitonic halves, each key of the first >= every key of
// the second.
template <int R, int L, int N, typename Key>
MS_HOST_DEVICE inline void merge_runs(Key (&w)[N]) {
  if constexpr (R < N) {
#pragma unroll
    for (int i = 0; i < L; ++i) compare_exchange(w[R + i], w[R + 2 * L - 1 - i]);
    bitonic_clean<R, L>(w);
    bitonic_clean<R + L, L>(w);
    merge_runs<R + 2 * L, L>(w);
  }
}

// Sorted runs of K at R, R + 2S, ...: run R keeps the top K of runs R and
// R + S: c[i] = max(a[i], b[K - 1 - i]) holds the K largest of the two in
// bitonic order.
template <int R, int S, int K, int N, typename Key>
MS_HOST_DEVICE inline void keep_top_runs(Key (&w)[N]) {
  if constexpr (R < N) {
#pragma unroll
    for (int i = 0; i < K; ++i) keep_larger(w[R + i], w[R + S + K - 1 - i]);
    bitonic_clean<R, K>(w);
    keep_top_runs<R + 2 * S, S, K>(w);
  }
}

template <int L, int K, int N, typename Key>
MS_HOST_DEVICE inline void sort_runs_up_to(Key (&w)[N]) {
  if constexpr (2 * L <= K) {
    merge_runs<0, L>(w);
    sort_runs_up_to<2 * L, K>(w);
  }
}

template <int S, int K, int N, typename Key>
MS_HOST_DEVICE inline void halve_runs_from(Key (&w)[N]) {
  if constexpr (S < N) {
    keep_top_runs<0, S, K>(w);
    halve_runs_from<2 * S, K>(w);
  }
}

}  // namespace sorted_top_detail

// A 64-bit key carrying a score: ordered by key alone, the score moves with
// it. The row-per-thread path ranks its first candidates as (ord << 32) |
// (0xFFFFFFFF - expert), so that equal ords put the lower expert first,
// and 0 is an empty entry.
struct KeyedScore {
  std::uint64_t key;
  float score;

  // ord: the candidate's ordered key plus one (0 is no candidate).
  MS_HOST_DEVICE static KeyedScore candidate(std::uint32_t ord, std::uint32_t expert, float score) {
    return {(std::uint64_t{ord} << 32) | (0xFFFFFFFFu - expert), score};
  }
  MS_HOST_DEVICE std::uint32_t ord() const { return static_cast<std::uint32_t>(key >> 32); }
  // 0xFFFFFFFF for an empty entry, as the lists start.
  MS_HOST_DEVICE std::uint32_t expert() const { return 0xFFFFFFFFu - static_cast<std::uint32_t>(key); }
};

MS_HOST_DEVICE inline void compare_exchange(KeyedScore& a, KeyedScore& b) {
  const bool swap = b.key > a.key;
  const KeyedScore hi = swap ? b : a, lo = swap ? a : b;
  a = hi;
  b = lo;
}

MS_HOST_DEVICE inline void keep_larger(KeyedScore& a, const KeyedScore& b) { a = b.key > a.key ? b : a; }

// out[0] >= out[1] >= ... >= out[K - 1]: the K largest of v. N and K are
// powers of two, K <= N. Key: std::uint32_t, or a type with the two
// overloads above (compare_exchange, keep_larger) found by argument-
// dependent lookup, such as KeyedScore below.
template <int K, int N, typename Key>
MS_HOST_DEVICE inline void sorted_top_keys(const Key (&v)[N], Key (&out)[K]) {
  static_assert(N > 0 && (N & (N - 1)) == 0 && K > 0 && (K & (K - 1)) == 0 && K <= N, "powers of two, K <= N");
  Key w[N];
#pragma unroll
  for (int i = 0; i < N; ++i) w[i] = v[i];
  sorted_top_detail::sort_runs_up_to<1, K>(w);  // sorted runs of K
  sorted_top_detail::halve_runs_from<K, K>(w);  // the top K of all, in run 0
#pragma unroll
  for (int i = 0; i < K; ++i) out[i] = w[i];
}

}  // namespace musespark::cuda

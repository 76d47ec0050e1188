// Row-per-thread path of the router kernel, for large batches: a row is
// owned by G = 1, 2 or 4 consecutive lanes (thread_row_lanes_per_row: two
// above 128 experts, four above 256, where E is a multiple of 16 * G; else
// one; more below a wave of rows, thread_row_launch_lanes in
// routing_tier_table.cuh), E a multiple of 16 up to 512, k <= 8, logits
// contiguous along the experts and 16-byte aligned (routing_kernel.cuh, thread_row_unsupported,
// names what it needs).
//
// Why. With one warp per row (the register path) every per-row step of the
// selection (the tau rounds, the candidate ranking, the slot writes) is a
// whole-warp instruction; large batches are bound by instruction issue, and
// those steps are about two thirds of a row's instructions at E = 256
// (docs/performance_log.md). With a row per thread a per-row step costs a
// thirty-second of a warp instruction per row. Each row keeps E 16-bit keys
// in shared memory, which bounds the warps per SM; G lanes per row keep the
// same rows in flight with G times the warps, to hide a row's long
// dependent stream (measured: one lane per row loses to the register path
// from E = 256).
//
// Loads. A thread reading its own row would make every warp load touch 32
// rows (measured: 1.6-2.4x slower than the register path at E >= 256); the
// warp instead stages 16 experts per lane at a time through shared memory
// with coalesced loads, the next chunk (and its bias) already in flight.
// Lane `part` of a row takes the row's chunks part, part + G, part + 2G, ...
//
// How a row is selected, exactly:
//  1. One pass over the logits bounds q = p + b for every expert from the
//     hardware's estimates (KeyBounds below; softmax from the exact terms,
//     whose sum the same pass completes), keeps the maximum
//     order-preserving key (routing_math ordered_score, NaN lowest) of the
//     lower bounds in each of 16 buckets (bucket = expert index % 16; the G
//     lanes' maxima are combined by shuffles), and stores the high 16 bits
//     of every upper bound's key in the lane's slice of shared memory.
//  2. tau = the k-th largest bucket maximum. k buckets reach it, so at least
//     k distinct experts have key >= tau and the top-k all do. When fewer
//     than k buckets hold a number, tau is 0 and every expert qualifies.
//  3. A pass over the lane's stored high halves lists, in index order, its
//     experts with high half >= tau's: a superset of those with key >= tau.
//  4. Each listed expert's q is computed again from its logit (the same
//     arithmetic, so the same bits) and inserted into the lane's sorted list
//     of K (64-bit key order: strict compares suffice because the list is
//     visited in increasing index order). A lane with more listed experts
//     than the list in shared memory holds inserts every qualifying expert
//     from a second pass over the stored halves instead: slower, as exact.
//  5. G > 1: k rounds of a max over the G lanes' list heads (64-bit keys,
//     unique) merge the lists; every row's top-k lies in them, since each
//     expert of the top-k reaches tau and its lane keeps its best K >= k.
// The weights are the selected unbiased scores over their slot-order sum,
// as in every other path, so the bits agree with them (tested).
#pragma once

#include "routing_kernel_common.cuh"
#include "routing_register_path.cuh"  // insert_candidate
#include "sorted_top_keys.h"

namespace musespark::cuda {

constexpr int kThreadRowBlockThreads = 64;
constexpr int kThreadRowWarps = kThreadRowBlockThreads / 32;
constexpr int kThreadRowChunk = 16;       // experts per lane and step; bucket = index % 16
constexpr int kThreadRowCandidates = 32;  // per-lane list of step 3
// Step 4 ranks a lane's first kThreadRowNetworkInputs<K, G, kSoftmax>
// candidates by a comparator network (0: none) and inserts the rest one by
// one. H200, 16384-65536 rows: sigmoid k = 4 / 8 0.91-0.97x the time at
// one and two lanes per row (E = 64-256), softmax k = 8 0.99-1.00x, softmax
// k = 4 1.01-1.03x at E = 64-128 (its passes over the row weigh more than
// step 4, and a row lists about 4.5 candidates there), so not softmax at
// K = 4. At four lanes per row (E = 320) a lane lists a quarter of the
// row's candidates, too few to fill the network, and it lost (bf16 sigmoid
// k = 8 1.06x), so not there.
template <int K, int G, bool kSoftmax>
inline constexpr int kThreadRowNetworkInputs = G < 4 && (K == 8 || (K == 4 && !kSoftmax)) ? K : 0;

// Lanes per row for E experts: more lanes where a row's keys take more
// shared memory, as E allows (E % (16 * G) == 0).
inline int thread_row_lanes_per_row(int num_experts) {
  if (num_experts > 256 && num_experts % (4 * kThreadRowChunk) == 0) return 4;
  if (num_experts > 128 && num_experts % (2 * kThreadRowChunk) == 0) return 2;
  return 1;
}

// A warp's staging buffer: 16 logits per lane as 16-byte vectors, one spare
// vector per lane so that neighbouring lanes start on different banks.
template <typename T>
struct ThreadRowChunk {
  static constexpr int kVecPerLane = kThreadRowChunk * static_cast<int>(sizeof(T)) / 16;
  static constexpr int kPitch = kVecPerLane + 1;  // uint4 per lane
  static constexpr int kBytesPerWarp = 32 * kPitch * 16;
};

// Dynamic shared memory of one block: the warps' staging buffers, each
// lane's E / G 16-bit key halves (a spare 16 bytes per lane, for the banks),
// the candidate lists, thread-minor, then (kThreadRowBiasShared) the
// bias. Step 4 reads the bias of its candidates from there: from global
// memory each such load touches one line per lane of the warp.
// H200, 16384-65536 rows, this and store_slots together: k = 4-8
// 0.66-0.99x the time; K = 1 rows list one or two candidates, too few to
// pay for the copy (1.01-1.04x); the fp32 K = 4 kernel of four lanes per
// row spilled 12 bytes with the pointer (E = 320 k = 4 1.05-1.24x), so
// not there either.
template <typename T, int K, int G>
inline constexpr bool kThreadRowBiasShared = K > 1 && !(sizeof(T) == 4 && K == 4 && G == 4);

template <typename T>
std::size_t thread_row_smem_bytes(int num_experts, int lanes_per_row, bool bias_shared) {
  return static_cast<std::size_t>(kThreadRowWarps) * ThreadRowChunk<T>::kBytesPerWarp +
         static_cast<std::size_t>(kThreadRowBlockThreads) * (num_experts / lanes_per_row / 8 + 1) * 16 +
         static_cast<std::size_t>(kThreadRowCandidates) * kThreadRowBlockThreads * sizeof(std::uint16_t) +
         (bias_shared ? static_cast<std::size_t>(num_experts) * sizeof(float) : 0);
}

// Streams a warp's rows through its staging buffer. Every lane of the warp
// calls each() together (it synchronizes the warp); rows that are not live
// load nothing and see zeros.
template <typename T, int G>
struct ThreadRowStream {
  using Chunk = ThreadRowChunk<T>;
  static constexpr int kVec = Chunk::kVecPerLane;  // vectors each lane loads per step
  static constexpr int V = 16 / static_cast<int>(sizeof(T));
  uint4* buf;                  // this warp's staging buffer
  const T* src[kVec];          // this lane's j-th vector, at step 0
  bool ok[kVec];
  int slot[kVec];              // where the vector goes in buf

  // row0: the warp's first row; lane L holds row row0 + L / G.
  __device__ ThreadRowStream(const KernelParams& p, uint4* warp_buf, std::int64_t row0, bool live) : buf(warp_buf) {
    const int lane = threadIdx.x % 32;
#pragma unroll
    for (int j = 0; j < kVec; ++j) {
      const int v = lane + 32 * j;
      const int dst = v / kVec, piece = v % kVec;  // the lane the vector is for, and which of its vectors
      ok[j] = __shfl_sync(0xFFFFFFFFu, live, dst);
      src[j] = static_cast<const T*>(p.logits) + (ok[j] ? row0 + dst / G : 0) * p.logits_row_stride +
               (dst % G) * kThreadRowChunk + piece * V;
      slot[j] = dst * Chunk::kPitch + piece;
    }
  }

  // body(x, b, c): x[16] the lane's own logits c .. c + 15 of its row (its
  // next chunk) and, with kBias, b[16] their bias (prefetched with the
  // logits: a bias load used at once was the kernel's largest stall);
  // without it b is zeros.
  template <bool kBias, typename Body>
  __device__ __forceinline__ void each(int num_experts, const float* bias, Body body) {
    constexpr int kStep = kThreadRowChunk * G;  // experts of a row per step
    const int lane = threadIdx.x % 32;
    const int first = (lane % G) * kThreadRowChunk;  // the lane's chunk at step 0
    const auto* bias4 = reinterpret_cast<const float4*>(bias);
    uint4 next[kVec];
    float4 next_b[kThreadRowChunk / 4];
#pragma unroll
    for (int j = 0; j < kVec; ++j) next[j] = ok[j] ? *reinterpret_cast<const uint4*>(src[j]) : make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int u = 0; u < kThreadRowChunk / 4; ++u) {
      if constexpr (kBias) next_b[u] = bias4[first / 4 + u];
      else next_b[u] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
    for (int c0 = 0; c0 < num_experts; c0 += kStep) {
      __syncwarp();  // the lanes have read the previous chunk
#pragma unroll
      for (int j = 0; j < kVec; ++j) buf[slot[j]] = next[j];
      __syncwarp();
      float b[kThreadRowChunk];
#pragma unroll
      for (int u = 0; u < kThreadRowChunk / 4; ++u)
        b[4 * u] = next_b[u].x, b[4 * u + 1] = next_b[u].y, b[4 * u + 2] = next_b[u].z, b[4 * u + 3] = next_b[u].w;
      if (c0 + kStep < num_experts) {
#pragma unroll
        for (int j = 0; j < kVec; ++j)
          next[j] = ok[j] ? *reinterpret_cast<const uint4*>(src[j] + c0 + kStep) : make_uint4(0, 0, 0, 0);
        if constexpr (kBias) {  // G addresses per warp: G transactions
#pragma unroll
          for (int u = 0; u < kThreadRowChunk / 4; ++u) next_b[u] = bias4[(c0 + kStep + first) / 4 + u];
        }
      }
      float x[kThreadRowChunk];
#pragma unroll
      for (int u = 0; u < kVec; ++u) {
        const Vec<T, V> vec = *reinterpret_cast<const Vec<T, V>*>(buf + lane * Chunk::kPitch + u);
#pragma unroll
        for (int v = 0; v < V; ++v) x[u * V + v] = LogitTraits<T>::widen(vec.v[v]);
      }
      body(x, b, c0 + first);
    }
  }
};

// Reads the 16-bit key half i (< 8) of a stored vector.
__device__ __forceinline__ std::uint32_t key_half(const uint4& w, int i) {
  const std::uint32_t word = i / 2 == 0 ? w.x : i / 2 == 1 ? w.y : i / 2 == 2 ? w.z : w.w;
  return i % 2 == 0 ? word & 0xFFFFu : word >> 16;
}

// The expert of half i of the lane's q-th stored vector: vectors 2s and
// 2s + 1 hold the lane's chunk at step s, which starts at (s * G + part) * 16.
template <int G>
__device__ __forceinline__ int stored_expert(int q, int i, int part) {
  return ((q / 2) * G + part) * kThreadRowChunk + (q % 2) * 8 + i;
}

// Step 1's keys. The selection needs exact keys only for the experts it
// lists; step 1 needs, per expert, a lower bound `lo` of q (for the bucket
// maxima, hence tau) and an upper bound `hi_key` of q's key (for the stored
// half that lists it). With lo <= q and hi_key >= key(q), tau is at most
// the k-th largest exact key (k distinct experts have q >= lo >= tau) and
// every expert of the top-k has hi_key >= key(q) >= tau, so it is listed;
// step 4 then ranks the listed experts by exact keys.
struct KeyBounds {
  float lo;             // <= q, NaN only where q is NaN
  std::uint32_t hi_key; // >= ordered_score(q)
};

// Sigmoid bounds from the hardware's tanh estimate (rm::sigmoid_estimate:
// three instructions, one MUFU), with no division, range reduction or
// correction. It is within kSigmoidEstimateMaxError (1.5 * 2^-12) of the
// GPU's sigmoid on every float (test_cuda_routing_math), and the product
// it rounds, e = t / 2 + 1 / 2 for t = tanh.approx(x / 2), within 2^-25 of
// its rounding; kSigmoidKeyBound = d = 2^-11 leaves a factor of 1.33, and is
// still below the resolution of the 16-bit key halves that list experts (7
// fraction bits: 2^-8 on q in [0.5, 1)).
// The margin rides in the product's addend, rd(t / 2 + (1 / 2 - d)) and
// ru(t / 2 + (1 / 2 + d)) (1 / 2 - d and 1 / 2 + d are floats), one fused
// product each instead of the rounded estimate and two adds; they bound
// the score s from below and above since |e - s| < d. Then q = s + b
// (rounded to nearest) lies in [rd(lo' + b), ru(hi' + b)]: rounding is
// monotone, and the directed roundings bound the exact sums. Before b is
// added hi' >= d > 0 (t >= -1), and an exact zero sum rounds up to +0 (a
// nonzero sum of two floats is at least 2^-149 in size), so hi is never -0
// and the key's cheap form (no -0 fold) is order-preserving there. A NaN hi
// (NaN logit or bias) maps to some key: NaN experts rank below every
// number, and tau > 0 means k numbers exist, so whether one is listed never
// matters. Infinite logits give t = -1 or 1 exactly.
struct SigmoidKeyBounds {
  __device__ __forceinline__ KeyBounds operator()(float xm, float b) const {
    float lo, hi;
    rm::sigmoid_estimate_bounds(xm, rm::kSigmoidKeyBound, lo, hi);
    return {__fadd_rd(lo, b), rm::flip_sign_order(__float_as_uint(__fadd_ru(hi, b)))};
  }
  __device__ __forceinline__ void finish_pass() const {}
};

// Softmax bounds in the pass that also sums the exact terms, so that the
// row is streamed twice instead of three times: the first pass keeps,
// besides the maximum, an estimate S' of the row's sum (SoftmaxSumEstimate
// below), and step 1 takes pa = t * r with t the exact term (the one the sum
// and the share use) and r = rcp.approx(S'); finish_pass then completes the
// exact sum for step 4. Error: S' is within 2^-13 of S relative (below), r
// within 2^-22 of 1 / S', so |t r - t / S| <= (t / S) (2^-13 + 2^-21) and,
// with the share's ulp (2^-23), |t r - p| < 2^-12.9 for p = t / S <= 1;
// kBound = d = 2^-11 leaves a factor of 3.7. The bounds are two fused
// products, lo = rd(t r + rd(b - d)) and hi = ru(t r + ru(b + d)), not
// four directed adds on a rounded pa: t r + rd(b - d) <= t r - d
// + b < p + b, so lo <= rd(p + b) <= q (lo is a float), and likewise hi >=
// q. t r >= 0 and ru(b + d) is never -0 (an exact zero sum rounds up to
// +0), so hi is never -0 and the key's cheap form is order-preserving. A
// NaN row takes r = NaN, so its bounds are NaN, as its q are.
template <int G>
struct SoftmaxTermKeyBounds {
  static constexpr float kBound = 0x1p-11f;
  float row_max;
  float sum_reciprocal;   // rcp.approx(S'), NaN for a NaN row
  bool row_nan;
  rm::SoftmaxFixedSum* fixed;  // the lane's fixed-point sum of the exact terms
  float* sum;             // the row's sum, once finish_pass has run
  __device__ __forceinline__ KeyBounds operator()(float xm, float b) const {
    const float t = rm::exp_f32(xm - row_max);
    fixed->add(t);  // no NaN test: see lane_softmax_exp
    const float lo = __fmaf_rd(t, sum_reciprocal, __fsub_rd(b, kBound));
    const float hi = __fmaf_ru(t, sum_reciprocal, __fadd_ru(b, kBound));
    return {lo, rm::flip_sign_order(__float_as_uint(hi))};
  }
  // Every lane of the warp calls it (the G lanes' sums combine).
  __device__ __forceinline__ void finish_pass() const {
    const std::uint64_t row_fixed = group_sum_fixed<G>(*fixed);
    *sum = row_nan ? __int_as_float(0x7FFFFFFF) : rm::softmax_sum_from_fixed(row_fixed);
  }
};

// The first pass's estimate of a softmax row's sum, kept chunk by chunk
// with the running maximum m: S' = S' ex2a(m - m') + sum of ex2a(x - m')
// over the chunk, m' = max(m, the chunk's maximum), ex2a = the hardware's
// exp2 estimate (softmax_term_estimate). For a row without NaN, whose
// maximum M is finite, a term exp(x - M) reaches S' as a product of at
// most C + 2 estimated factors (C: chunks per lane, at most 32; one more
// for the G lanes' combine), each within 2^-21 relative plus |y| 2^-23 for
// its argument y <= 0 (the subtraction's and the log2(e) product's
// roundings), and the ys of one term sum to x - M = -u: so each term is
// within (C + 2) 2^-21 relative plus 2^-22 u e^-u <= 2^-23.4 absolute of
// exp(x - M). The exact sum's terms are within 2^-22 relative plus u
// 2^-24 of the same (expf's two ulps, x - M rounded), the fixed point
// truncates 2^-40 each, and the float sums round by at most E 2^-24
// relative. With S >= 1 and E <= 512: |S' - S| <= S (34 2^-21 + 2^-21 +
// 2^-15) + E (2^-23.4 + 2^-25.4) < S 2^-13. Rows that are all -inf so far
// take 0 as m' (their terms are 0; -inf - -inf would be NaN).
// test_cuda_softmax_sum_estimate checks the bound on adversarial rows.
struct SoftmaxSumEstimate {
  float max = -INFINITY;  // m: fmaxf drops NaN
  float max_nan = -INFINITY;  // NaN once a chunk held a NaN
  float sum = 0.0f;       // S', relative to max
  // The chunk's maximum by max.NaN alone, one instruction per logit: a
  // chunk with a NaN leaves m as it was (fmaxf drops the NaN maximum), and
  // its row is a NaN row, whose shares the NaN sum makes NaN whatever m and
  // S' come to; a row without NaN gets the same m as fmaxf's.
  template <int kN>
  __device__ __forceinline__ void add_chunk(const float (&xm)[kN]) {
    float chunk_max = -INFINITY;
#pragma unroll
    for (int i = 0; i < kN; ++i) chunk_max = fmax_keep_nan(chunk_max, xm[i]);
    max_nan = fmax_keep_nan(max_nan, chunk_max);
    const float m = fmaxf(max, chunk_max);
    const float base = m == -INFINITY ? 0.0f : m;
    static_assert(kN % 4 == 0, "four chains");
    float part[4];  // four chains, not one of kN adds; each starts at its first term (0 + t is t)
#pragma unroll
    for (int i = 0; i < kN; ++i) {
      const float t = rm::softmax_term_estimate(xm[i] - base);
      part[i % 4] = i < 4 ? t : part[i % 4] + t;
    }
    sum = fmaf(sum, rm::softmax_term_estimate(max - base), (part[0] + part[1]) + (part[2] + part[3]));
    max = m;
  }
  // The lane's S' brought to the row's maximum (the G lanes' are added).
  __device__ __forceinline__ float at_row_max(float row_max) const {
    return sum * rm::softmax_term_estimate(max - (row_max == -INFINITY ? 0.0f : row_max));
  }
};

// Steps 1-4 for the warp's rows; `score` maps a logit (multiplier applied)
// to p, `bounds` gives step 1's keys (above). Instantiated once per
// normalization, so the hot loops carry no branch on it. Every lane of the
// warp calls it (step 1 synchronizes the warp). kNetwork: how many of a
// lane's first candidates step 4 ranks by the network
// (kThreadRowNetworkInputs). On return top_* hold, for a live row, the
// lane's best K experts in key order.
template <typename T, int K, int G, int kNetwork, typename Score, typename Bounds>
__device__ __forceinline__ void thread_row_select(const KernelParams& p, ThreadRowStream<T, G>& stream,
                                                  const T* logits, const float* bias_s, bool live, Score score,
                                                  Bounds bounds, uint4* halves,
                                                  std::uint16_t* cand, std::uint32_t (&top_ord)[K],
                                                  std::uint32_t (&top_expert)[K], float (&top_score)[K]) {
  constexpr int kStep = kThreadRowChunk;
  const int E = p.num_experts;
  const int part = static_cast<int>(threadIdx.x % G);

  // ---- 1. keys: bucket maxima (of lo) and the stored high halves (of hi) --
  float bucket_lo[kStep];  // NaN: no number yet (fmaxf drops NaN operands)
#pragma unroll
  for (int i = 0; i < kStep; ++i) bucket_lo[i] = __int_as_float(0x7FFFFFFF);
  stream.template each<true>(E, p.bias, [&](const float (&x)[kStep], const float (&b)[kStep], int c) {
    std::uint32_t packed[kStep / 2];
#pragma unroll
    for (int i = 0; i < kStep; ++i) {
      const KeyBounds kb = bounds(apply_multiplier_unconditional(p, x[i]), b[i]);
      bucket_lo[i] = fmaxf(bucket_lo[i], kb.lo);
      packed[i / 2] = i % 2 == 0 ? kb.hi_key >> 16 : packed[i / 2] | (kb.hi_key & 0xFFFF0000u);
    }
    const int s = c / (kStep * G);  // the lane's step
#pragma unroll
    for (int u = 0; u < kStep / 8; ++u)
      halves[s * 2 + u] = make_uint4(packed[4 * u], packed[4 * u + 1], packed[4 * u + 2], packed[4 * u + 3]);
  });
  bounds.finish_pass();
  std::uint32_t bucket[kStep];  // the maxima's keys: 0 for a bucket of NaN only
#pragma unroll
  for (int i = 0; i < kStep; ++i) bucket[i] = rm::ordered_score(bucket_lo[i]);
  if constexpr (G > 1) {  // the row's bucket maxima, from its G lanes
#pragma unroll
    for (int i = 0; i < kStep; ++i) bucket[i] = group_max_u32<G>(bucket[i]);
  }
  if (!live) return;

  // ---- 2. tau: the k-th largest bucket maximum (a comparator network) ---
  std::uint32_t largest[K];
  sorted_top_keys<K>(bucket, largest);
  std::uint32_t tau = 0u;
#pragma unroll
  for (int m = 0; m < K; ++m) tau = m == p.topk - 1 ? largest[m] : tau;
  const std::uint32_t tau_half = tau >> 16;  // 0: every expert, NaN ones included, qualifies

  // ---- 3. the lane's experts whose stored half reaches tau's, in index order
  const int stored = E / G / 8;
  int n = 0;
  for (int q = 0; q < stored; ++q) {
    const uint4 w = halves[q];
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      if (key_half(w, i) >= tau_half) {
        if (n < kThreadRowCandidates)
          cand[n * kThreadRowBlockThreads] = static_cast<std::uint16_t>(stored_expert<G>(q, i, part));
        ++n;
      }
    }
  }

  // ---- 4. exact keys of the listed experts into a sorted list of K -------
  const auto consider = [&](int e, float x, float b) {
    const float s = score(apply_multiplier_unconditional(p, x));
    // + 1: 0 marks an empty list entry, so a NaN q (key 0) still enters.
    insert_candidate<K>(top_ord, top_expert, top_score, rm::ordered_score(s + b) + 1u, static_cast<std::uint32_t>(e), s);
  };
  if (n <= kThreadRowCandidates) {
    int first = 0;  // the first candidate the ring below ranks
    if constexpr (kNetwork > 0) {
      // The first N candidates at once: all their loads in flight together,
      // then the top K of them by tau's comparator network
      // (sorted_top_keys.h) on 64-bit keys (ord, then the lower expert): at
      // N = K = 8 a sort, 24 compare-exchanges of 8 instructions, where
      // inserting each into the list takes 8 compares and 42 selects, and a
      // warp pays that for its longest list (about 14-15 candidates at
      // E = 64-128 k = 8, where a row lists 10 on average). A slot past the
      // list loads the row's first logit (always in bounds) and enters as
      // an empty entry (key 0, score 0, as the lists start).
      constexpr int N = kNetwork;
      KeyedScore w[N];
#pragma unroll
      for (int i = 0; i < N; ++i) {
        const int e = i < n ? cand[i * kThreadRowBlockThreads] : 0;
        const float s = score(apply_multiplier_unconditional(p, LogitTraits<T>::widen(logits[e])));
        w[i] = i < n ? KeyedScore::candidate(rm::ordered_score(s + bias_s[e]) + 1u, static_cast<std::uint32_t>(e), s)
                     : KeyedScore{0u, 0.0f};
      }
      KeyedScore top[K];
      sorted_top_keys<K>(w, top);
#pragma unroll
      for (int m = 0; m < K; ++m) top_ord[m] = top[m].ord(), top_expert[m] = top[m].expert(), top_score[m] = top[m].score;
      first = N;
    }
    // The rest (all of them where kNetwork is 0): candidate i's
    // logit and bias are loaded while candidate i - 2 is ranked (two in
    // flight), through one copy of consider's code: at K = 8 unrolled
    // copies made the kernel wait on instruction fetch (ncu, E = 64 k = 8:
    // 36% of stall samples no_instruction). The loads take index 0 past the
    // list's end (the row's first logit, always in bounds), so they need no
    // test. The form before, batches of eight loads shifted down one
    // register per candidate, spent about 20 moves and a recomputed row
    // address per candidate (ncu, session 35).
    const auto load = [&](int i, int& e, float& x, float& b) {
      e = i < n ? cand[i * kThreadRowBlockThreads] : 0;
      x = LogitTraits<T>::widen(logits[e]);
      b = bias_s[e];
    };
    int e0, e1;
    float x0, b0, x1, b1;
    load(first, e0, x0, b0);
    load(first + 1, e1, x1, b1);
#pragma unroll 1
    for (int i = first; i < n; ++i) {
      consider(e0, x0, b0);
      e0 = e1, x0 = x1, b0 = b1;
      load(i + 2, e1, x1, b1);
    }
  } else {  // more than the list holds: every qualifying expert, from the stored halves
    for (int q = 0; q < stored; ++q) {
      const uint4 w = halves[q];
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const int e = stored_expert<G>(q, i, part);
        if (key_half(w, i) >= tau_half) consider(e, LogitTraits<T>::widen(logits[e]), bias_s[e]);
      }
    }
  }
}

// Step 5 (G > 1): the row's top-k from its G lanes' sorted lists, k rounds
// of a max over the list heads; every lane of the warp takes part. The
// row's lane `part` keeps slots part * S .. part * S + S - 1 (S = (K + G -
// 1) / G, slot_*[j % S]), a run that store_slots can write with one vector
// store; selected_sum is the slot-order sum of the k scores, in every lane
// of the row.
template <int K, int G>
__device__ __forceinline__ void merge_lane_lists(int k, std::uint32_t (&top_ord)[K], std::uint32_t (&top_expert)[K],
                                                 float (&top_score)[K], std::int32_t (&slot_id)[(K + G - 1) / G],
                                                 float (&slot_score)[(K + G - 1) / G], float& selected_sum) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int row_lane0 = lane & ~(G - 1);
  selected_sum = 0.0f;
#pragma unroll
  for (int j = 0; j < K; ++j) {
    if (j >= k) break;  // k is the same in every lane
    // The head's 64-bit key (routing_math selection_key order): ord + 1,
    // then the inverted index; an empty list's head is 0 and never wins.
    const std::uint32_t hi = top_ord[0], lo = 0xFFFFFFFFu - top_expert[0];
    std::uint32_t best_hi = hi, best_lo = lo;
#pragma unroll
    for (int off = 1; off < G; off *= 2) {
      const std::uint32_t other_hi = __shfl_xor_sync(0xFFFFFFFFu, best_hi, off);
      const std::uint32_t other_lo = __shfl_xor_sync(0xFFFFFFFFu, best_lo, off);
      const bool take = other_hi > best_hi || (other_hi == best_hi && other_lo > best_lo);
      best_hi = take ? other_hi : best_hi;
      best_lo = take ? other_lo : best_lo;
    }
    const std::uint32_t expert = 0xFFFFFFFFu - best_lo;
    const int owner = row_lane0 + static_cast<int>((expert / kThreadRowChunk) % G);  // the lane of its chunk
    const float score = __shfl_sync(0xFFFFFFFFu, top_score[0], owner);
    if (best_hi != 0 && hi == best_hi && lo == best_lo) {  // this lane's head won: pop it
#pragma unroll
      for (int m = 0; m + 1 < K; ++m)
        top_ord[m] = top_ord[m + 1], top_expert[m] = top_expert[m + 1], top_score[m] = top_score[m + 1];
      top_ord[K - 1] = 0u, top_expert[K - 1] = 0xFFFFFFFFu, top_score[K - 1] = 0.0f;
    }
    selected_sum += score;
    constexpr int S = (K + G - 1) / G;
    if (j / S == lane % G) slot_id[j % S] = static_cast<std::int32_t>(expert), slot_score[j % S] = score;
  }
}

// A lane's run of S output slots from slot j0 on, by store_slots: the
// weights from the scores and the row's denominator, or id -1 and weight 0
// for a padded row.
template <int S, typename Id>
__device__ __forceinline__ void store_scored_slots(const KernelParams& p, std::int64_t row, int j0, bool padded,
                                                   float denominator, const float (&score)[S], const Id (&expert)[S]) {
  float w[S];
  std::int32_t id[S];
#pragma unroll
  for (int c = 0; c < S; ++c) {
    w[c] = padded ? 0.0f : rm::routing_weight(score[c], denominator, p.route_scale);
    id[c] = padded ? -1 : static_cast<std::int32_t>(expert[c]);
  }
  store_slots<S>(p, row, j0, w, id);
}

// K: the compile-time list length, k <= K; G: lanes per row; kSoftmax: the
// normalization. Softmax streams a row twice: pass 1 the exact maximum and
// the estimated sum (SoftmaxSumEstimate), pass 2 step 1 with the exact
// terms' sum (SoftmaxTermKeyBounds). A kernel per normalization, so that
// each compiles to its own registers: H200, A/B of two rounds against
// main (b712971's kernels; 2026-12-03, T = 16384 / 65536, E = 64-320, k = 1 / 4 / 8, both
// dtypes and normalizations), with the holds of thread_row_blocks_per_sm_cap:
// row-per-thread cells 0.962x / 0.962x, 35 of 55 faster by > 3% (softmax
// 0.87-0.97x, bf16 E = 320 k = 1 54.6 -> 47.4 us; fp32 sigmoid 0.91-0.98x),
// 4 slower: bf16 sigmoid at 16384 rows E = 192 k = 1 / 4 1.10-1.14x and E =
// 320 k = 1 / 8 1.04x (the 95-96-register kernels of two or four lanes per
// row, on grids of four to eight blocks per SM). Combined, ptxas gave those
// kernels 114-128 registers, and their softmax kept three passes for it.
template <typename T, int K, int G, bool kSoftmax>
__global__ void __launch_bounds__(kThreadRowBlockThreads) route_thread_row_kernel(const KernelParams p) {
  static_assert(G == 1 || G == 2 || G == 4, "lanes per row");
  constexpr int kRowsPerWarp = 32 / G;
  constexpr int kSlots = (K + G - 1) / G;  // output slots per lane
  extern __shared__ __align__(16) unsigned char thread_row_smem[];

  pdl_trigger_early(p.trigger_first);  // the wait: before the first global read (pdl_trigger_early)

  const int E = p.num_experts;
  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32, lane = tid % 32, part = lane % G;
  uint4* const chunks = reinterpret_cast<uint4*>(thread_row_smem);
  uint4* const lane_halves = chunks + kThreadRowWarps * ThreadRowChunk<T>::kBytesPerWarp / 16;
  uint4* const halves = lane_halves + tid * (E / G / 8 + 1);
  std::uint16_t* const cand_base =
      reinterpret_cast<std::uint16_t*>(lane_halves + kThreadRowBlockThreads * (E / G / 8 + 1));
  std::uint16_t* const cand = cand_base + tid;  // entry i at cand[i * kThreadRowBlockThreads]
  const float* bias_s = p.bias;
  if constexpr (kThreadRowBiasShared<T, K, G>) {
    pdl_wait_then_trigger(p.trigger_first);  // the bias is read here, before the row loop
    float* const shared_bias = reinterpret_cast<float*>(cand_base + kThreadRowCandidates * kThreadRowBlockThreads);
    for (int e = tid; e < E; e += kThreadRowBlockThreads) shared_bias[e] = p.bias[e];
    __syncthreads();
    bias_s = shared_bias;
  }

  // Warp-uniform loop over tiles of 32 / G rows: the stream and the merge
  // need every lane.
  const std::int64_t first_row0 = (static_cast<std::int64_t>(blockIdx.x) * kThreadRowWarps + warp) * kRowsPerWarp;
  for (std::int64_t row0 = first_row0; row0 < p.num_tokens;
       row0 += static_cast<std::int64_t>(gridDim.x) * kThreadRowWarps * kRowsPerWarp) {
    if constexpr (!kThreadRowBiasShared<T, K, G>)
      if (row0 == first_row0) pdl_wait_then_trigger(p.trigger_first);
    const std::int64_t row = row0 + lane / G;
    const bool in_range = row < p.num_tokens;
    const bool padded = in_range && row_is_padded(p, row);
    const bool live = in_range && !padded;
    ThreadRowStream<T, G> stream(p, chunks + warp * ThreadRowChunk<T>::kBytesPerWarp / 16, row0, live);
    const T* const logits = static_cast<const T*>(p.logits) + (live ? row : 0) * p.logits_row_stride;

    std::uint32_t top_ord[K], top_expert[K];
    float top_score[K];
#pragma unroll
    for (int m = 0; m < K; ++m) top_ord[m] = 0u, top_expert[m] = 0xFFFFFFFFu, top_score[m] = 0.0f;

    constexpr int kNetwork = kThreadRowNetworkInputs<K, G, kSoftmax>;
    if constexpr (!kSoftmax) {
      thread_row_select<T, K, G, kNetwork>(p, stream, logits, bias_s, live, [](float x) { return rm::sigmoid(x); },
                                           SigmoidKeyBounds{}, halves, cand, top_ord, top_expert, top_score);
    } else {
      // Pass 1: the row maximum (exact, as the other paths) and the estimate
      // of the sum; the G lanes' estimates are brought to the row maximum
      // and added.
      SoftmaxSumEstimate est;
      using Chunk = float[kThreadRowChunk];
      stream.template each<false>(E, nullptr, [&](const Chunk& x, const Chunk&, int) {
        float xm[kThreadRowChunk];
#pragma unroll
        for (int i = 0; i < kThreadRowChunk; ++i) xm[i] = apply_multiplier_unconditional(p, x[i]);
        est.add_chunk(xm);
      });
      const float mx = group_max_f32<G>(est.max);
      const bool row_nan = softmax_row_has_nan(group_max_u32<G>(isnan(est.max_nan) ? 1u : 0u) != 0u, mx);
      float sum_estimate = est.at_row_max(mx);
#pragma unroll
      for (int off = G / 2; off > 0; off /= 2) sum_estimate += __shfl_xor_sync(0xFFFFFFFFu, sum_estimate, off, G);
      // Pass 2 (step 1 of the selection): the exact terms' fixed-point sum
      // and the bounds; the sum is complete before step 4 needs it.
      rm::SoftmaxFixedSum fixed;
      float sum = 0.0f;
      const auto share = [mx, &sum](float x) { return rm::softmax_share(rm::exp_f32(x - mx), sum); };
      const float r = row_nan ? __int_as_float(0x7FFFFFFF) : rm::reciprocal_estimate(sum_estimate);
      thread_row_select<T, K, G, kNetwork>(p, stream, logits, bias_s, live, share,
                                           SoftmaxTermKeyBounds<G>{mx, r, row_nan, &fixed, &sum}, halves, cand,
                                           top_ord, top_expert, top_score);
    }

    if constexpr (G == 1) {
      // One lane per row: the form measured fastest (a merged form shared
      // with G > 1 made this kernel 1.2x slower on the H200 though its PTX
      // differed only here and in the prologue's order).
      if (!in_range) continue;
      if constexpr (K == 1) {  // the form before store_slots, which has no vector to store here
        if (padded) {
          store_slot(p, row, 0, 0.0f, -1);
        } else {
          const float denominator = rm::weight_denominator(0.0f + top_score[0], p.has_eps, p.eps);
          store_slot(p, row, 0, rm::routing_weight(top_score[0], denominator, p.route_scale),
                     static_cast<std::int32_t>(top_expert[0]));
        }
      } else {
        float selected_sum = 0.0f;
#pragma unroll
        for (int j = 0; j < K; ++j)
          if (j < p.topk) selected_sum += top_score[j];
        store_scored_slots<K>(p, row, 0, padded, rm::weight_denominator(selected_sum, p.has_eps, p.eps), top_score,
                              top_expert);
      }
    } else {
      // ---- 5. the row's slots (lane part writes its run of kSlots) ---------
      std::int32_t slot_id[kSlots];
      float slot_score[kSlots];
      float selected_sum = 0.0f;
      merge_lane_lists<K, G>(p.topk, top_ord, top_expert, top_score, slot_id, slot_score, selected_sum);
      if (!in_range) continue;
      const float denominator = rm::weight_denominator(selected_sum, p.has_eps, p.eps);
      if constexpr (kSlots == 1) {  // one slot per lane (slot j in lane j): the form before store_slots
        if (part < p.topk) {
          if (padded) store_slot(p, row, part, 0.0f, -1);
          else store_slot(p, row, part, rm::routing_weight(slot_score[0], denominator, p.route_scale), slot_id[0]);
        }
      } else {
        store_scored_slots<kSlots>(p, row, part * kSlots, padded, denominator, slot_score, slot_id);
      }
    }
  }
}

}  // namespace musespark::cuda

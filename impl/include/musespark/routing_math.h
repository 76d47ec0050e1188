// The fp32 arithmetic of SPEC section 1, shared by the CPU path and the CUDA
// kernels so that both make the same decisions in the same order.
//
// Two choices here make results independent of how a kernel walks a row:
//  * Selection uses a 64-bit key per expert: the fp32 score mapped to an
//    order-preserving unsigned integer in the high half (NaN lowest, -0 folded
//    onto +0) and the inverted expert index in the low half. The top-k keys
//    are unique, so any correct top-k algorithm returns the same ids in the
//    same order, with exact ties going to the lower index.
//  * The softmax denominator is accumulated in 64-bit fixed point (each term
//    is in [0, 1]), which is associative: any partition of the experts over
//    threads gives the same bits.
#pragma once

#include <cmath>
#include <cstdint>

#include "musespark/dtype.h"
#include "musespark/host_device.h"

namespace musespark::routing_math {

MS_HOST_DEVICE inline float exp_f32(float x) {
#ifdef __CUDA_ARCH__
  return expf(x);
#else
  return std::exp(x);
#endif
}

MS_HOST_DEVICE inline bool is_nan_bits(std::uint32_t bits) {
  return (bits & 0x7FFFFFFFu) > 0x7F800000u;
}

#ifdef __CUDACC__
// The hardware's estimate of 1 / b (rcp.approx, flushing subnormals). The
// filter path (routing_filter_path.cuh) and the register path's estimated
// selection (routing_estimate_select.cuh) use it and sigmoid_estimate only
// to discard experts that cannot reach the top k; every kept expert is
// scored again by the exact functions. Their error bounds are
// kSigmoidEstimateMaxError and kReciprocalEstimateMaxRelError, checked on
// every input by test_cuda_routing_math (as is softmax_term_estimate's, which
// the row-per-thread path's first pass uses the same way).
__device__ inline float reciprocal_estimate(float b) {
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(b));
  return r;
}
#endif

#ifdef __CUDA_ARCH__
// The hardware estimate of 1 / b refined by one Newton step: for a normal b
// whose reciprocal is normal, |r - 1/b| <= 0.5 ulp + 2^-46 / b.
__device__ inline float reciprocal_refined(float b) {
  const float r = reciprocal_estimate(b);
  return fmaf(r, fmaf(-b, r, 1.0f), r);
}

// 1 / b for b >= 1 (or NaN), without the slow-path branch of IEEE division:
// the hardware estimate refined by one Newton step, |r - 1/b| <= 0.5 ulp +
// 2^-46 / b, the second term O(u^2) like those the accuracy derivation
// drops (docs/accuracy.md). The branch of the IEEE sequence keeps the
// compiler from interleaving a thread's experts, which bounds the
// row-per-thread path. b >= 2^100 is scaled by 2^-32 first so that the
// estimate stays normal (the estimate flushes subnormals): the result is
// then rounded once more, into the subnormal range at worst. b = inf gives 0.
__device__ inline float reciprocal_from_one(float b) {
  const float scale = b >= 0x1p100f ? 0x1p-32f : 1.0f;
  const float bs = b * scale;  // exact: a power-of-two scaling of a large normal
  const float r = reciprocal_refined(bs);  // before the select, so the select stays branch-free
  return b == INFINITY ? 0.0f : r * scale;
}
#endif

#ifdef __CUDACC__
// sigmoid(x) = (1 + tanh(x / 2)) / 2 from the hardware's tanh estimate:
// three instructions, one of them on the MUFU pipe, against about fourteen
// for the exact sigmoid (the exp2 and reciprocal estimates took four, two
// of them MUFU; H200 A/B in docs/performance_log.md, session 31). The PTX ISA
// documents tanh.approx.f32's relative error only coarsely (around
// 2^-11), so its bound below is 1.5 * 2^-12 on the sigmoid, which holds
// on any GPU that meets that figure; the H200 measured 2^-17.9 (the test
// prints it). The wider margins this costs (kSigmoidEstimateMarginFactor)
// keep a few more candidates per row. NaN for NaN, 0 and 1 at the
// infinities.
// tanh(x / 2) by the hardware's estimate: sigmoid(x) = (1 + tanh(x / 2)) / 2.
__device__ inline float tanh_half_estimate(float x) {
  float t;
  asm("tanh.approx.f32 %0, %1;" : "=f"(t) : "f"(0.5f * x));
  return t;
}

__device__ inline float sigmoid_estimate(float x) { return fmaf(0.5f, tanh_half_estimate(x), 0.5f); }

// Bounds lo <= sigmoid(x) <= hi from the same estimate, the margin d in the
// product's addend: lo = rd(t / 2 + (1 / 2 - d)), hi = ru(t / 2 + (1 / 2 +
// d)), t = tanh_half_estimate(x) (1 / 2 -+ d are floats for d = 2^-11).
// They hold when d exceeds kSigmoidEstimateMaxError plus the 2^-25 that
// sigmoid_estimate's rounding of the same product may take off; NaN where
// sigmoid is NaN. test_cuda_routing_math checks both on every float.
__device__ inline void sigmoid_estimate_bounds(float x, float d, float& lo, float& hi) {
  const float t = tanh_half_estimate(x);
  lo = __fmaf_rd(0.5f, t, 0.5f - d);
  hi = __fmaf_ru(0.5f, t, 0.5f + d);
}

// A softmax term exp(y), y = x - row max <= 0, from the hardware's exp2
// estimate: two instructions, against about eight for exp_f32. NaN for NaN,
// 0 at -inf and where the term would be subnormal.
__device__ inline float softmax_term_estimate(float y) {
  float u;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(u) : "f"(y * 1.44269504088896341f));
  return u;
}
#endif

// |sigmoid_estimate(x) - sigmoid(x)| <= this for every non-NaN fp32 x,
// |softmax_term_estimate(y) - exp_f32(y)| <= that for every fp32 y <= 0,
// and |reciprocal_estimate(s) * s - 1| <= the last for every s in [1,
// 2^24], the range of a softmax row's sum (tested on all of them).
constexpr float kSigmoidEstimateMaxError = 0x1.8p-12f;  // 2^-11.42
// The margin of the row-per-thread path's sigmoid bounds (sigmoid_estimate_bounds).
constexpr float kSigmoidKeyBound = 0x1p-11f;
static_assert(kSigmoidKeyBound > kSigmoidEstimateMaxError + 0x1p-25f,
              "the margin covers the estimate's tested error and its product's rounding");
constexpr float kSoftmaxTermEstimateMaxError = 0x1p-20f;
constexpr float kReciprocalEstimateMaxRelError = 0x1p-22f;

// The margin below tau within which the filter path and the register
// path's estimated selection keep an expert: factor * (1 + B), B the
// largest |bias| of the row; routing_filter_path.cuh derives both from the
// bounds above (property_tests/test_filter_selection_model.cpp checks the
// step on the CPU).
constexpr float kSigmoidEstimateMarginFactor = 0x1p-9f;
constexpr float kSoftmaxEstimateMarginFactor = 0x1p-17f;
// Each margin is at least twice 2d, d / (1 + B) at most the estimate's bound
// plus the roundings that derivation adds (2^-23 for sigmoid's q and qa,
// 2^-22 for softmax's product and share): a bound raised without its
// margin does not compile.
static_assert(kSigmoidEstimateMarginFactor >= 4.0f * (kSigmoidEstimateMaxError + 0x1p-23f),
              "the sigmoid margin covers twice 2d");
static_assert(kSoftmaxEstimateMarginFactor >= 4.0f * (kReciprocalEstimateMaxRelError + 0x1p-22f),
              "the softmax margin covers twice 2d");

MS_HOST_DEVICE inline float sigmoid(float x) {
#ifdef __CUDA_ARCH__
  return reciprocal_from_one(1.0f + exp_f32(-x));
#else
  return 1.0f / (1.0f + exp_f32(-x));
#endif
}

// sigmoid(x) for x > -64, bit for bit on the GPU: there 1 + exp(-x) < 2^93,
// below the 2^100 where reciprocal_from_one scales, and finite, so its
// scaling and its infinity test are a multiplication by 1 and a false
// select; without them the reciprocal is three instructions instead of
// nine. NaN gives NaN both ways.
constexpr float kSigmoidInRangeMin = -64.0f;

MS_HOST_DEVICE inline float sigmoid_in_range(float x) {
#ifdef __CUDA_ARCH__
  return reciprocal_refined(1.0f + exp_f32(-x));
#else
  return sigmoid(x);
#endif
}

// p = e / sum for a softmax term e in [0, 1] and the row's sum in [1, 2^23]
// (or NaN). On the GPU: quotient and remainder corrected once from the
// refined reciprocal (the IEEE sequence without its range-check branch;
// correctly rounded but for O(u^2) cases, which the derivation drops).
MS_HOST_DEVICE inline float softmax_share(float e, float sum) {
#ifdef __CUDA_ARCH__
  const float r = reciprocal_from_one(sum);
  const float q0 = e * r;
  return fmaf(fmaf(-sum, q0, e), r, q0);
#else
  return e / sum;
#endif
}

// The order-preserving flip of a float's bits, for every float but NaN and
// -0 (callers fold or exclude those): negative values have all bits
// inverted, the others the sign bit set. One xor with the sign spread over
// the word, or'ed with the top bit, is both branches.
MS_HOST_DEVICE inline std::uint32_t flip_sign_order(std::uint32_t bits) {
  return bits ^ (static_cast<std::uint32_t>(static_cast<std::int32_t>(bits) >> 31) | 0x80000000u);
}

// Order-preserving map of an fp32 score onto uint32; NaN maps to 0, below -inf.
// On the GPU the same map in five operations (the bit-level form compiled
// to eight SASS instructions): q + 0 is q but for -0, which becomes +0
// (round to nearest; the compiler keeps the add without fast math), then
// flip_sign_order. test_cuda_routing_math checks it on every float.
MS_HOST_DEVICE inline std::uint32_t ordered_score(float q) {
#ifdef __CUDA_ARCH__
  const std::uint32_t key = flip_sign_order(__float_as_uint(q + 0.0f));  // before the select: no branch
  return isnan(q) ? 0u : key;
#else
  std::uint32_t bits = float_as_bits(q);
  if (is_nan_bits(bits)) return 0u;
  if (bits == 0x80000000u) bits = 0u;  // -0 ranks equal to +0
  return (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
#endif
}

// The inverse of ordered_score on its non-NaN range: the float that maps to
// `ordered` (+0 for the folded zero). 0 (NaN's image) has no inverse; callers
// treat it separately.
MS_HOST_DEVICE inline float score_from_ordered(std::uint32_t ordered) {
  return bits_as_float((ordered & 0x80000000u) ? (ordered & 0x7FFFFFFFu) : ~ordered);
}

// Larger key = earlier rank. Unique per expert within a row.
MS_HOST_DEVICE inline std::uint64_t selection_key(float q, std::uint32_t expert) {
  return (static_cast<std::uint64_t>(ordered_score(q)) << 32) | (0xFFFFFFFFu - expert);
}

MS_HOST_DEVICE inline std::uint32_t key_expert(std::uint64_t key) {
  return 0xFFFFFFFFu - static_cast<std::uint32_t>(key & 0xFFFFFFFFu);
}

// Softmax denominator in fixed point: a term e in [0, 1] becomes
// floor(e * 2^kSoftmaxFixedBits). E terms sum to at most E * 2^40, which
// fits uint64 for E <= 2^23. Truncation loses < 2^-40 per term; the sum is at
// least 1 (the row maximum contributes exp(0)), so the relative error is
// below E * 2^-40 (2^-28 at E = 4096), well under one fp32 ulp.
constexpr int kSoftmaxFixedBits = 40;
constexpr std::int64_t kMaxFixedPointExperts = std::int64_t{1} << 23;

// floor(e * 2^40) for e in [0, 1] (callers leave NaN out). Scaling by 2^40
// is exact in fp32 (e >= 2^-149 stays far from overflow and underflow), and
// the conversion truncates, which for e >= 0 is the floor: one multiply and
// one conversion instead of unpacking the float (the bit-level definition is
// softmax_term_fixed_by_bits, which the tests check this against on every
// fp32 value in [0, 1]). The CUDA kernels of E <= 512 sum the same integers
// through SoftmaxFixedSum below, without the conversion.
MS_HOST_DEVICE inline std::uint64_t softmax_term_fixed(float e) {
  constexpr float kScale = 1099511627776.0f;  // 2^40
#ifdef __CUDA_ARCH__
  return __float2ull_rz(e * kScale);
#else
  return static_cast<std::uint64_t>(e * kScale);
#endif
}

MS_HOST_DEVICE inline std::uint64_t softmax_term_fixed_by_bits(float e) {
  const std::uint32_t bits = float_as_bits(e);
  const std::uint32_t biased_exp = bits >> 23;  // sign is 0: e >= 0
  if (biased_exp == 0) return 0;                // zero or subnormal: < 2^-126
  const std::uint64_t man = (bits & 0x7FFFFFu) | 0x800000u;
  // e = man * 2^(biased_exp - 150); fixed = man * 2^(biased_exp - 110).
  const int shift = static_cast<int>(biased_exp) - 110;
  if (shift >= 0) return man << shift;  // shift <= 17 since e <= 1
  if (shift <= -24) return 0;
  return man >> (-shift);
}

#ifdef __CUDACC__
// A fixed-point sum of softmax terms (softmax_term_fixed's integers) for the
// CUDA kernels, kept in two 32-bit halves so that no term takes the 64-bit
// conversion: F2I.U64 issues on the XU pipe (16 lanes per clock per SM),
// which the term's own expf already uses for its ex2, while the four fp32
// operations below take the FMA pipe (128 lanes per clock). For e in [0, 1]
// and u = e 2^20 (exact, a power-of-two scaling):
//  - t = fma_rz(e, 2^20, 2^23) = 2^23 + floor(u): fp32 numbers in [2^23, 2^24)
//    are the integers, and rounding toward zero is the floor there; so the
//    bits of t are 0x4B000000 + floor(u);
//  - c = fma(t, -2^20, 2^43 + 2^23) = 2^23 - floor(u) 2^20, exact: a
//    multiple of 2^20 below 2^41 in size, so 21 significant bits (and
//    2^43 + 2^23 is a float);
//  - fma_rz(e, 2^40, c) = 2^23 + floor(r 2^20) for r = u - floor(u), u's
//    fraction: the exact sum is 2^23 + r 2^20, in [2^23, 2^23 + 2^20);
// and floor(e 2^40) = floor(u) 2^20 + floor(r 2^20). Three fused products a
// term, two deep after t; the form before took t - 2^23, r itself and its
// scaling (four operations, three deep after t) for the same bits. `high` and `low` sum
// the two floors; each term adds at most 2^20 to either, so up to
// kSoftmaxFixedSumMaxTerms terms (a row of E <= 4095) cannot overflow
// them, and value() is the exact sum of softmax_term_fixed over the terms
// (test_cuda_routing_math checks one term on every float in [0, 1]). NaN
// terms add garbage; callers replace a NaN row's sum, as for
// softmax_term_fixed.
constexpr int kSoftmaxFixedSumMaxTerms = 4095;  // floor((2^32 - 1) / 2^20)

struct SoftmaxFixedSum {
  std::uint32_t high = 0;  // the terms' floor(e 2^20), summed
  std::uint32_t low = 0;   // the terms' floor(frac(e 2^20) 2^20), summed

  __device__ __forceinline__ void add(float e) {
    constexpr float k2p20 = 1048576.0f, k2p23 = 8388608.0f, k2p40 = 1099511627776.0f;
    constexpr float k2p43Plus2p23 = 8796101410816.0f;  // 2^43 + 2^23
    constexpr std::uint32_t k2p23Bits = 0x4B000000u;
    const float t = __fmaf_rz(e, k2p20, k2p23);
    const float c = fmaf(t, -k2p20, k2p43Plus2p23);
    const float t2 = __fmaf_rz(e, k2p40, c);
    high += __float_as_uint(t) - k2p23Bits;
    low += __float_as_uint(t2) - k2p23Bits;
  }
  __device__ __forceinline__ std::uint64_t value() const {
    return (static_cast<std::uint64_t>(high) << 20) + low;
  }
};
#endif

MS_HOST_DEVICE inline float softmax_sum_from_fixed(std::uint64_t fixed) {
#ifdef __CUDA_ARCH__
  const float f = __ull2float_rn(fixed);
#else
  const float f = static_cast<float>(fixed);
#endif
  return f * 9.094947017729282e-13f;  // 2^-40, exact scaling
}

// The weights' denominator: the selected unbiased scores summed in slot
// order, plus eps.
MS_HOST_DEVICE inline float weight_denominator(float selected_sum, bool has_eps, float eps) {
  return has_eps ? selected_sum + eps : selected_sum;
}

// w = s * (p / D). The share first: p / D <= 1 whenever eps >= 0, so the
// weight is finite whenever the exact one is. Multiplying p by s / D
// instead overflows when D is tiny (a row whose selected sigmoid scores are
// all subnormal: s / D = 100 / 6e-39 is inf in fp32 while the weight is
// 100; found by the CUDA fuzzer).
MS_HOST_DEVICE inline float routing_weight(float p, float denominator, float route_scale) {
  return route_scale * (p / denominator);
}

}  // namespace musespark::routing_math

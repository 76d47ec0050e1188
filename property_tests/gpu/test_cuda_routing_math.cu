// The GPU forms of routing_math.h that claim to give the same bits as a
// longer definition, checked on the device over every fp32 bit pattern
// they apply to (each sweep visits all 2^32 patterns):
//  - ordered_score (an add that folds -0 and a xor) against the bit-level
//    map the host uses;
//  - sigmoid_in_range (the reciprocal without its range checks) against
//    sigmoid, for every x > kSigmoidInRangeMin, NaN included.
// and the estimates of the filter path against the bounds its margin is
// derived from (routing_filter_path.cuh): sigmoid_estimate within
// kSigmoidEstimateMaxError of sigmoid on every float (NaN exactly where
// sigmoid is NaN), sigmoid_estimate_bounds (the row-per-thread path's
// sigmoid bounds) around it on every float, reciprocal_estimate within kReciprocalEstimateMaxRelError
// (relative) on every float in [1, 2^24], and the row-per-thread path's
// softmax_term_estimate within kSoftmaxTermEstimateMaxError of exp_f32 on
// every y <= 0 (NaN exactly for NaN). The largest error seen is printed.
// SoftmaxFixedSum (the kernels' softmax sum without 64-bit conversions)
// against softmax_term_fixed on every float in [0, 1], and at its capacity.
// A failure prints the first mismatches as bit patterns.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <cstdio>
#include <sstream>
#include <string>

#include <cuda_runtime.h>

#include "cuda_test_support.h"
#include "musespark/routing_math.h"

namespace musespark {
namespace {

namespace rm = routing_math;

constexpr int kShown = 8;

struct Mismatches {
  unsigned long long count;
  std::uint32_t input[kShown];
  std::uint32_t got[kShown];
  std::uint32_t want[kShown];
};

// The host's definition, compiled for the device.
__device__ std::uint32_t ordered_score_by_bits(float q) {
  std::uint32_t bits = __float_as_uint(q);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return 0u;
  if (bits == 0x80000000u) bits = 0u;
  return (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
}

__device__ void record(Mismatches* m, std::uint32_t input, std::uint32_t got, std::uint32_t want) {
  const unsigned long long slot = atomicAdd(&m->count, 1ull);
  if (slot < kShown) m->input[slot] = input, m->got[slot] = got, m->want[slot] = want;
}

__global__ void check_ordered_score(Mismatches* m) {
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t i = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; i < (1ull << 32);
       i += stride) {
    const std::uint32_t bits = static_cast<std::uint32_t>(i);
    const float q = __uint_as_float(bits);
    const std::uint32_t got = rm::ordered_score(q), want = ordered_score_by_bits(q);
    if (got != want) record(m, bits, got, want);
  }
}

__global__ void check_sigmoid_in_range(Mismatches* m, unsigned long long* checked) {
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  unsigned long long mine = 0;
  for (std::uint64_t i = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; i < (1ull << 32);
       i += stride) {
    const std::uint32_t bits = static_cast<std::uint32_t>(i);
    const float x = __uint_as_float(bits);
    if (!(x > rm::kSigmoidInRangeMin) && !isnan(x)) continue;
    ++mine;
    const std::uint32_t got = __float_as_uint(rm::sigmoid_in_range(x)), want = __float_as_uint(rm::sigmoid(x));
    if (got != want) record(m, bits, got, want);
  }
  atomicAdd(checked, mine);
}

// got/want: the low 32 bits of the two sums (they are below 2^41).
__global__ void check_softmax_fixed_sum(Mismatches* m) {
  const std::uint32_t last = 0x3F800000u;  // 1.0f; 0 .. last are the floats in [0, 1]
  const std::uint32_t stride = gridDim.x * blockDim.x;
  for (std::uint32_t bits = blockIdx.x * blockDim.x + threadIdx.x; bits <= last; bits += stride) {
    const float e = __uint_as_float(bits);
    rm::SoftmaxFixedSum sum;
    sum.add(e);
    const std::uint64_t got = sum.value(), want = rm::softmax_term_fixed(e);
    if (got != want) record(m, bits, static_cast<std::uint32_t>(got), static_cast<std::uint32_t>(want));
  }
}

// kSoftmaxFixedSumMaxTerms terms of the values that fill each half most: 1
// (high gets 2^20) and the float below 1 (both halves get 2^20 - 1).
__global__ void check_softmax_fixed_sum_capacity(Mismatches* m) {
  const float values[2] = {1.0f, __uint_as_float(0x3F7FFFFFu)};
  for (int v = 0; v < 2; ++v) {
    rm::SoftmaxFixedSum sum;
    std::uint64_t want = 0;
    for (int i = 0; i < rm::kSoftmaxFixedSumMaxTerms; ++i) sum.add(values[v]), want += rm::softmax_term_fixed(values[v]);
    if (sum.value() != want)
      record(m, __float_as_uint(values[v]), static_cast<std::uint32_t>(sum.value()), static_cast<std::uint32_t>(want));
  }
}

// The largest error seen, as the bits of a non-negative double (whose
// integer order is its numeric order).
__device__ void record_error(unsigned long long* worst, double err) {
  atomicMax(worst, static_cast<unsigned long long>(__double_as_longlong(err)));
}

// An estimate against the exact value: NaN exactly where it is NaN, else
// within `bound` (the largest error so far kept in `seen`).
__device__ void check_estimate(Mismatches* m, std::uint32_t input, float got, float want, float bound, double& seen) {
  if (isnan(got) || isnan(want)) {
    if (isnan(got) != isnan(want)) record(m, input, __float_as_uint(got), __float_as_uint(want));
    return;
  }
  const double err = fabs(static_cast<double>(got) - static_cast<double>(want));
  seen = fmax(seen, err);
  if (!(err <= static_cast<double>(bound))) record(m, input, __float_as_uint(got), __float_as_uint(want));
}

__global__ void check_sigmoid_estimate(Mismatches* m, unsigned long long* worst) {
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  double mine = 0.0;
  for (std::uint64_t i = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; i < (1ull << 32);
       i += stride) {
    const std::uint32_t bits = static_cast<std::uint32_t>(i);
    const float x = __uint_as_float(bits);
    check_estimate(m, bits, rm::sigmoid_estimate(x), rm::sigmoid(x), rm::kSigmoidEstimateMaxError, mine);
  }
  record_error(worst, mine);
}

// sigmoid_estimate_bounds with the row-per-thread path's margin: lo <=
// sigmoid(x) <= hi on every float, NaN exactly where sigmoid is NaN. A
// mismatch records the sigmoid as `want` and the bound it crossed as `got`.
__global__ void check_sigmoid_estimate_bounds(Mismatches* m) {
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t i = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; i < (1ull << 32);
       i += stride) {
    const std::uint32_t bits = static_cast<std::uint32_t>(i);
    const float x = __uint_as_float(bits);
    float lo, hi;
    rm::sigmoid_estimate_bounds(x, rm::kSigmoidKeyBound, lo, hi);
    const float s = rm::sigmoid(x);
    if (isnan(s) || isnan(lo) || isnan(hi)) {
      if (isnan(s) != isnan(lo) || isnan(s) != isnan(hi))
        record(m, bits, __float_as_uint(isnan(lo) ? hi : lo), __float_as_uint(s));
    } else if (!(lo <= s)) {
      record(m, bits, __float_as_uint(lo), __float_as_uint(s));
    } else if (!(s <= hi)) {
      record(m, bits, __float_as_uint(hi), __float_as_uint(s));
    }
  }
}

// Every y a softmax term is taken of: y = x - row max <= 0 (-inf, both
// zeros) and NaN, which must stay NaN.
__global__ void check_softmax_term_estimate(Mismatches* m, unsigned long long* worst, unsigned long long* checked) {
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  double mine = 0.0;
  unsigned long long visited = 0;
  for (std::uint64_t i = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; i < (1ull << 32);
       i += stride) {
    const std::uint32_t bits = static_cast<std::uint32_t>(i);
    const float y = __uint_as_float(bits);
    if (y > 0.0f) continue;
    ++visited;
    check_estimate(m, bits, rm::softmax_term_estimate(y), rm::exp_f32(y), rm::kSoftmaxTermEstimateMaxError, mine);
  }
  record_error(worst, mine);
  atomicAdd(checked, visited);
}

__global__ void check_reciprocal_estimate(Mismatches* m, unsigned long long* worst) {
  constexpr std::uint32_t kFirst = 0x3F800000u, kLast = 0x4B800000u;  // 1 and 2^24
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  double mine = 0.0;
  for (std::uint64_t i = kFirst + blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; i <= kLast;
       i += stride) {
    const std::uint32_t bits = static_cast<std::uint32_t>(i);
    const float s = __uint_as_float(bits);
    const float r = rm::reciprocal_estimate(s);
    const double err = fabs(static_cast<double>(r) * static_cast<double>(s) - 1.0);
    mine = fmax(mine, err);
    if (!(err <= static_cast<double>(rm::kReciprocalEstimateMaxRelError)))
      record(m, bits, __float_as_uint(r), __float_as_uint(__frcp_rn(s)));
  }
  record_error(worst, mine);
}

std::string describe_mismatches(const Mismatches& m) {
  std::ostringstream out;
  out << m.count << " inputs differ; the first:";
  for (unsigned long long i = 0; i < m.count && i < kShown; ++i) {
    char line[96];
    std::snprintf(line, sizeof line, "\n  input 0x%08x: got 0x%08x, want 0x%08x", m.input[i], m.got[i], m.want[i]);
    out << line;
  }
  return out.str();
}

// Runs `launch` with a zeroed Mismatches on the device and returns it.
template <typename Launch>
Mismatches run_check(Launch launch) {
  Mismatches* device = nullptr;
  Mismatches host{};
  EXPECT_EQ(cudaMalloc(&device, sizeof(Mismatches)), cudaSuccess);
  EXPECT_EQ(cudaMemset(device, 0, sizeof(Mismatches)), cudaSuccess);
  launch(device);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(&host, device, sizeof(Mismatches), cudaMemcpyDeviceToHost), cudaSuccess);
  cudaFree(device);
  return host;
}

constexpr unsigned kBlocks = 132 * 16, kThreads = 256;

TEST(DeviceRoutingMath, OrderedScoreEqualsTheBitLevelMapOnEveryFloat) {
  SKIP_WITHOUT_GPU();
  const Mismatches m = run_check([](Mismatches* d) { check_ordered_score<<<kBlocks, kThreads>>>(d); });
  EXPECT_EQ(m.count, 0u) << describe_mismatches(m);
}

TEST(DeviceRoutingMath, SigmoidInRangeEqualsSigmoidAboveItsMinimum) {
  SKIP_WITHOUT_GPU();
  unsigned long long* checked = nullptr;
  ASSERT_EQ(cudaMalloc(&checked, sizeof *checked), cudaSuccess);
  ASSERT_EQ(cudaMemset(checked, 0, sizeof *checked), cudaSuccess);
  const Mismatches m =
      run_check([checked](Mismatches* d) { check_sigmoid_in_range<<<kBlocks, kThreads>>>(d, checked); });
  unsigned long long n = 0;
  EXPECT_EQ(cudaMemcpy(&n, checked, sizeof n, cudaMemcpyDeviceToHost), cudaSuccess);
  cudaFree(checked);
  // Every positive float (2^31 - 2^23 numbers and 2^23 - 1 NaNs, +inf), the
  // negative ones above -64 and the negative NaNs: far more than 2^31.
  EXPECT_GT(n, 1ull << 31) << "the sweep did not cover the range";
  EXPECT_EQ(m.count, 0u) << describe_mismatches(m);
}

TEST(DeviceRoutingMath, SoftmaxFixedSumEqualsTheConversionOnEveryTerm) {
  SKIP_WITHOUT_GPU();
  const Mismatches m = run_check([](Mismatches* d) { check_softmax_fixed_sum<<<kBlocks, kThreads>>>(d); });
  EXPECT_EQ(m.count, 0u) << describe_mismatches(m);
  const Mismatches full = run_check([](Mismatches* d) { check_softmax_fixed_sum_capacity<<<1, 1>>>(d); });
  EXPECT_EQ(full.count, 0u) << describe_mismatches(full);
}

// Runs check(mismatches, worst) and returns the mismatches; the largest
// error lands in `worst`.
template <typename Launch>
Mismatches run_error_check(Launch launch, double& worst) {
  unsigned long long* dev_worst = nullptr;
  EXPECT_EQ(cudaMalloc(&dev_worst, sizeof *dev_worst), cudaSuccess);
  EXPECT_EQ(cudaMemset(dev_worst, 0, sizeof *dev_worst), cudaSuccess);
  const Mismatches m = run_check([&](Mismatches* d) { launch(d, dev_worst); });
  unsigned long long bits = 0;
  EXPECT_EQ(cudaMemcpy(&bits, dev_worst, sizeof bits, cudaMemcpyDeviceToHost), cudaSuccess);
  cudaFree(dev_worst);
  std::memcpy(&worst, &bits, sizeof worst);
  return m;
}

TEST(DeviceRoutingMath, SigmoidEstimateIsWithinItsBoundOnEveryFloat) {
  SKIP_WITHOUT_GPU();
  double worst = 0.0;
  const Mismatches m =
      run_error_check([](Mismatches* d, unsigned long long* w) { check_sigmoid_estimate<<<kBlocks, kThreads>>>(d, w); },
                      worst);
  std::printf("sigmoid_estimate: largest |error| %.3g (2^%.2f), bound 2^%.2f\n", worst, std::log2(worst),
              std::log2(static_cast<double>(rm::kSigmoidEstimateMaxError)));
  EXPECT_EQ(m.count, 0u) << describe_mismatches(m);
}

TEST(DeviceRoutingMath, SigmoidEstimateBoundsHoldOnEveryFloat) {
  SKIP_WITHOUT_GPU();
  const Mismatches m = run_check([](Mismatches* d) { check_sigmoid_estimate_bounds<<<kBlocks, kThreads>>>(d); });
  EXPECT_EQ(m.count, 0u) << describe_mismatches(m);
}

TEST(DeviceRoutingMath, SoftmaxTermEstimateIsWithinItsBoundOnEveryTerm) {
  SKIP_WITHOUT_GPU();
  unsigned long long* checked = nullptr;
  ASSERT_EQ(cudaMalloc(&checked, sizeof *checked), cudaSuccess);
  ASSERT_EQ(cudaMemset(checked, 0, sizeof *checked), cudaSuccess);
  double worst = 0.0;
  const Mismatches m = run_error_check(
      [checked](Mismatches* d, unsigned long long* w) { check_softmax_term_estimate<<<kBlocks, kThreads>>>(d, w, checked); },
      worst);
  unsigned long long n = 0;
  EXPECT_EQ(cudaMemcpy(&n, checked, sizeof n, cudaMemcpyDeviceToHost), cudaSuccess);
  cudaFree(checked);
  std::printf("softmax_term_estimate on y <= 0: largest |error| %.3g (2^%.2f), bound 2^-20\n", worst, std::log2(worst));
  // The 2^31 patterns with the sign bit (negative numbers, -0, -inf and the
  // negative NaNs), +0 and the 2^23 - 1 positive NaNs.
  EXPECT_EQ(n, (1ull << 31) + (1ull << 23)) << "the sweep did not cover the range";
  EXPECT_EQ(m.count, 0u) << describe_mismatches(m);
}

TEST(DeviceRoutingMath, ReciprocalEstimateIsWithinItsBoundOnSoftmaxSums) {
  SKIP_WITHOUT_GPU();
  double worst = 0.0;
  const Mismatches m = run_error_check(
      [](Mismatches* d, unsigned long long* w) { check_reciprocal_estimate<<<kBlocks, kThreads>>>(d, w); }, worst);
  std::printf("reciprocal_estimate on [1, 2^24]: largest relative error %.3g (2^%.2f), bound 2^-22\n", worst,
              std::log2(worst));
  EXPECT_EQ(m.count, 0u) << describe_mismatches(m);
}

}  // namespace
}  // namespace musespark

// The GPU forms of routing_math.h that claim to give the same bits as a
// longer definition, checked on the device over every fp32 bit pattern
// they apply to (each sweep visits all 2^32 patterns):
//  - ordered_score (an add that folds -0 and a xor) against the bit-level
//    map the host uses;
//  - sigmoid_in_range (the reciprocal without its range checks) against
//    sigmoid, for every x > kSigmoidInRangeMin, NaN included.
// A failure prints the first mismatches as bit patterns.
#include <gtest/gtest.h>

#include <cstdint>
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

}  // namespace
}  // namespace musespark

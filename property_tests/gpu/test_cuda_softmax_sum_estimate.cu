// The row-per-thread path's estimate of a softmax row's sum
// (SoftmaxSumEstimate in routing_thread_row_path.cuh), against the exact
// fixed-point sum every path takes, on rows built to stress it: the
// maximum rising in every chunk (a rescale per chunk, the longest product
// of estimated factors), large offsets with small differences (the
// subtraction's rounding), wide spreads, ties, -inf entries, and one to
// four lanes per row as the kernels split it. Its bound, 2^-13 relative, is
// what SoftmaxTermKeyBounds' margin is derived from; the largest error seen
// is printed. Seeds: MUSESPARK_TEST_SEED pins them (test_support.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "../test_support.h"
#include "cuda_test_support.h"
#include "harness/cuda_device.h"
#include "routing_thread_row_path.cuh"

namespace musespark {
namespace {

namespace rm = routing_math;

constexpr double kBound = 0x1p-13;

// One thread per row: lane g of G takes chunks g, g + G, ... as the kernel's
// lanes do; the exact sum as every path takes it.
__global__ void sum_estimate_rows(const float* rows, int num_rows, int E, int G, double* rel_error) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= num_rows) return;
  const float* x = rows + static_cast<std::int64_t>(row) * E;
  float mx = -INFINITY;
  for (int e = 0; e < E; ++e) mx = fmaxf(mx, x[e]);
  std::uint64_t fixed = 0;
  for (int e = 0; e < E; ++e) fixed += rm::softmax_term_fixed(rm::exp_f32(x[e] - mx));
  const float exact = rm::softmax_sum_from_fixed(fixed);
  constexpr int kChunk = cuda::kThreadRowChunk;
  float estimate = 0.0f;
  for (int g = 0; g < G; ++g) {
    cuda::SoftmaxSumEstimate lane;
    for (int c0 = g * kChunk; c0 < E; c0 += G * kChunk) {
      float chunk[kChunk];
      for (int i = 0; i < kChunk; ++i) chunk[i] = x[c0 + i];
      lane.add_chunk(chunk);
    }
    estimate += lane.at_row_max(mx);
  }
  rel_error[row] = fabs(static_cast<double>(estimate) - static_cast<double>(exact)) / static_cast<double>(exact);
}

struct RowKind {
  std::string name;
  std::vector<float> (*make)(int E, std::mt19937_64& rng);
};

std::vector<float> normal_rows(int E, std::mt19937_64& rng, double sigma, double offset) {
  std::normal_distribution<double> normal(0.0, sigma);
  std::vector<float> v(E);
  for (float& x : v) x = static_cast<float>(offset + normal(rng));
  return v;
}

const RowKind kKinds[] = {
    {"normal", [](int E, std::mt19937_64& rng) { return normal_rows(E, rng, 1.0, 0.0); }},
    {"normal, sigma 16", [](int E, std::mt19937_64& rng) { return normal_rows(E, rng, 16.0, 0.0); }},
    {"offset 3000, sigma 2", [](int E, std::mt19937_64& rng) { return normal_rows(E, rng, 2.0, 3000.0); }},
    {"offset -1e5, sigma 4", [](int E, std::mt19937_64& rng) { return normal_rows(E, rng, 4.0, -1e5); }},
    {"rising, sigma 1", [](int E, std::mt19937_64& rng) {  // a new maximum in every chunk
       auto v = normal_rows(E, rng, 1.0, 0.0);
       std::sort(v.begin(), v.end());
       return v;
     }},
    {"rising, offset 2000", [](int E, std::mt19937_64& rng) {
       auto v = normal_rows(E, rng, 3.0, 2000.0);
       std::sort(v.begin(), v.end());
       return v;
     }},
    {"rising by 0.05", [](int E, std::mt19937_64& rng) {  // many terms near 1, every chunk rescaled
       std::vector<float> v(E);
       const double start = std::uniform_real_distribution<double>(-50.0, 50.0)(rng);
       for (int e = 0; e < E; ++e) v[e] = static_cast<float>(start + 0.05 * e);
       return v;
     }},
    {"ties", [](int E, std::mt19937_64& rng) {
       return std::vector<float>(E, static_cast<float>(std::uniform_real_distribution<double>(-80.0, 80.0)(rng)));
     }},
    {"-inf and few numbers", [](int E, std::mt19937_64& rng) {
       auto v = normal_rows(E, rng, 2.0, 0.0);
       std::bernoulli_distribution keep(0.1);
       for (float& x : v)
         if (!keep(rng)) x = -INFINITY;
       v[std::uniform_int_distribution<int>(0, E - 1)(rng)] = 1.0f;  // at least one number
       return v;
     }},
    {"wide, uniform +-1e4", [](int E, std::mt19937_64& rng) {
       std::uniform_real_distribution<double> u(-1e4, 1e4);
       std::vector<float> v(E);
       for (float& x : v) x = static_cast<float>(u(rng));
       return v;
     }},
};

TEST(SoftmaxSumEstimate, WithinItsBoundOnStressRows) {
  SKIP_WITHOUT_GPU();
  constexpr int kRowsPerKind = 256;
  std::mt19937_64 rng(testing::test_seed());
  double worst = 0.0;
  std::string worst_where;
  int failures = 0;
  for (int E : {16, 64, 128, 144, 256, 320, 512})
    for (int G : {1, 2, 4}) {
      if (E % (cuda::kThreadRowChunk * G) != 0) continue;
      for (const RowKind& kind : kKinds) {
        std::vector<float> rows;
        rows.reserve(static_cast<std::size_t>(kRowsPerKind) * E);
        for (int r = 0; r < kRowsPerKind; ++r) {
          const auto v = kind.make(E, rng);
          rows.insert(rows.end(), v.begin(), v.end());
        }
        harness::DeviceBuffer d_rows(rows.size() * sizeof(float)), d_err(kRowsPerKind * sizeof(double));
        ASSERT_EQ(cudaMemcpy(d_rows.get(), rows.data(), rows.size() * sizeof(float), cudaMemcpyHostToDevice),
                  cudaSuccess);
        ASSERT_EQ(cudaMemset(d_err.get(), 0xFF, kRowsPerKind * sizeof(double)), cudaSuccess);  // NaN: not written
        sum_estimate_rows<<<(kRowsPerKind + 127) / 128, 128>>>(static_cast<const float*>(d_rows.get()),
                                                               kRowsPerKind, E, G, static_cast<double*>(d_err.get()));
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        std::vector<double> err(kRowsPerKind);
        ASSERT_EQ(cudaMemcpy(err.data(), d_err.get(), err.size() * sizeof(double), cudaMemcpyDeviceToHost),
                  cudaSuccess);
        for (int r = 0; r < kRowsPerKind; ++r) {
          const std::string where = kind.name + ", E=" + std::to_string(E) + " G=" + std::to_string(G) +
                                    " row " + std::to_string(r);
          if (!(err[r] >= 0.0 && err[r] <= kBound) && failures++ < 8)
            ADD_FAILURE() << where << ": relative error " << err[r] << " (bound 2^-13)";
          if (err[r] > worst) worst = err[r], worst_where = where;
        }
      }
    }
  std::printf("softmax sum estimate: largest relative error %.3g (2^%.2f) at %s, bound 2^-13\n", worst,
              std::log2(worst), worst_where.c_str());
  EXPECT_EQ(failures, 0);
}

}  // namespace
}  // namespace musespark

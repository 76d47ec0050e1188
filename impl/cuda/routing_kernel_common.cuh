// Pieces shared by the router's kernel bodies: dtype widening, vector loads,
// PDL, and the per-row reads and writes of SPEC section 1.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "musespark/routing_math.h"
#include "routing_kernel.cuh"

namespace musespark::cuda {
namespace rm = routing_math;

constexpr int kBlockThreads = 256;

template <typename T> struct LogitTraits;
template <> struct LogitTraits<float> {
  __device__ static float widen(float v) { return v; }
};
template <> struct LogitTraits<__nv_bfloat16> {
  __device__ static float widen(__nv_bfloat16 v) { return __bfloat162float(v); }
};
template <> struct LogitTraits<__half> {
  __device__ static float widen(__half v) { return __half2float(v); }
};

template <typename T, int N>
struct alignas(sizeof(T) * N) Vec {
  T v[N];
};

__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void pdl_launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Every router kernel (and perf's floor kernels) starts here, before it
// reads anything: the wait for the previous grid (its writes visible) and
// the trigger that lets dependents start launching. Their
// griddepcontrol.wait still waits for this whole grid to finish, so the
// order decides only how early the next launch begins. Trigger first, the
// next grid's launch overlaps this one's wait too: on the H200 that took
// 3-9% off grids of one or a few blocks, but made grids of 1024+ warps
// 5-33% slower (the next grid's blocks then take SM resources while this
// one runs), so the launch asks for it on small grids only
// (kTriggerFirstMaxWarps).
//
// Every router kernel enters in two halves instead: pdl_trigger_early at
// the start and pdl_wait_then_trigger just before its first global read,
// which in the decode kernels (register, split-row, block-rank,
// block-threshold paths) is the first statement of the row loop's first
// iteration. The wait is then inside the loop, so the compiler hoists the
// row-invariant setup (thread and warp indices, shared-memory addresses,
// parameter reads, address arithmetic) into the loop's preheader, above
// the wait, where it runs while the previous grid finishes; with the wait
// first, all of it followed the wait (PTX of the fp32 block-rank kernel,
// W = 4, softmax: 7 instructions before griddepcontrol.wait, 91 after the move).
// No global load or store can move above it: the wait's asm is volatile
// and clobbers memory, and scripts/check_pdl_wait_order.py checks the PTX
// of every kernel for it (ctest pdl_wait_order). H200, against the wait
// first, T = 1-1024, E = 8-512, k = 1 / 4 / 8, both dtypes and
// normalizations, two rounds: 0.901x / 0.888x the time over 240 cells,
// 215 / 225 faster by > 3%, none slower (docs/performance_log.md). The
// large-batch kernels (row-per-thread, filter, shared) read the bias
// before their loop or set up little, and measured 0.996-0.999x for the
// same move (T = 8192 and 65536, two rounds, no cell past 3%): kept so
// that every kernel enters alike.
__device__ __forceinline__ void pdl_trigger_early(bool trigger_first) {
  if (trigger_first) pdl_launch_dependents();
}

__device__ __forceinline__ void pdl_wait_then_trigger(bool trigger_first) {
  pdl_wait();
  if (!trigger_first) pdl_launch_dependents();
}

// Both halves at once: for a kernel with no setup to run before the wait
// (perf's launch floor kernel).
__device__ __forceinline__ void pdl_enter(bool trigger_first) {
  pdl_trigger_early(trigger_first);
  pdl_wait_then_trigger(trigger_first);
}

// Grids of up to this many warps trigger their dependents before the PDL
// wait. H200, anchor grid, trigger first everywhere against after the wait
// (docs/performance_log.md): 0.91-1.03x the time, most cells below 1, on grids
// of up to 512 warps (T = 1 and 16, T = 128 with up to 4 warps per row,
// T = 1024 at E = 8 k <= 4); 1.02-1.33x on grids of 1024 warps and more.
constexpr long long kTriggerFirstMaxWarps = 512;

inline bool trigger_first_for(unsigned blocks, unsigned threads) {
  return static_cast<long long>(blocks) * ((threads + 31) / 32) <= kTriggerFirstMaxWarps;
}

// Every router launch goes through here (and perf's launch-floor kernel, so
// that it is launched exactly as the router is): PDL, when on, lets the
// launch overlap the previous kernel's tail. carveout_percent >= 0 asks for
// that share of the SM's shared memory (the rest is L1) for this launch;
// -1 leaves the split to the driver.
template <typename Kernel, typename... Args>
cudaError_t launch_with_pdl_carveout(Kernel kernel, unsigned blocks, unsigned threads, std::size_t smem,
                                     int carveout_percent, cudaStream_t stream, bool pdl, const Args&... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(blocks);
  cfg.blockDim = dim3(threads);
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute attr[2];
  unsigned n = 0;
  if (pdl) {
    attr[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[n++].val.programmaticStreamSerializationAllowed = 1;
  }
  if (carveout_percent >= 0) {
    attr[n].id = cudaLaunchAttributePreferredSharedMemoryCarveout;
    attr[n++].val.sharedMemCarveout = static_cast<unsigned>(carveout_percent);
  }
  cfg.attrs = attr;
  cfg.numAttrs = n;
  return cudaLaunchKernelEx(&cfg, kernel, args...);
}

template <typename Kernel, typename... Args>
cudaError_t launch_with_pdl(Kernel kernel, unsigned blocks, unsigned threads, std::size_t smem,
                            cudaStream_t stream, bool pdl, const Args&... args) {
  return launch_with_pdl_carveout(kernel, blocks, threads, smem, -1, stream, pdl, args...);
}

// Reductions over the G lanes of a group (G divides 32; all lanes of the warp
// take part). G = 32 uses redux.sync; narrower groups use xor shuffles.
template <int G>
__device__ __forceinline__ std::uint32_t group_max_u32(std::uint32_t v) {
  if constexpr (G == 32) {
    return __reduce_max_sync(0xFFFFFFFFu, v);
  } else {
#pragma unroll
    for (int off = G / 2; off > 0; off /= 2) v = max(v, __shfl_xor_sync(0xFFFFFFFFu, v, off, G));
    return v;
  }
}

template <int G>
__device__ __forceinline__ std::uint32_t group_min_u32(std::uint32_t v) {
  if constexpr (G == 32) {
    return __reduce_min_sync(0xFFFFFFFFu, v);
  } else {
#pragma unroll
    for (int off = G / 2; off > 0; off /= 2) v = min(v, __shfl_xor_sync(0xFFFFFFFFu, v, off, G));
    return v;
  }
}

// The softmax row maximum (NaN operands dropped, as fmaxf does). G = 32:
// one redux.sync over the order-preserving image of the scores instead of
// five dependent shuffle steps, which a decode call waits out. The image
// folds -0 into +0, so the result may be +0 where fmaxf would give -0; the
// caller only subtracts it (x - (+0) and x - (-0) differ only for x = -0,
// in the sign of a zero that exp maps to 1 either way), so no bit of the
// output depends on which form ran.
template <int G>
__device__ __forceinline__ float group_max_f32(float v) {
  if constexpr (G == 32) {
    return rm::score_from_ordered(__reduce_max_sync(0xFFFFFFFFu, rm::ordered_score(v)));
  } else {
#pragma unroll
    for (int off = G / 2; off > 0; off /= 2) v = fmaxf(v, __shfl_xor_sync(0xFFFFFFFFu, v, off, G));
    return v;
  }
}

// max.NaN: the larger of a and b, NaN when either is NaN (fmaxf drops NaN).
// One instruction per element instead of an isnan test and an or.
__device__ __forceinline__ float fmax_keep_nan(float a, float b) {
  float d;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(d) : "f"(a), "f"(b));
  return d;
}

// ordered_score with NaN mapped above every number instead of below: the
// largest key of a set is then kNanHighOrderedScore exactly when the set
// holds a NaN, and score_from_ordered turns that key into NaN. A softmax
// maximum reduced this way carries the row's NaN flag with it (no second
// reduction of a flag). No float maps to the key: it would be the NaN
// 0x7FFFFFFF's image.
constexpr std::uint32_t kNanHighOrderedScore = 0xFFFFFFFFu;

__device__ __forceinline__ std::uint32_t nan_high_ordered_score(float q) {
  const std::uint32_t key = rm::flip_sign_order(__float_as_uint(q + 0.0f));  // -0 folded into +0, as ordered_score
  return isnan(q) ? kNanHighOrderedScore : key;
}

// The group's maximum, NaN when any of its lanes holds a NaN (group_max_f32
// drops NaN): with it a softmax row's NaN flag needs no reduction of its
// own. G = 32: one redux.sync over nan_high_ordered_score; narrower
// groups: xor shuffles of max.NaN. As group_max_f32, the result may be +0
// where the lanes hold -0.
template <int G>
__device__ __forceinline__ float group_max_keep_nan(float v) {
  if constexpr (G == 32) {
    return rm::score_from_ordered(__reduce_max_sync(0xFFFFFFFFu, nan_high_ordered_score(v)));
  } else {
#pragma unroll
    for (int off = G / 2; off > 0; off /= 2) v = fmax_keep_nan(v, __shfl_xor_sync(0xFFFFFFFFu, v, off, G));
    return v;
  }
}

// Whether a softmax row's sum is NaN, from the max pass alone. A term
// exp(x - row_max) is NaN exactly when x is NaN or x - row_max is inf - inf:
// x = row_max = +inf, or x = row_max = -inf (in a row without NaN, row_max
// is the largest x, so it is +inf only if some x is, and -inf only if every
// x is). A row has at least one expert, so row_has_nan_x || isinf(row_max)
// is the same flag as testing every term, without a test per term in the
// exp pass. (Where the maximum's reduction keeps the NaN, row_has_nan_x is
// isnan(row_max).)
__device__ __forceinline__ bool softmax_row_has_nan(bool row_has_nan_x, float row_max) {
  return row_has_nan_x || isinf(row_max);
}

// One selection round over a group of lanes, each offering its head entry
// (ord: the order-preserving image of q plus one, 0 for none): the largest
// ord and, among the lanes holding it, the lowest expert, which is the
// key order's winner. `taken` is set in the one lane whose entry won (none
// when no lane offered one), which then pops it.
struct RoundPick {
  std::uint32_t ord;
  std::uint32_t expert;
  bool taken;
};

template <int G>
__device__ __forceinline__ RoundPick group_round_pick(std::uint32_t ord, std::uint32_t expert) {
  const std::uint32_t best = group_max_u32<G>(ord);
  const std::uint32_t mine = ord == best ? expert : 0xFFFFFFFFu;
  const std::uint32_t winner = group_min_u32<G>(mine);
  return {best, winner, best != 0 && mine == winner};
}

// How many of lanes [0, holders) hold an entry above this lane's in the key
// order, for entries whose order among equal ords is their lanes' order (a
// lane's own expert, experts growing with the lane): ord descending, then
// lane ascending. One shuffle per holder, all independent, where rounds
// would chain two reductions each. No unroll pragma: the compiler unrolls
// a constant `holders` and keeps a variable one a loop (a pragma made the
// E <= 32 ranking kernel's variable loop twice the code).
__device__ __forceinline__ int warp_rank_by_ord(std::uint32_t ord, int holders) {
  const int lane = threadIdx.x % 32;
  int rank = 0;
  for (int src = 0; src < holders; ++src) {
    const std::uint32_t o = __shfl_sync(0xFFFFFFFFu, ord, src);
    rank += (o > ord || (o == ord && src < lane)) ? 1 : 0;
  }
  return rank;
}

// A lane's best of its P experts (the k = 1 forms): ord_of(i) as above.
// The experts are visited in increasing index order, so a strict compare
// keeps the lower index among equal keys, as the key order does.
struct LaneBest {
  std::uint32_t ord = 0u;
  std::uint32_t expert = 0xFFFFFFFFu;
  float score = 0.0f;
};

template <int P, typename OrdOf, typename ExpertOf>
__device__ __forceinline__ LaneBest lane_best(OrdOf ord_of, ExpertOf expert_of, const float (&s)[P]) {
  LaneBest best;
#pragma unroll
  for (int i = 0; i < P; ++i) {
    const std::uint32_t o = ord_of(i);
    const bool take = o > best.ord;
    best.ord = take ? o : best.ord;
    best.expert = take ? static_cast<std::uint32_t>(expert_of(i)) : best.expert;
    best.score = take ? s[i] : best.score;
  }
  return best;
}

// A row's fixed-point softmax sum over the group from each lane's
// rm::SoftmaxFixedSum: each half summed as a 32-bit integer (one redux.sync
// for G = 32, else a shuffle tree), exact while the row holds at most
// rm::kSoftmaxFixedSumMaxTerms terms (every caller's E <= 512), so the
// same number as summing the lanes' value() modulo 2^64.
template <int G>
__device__ __forceinline__ std::uint64_t group_sum_fixed(rm::SoftmaxFixedSum v) {
  if constexpr (G == 32) {
    v.high = __reduce_add_sync(0xFFFFFFFFu, v.high);
    v.low = __reduce_add_sync(0xFFFFFFFFu, v.low);
  } else {
#pragma unroll
    for (int off = G / 2; off > 0; off /= 2) {
      v.high += __shfl_xor_sync(0xFFFFFFFFu, v.high, off, G);
      v.low += __shfl_xor_sync(0xFFFFFFFFu, v.low, off, G);
    }
  }
  return v.value();
}

__device__ __forceinline__ void store_slot(const KernelParams& p, std::int64_t row, int slot,
                                           float w, std::int32_t id) {
  p.weights[row * p.weights_row_stride + slot * p.weights_col_stride] = w;
  const std::int64_t off = row * p.ids_row_stride + slot * p.ids_col_stride;
  if (p.ids_int64)
    static_cast<std::int64_t*>(p.ids)[off] = id;
  else
    static_cast<std::int32_t*>(p.ids)[off] = id;
}

// Slots j0 .. j0 + N - 1 of a row (those below k) from N registers, j0 a
// multiple of N: by 16- or 8-byte stores of weights and of ids where the
// launch found the layout for them (slots_vec4: the row starts 16-byte
// aligned, so such a run of slots is aligned too), the rest one by one. A
// lane that owns whole rows (row-per-thread, filter ranking) then writes
// each row with 2 N / 4 stores instead of 2 N, and each of those touches
// one line per lane.
template <int N>
__device__ __forceinline__ void store_slots(const KernelParams& p, std::int64_t row, int j0, const float (&w)[N],
                                            const std::int32_t (&id)[N]) {
  constexpr int kWidth = N % 4 == 0 ? 4 : N % 2 == 0 ? 2 : 1;
  int scalar_from = 0;
  if (kWidth > 1 && p.slots_vec4) {
    float* const wrow = p.weights + row * p.weights_row_stride + j0;
    std::int32_t* const irow = static_cast<std::int32_t*>(p.ids) + row * p.ids_row_stride + j0;
#pragma unroll
    for (int c = 0; c + kWidth <= N; c += kWidth) {
      if (j0 + c + kWidth > p.topk) break;
      if constexpr (kWidth == 4) {
        *reinterpret_cast<float4*>(wrow + c) = make_float4(w[c], w[c + 1], w[c + 2], w[c + 3]);
        *reinterpret_cast<int4*>(irow + c) = make_int4(id[c], id[c + 1], id[c + 2], id[c + 3]);
      } else {
        *reinterpret_cast<float2*>(wrow + c) = make_float2(w[c], w[c + 1]);
        *reinterpret_cast<int2*>(irow + c) = make_int2(id[c], id[c + 1]);
      }
      scalar_from = c + kWidth;
    }
  }
#pragma unroll
  for (int c = 0; c < N; ++c)
    if (c >= scalar_from && j0 + c < p.topk) store_slot(p, row, j0 + c, w[c], id[c]);
}

__device__ __forceinline__ bool row_is_padded(const KernelParams& p, std::int64_t row) {
  return p.is_padding != nullptr && p.is_padding[row * p.padding_stride];
}

// x = m * G rounded to fp32 (SPEC step 1). __fmul_rn keeps the compiler from
// fusing the product into a later add (x - max under softmax, or the range
// reduction inside expf), which could differ between kernels that inline
// this into different code; every path must make the same bits.
__device__ __forceinline__ float apply_multiplier(const KernelParams& p, float x) {
  return p.has_multiplier ? __fmul_rn(p.multiplier, x) : x;
}

// apply_multiplier as one multiply by the constant, for the row-per-thread
// path: without a multiplier the host passes 1 (fp32_scalars), and 1 * x
// is x bit for bit for every x (NaN stays NaN), so no test is needed.
// With the test ptxas reloaded the multiplier from the constant bank and
// predicated the product on every logit of both passes (ncu, session 35).
__device__ __forceinline__ float apply_multiplier_unconditional(const KernelParams& p, float x) {
  return __fmul_rn(p.multiplier, x);
}

}  // namespace musespark::cuda

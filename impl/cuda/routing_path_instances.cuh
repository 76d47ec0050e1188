// The definitions behind routing_path_instances.h, and InstanceLogit, the
// logit type the including translation unit builds (one of the
// MUSESPARK_INSTANCE_* definitions that impl/CMakeLists.txt gives each
// build of cuda/instances/). Included only by those sources.
#pragma once

#include "routing_path_instances.h"
#include "routing_tier_table.cuh"

namespace musespark::cuda {

#if defined(MUSESPARK_INSTANCE_FP32)
using InstanceLogit = float;
#elif defined(MUSESPARK_INSTANCE_BF16)
using InstanceLogit = __nv_bfloat16;
#elif defined(MUSESPARK_INSTANCE_FP16)
using InstanceLogit = __half;
#else
#error "cuda/instances/ sources are built once per logit type: define MUSESPARK_INSTANCE_FP32, _BF16 or _FP16"
#endif

template <typename T>
cudaError_t launch_filter_instance(const KernelParams& kp, cudaStream_t stream, bool pdl, int filter_rows) {
  return launch_filter<T>(kp, stream, pdl, filter_rows);
}

template <typename T>
cudaError_t launch_thread_row_instance(const KernelParams& kp, cudaStream_t stream, bool pdl, int lanes) {
  return launch_thread_row<T>(kp, stream, pdl, lanes);
}

template <typename T>
cudaError_t launch_block_threshold_instance(const KernelParams& kp, cudaStream_t stream, bool pdl, int pair_warps,
                                            int groups) {
  return launch_block_threshold<T>(kp, stream, pdl, pair_warps, groups);
}

template <typename T>
cudaError_t launch_block_rank_instance(const KernelParams& kp, cudaStream_t stream, bool pdl) {
  return launch_block_rank<T>(kp, stream, pdl);
}

template <typename T>
cudaError_t launch_split_row_instance(const KernelParams& kp, cudaStream_t stream, bool pdl) {
  return launch_split_row<T>(kp, stream, pdl);
}

template <typename T>
cudaError_t launch_shared_instance(const KernelParams& kp, cudaStream_t stream, bool pdl) {
  return launch_shared_path<T>(kp, stream, pdl);
}

template <typename T, std::size_t kTier>
cudaError_t launch_register_tier_instance(const KernelParams& kp, cudaStream_t stream, bool pdl, bool vec) {
  static_assert(kTier < kRegisterTierCount, "kTier indexes kRegisterTiers");
  constexpr RegisterTier t = kRegisterTiers[kTier];
  return launch_register_tier<T, t.lanes, t.experts_per_lane, t.min_blocks>(kp, stream, pdl, vec);
}

}  // namespace musespark::cuda

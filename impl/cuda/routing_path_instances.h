// The launch of each kernel path, and of each register tier, for logits of
// type T. Declared here for the dispatch (launch_routing_typed_impl in
// routing_tier_table.cuh), defined in routing_path_instances.cuh and built
// by the sources of cuda/instances/, each compiled once per logit type
// (impl/CMakeLists.txt): the kernels of one logit type in one translation
// unit took about 80 s of nvcc per architecture (sm_90a, 2 cores here),
// the register tiers 43 s of it, so a build with more cores waited on
// three long jobs. A launch with no instantiation fails to link, naming
// the function and its template arguments.
#pragma once

#include <cstddef>

#include "routing_kernel.cuh"

namespace musespark::cuda {

template <typename T>
cudaError_t launch_filter_instance(const KernelParams& kp, cudaStream_t stream, bool pdl, int filter_rows);

template <typename T>
cudaError_t launch_thread_row_instance(const KernelParams& kp, cudaStream_t stream, bool pdl, int lanes);

template <typename T>
cudaError_t launch_block_threshold_instance(const KernelParams& kp, cudaStream_t stream, bool pdl, int pair_warps,
                                            int groups);

template <typename T>
cudaError_t launch_block_rank_instance(const KernelParams& kp, cudaStream_t stream, bool pdl);

template <typename T>
cudaError_t launch_split_row_instance(const KernelParams& kp, cudaStream_t stream, bool pdl);

template <typename T>
cudaError_t launch_shared_instance(const KernelParams& kp, cudaStream_t stream, bool pdl);

// kTier: the tier's index in kRegisterTiers (routing_tier_table.cuh).
template <typename T, std::size_t kTier>
cudaError_t launch_register_tier_instance(const KernelParams& kp, cudaStream_t stream, bool pdl, bool vec);

}  // namespace musespark::cuda

// The block-per-row paths' kernels (block-threshold, block-rank, split-row)
// and the shared-memory path's, for one logit type
// (routing_path_instances.h): together about as long to build as the
// filter path alone.
#include "routing_path_instances.cuh"

namespace musespark::cuda {
template cudaError_t launch_block_threshold_instance<InstanceLogit>(const KernelParams&, cudaStream_t, bool, int, int);
template cudaError_t launch_block_rank_instance<InstanceLogit>(const KernelParams&, cudaStream_t, bool);
template cudaError_t launch_split_row_instance<InstanceLogit>(const KernelParams&, cudaStream_t, bool);
template cudaError_t launch_shared_instance<InstanceLogit>(const KernelParams&, cudaStream_t, bool);
}  // namespace musespark::cuda

// The row-per-thread path's kernels for one logit type (routing_path_instances.h).
#include "routing_path_instances.cuh"

namespace musespark::cuda {
template cudaError_t launch_thread_row_instance<InstanceLogit>(const KernelParams&, cudaStream_t, bool, int);
}  // namespace musespark::cuda

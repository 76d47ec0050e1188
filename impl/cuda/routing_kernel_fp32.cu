// The router's dispatch for float logits; the kernels it launches are built
// by cuda/instances/ (routing_path_instances.h).
#include "routing_tier_table.cuh"

namespace musespark::cuda {

cudaError_t launch_routing_fp32(const KernelParams& kp, cudaStream_t stream,
                              const LaunchOptions& options, bool pdl) {
  return launch_routing_typed_impl<float>(kp, stream, options, pdl);
}

}  // namespace musespark::cuda

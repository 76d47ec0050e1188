// Router kernel instantiations for float logits.
#include "routing_tier_table.cuh"

namespace musespark::cuda {

cudaError_t launch_routing_fp32(const KernelParams& kp, cudaStream_t stream,
                              const LaunchOptions& options, bool pdl) {
  return launch_routing_typed_impl<float>(kp, stream, options, pdl);
}

}  // namespace musespark::cuda

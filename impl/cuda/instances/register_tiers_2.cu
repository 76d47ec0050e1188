// Register tiers 2, 5, 8, ... of kRegisterTiers (every third: the three files
// took 18-22 s of nvcc each for fp32 at sm_90a), for one logit type
// (routing_path_instances.h).
#include "routing_path_instances.cuh"

namespace musespark::cuda {
template cudaError_t launch_register_tier_instance<InstanceLogit, 2>(const KernelParams&, cudaStream_t, bool, bool);
template cudaError_t launch_register_tier_instance<InstanceLogit, 5>(const KernelParams&, cudaStream_t, bool, bool);
template cudaError_t launch_register_tier_instance<InstanceLogit, 8>(const KernelParams&, cudaStream_t, bool, bool);
template cudaError_t launch_register_tier_instance<InstanceLogit, 11>(const KernelParams&, cudaStream_t, bool, bool);
template cudaError_t launch_register_tier_instance<InstanceLogit, 14>(const KernelParams&, cudaStream_t, bool, bool);
}  // namespace musespark::cuda

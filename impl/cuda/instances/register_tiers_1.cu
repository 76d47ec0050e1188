// Register tiers 1, 4, 7, ... of kRegisterTiers (every third: the three files
// took 18-22 s of nvcc each for fp32 at sm_90a), for one logit type
// (routing_path_instances.h).
#include "routing_path_instances.cuh"

namespace musespark::cuda {
template cudaError_t launch_register_tier_instance<InstanceLogit, 1>(const KernelParams&, cudaStream_t, bool, bool);
template cudaError_t launch_register_tier_instance<InstanceLogit, 4>(const KernelParams&, cudaStream_t, bool, bool);
template cudaError_t launch_register_tier_instance<InstanceLogit, 7>(const KernelParams&, cudaStream_t, bool, bool);
template cudaError_t launch_register_tier_instance<InstanceLogit, 10>(const KernelParams&, cudaStream_t, bool, bool);
template cudaError_t launch_register_tier_instance<InstanceLogit, 13>(const KernelParams&, cudaStream_t, bool, bool);
template cudaError_t launch_register_tier_instance<InstanceLogit, 16>(const KernelParams&, cudaStream_t, bool, bool);
}  // namespace musespark::cuda

// Register tiers 0, 3, 6, ... of kRegisterTiers (every third: the three files
// took 18-22 s of nvcc each for fp32 at sm_90a), for one logit type
// (routing_path_instances.h).
#include "routing_path_instances.cuh"

namespace musespark::cuda {
static_assert(kRegisterTierCount == 17,
              "kRegisterTiers changed: each tier index needs its line in one of cuda/instances/register_tiers_*.cu");
template cudaError_t launch_register_tier_instance<InstanceLogit, 0>(const KernelParams&, cudaStream_t, bool, bool);
template cudaError_t launch_register_tier_instance<InstanceLogit, 3>(const KernelParams&, cudaStream_t, bool, bool);
template cudaError_t launch_register_tier_instance<InstanceLogit, 6>(const KernelParams&, cudaStream_t, bool, bool);
template cudaError_t launch_register_tier_instance<InstanceLogit, 9>(const KernelParams&, cudaStream_t, bool, bool);
template cudaError_t launch_register_tier_instance<InstanceLogit, 12>(const KernelParams&, cudaStream_t, bool, bool);
template cudaError_t launch_register_tier_instance<InstanceLogit, 15>(const KernelParams&, cudaStream_t, bool, bool);
}  // namespace musespark::cuda

#include "musespark/route.h"

#include <string>

#include "musespark/errors.h"
#include "musespark/routing_cpu.h"

#ifdef MUSESPARK_HAVE_CUDA
#include "routing_kernel.cuh"
#endif

namespace musespark {

bool built_with_cuda() {
#ifdef MUSESPARK_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

void route(const RoutingParams& p, const RouteOptions& options) {
  if (p.device == Device::kCpu) {
    route_cpu(p);
    return;
  }
#ifdef MUSESPARK_HAVE_CUDA
  cuda::LaunchOptions launch;
  launch.enable_pdl = options.enable_pdl;
  const cudaError_t err =
      cuda::launch_routing(p, static_cast<cudaStream_t>(options.cuda_stream), launch);
  if (err != cudaSuccess)
    throw DeviceError(std::string("fused_musespark1x_routing: kernel launch failed: ") +
                      cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")");
#else
  (void)options;
  throw ArgumentError(
      "fused_musespark1x_routing: CUDA tensors given, but this build has no CUDA kernel "
      "(configure with a CUDA compiler and MUSESPARK_ENABLE_CUDA=ON)");
#endif
}

}  // namespace musespark

// A RoutingCase copied to the GPU: inputs in the same layout, destinations
// poisoned. GPU tests use it directly (graphs, PDL, forced paths); the
// registry's `cuda` implementation wraps it.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "harness/cuda_device.h"
#include "harness/routing_case.h"
#include "routing_kernel.cuh"

namespace musespark::harness {

class CudaCase {
 public:
  explicit CudaCase(const RoutingCase& c);
  // Device-side params for the case (destinations included).
  const RoutingParams& params() const { return params_; }
  // Re-poisons the destinations (before a second run).
  void poison();
  RoutingOutput read_output() const;

 private:
  const RoutingCase& case_;
  DeviceBuffer logits_, bias_, padding_, weights_, ids_;
  RoutingParams params_;
};

// Runs the kernel once on a fresh stream and returns the destinations: on
// a case uploaded here, or on one already uploaded.
RoutingOutput run_cuda_case(const RoutingCase& c, const cuda::LaunchOptions& options = {});
RoutingOutput run_cuda_case(const CudaCase& dev, const cuda::LaunchOptions& options);

}  // namespace musespark::harness

// The router's one entry point: sends a validated call to the CPU path or the
// CUDA kernel according to RoutingParams::device.
#pragma once

#include "musespark/routing_params.h"

namespace musespark {

struct RouteOptions {
  void* cuda_stream = nullptr;  // cudaStream_t; nullptr is the legacy default stream
  bool enable_pdl = true;       // programmatic dependent launch on sm_90+
};

// True when this build contains the CUDA kernel.
bool built_with_cuda();

// Throws ArgumentError for bad arguments (before anything is written) and
// DeviceError, carrying the CUDA error name, when a launch fails.
void route(const RoutingParams& p, const RouteOptions& options = {});

}  // namespace musespark

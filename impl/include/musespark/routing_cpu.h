// The CPU routing path: SPEC section 1 in fp32, row by row.
#pragma once

#include "musespark/routing_params.h"

namespace musespark {

// Validates p (device must be kCpu) and writes the [T, k] output window.
void route_cpu(const RoutingParams& p);

}  // namespace musespark

// The deterministic grid `musespark check` and the CPU grid test run: every
// register tier and the shared-memory path, each dtype and normalization,
// with distributions, layouts, padding and destinations cycled through.
#pragma once

#include <cstdint>
#include <vector>

#include "harness/routing_case.h"

namespace musespark::harness {

struct GridOptions {
  std::uint64_t seed = 1;
  std::int64_t max_experts = 4096;
  std::int64_t max_tokens = 257;
};

std::vector<CaseConfig> check_grid(const GridOptions& options = {});

}  // namespace musespark::harness

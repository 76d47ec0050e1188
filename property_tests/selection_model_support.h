// What the CPU models of the kernel's selections share: the exact top k by
// the 64-bit key order of routing_math.h, which every model's result must
// equal.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

#include "musespark/routing_math.h"

namespace musespark::testing {

// The ids of the k largest selection keys of q[0, num_experts), in slot order.
inline std::vector<int> exact_top_k(const std::vector<float>& q, int num_experts, int k) {
  std::vector<std::uint64_t> keys;
  for (int e = 0; e < num_experts; ++e)
    keys.push_back(routing_math::selection_key(q[static_cast<std::size_t>(e)], static_cast<std::uint32_t>(e)));
  std::sort(keys.begin(), keys.end(), std::greater<>());
  std::vector<int> ids;
  for (int j = 0; j < k; ++j) ids.push_back(static_cast<int>(routing_math::key_expert(keys[static_cast<std::size_t>(j)])));
  return ids;
}

}  // namespace musespark::testing

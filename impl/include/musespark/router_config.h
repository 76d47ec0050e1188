// The router's configuration as the model defines it (the seed's
// MuseSpark1xRouter constructor arguments), validated once, and its place in
// an inference engine's routing-method vocabulary.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "musespark/routing_params.h"

namespace musespark {

struct RouterConfig {
  std::int64_t top_k = 1;
  std::int64_t num_experts = 1;
  double route_scale = 1.0;
  std::optional<double> router_output_multiplier;
  std::string router_score_normalization = "sigmoid";
  std::optional<double> router_score_division_eps;
};

// Throws ArgumentError naming the first bad field and its value.
void validate_router_config(const RouterConfig& c);

// Mirrors vLLM's RoutingMethodType names. See docs/routing.md for why
// MuseSpark1x maps where it does.
enum class RoutingMethodType : std::uint8_t {
  kDefault,           // softmax -> top-k
  kRenormalize,       // top-k -> softmax
  kDeepSeekV3,        // sigmoid -> + selection bias -> top-k -> renormalize
  kLlama4,            // top-1 -> sigmoid
  kRenormalizeNaive,  // softmax -> top-k -> renormalize
  kTopK,              // top-k only
  kCustom,            // none of the above
  kUnspecified,
};

std::string_view routing_method_name(RoutingMethodType t);

// The classification inputs, as vLLM's get_routing_method_type takes them.
struct RoutingMethodQuery {
  Normalization scoring = Normalization::kSigmoid;
  std::int64_t top_k = 1;
  bool renormalize = true;
  std::optional<std::int64_t> num_expert_group;
  bool has_score_bias = true;
};

RoutingMethodType classify_routing_method(const RoutingMethodQuery& q);

// MuseSpark1x: sigmoid or softmax scoring, renormalized, with a selection
// bias and no expert groups.
RoutingMethodType routing_method_type(const RouterConfig& c);

}  // namespace musespark

#include "musespark/router_config.h"

#include <cmath>
#include <sstream>

#include "musespark/errors.h"

namespace musespark {
namespace {

template <typename... Parts>
[[noreturn]] void fail(const Parts&... parts) {
  throw_argument_error("MuseSpark1xRouter", parts...);
}

void check_finite(const char* name, double v) {
  if (!std::isfinite(v)) fail(name, " must be finite, got ", v);
}

}  // namespace

void validate_router_config(const RouterConfig& c) {
  if (c.num_experts < 1) fail("num_experts must be >= 1, got ", c.num_experts);
  if (c.top_k < 1 || c.top_k > c.num_experts)
    fail("top_k must be in [1, num_experts=", c.num_experts, "], got ", c.top_k);
  parse_normalization(c.router_score_normalization);
  check_finite("route_scale", c.route_scale);
  if (c.router_output_multiplier) check_finite("router_output_multiplier", *c.router_output_multiplier);
  if (c.router_score_division_eps) check_finite("router_score_division_eps", *c.router_score_division_eps);
}

std::string_view routing_method_name(RoutingMethodType t) {
  switch (t) {
    case RoutingMethodType::kDefault: return "Default";
    case RoutingMethodType::kRenormalize: return "Renormalize";
    case RoutingMethodType::kDeepSeekV3: return "DeepSeekV3";
    case RoutingMethodType::kLlama4: return "Llama4";
    case RoutingMethodType::kRenormalizeNaive: return "RenormalizeNaive";
    case RoutingMethodType::kTopK: return "TopK";
    case RoutingMethodType::kCustom: return "Custom";
    case RoutingMethodType::kUnspecified: return "Unspecified";
  }
  return "Unspecified";
}

RoutingMethodType classify_routing_method(const RoutingMethodQuery& q) {
  const bool grouped = q.num_expert_group.has_value() && *q.num_expert_group > 1;
  if (q.scoring == Normalization::kSigmoid) {
    // Sigmoid scores plus a selection bias, renormalized over the top-k, is
    // DeepSeek-V3's scheme; a single expert group is its degenerate case.
    if (q.has_score_bias && q.renormalize) return RoutingMethodType::kDeepSeekV3;
    if (!q.renormalize && q.top_k == 1 && !grouped) return RoutingMethodType::kLlama4;
    return RoutingMethodType::kCustom;
  }
  if (grouped) return RoutingMethodType::kCustom;
  // No softmax method of the vocabulary has a selection bias: a kernel chosen
  // for RenormalizeNaive would drop it and route differently.
  if (q.has_score_bias) return RoutingMethodType::kCustom;
  return q.renormalize ? RoutingMethodType::kRenormalizeNaive : RoutingMethodType::kDefault;
}

RoutingMethodType routing_method_type(const RouterConfig& c) {
  validate_router_config(c);
  return classify_routing_method(RoutingMethodQuery{
      parse_normalization(c.router_score_normalization), c.top_k, true, std::nullopt, true});
}

}  // namespace musespark

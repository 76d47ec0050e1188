#include "router.h"

#include <sstream>

#include "fused_routing.h"
#include "musespark/errors.h"

namespace musespark::torch_adapter {

MuseSpark1xRouter::MuseSpark1xRouter(RouterConfig config, at::Tensor expert_bias)
    : config_(std::move(config)), expert_bias_(std::move(expert_bias)) {
  validate_router_config(config_);
  if (expert_bias_.dim() != 1 || expert_bias_.size(0) != config_.num_experts) {
    std::ostringstream os;
    os << "MuseSpark1xRouter: expert_bias must have shape [" << config_.num_experts << "], got "
       << expert_bias_.sizes();
    throw ArgumentError(os.str());
  }
}

std::tuple<at::Tensor, at::Tensor> MuseSpark1xRouter::compute_routing(
    const at::Tensor& router_logits, std::optional<at::ScalarType> indices_type,
    std::optional<at::Tensor> is_padding) const {
  if (router_logits.dim() == 2 && router_logits.size(1) != config_.num_experts) {
    std::ostringstream os;
    os << "MuseSpark1xRouter: router_logits has " << router_logits.size(1)
       << " experts, the router was built for " << config_.num_experts;
    throw ArgumentError(os.str());
  }
  const at::Tensor bias = expert_bias_.device() == router_logits.device()
                              ? expert_bias_
                              : expert_bias_.to(router_logits.device());
  return fused_musespark1x_routing(router_logits, bias, config_.top_k, config_.route_scale,
                                   config_.router_output_multiplier,
                                   config_.router_score_normalization,
                                   config_.router_score_division_eps, std::nullopt, std::nullopt,
                                   is_padding, indices_type.value_or(at::kInt));
}

}  // namespace musespark::torch_adapter

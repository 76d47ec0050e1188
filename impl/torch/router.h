// The seed's MuseSpark1xRouter over LibTorch tensors: validates its
// configuration once, then routes CUDA tensors through the kernel and CPU
// tensors through the CPU path.
#pragma once

#include <ATen/ATen.h>

#include <optional>
#include <tuple>

#include "musespark/router_config.h"

namespace musespark::torch_adapter {

class MuseSpark1xRouter {
 public:
  MuseSpark1xRouter(RouterConfig config, at::Tensor expert_bias);

  const RouterConfig& config() const { return config_; }
  RoutingMethodType routing_method_type() const { return musespark::routing_method_type(config_); }

  // indices_type: int32 (default) or int64; ids are written in that type
  // directly, with no conversion pass.
  std::tuple<at::Tensor, at::Tensor> compute_routing(
      const at::Tensor& router_logits,
      std::optional<at::ScalarType> indices_type = std::nullopt,
      std::optional<at::Tensor> is_padding = std::nullopt) const;

 private:
  RouterConfig config_;
  at::Tensor expert_bias_;
};

}  // namespace musespark::torch_adapter

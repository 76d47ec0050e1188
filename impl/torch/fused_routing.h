// LibTorch adapter: the seed's call shape over the framework-neutral core.
// Tensors are checked here (tensor_checks.cpp), mapped to RoutingParams, and
// handed to musespark::route() on the tensors' device and current stream.
#pragma once

#include <ATen/ATen.h>

#include <optional>
#include <string>
#include <tuple>

namespace musespark::torch_adapter {

// Returns views of the [T, k] windows of topk_weights / topk_ids (allocated
// when not given). Passing both destinations keeps the call allocation-free
// and CUDA-graph capturable (with an fp32 bias; other bias dtypes are
// converted, which allocates).
std::tuple<at::Tensor, at::Tensor> fused_musespark1x_routing(
    const at::Tensor& gating_output, const at::Tensor& bias, std::int64_t topk,
    double route_scale, std::optional<double> router_output_multiplier = std::nullopt,
    const std::string& router_score_normalization = "sigmoid",
    std::optional<double> router_score_division_eps = std::nullopt,
    std::optional<at::Tensor> topk_weights = std::nullopt,
    std::optional<at::Tensor> topk_ids = std::nullopt,
    std::optional<at::Tensor> is_padding = std::nullopt,
    at::ScalarType ids_dtype = at::kInt);

}  // namespace musespark::torch_adapter

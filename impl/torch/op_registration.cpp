// torch.ops.musespark.fused_musespark1x_routing, for Python:
//   torch.ops.load_library("build/gpu/impl/libmusespark_torch_ops.so")
//   w, ids = torch.ops.musespark.fused_musespark1x_routing(logits, bias, 8, 2.5, ...)
#include <torch/library.h>

#include "fused_routing.h"

namespace {

// LibTorch 1.13 passes c10::optional; 2.x aliases it to std::optional.
template <typename T>
std::optional<T> to_std(const c10::optional<T>& v) {
  return v.has_value() ? std::optional<T>(*v) : std::nullopt;
}

std::tuple<at::Tensor, at::Tensor> op(const at::Tensor& gating_output, const at::Tensor& bias,
                                      std::int64_t topk, double route_scale,
                                      c10::optional<double> multiplier,
                                      c10::string_view normalization, c10::optional<double> eps,
                                      const c10::optional<at::Tensor>& topk_weights,
                                      const c10::optional<at::Tensor>& topk_ids,
                                      const c10::optional<at::Tensor>& is_padding) {
  return musespark::torch_adapter::fused_musespark1x_routing(
      gating_output, bias, topk, route_scale, to_std(multiplier), std::string(normalization),
      to_std(eps), to_std(topk_weights), to_std(topk_ids), to_std(is_padding));
}

}  // namespace

TORCH_LIBRARY(musespark, m) {
  m.def(
      "fused_musespark1x_routing(Tensor gating_output, Tensor bias, int topk, float route_scale, "
      "float? router_output_multiplier=None, str router_score_normalization='sigmoid', "
      "float? router_score_division_eps=None, Tensor(a!)? topk_weights=None, "
      "Tensor(b!)? topk_ids=None, Tensor? is_padding=None) -> (Tensor, Tensor)",
      &op);
}

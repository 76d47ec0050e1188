// The seed's native recipe (sigmoid/softmax in the logits' dtype, torch.topk,
// gather, renormalize) written with LibTorch ops, on CUDA when a device is
// there and on the CPU otherwise. It is a baseline, not held to the
// contract: on 16-bit logits it computes the scores in 16-bit, and torch.topk
// promises no tie order. The recipe has no padding argument; the harness
// applies the mask afterwards as the seed's kernel does, so that padded rows
// do not hide everything else.
#include <ATen/ATen.h>

#include "harness/implementations.h"

namespace musespark::harness {
namespace {

at::ScalarType torch_dtype(DType t) {
  switch (t) {
    case DType::kBFloat16: return at::kBFloat16;
    case DType::kFloat16: return at::kHalf;
    default: return at::kFloat;
  }
}

class TorchRecipeImplementation final : public Implementation {
 public:
  std::string name() const override { return "torch-recipe"; }
  std::string description() const override {
    return std::string("seed's torch recipe on ") + (at::hasCUDA() ? "CUDA" : "CPU") + " (baseline)";
  }
  std::string unavailable_reason() const override { return {}; }
  bool is_baseline() const override { return true; }

  RoutingOutput run(const RoutingCase& c) const override {
    const CaseConfig& cfg = c.config();
    HostDestinations dest(c);
    if (cfg.tokens > 0) {
      const at::Device device = at::hasCUDA() ? at::Device(at::kCUDA) : at::Device(at::kCPU);
      const std::int64_t storage_elems =
          static_cast<std::int64_t>(c.logits_bytes().size() / dtype_size(cfg.logits_dtype));
      at::Tensor storage = at::from_blob(const_cast<std::uint8_t*>(c.logits_bytes().data()), {storage_elems},
                                         at::TensorOptions().dtype(torch_dtype(cfg.logits_dtype)))
                               .to(device);
      at::Tensor g = storage.as_strided({cfg.tokens, cfg.experts}, {c.logits_row_stride(), c.logits_col_stride()});
      at::Tensor bias = at::from_blob(const_cast<float*>(c.bias().data()), {cfg.experts}, at::kFloat).to(device);

      if (cfg.multiplier) g = g * *cfg.multiplier;
      g = cfg.normalization == Normalization::kSigmoid ? at::sigmoid(g) : at::softmax(g, -1);
      const at::Tensor scores_for_topk = g + bias;
      at::Tensor ids = std::get<1>(at::topk(scores_for_topk, cfg.topk, -1));
      at::Tensor w = at::gather(g, 1, ids);
      at::Tensor denom = w.sum(-1, true);
      if (cfg.eps) denom = denom + *cfg.eps;
      w = (w / denom * cfg.route_scale).to(at::kFloat);

      if (cfg.padding != PaddingMode::kNone) {
        at::Tensor pad = at::from_blob(const_cast<std::uint8_t*>(c.padding_bytes().data()),
                                       {cfg.tokens}, {cfg.padding_stride}, at::kBool)
                             .to(device)
                             .unsqueeze(1);
        ids = at::where(pad, at::full_like(ids, -1), ids);
        w = at::where(pad, at::zeros_like(w), w);
      }
      const at::Tensor w_host = w.cpu().contiguous();
      const at::Tensor ids_host = ids.to(at::kLong).cpu().contiguous();
      const float* wp = w_host.data_ptr<float>();
      const std::int64_t* ip = ids_host.data_ptr<std::int64_t>();
      const bool wide = cfg.ids_dtype == DType::kInt64;
      for (std::int64_t t = 0; t < cfg.tokens; ++t) {
        for (std::int64_t j = 0; j < cfg.topk; ++j) {
          const std::int64_t at_dest = t * c.dest_cols() + j, at_src = t * cfg.topk + j;
          dest.weights[at_dest] = wp[at_src];
          if (wide) std::memcpy(&dest.ids[at_dest * 8], &ip[at_src], 8);
          else {
            const std::int32_t v = static_cast<std::int32_t>(ip[at_src]);
            std::memcpy(&dest.ids[at_dest * 4], &v, 4);
          }
        }
      }
    }
    return dest.to_output(c);
  }
};

}  // namespace

ImplementationPtr make_torch_recipe_implementation() {
  return std::make_shared<TorchRecipeImplementation>();
}

}  // namespace musespark::harness

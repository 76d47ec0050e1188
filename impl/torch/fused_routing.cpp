#include "fused_routing.h"

#include <sstream>

#include "musespark/errors.h"
#include "musespark/route.h"

#ifdef MUSESPARK_TORCH_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace musespark::torch_adapter {
namespace {

template <typename... Parts>
[[noreturn]] void fail(const Parts&... parts) {
  throw_argument_error("fused_musespark1x_routing", parts...);
}

DType logits_dtype_of(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kFloat: return DType::kFloat32;
    case at::kBFloat16: return DType::kBFloat16;
    case at::kHalf: return DType::kFloat16;
    default: fail("gating_output dtype must be float32, bfloat16 or float16, got ", t.scalar_type());
  }
}

void check_same_device(const char* name, const at::Tensor& t, const at::Tensor& logits) {
  if (t.device() != logits.device())
    fail(name, " is on ", t.device(), " but gating_output is on ", logits.device());
}

at::Tensor checked_bias(const at::Tensor& bias, const at::Tensor& logits) {
  check_same_device("bias", bias, logits);
  if (bias.dim() != 1) fail("bias must be 1-D [num_experts], got ", bias.dim(), "-D");
  if (bias.size(0) != logits.size(1))
    fail("bias has ", bias.size(0), " entries but gating_output has ", logits.size(1), " experts");
  if (!at::isFloatingType(bias.scalar_type()))
    fail("bias dtype must be a float type, got ", bias.scalar_type());
  if (bias.numel() > 1 && bias.stride(0) != 1)
    fail("bias must be contiguous, got stride ", bias.stride(0));
  // bf16/fp16 widen exactly; float64 would round, so it is refused.
  if (bias.scalar_type() == at::kDouble) fail("bias dtype float64 cannot be converted to fp32 exactly");
  return bias.scalar_type() == at::kFloat ? bias : bias.to(at::kFloat);
}

at::Tensor destination(const std::optional<at::Tensor>& given, const char* name,
                       at::ScalarType want, bool allow_int64, const at::Tensor& logits,
                       std::int64_t topk) {
  if (!given) return at::empty({logits.size(0), topk}, logits.options().dtype(want));
  const at::Tensor& t = *given;
  check_same_device(name, t, logits);
  if (t.dim() != 2) fail(name, " must be 2-D, got ", t.dim(), "-D");
  const bool ok = t.scalar_type() == want || (allow_int64 && t.scalar_type() == at::kLong);
  if (!ok) fail(name, " dtype must be ", want, allow_int64 ? " or int64" : "", ", got ", t.scalar_type());
  return t;
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> fused_musespark1x_routing(
    const at::Tensor& gating_output, const at::Tensor& bias, std::int64_t topk,
    double route_scale, std::optional<double> router_output_multiplier,
    const std::string& router_score_normalization, std::optional<double> router_score_division_eps,
    std::optional<at::Tensor> topk_weights, std::optional<at::Tensor> topk_ids,
    std::optional<at::Tensor> is_padding, at::ScalarType ids_dtype) {
  if (gating_output.dim() != 2) fail("gating_output must be 2-D [tokens, experts], got ", gating_output.dim(), "-D");
  const Normalization norm = parse_normalization(router_score_normalization);
  if (ids_dtype != at::kInt && ids_dtype != at::kLong) fail("index dtype must be int32 or int64, got ", ids_dtype);
  const std::int64_t T = gating_output.size(0), E = gating_output.size(1);
  if (topk < 1 || topk > E) fail("topk must be in [1, num_experts=", E, "], got ", topk);

  const at::Tensor bias32 = checked_bias(bias, gating_output);
  const at::Tensor w = destination(topk_weights, "topk_weights", at::kFloat, false, gating_output, topk);
  const at::Tensor ids = destination(topk_ids, "topk_ids", ids_dtype, true, gating_output, topk);

  RoutingParams p;
  p.logits = gating_output.data_ptr();
  p.logits_dtype = logits_dtype_of(gating_output);
  p.logits_row_stride = gating_output.stride(0);
  p.logits_col_stride = gating_output.stride(1);
  p.num_tokens = T;
  p.num_experts = E;
  p.bias = bias32.data_ptr<float>();
  p.topk = topk;
  p.normalization = norm;
  p.route_scale = route_scale;
  p.multiplier = router_output_multiplier;
  p.eps = router_score_division_eps;
  if (is_padding) {
    const at::Tensor& pad = *is_padding;
    check_same_device("is_padding", pad, gating_output);
    if (pad.dim() != 1 || pad.size(0) != T)
      fail("is_padding must have shape [", T, "], got ", pad.sizes());
    if (pad.scalar_type() != at::kBool) fail("is_padding dtype must be bool, got ", pad.scalar_type());
    p.is_padding = pad.data_ptr<bool>();
    p.padding_stride = pad.stride(0);
  }
  p.weights = w.data_ptr<float>();
  p.weights_rows = w.size(0);
  p.weights_cols = w.size(1);
  p.weights_row_stride = w.stride(0);
  p.weights_col_stride = w.stride(1);
  p.ids = ids.data_ptr();
  p.ids_dtype = ids.scalar_type() == at::kLong ? DType::kInt64 : DType::kInt32;
  p.ids_rows = ids.size(0);
  p.ids_cols = ids.size(1);
  p.ids_row_stride = ids.stride(0);
  p.ids_col_stride = ids.stride(1);

  RouteOptions options;
  if (gating_output.is_cuda()) {
#ifdef MUSESPARK_TORCH_CUDA
    p.device = Device::kCuda;
    const c10::cuda::CUDAGuard guard(gating_output.device());
    options.cuda_stream = c10::cuda::getCurrentCUDAStream().stream();
    route(p, options);
#else
    fail("CUDA tensors given, but this adapter was built without CUDA");
#endif
  } else if (gating_output.is_cpu()) {
    p.device = Device::kCpu;
    route(p, options);
  } else {
    fail("gating_output is on ", gating_output.device(), "; only CPU and CUDA are supported");
  }
  return {w.narrow(0, 0, T).narrow(1, 0, topk), ids.narrow(0, 0, T).narrow(1, 0, topk)};
}

}  // namespace musespark::torch_adapter

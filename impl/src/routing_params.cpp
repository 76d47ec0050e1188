#include "musespark/routing_params.h"

#include <cmath>
#include <limits>
#include <sstream>

#include "musespark/errors.h"
#include "musespark/routing_math.h"

namespace musespark {
namespace {

template <typename... Parts>
[[noreturn]] void fail(const Parts&... parts) {
  throw_argument_error("fused_musespark1x_routing", parts...);
}

void check_scalar(const char* name, double v) {
  if (!std::isfinite(v)) fail(name, " must be finite, got ", v);
  if (std::fabs(v) > static_cast<double>(std::numeric_limits<float>::max()))
    fail(name, " = ", v, " is outside the fp32 range the kernels compute in");
}

// A [rows, cols] strided window writes each element once only if, ordering the
// dimensions by stride, the outer stride steps over the whole inner extent.
void check_destination(const char* name, std::int64_t rows, std::int64_t cols,
                       std::int64_t row_stride, std::int64_t col_stride,
                       std::int64_t need_rows, std::int64_t need_cols) {
  if (rows < need_rows || cols < need_cols)
    fail(name, " has shape [", rows, ", ", cols, "], needs at least [", need_rows, ", ",
         need_cols, "]");
  if (row_stride < 0 || col_stride < 0)
    fail(name, " strides must be >= 0, got (", row_stride, ", ", col_stride, ")");
  const std::int64_t n_rows = need_rows, n_cols = need_cols;
  const bool rows_matter = n_rows > 1, cols_matter = n_cols > 1;
  bool ok = true;
  if (rows_matter && cols_matter) {
    ok = (col_stride >= 1 && row_stride >= col_stride * n_cols) ||
         (row_stride >= 1 && col_stride >= row_stride * n_rows);
  } else if (rows_matter) {
    ok = row_stride >= 1;
  } else if (cols_matter) {
    ok = col_stride >= 1;
  }
  if (!ok)
    fail(name, " strides (", row_stride, ", ", col_stride,
         ") make elements of the [", n_rows, ", ", n_cols, "] output window overlap");
}

}  // namespace

std::string_view normalization_name(Normalization n) {
  return n == Normalization::kSigmoid ? "sigmoid" : "softmax";
}

Normalization parse_normalization(std::string_view name) {
  if (name == "sigmoid") return Normalization::kSigmoid;
  if (name == "softmax") return Normalization::kSoftmax;
  fail("router_score_normalization must be 'sigmoid' or 'softmax', got '", name, "'");
}

std::optional<DType> logits_dtype_named(std::string_view name) {
  for (DType t : {DType::kFloat32, DType::kBFloat16, DType::kFloat16})
    if (name == dtype_name(t)) return t;
  return std::nullopt;
}

void validate_routing_params(const RoutingParams& p) {
  if (p.num_tokens < 0) fail("num_tokens must be >= 0, got ", p.num_tokens);
  if (p.num_experts < 1) fail("num_experts must be >= 1, got ", p.num_experts);
  if (p.num_experts > routing_math::kMaxFixedPointExperts)
    fail("num_experts = ", p.num_experts, " exceeds the supported maximum ",
         routing_math::kMaxFixedPointExperts);
  if (p.topk < 1 || p.topk > p.num_experts)
    fail("topk must be in [1, num_experts=", p.num_experts, "], got ", p.topk);
  switch (p.logits_dtype) {
    case DType::kFloat32: case DType::kBFloat16: case DType::kFloat16: break;
    default: fail("gating_output dtype must be float32, bfloat16 or float16, got ",
                  dtype_name(p.logits_dtype));
  }
  if (p.ids_dtype != DType::kInt32 && p.ids_dtype != DType::kInt64)
    fail("topk_ids dtype must be int32 or int64, got ", dtype_name(p.ids_dtype));
  if (p.logits_row_stride < 0 || p.logits_col_stride < 0)
    fail("gating_output strides must be >= 0, got (", p.logits_row_stride, ", ",
         p.logits_col_stride, ")");
  if (p.padding_stride < 0) fail("is_padding stride must be >= 0, got ", p.padding_stride);
  check_scalar("route_scale", p.route_scale);
  if (p.multiplier) check_scalar("router_output_multiplier", *p.multiplier);
  if (p.eps) check_scalar("router_score_division_eps", *p.eps);
  check_destination("topk_weights", p.weights_rows, p.weights_cols, p.weights_row_stride,
                    p.weights_col_stride, p.num_tokens, p.topk);
  check_destination("topk_ids", p.ids_rows, p.ids_cols, p.ids_row_stride, p.ids_col_stride,
                    p.num_tokens, p.topk);
  if (p.num_tokens > 0) {
    if (p.logits == nullptr) fail("gating_output is null with num_tokens = ", p.num_tokens);
    if (p.weights == nullptr) fail("topk_weights is null with num_tokens = ", p.num_tokens);
    if (p.ids == nullptr) fail("topk_ids is null with num_tokens = ", p.num_tokens);
    if (p.bias == nullptr) fail("bias is null");
  }
}

void set_contiguous_outputs(RoutingParams& p, float* weights, void* ids, DType ids_dtype) {
  p.weights = weights;
  p.weights_rows = p.num_tokens;
  p.weights_cols = p.topk;
  p.weights_row_stride = p.topk;
  p.weights_col_stride = 1;
  p.ids = ids;
  p.ids_dtype = ids_dtype;
  p.ids_rows = p.num_tokens;
  p.ids_cols = p.topk;
  p.ids_row_stride = p.topk;
  p.ids_col_stride = 1;
}

RoutingParams shape_only_params(std::int64_t tokens, std::int64_t experts, std::int64_t topk, DType logits_dtype,
                                Normalization normalization, const void* logits, void* stand_in) {
  RoutingParams p;
  p.device = Device::kCuda;
  p.logits = logits;
  p.logits_dtype = logits_dtype;
  p.logits_row_stride = experts;
  p.num_tokens = tokens;
  p.num_experts = experts;
  p.bias = static_cast<const float*>(stand_in);
  p.topk = topk;
  p.normalization = normalization;
  set_contiguous_outputs(p, static_cast<float*>(stand_in), stand_in, DType::kInt32);
  return p;
}

}  // namespace musespark

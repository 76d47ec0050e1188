// The framework-neutral description of one routing call: raw pointers, shapes,
// element strides and dtype tags. Every implementation (CPU, CUDA, adapters)
// consumes exactly this, so validation lives in one place.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "musespark/dtype.h"

namespace musespark {

enum class Normalization : std::uint8_t { kSigmoid, kSoftmax };

std::string_view normalization_name(Normalization n);
// Throws ArgumentError naming the value for anything but "sigmoid"/"softmax".
Normalization parse_normalization(std::string_view name);

// The logits dtype named "float32", "bfloat16" or "float16"; nullopt for any
// other name (the caller's error names its flag).
std::optional<DType> logits_dtype_named(std::string_view name);

enum class Device : std::uint8_t { kCpu, kCuda };

struct RoutingParams {
  // Logits G: [num_tokens, num_experts] of logits_dtype (fp32, bf16, fp16).
  // Strides are in elements and may be anything >= 0 (views, transposes).
  const void* logits = nullptr;
  DType logits_dtype = DType::kFloat32;
  std::int64_t logits_row_stride = 0;
  std::int64_t logits_col_stride = 1;
  std::int64_t num_tokens = 0;   // T
  std::int64_t num_experts = 0;  // E

  // Selection bias b: [num_experts] fp32, contiguous; never reaches the weights.
  const float* bias = nullptr;

  std::int64_t topk = 1;  // k, 1 <= k <= E
  Normalization normalization = Normalization::kSigmoid;

  // Scalars as the caller gave them; implementations round them to fp32.
  double route_scale = 1.0;                // s
  std::optional<double> multiplier;        // m ("metap"), applied to logits
  std::optional<double> eps;               // added to the selected-score sum

  // Padding mask P: [num_tokens] bool with element stride; nullptr = none.
  const bool* is_padding = nullptr;
  std::int64_t padding_stride = 1;

  // Weights W: [weights_rows >= T, weights_cols >= k] fp32, element strides.
  float* weights = nullptr;
  std::int64_t weights_rows = 0;
  std::int64_t weights_cols = 0;
  std::int64_t weights_row_stride = 0;
  std::int64_t weights_col_stride = 1;

  // Ids I: [ids_rows >= T, ids_cols >= k] of ids_dtype (int32 or int64).
  void* ids = nullptr;
  DType ids_dtype = DType::kInt32;
  std::int64_t ids_rows = 0;
  std::int64_t ids_cols = 0;
  std::int64_t ids_row_stride = 0;
  std::int64_t ids_col_stride = 1;

  // Where every pointer above lives; mixing devices is an error.
  Device device = Device::kCpu;
};

// The scalars rounded once to the fp32 the kernels compute in.
struct RoutingScalars {
  float route_scale;
  float multiplier;  // 1 without one: the row-per-thread kernels multiply unconditionally
  float eps;
  bool has_multiplier;
  bool has_eps;
};

inline RoutingScalars fp32_scalars(const RoutingParams& p) {
  return RoutingScalars{static_cast<float>(p.route_scale),
                        p.multiplier ? static_cast<float>(*p.multiplier) : 1.0f,
                        p.eps ? static_cast<float>(*p.eps) : 0.0f, p.multiplier.has_value(),
                        p.eps.has_value()};
}

// Checks every field and throws ArgumentError naming the first bad one and
// its value. Nothing is read through the pointers except nothing: validation
// is pure metadata, so it is safe on device pointers.
void validate_routing_params(const RoutingParams& p);

// Fills the destination fields for a contiguous [T, k] pair of buffers.
void set_contiguous_outputs(RoutingParams& p, float* weights, void* ids, DType ids_dtype);

// A CUDA call of the given shape, contiguous, with `logits` as the logits
// and `stand_in` as the bias and both destinations (int32 ids): for
// questions about a call that read its shape and the pointers' alignment
// but no data (cuda::chosen_path: `musespark path`, the tier table's test).
RoutingParams shape_only_params(std::int64_t tokens, std::int64_t experts, std::int64_t topk, DType logits_dtype,
                                Normalization normalization, const void* logits, void* stand_in);

}  // namespace musespark

#include "musespark/routing_cpu.h"

#include <algorithm>
#include <functional>
#include <vector>

#include "musespark/errors.h"
#include "musespark/routing_math.h"

namespace musespark {
namespace {

namespace rm = routing_math;

void write_row(const RoutingParams& p, std::int64_t t, std::int64_t slot, float w,
               std::int32_t id) {
  p.weights[t * p.weights_row_stride + slot * p.weights_col_stride] = w;
  const std::int64_t off = t * p.ids_row_stride + slot * p.ids_col_stride;
  if (p.ids_dtype == DType::kInt64)
    static_cast<std::int64_t*>(p.ids)[off] = id;
  else
    static_cast<std::int32_t*>(p.ids)[off] = id;
}

// Unbiased scores of one row into `scores`.
void normalized_scores(const RoutingParams& p, const RoutingScalars& s, std::int64_t t,
                       std::vector<float>& scores) {
  const std::int64_t E = p.num_experts;
  for (std::int64_t e = 0; e < E; ++e) {
    float x = load_logit(p.logits, p.logits_dtype, t * p.logits_row_stride + e * p.logits_col_stride);
    scores[e] = s.has_multiplier ? s.multiplier * x : x;
  }
  if (p.normalization == Normalization::kSigmoid) {
    for (std::int64_t e = 0; e < E; ++e) scores[e] = rm::sigmoid(scores[e]);
    return;
  }
  // Max ignoring NaN (a NaN poisons the sum below instead).
  float mx = -INFINITY;
  bool any_nan = false;
  for (std::int64_t e = 0; e < E; ++e) {
    if (std::isnan(scores[e])) any_nan = true;
    else mx = std::max(mx, scores[e]);
  }
  std::uint64_t fixed = 0;
  for (std::int64_t e = 0; e < E; ++e) {
    scores[e] = rm::exp_f32(scores[e] - mx);
    if (std::isnan(scores[e])) any_nan = true;
    else fixed += rm::softmax_term_fixed(scores[e]);
  }
  const float sum = any_nan ? NAN : rm::softmax_sum_from_fixed(fixed);
  for (std::int64_t e = 0; e < E; ++e) scores[e] = rm::softmax_share(scores[e], sum);
}

}  // namespace

void route_cpu(const RoutingParams& p) {
  validate_routing_params(p);
  if (p.device != Device::kCpu) throw ArgumentError("route_cpu: tensors are not on the CPU");
  const RoutingScalars s = fp32_scalars(p);
  const std::int64_t E = p.num_experts, k = p.topk;
  std::vector<float> scores(static_cast<std::size_t>(E));
  std::vector<std::uint64_t> keys(static_cast<std::size_t>(E));
  for (std::int64_t t = 0; t < p.num_tokens; ++t) {
    if (p.is_padding != nullptr && p.is_padding[t * p.padding_stride]) {
      for (std::int64_t j = 0; j < k; ++j) write_row(p, t, j, 0.0f, -1);
      continue;
    }
    normalized_scores(p, s, t, scores);
    for (std::int64_t e = 0; e < E; ++e)
      keys[e] = rm::selection_key(scores[e] + p.bias[e], static_cast<std::uint32_t>(e));
    std::partial_sort(keys.begin(), keys.begin() + k, keys.end(), std::greater<>());
    float sum = 0.0f;
    for (std::int64_t j = 0; j < k; ++j) sum += scores[rm::key_expert(keys[j])];
    const float denominator = rm::weight_denominator(sum, s.has_eps, s.eps);
    for (std::int64_t j = 0; j < k; ++j) {
      const std::uint32_t e = rm::key_expert(keys[j]);
      write_row(p, t, j, rm::routing_weight(scores[e], denominator, s.route_scale), static_cast<std::int32_t>(e));
    }
  }
}

}  // namespace musespark

#include "reference/routing_reference.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace musespark::reference {

bool ranks_before(double qa, std::int32_t a, double qb, std::int32_t b) {
  const bool a_nan = std::isnan(qa), b_nan = std::isnan(qb);
  if (a_nan != b_nan) return b_nan;
  if (!a_nan && qa != qb) return qa > qb;
  return a < b;
}

RoutingReference::RoutingReference(const RoutingParams& inputs) : in_(inputs) {}

TokenDecision RoutingReference::token(std::int64_t t) const {
  const std::int64_t E = in_.num_experts, k = in_.topk;
  TokenDecision d;
  d.padded = in_.is_padding != nullptr && in_.is_padding[t * in_.padding_stride];
  if (d.padded) {
    d.ids.assign(k, -1);
    d.weights.assign(k, 0.0);
    return d;
  }

  d.x.resize(E);
  for (std::int64_t e = 0; e < E; ++e) {
    const double g = load_logit(in_.logits, in_.logits_dtype,
                                t * in_.logits_row_stride + e * in_.logits_col_stride);
    d.x[e] = in_.multiplier ? *in_.multiplier * g : g;
  }

  d.p.resize(E);
  if (in_.normalization == Normalization::kSigmoid) {
    for (std::int64_t e = 0; e < E; ++e) d.p[e] = 1.0 / (1.0 + std::exp(-d.x[e]));
  } else {
    double mx = -INFINITY;
    for (double v : d.x) mx = std::fmax(mx, v);  // fmax skips NaN; NaN then poisons the sum
    double sum = 0.0;
    for (std::int64_t e = 0; e < E; ++e) sum += (d.p[e] = std::exp(d.x[e] - mx));
    for (double& v : d.p) v /= sum;
  }

  d.q.resize(E);
  for (std::int64_t e = 0; e < E; ++e) d.q[e] = d.p[e] + static_cast<double>(in_.bias[e]);

  d.ranking.resize(E);
  std::iota(d.ranking.begin(), d.ranking.end(), 0);
  std::sort(d.ranking.begin(), d.ranking.end(), [&](std::int32_t a, std::int32_t b) {
    return ranks_before(d.q[a], a, d.q[b], b);
  });
  d.ids.assign(d.ranking.begin(), d.ranking.begin() + k);
  d.weights = weights_for(d, d.ids);

  const std::int64_t n_sorted = std::min(E, k + 1);
  for (std::int64_t j = 0; j < n_sorted; ++j) d.sorted_q.push_back(d.q[d.ranking[j]]);
  for (std::int64_t j = 0; j + 1 < n_sorted; ++j) d.gaps.push_back(d.sorted_q[j] - d.sorted_q[j + 1]);
  return d;
}

std::vector<double> RoutingReference::weights_for(const TokenDecision& d,
                                                  std::span<const std::int32_t> ids) const {
  double sum = 0.0;
  for (std::int32_t e : ids) sum += d.p[e];
  const double denom = sum + (in_.eps ? *in_.eps : 0.0);
  std::vector<double> w;
  w.reserve(ids.size());
  for (std::int32_t e : ids) w.push_back(in_.route_scale * d.p[e] / denom);
  return w;
}

}  // namespace musespark::reference

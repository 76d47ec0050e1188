#include "harness/tolerance.h"

#include <cmath>
#include <limits>

namespace musespark::harness {

TokenTolerance derive_tolerance(const reference::TokenDecision& d, const RoutingParams& in) {
  constexpr double u = kUnitRoundoff;
  const std::size_t E = d.x.size();
  const double x_rel = in.multiplier ? 2.0 * u : 0.0;
  TokenTolerance tol;
  tol.score_rel.assign(E, 0.0);
  tol.q_abs.assign(E, 0.0);
  for (double x : d.x)
    if (std::isfinite(x) && std::fabs(x) > std::numeric_limits<float>::max()) tol.beyond_fp32 = true;

  if (in.normalization == Normalization::kSigmoid) {
    for (std::size_t e = 0; e < E; ++e) {
      const double x = d.x[e], p = d.p[e];
      if (!std::isfinite(x)) continue;  // p is exactly 0, 1 or NaN
      tol.score_rel[e] = (1.0 - p) * (x_rel * std::fabs(x) + kExpUlps * u) + 2.0 * u;
    }
  } else {
    double mx = -INFINITY;
    for (double x : d.x) mx = std::fmax(mx, x);
    std::vector<double> arg_rel(E, 0.0);
    double sum_rel = static_cast<double>(E) * 0x1p-40 + u;
    for (std::size_t e = 0; e < E; ++e) {
      const double x = d.x[e];
      if (!std::isfinite(x) || !std::isfinite(mx)) continue;
      arg_rel[e] = x_rel * (std::fabs(x) + std::fabs(mx)) + u * std::fabs(x - mx) + kExpUlps * u;
      if (std::isfinite(d.p[e])) sum_rel += d.p[e] * arg_rel[e];
    }
    for (std::size_t e = 0; e < E; ++e) tol.score_rel[e] = arg_rel[e] + sum_rel + u;
  }

  for (std::size_t e = 0; e < E; ++e) {
    const double p = d.p[e], q = d.q[e];
    if (!std::isfinite(q)) continue;
    tol.q_abs[e] = tol.score_rel[e] * std::fabs(p) + u * std::fabs(q) + kScoreFloor;
  }
  return tol;
}

bool near_tie(const TokenTolerance& tol, const reference::TokenDecision& d, std::int32_t a,
              std::int32_t b) {
  const double qa = d.q[a], qb = d.q[b];
  if (std::isnan(qa) || std::isnan(qb)) return false;
  if (qa == qb) return true;
  if (!std::isfinite(qa) || !std::isfinite(qb)) return false;
  return std::fabs(qa - qb) <= tol.q_abs[a] + tol.q_abs[b];
}

WeightBound weight_bound(const reference::TokenDecision& d, const TokenTolerance& tol,
                         std::span<const std::int32_t> ids, std::span<const double> w_ref,
                         const RoutingParams& in) {
  constexpr double u = kUnitRoundoff;
  const double eps = in.eps ? *in.eps : 0.0;
  double sum = 0.0, sum_err = 0.0;
  for (std::int32_t e : ids) {
    sum += d.p[e];
    sum_err += tol.score_rel[e] * std::fabs(d.p[e]) + kScoreFloor;
  }
  const double denom = sum + eps;
  // Sequential fp32 summation of k terms, then the eps rounding and its add.
  sum_err += static_cast<double>(ids.size() - 1) * u * std::fabs(sum) + u * std::fabs(eps) +
             u * std::fabs(denom);
  WeightBound b;
  b.abs.assign(ids.size(), 0.0);
  if (!std::isfinite(denom) || !(sum_err < 0.5 * std::fabs(denom))) {
    b.resolvable = false;
    return b;
  }
  const double denom_rel = sum_err / std::fabs(denom);
  for (std::size_t j = 0; j < ids.size(); ++j) {
    const double p = d.p[ids[j]], w = std::fabs(w_ref[j]);
    const double numer_err = std::fabs(in.route_scale) * (tol.score_rel[ids[j]] * std::fabs(p) + kScoreFloor);
    b.abs[j] = numer_err / std::fabs(denom) + w * denom_rel / (1.0 - denom_rel) +
               w * (3.0 + kSecondOrderUlps) * u + 0x1p-126;  // + fp32 subnormal output spacing
  }
  return b;
}

}  // namespace musespark::harness

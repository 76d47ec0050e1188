// The accuracy contract's tolerances, derived once, here, from fp32 rounding
// of SPEC steps 1-5. docs/accuracy.md walks through the derivation; the
// tolerance tests check each term against measured fp32 behaviour.
//
// Notation: u = 2^-24 (fp32 unit roundoff); x, p, q the float64 reference's
// logit-after-multiplier, unbiased score and selection score; r_e a bound on
// the relative error of the implementation's fp32 p_e.
//
//   x32     = fl(fl(m) * g)            -> |x32 - x| <= 2u|x|   (0 without m)
//   sigmoid p = 1 / (1 + exp(-x32))    -> r = (1-p)(2u|x| + kExpUlps u) + 2u
//   softmax e_i = exp(x32_i - max32)   -> a_i = 2u(|x_i| + |max|) + u|x_i - max| + kExpUlps u
//           sum (fixed point, E terms) -> s_rel = sum_i p_i a_i + E 2^-40 + u
//           p_i = e_i / sum            -> r_i = a_i + s_rel + u
//   q32     = fl(p32 + b)              -> |q32 - q| <= r p + u|q| + kScoreFloor
//   weights w_j = fl(fl(s) * fl(p_j / fl(sum_j p_j + eps))), see weight_bound().
//
// kScoreFloor absorbs fp32 underflow (a score below 2^-126 is subnormal or 0).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "musespark/routing_params.h"
#include "reference/routing_reference.h"

namespace musespark::harness {

inline constexpr double kUnitRoundoff = 0x1p-24;
inline constexpr double kExpUlps = 2.0;  // CUDA expf's documented maximum; glibc's expf is < 1
inline constexpr double kScoreFloor = 0x1p-125;
// First-order bounds drop O(u^2) terms; this many ulps of |w| cover them.
inline constexpr double kSecondOrderUlps = 2.0;

struct TokenTolerance {
  std::vector<double> score_rel;  // [E] r_e
  std::vector<double> q_abs;      // [E] |q32_e - q_e| bound
  // A finite logit whose x overflows fp32 (|m g| > FLT_MAX): no fp32
  // implementation can follow the reference there.
  bool beyond_fp32 = false;
};

TokenTolerance derive_tolerance(const reference::TokenDecision& d, const RoutingParams& inputs);

// Two experts are a near tie when their reference selection scores are
// within the sum of their bounds: fp32 may order them either way.
bool near_tie(const TokenTolerance& tol, const reference::TokenDecision& d, std::int32_t a,
              std::int32_t b);

struct WeightBound {
  // False when the fp32 denominator cannot be resolved (its error bound is
  // at least half its value: every selected score underflows, or eps cancels
  // the sum); the weights' values are then not judged.
  bool resolvable = true;
  std::vector<double> abs;  // [k] bound on |w32_j - w_j|
};

WeightBound weight_bound(const reference::TokenDecision& d, const TokenTolerance& tol,
                         std::span<const std::int32_t> ids, std::span<const double> w_ref,
                         const RoutingParams& inputs);

}  // namespace musespark::harness

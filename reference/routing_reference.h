// The float64 reference of SPEC section 1. It is deliberately plain: one token
// at a time, every intermediate kept, a full sort of the experts. Speed does
// not matter here; being obviously right does.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "musespark/routing_params.h"

namespace musespark::reference {

// Everything the reference decided for one token, for the comparator.
struct TokenDecision {
  bool padded = false;
  std::vector<double> x;             // [E] logits after the multiplier
  std::vector<double> p;             // [E] unbiased scores (sigmoid or softmax)
  std::vector<double> q;             // [E] selection scores p + bias
  std::vector<std::int32_t> ranking; // [E] every expert, best first
  std::vector<std::int32_t> ids;     // [k] first k of ranking; -1 when padded
  std::vector<double> weights;       // [k] SPEC step 5; 0 when padded
  std::vector<double> sorted_q;      // [min(E, k+1)] q in rank order
  // gaps[j] = sorted_q[j] - sorted_q[j+1]; gaps[k-1], when E > k, is the
  // margin between the last selected expert and the first one left out.
  std::vector<double> gaps;
};

// True when expert a ranks before expert b: larger q first, NaN after every
// number, lower index first among equals (and among NaNs).
bool ranks_before(double qa, std::int32_t a, double qb, std::int32_t b);

class RoutingReference {
 public:
  // Reads logits, bias, padding and the configuration from host memory
  // described by `inputs`; the destination fields are ignored.
  explicit RoutingReference(const RoutingParams& inputs);

  TokenDecision token(std::int64_t t) const;

  // SPEC step 5 evaluated in float64 for a selection chosen by someone else
  // (the implementation under test). ids must be valid expert indices.
  std::vector<double> weights_for(const TokenDecision& d, std::span<const std::int32_t> ids) const;

  const RoutingParams& inputs() const { return in_; }

 private:
  RoutingParams in_;
};

}  // namespace musespark::reference

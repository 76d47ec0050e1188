// The fuzzer's pieces: random configurations (wider than the property
// generators: large T, E up to the kernel's maximum, adversarial ties and
// non-finite values), one case checked against the reference plus the
// invariants, and shrinking of a failing case to a small reproducer.
#pragma once

#include <cstdint>
#include <random>
#include <string>

#include "harness/comparator.h"
#include "harness/implementations.h"

namespace musespark::harness {

struct FuzzLimits {
  std::int64_t max_tokens = 4096;
  std::int64_t max_experts = 4096;
};

CaseConfig random_config(std::mt19937_64& rng, const FuzzLimits& limits);

struct FuzzVerdict {
  bool ok = true;
  std::string what;  // the report, or which invariant broke
  std::int64_t near_ties = 0;
};

// Reference agreement, determinism (two runs bit for bit) and batch
// invariance (one row alone equals the row in the batch).
FuzzVerdict check_case(const Implementation& impl, const RoutingCase& c, std::uint64_t row_pick);

// Greedy shrinking: fewer rows (the first failing one alone), then simpler
// layout, padding and destinations, keeping each step only while it still
// fails. Returns the smallest failing case found.
RoutingCase shrink_case(const Implementation& impl, const RoutingCase& failing, std::uint64_t row_pick);

}  // namespace musespark::harness

// Judges one implementation's output for one RoutingCase against the float64
// reference under SPEC's accuracy contract, and says what was wrong where.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "harness/routing_case.h"

namespace musespark::harness {

enum class MismatchKind : std::uint8_t {
  kNotWritten,       // a window element still holds the poison
  kOutsideWindow,    // an element outside the [T, k] window changed
  kPadding,          // a padded row is not (-1, 0)
  kIdOutOfRange,
  kDuplicateId,
  kExactTieOrder,    // identical inputs ordered other than lower-index-first
  kWrongSelection,   // an expert outranking the chosen one beyond tolerance
  kWeightClass,      // NaN / inf / finite differs from the reference
  kWeightValue,      // finite weight outside the derived bound
};

const char* mismatch_kind_name(MismatchKind k);

struct Mismatch {
  std::int64_t row = 0;
  std::int64_t slot = 0;
  MismatchKind kind = MismatchKind::kWrongSelection;
  std::string detail;  // got, want, margin
};

struct ComparisonReport {
  std::string case_description;
  std::int64_t tokens = 0;
  std::int64_t padded_tokens = 0;
  std::int64_t near_tie_tokens = 0;         // admissible selections that differ from the reference
  std::int64_t beyond_fp32_tokens = 0;      // judged on ids only (see tolerance.h)
  std::int64_t unresolved_weight_tokens = 0;
  std::int64_t failed_tokens = 0;
  std::int64_t mismatch_count = 0;
  std::vector<Mismatch> first_mismatches;   // at most CompareOptions::keep

  bool ok() const { return mismatch_count == 0; }
  // The case, the counts and the first few mismatches with coordinates.
  std::string format(std::size_t max_lines = 8) const;
};

struct CompareOptions {
  std::size_t keep = 16;
};

ComparisonReport compare_output(const RoutingCase& c, const RoutingOutput& out,
                                const CompareOptions& options = {});

}  // namespace musespark::harness

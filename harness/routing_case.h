// A routing problem the harness owns end to end: the configuration, the
// generated inputs in their memory layout, and the destination geometry.
// Implementations receive it, run, and hand back the whole destinations.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "musespark/routing_params.h"

namespace musespark::harness {

enum class LogitsLayout : std::uint8_t {
  kContiguous,     // [T, E] row-major
  kTransposed,     // an [E, T] buffer viewed as [T, E]: column stride 1 apart by T
  kColumnStrided,  // every second column of a [T, 2E] buffer
};

enum class LogitsDistribution : std::uint8_t {
  kNormal,      // N(0, 1)
  kWide,        // N(0, 8)
  kQuantized,   // few distinct values: ties are common
  kConstant,    // every logit of a row equal
  kInfinities,  // normal with +-inf sprinkled in
  kNaNs,        // normal with NaN sprinkled in
  kHuge,        // |x| in the hundreds to thousands: overflows a naive softmax
};

enum class BiasDistribution : std::uint8_t { kZero, kTiny, kDominant, kAllEqual, kNegative, kNormal };

enum class PaddingMode : std::uint8_t { kNone, kSparse, kAll };

struct CaseConfig {
  std::int64_t tokens = 1;
  std::int64_t experts = 8;
  std::int64_t topk = 1;
  DType logits_dtype = DType::kFloat32;
  Normalization normalization = Normalization::kSigmoid;
  double route_scale = 1.0;
  std::optional<double> multiplier;
  std::optional<double> eps;
  LogitsDistribution logits = LogitsDistribution::kNormal;
  BiasDistribution bias = BiasDistribution::kNormal;
  LogitsLayout layout = LogitsLayout::kContiguous;
  PaddingMode padding = PaddingMode::kNone;
  std::int64_t padding_stride = 1;
  std::int64_t extra_rows = 0;  // destination rows beyond T
  std::int64_t extra_cols = 0;  // destination columns beyond k
  DType ids_dtype = DType::kInt32;
  std::uint64_t seed = 0;
};

// One line, key=value, enough to rebuild the case.
std::string describe(const CaseConfig& c);

// GoogleTest prints parameters with this.
inline void PrintTo(const CaseConfig& c, std::ostream* os) { *os << describe(c); }

// Poison written into every destination before a run; none of the routing
// arithmetic can produce these bit patterns (a signalling NaN and an id far
// outside any expert range), so a leftover is unambiguous.
constexpr std::uint32_t kPoisonWeightBits = 0x7FA5A5A5u;
constexpr std::int64_t kPoisonId = 0x5A5A5A5A;

struct RoutingOutput {
  std::vector<float> weights;       // whole destination, dest_rows * dest_cols
  std::vector<std::int64_t> ids;    // whole destination, widened from the id dtype
};

class RoutingCase {
 public:
  // Inputs drawn from the configuration's distributions and seed.
  explicit RoutingCase(CaseConfig config);

  // The configuration's layout with zero logits, zero bias and no padded
  // row (the gaps of a strided layout still hold NaN), for cases whose
  // inputs are all written afterwards: loaded, shrunk or hand-made.
  static RoutingCase blank(CaseConfig config);

  const CaseConfig& config() const { return config_; }

  // Host-side inputs and a description of the destinations; the destination
  // pointers are left null (each implementation supplies its own buffers).
  RoutingParams host_params() const;

  const std::vector<std::uint8_t>& logits_bytes() const { return logits_; }
  const std::vector<float>& bias() const { return bias_; }
  const std::vector<std::uint8_t>& padding_bytes() const { return padding_; }
  std::int64_t dest_rows() const { return config_.tokens + config_.extra_rows; }
  std::int64_t dest_cols() const { return config_.topk + config_.extra_cols; }
  std::int64_t logits_row_stride() const { return row_stride_; }
  std::int64_t logits_col_stride() const { return col_stride_; }

  // Writes logit (t, e) (rounded to the case's dtype); for building
  // hand-made cases on top of a generated one.
  void set_logit(std::int64_t t, std::int64_t e, float value);
  float logit(std::int64_t t, std::int64_t e) const;
  void set_bias(std::int64_t e, float value) { bias_.at(e) = value; }
  void set_padded(std::int64_t t, bool padded);

 private:
  struct BlankTag {};
  RoutingCase(CaseConfig config, BlankTag);
  void write_element(std::int64_t index, float value);

  CaseConfig config_;
  std::vector<std::uint8_t> logits_;
  std::int64_t row_stride_ = 0, col_stride_ = 1;
  std::vector<float> bias_;
  std::vector<std::uint8_t> padding_;  // bool bytes, padding_stride apart
};

}  // namespace musespark::harness

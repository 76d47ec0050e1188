#include "harness/routing_case.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>

namespace musespark::harness {
namespace {

const char* layout_name(LogitsLayout l) {
  switch (l) {
    case LogitsLayout::kContiguous: return "contiguous";
    case LogitsLayout::kTransposed: return "transposed";
    case LogitsLayout::kColumnStrided: return "colstride2";
  }
  return "?";
}

const char* logits_name(LogitsDistribution d) {
  switch (d) {
    case LogitsDistribution::kNormal: return "normal";
    case LogitsDistribution::kWide: return "wide";
    case LogitsDistribution::kQuantized: return "quantized";
    case LogitsDistribution::kConstant: return "constant";
    case LogitsDistribution::kInfinities: return "infs";
    case LogitsDistribution::kNaNs: return "nans";
    case LogitsDistribution::kHuge: return "huge";
  }
  return "?";
}

const char* bias_name(BiasDistribution b) {
  switch (b) {
    case BiasDistribution::kZero: return "zero";
    case BiasDistribution::kTiny: return "tiny";
    case BiasDistribution::kDominant: return "dominant";
    case BiasDistribution::kAllEqual: return "equal";
    case BiasDistribution::kNegative: return "negative";
    case BiasDistribution::kNormal: return "normal";
  }
  return "?";
}

const char* padding_name(PaddingMode p) {
  switch (p) {
    case PaddingMode::kNone: return "none";
    case PaddingMode::kSparse: return "sparse";
    case PaddingMode::kAll: return "all";
  }
  return "?";
}

}  // namespace

std::string describe(const CaseConfig& c) {
  std::ostringstream os;
  os << "T=" << c.tokens << " E=" << c.experts << " k=" << c.topk
     << " dtype=" << dtype_name(c.logits_dtype) << " norm=" << normalization_name(c.normalization)
     << " scale=" << c.route_scale;
  if (c.multiplier) os << " m=" << *c.multiplier;
  if (c.eps) os << " eps=" << *c.eps;
  os << " logits=" << logits_name(c.logits) << " bias=" << bias_name(c.bias)
     << " layout=" << layout_name(c.layout) << " padding=" << padding_name(c.padding);
  if (c.padding != PaddingMode::kNone && c.padding_stride != 1) os << "/" << c.padding_stride;
  if (c.extra_rows || c.extra_cols) os << " dest=+" << c.extra_rows << "x+" << c.extra_cols;
  if (c.ids_dtype != DType::kInt32) os << " ids=" << dtype_name(c.ids_dtype);
  os << " seed=" << c.seed;
  return os.str();
}

RoutingCase RoutingCase::blank(CaseConfig config) { return RoutingCase(config, BlankTag{}); }

RoutingCase::RoutingCase(CaseConfig config, BlankTag) : config_(config) {
  const std::int64_t T = config_.tokens, E = config_.experts;
  std::int64_t elements = 0;
  switch (config_.layout) {
    case LogitsLayout::kContiguous:
      row_stride_ = E, col_stride_ = 1, elements = T * E;
      break;
    case LogitsLayout::kTransposed:
      row_stride_ = 1, col_stride_ = T > 0 ? T : 1, elements = T * E;
      break;
    case LogitsLayout::kColumnStrided:
      row_stride_ = 2 * E, col_stride_ = 2, elements = T * 2 * E;
      break;
  }
  logits_.assign(static_cast<std::size_t>(elements) * dtype_size(config_.logits_dtype), 0);
  // The gaps of a strided layout hold NaN: reading them is a visible bug.
  if (config_.layout == LogitsLayout::kColumnStrided)
    for (std::int64_t i = 1; i < elements; i += 2)
      write_element(i, std::numeric_limits<float>::quiet_NaN());
  bias_.assign(static_cast<std::size_t>(E), 0.0f);
  if (config_.padding != PaddingMode::kNone)
    padding_.assign(static_cast<std::size_t>(T * config_.padding_stride), 0);
}

RoutingCase::RoutingCase(CaseConfig config) : RoutingCase(config, BlankTag{}) {
  const std::int64_t T = config_.tokens, E = config_.experts;
  std::mt19937_64 rng(config_.seed * 0x9E3779B97F4A7C15ull + 0x1234567ull);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> unit(0.0, 1.0);

  for (std::int64_t t = 0; t < T; ++t) {
    const double row_value = normal(rng);
    const bool all_neg_inf_row =
        config_.logits == LogitsDistribution::kInfinities && unit(rng) < 0.1;
    for (std::int64_t e = 0; e < E; ++e) {
      double v = normal(rng);
      switch (config_.logits) {
        case LogitsDistribution::kNormal: break;
        case LogitsDistribution::kWide: v *= 8.0; break;
        case LogitsDistribution::kQuantized: v = std::round(v * 2.0) / 2.0; break;
        case LogitsDistribution::kConstant: v = row_value; break;
        case LogitsDistribution::kInfinities: {
          const double u = unit(rng);
          if (all_neg_inf_row || u < 0.05) v = -INFINITY;
          else if (u < 0.08) v = INFINITY;
          break;
        }
        case LogitsDistribution::kNaNs:
          if (unit(rng) < 0.03) v = std::numeric_limits<double>::quiet_NaN();
          break;
        case LogitsDistribution::kHuge: v *= 1000.0; break;
      }
      set_logit(t, e, static_cast<float>(v));
    }
  }

  for (std::int64_t e = 0; e < E; ++e) {
    double b = 0.0;
    switch (config_.bias) {
      case BiasDistribution::kZero: b = 0.0; break;
      case BiasDistribution::kTiny: b = normal(rng) * 1e-6; break;
      case BiasDistribution::kDominant: b = (unit(rng) < 0.1 ? 10.0 : 0.0) + normal(rng) * 0.01; break;
      case BiasDistribution::kAllEqual: b = 0.25; break;
      case BiasDistribution::kNegative: b = -1.0 - std::fabs(normal(rng)); break;
      case BiasDistribution::kNormal: b = normal(rng) * 0.05; break;
    }
    bias_[e] = static_cast<float>(b);
  }

  if (config_.padding != PaddingMode::kNone)
    for (std::int64_t t = 0; t < T; ++t)
      set_padded(t, config_.padding == PaddingMode::kAll || unit(rng) < 0.25);
}

void RoutingCase::write_element(std::int64_t i, float value) {
  switch (config_.logits_dtype) {
    case DType::kFloat32: std::memcpy(&logits_.at(i * 4), &value, 4); break;
    case DType::kBFloat16: {
      const std::uint16_t b = float_to_bf16_bits(value);
      std::memcpy(&logits_.at(i * 2), &b, 2);
      break;
    }
    case DType::kFloat16: {
      const std::uint16_t b = float_to_fp16_bits(value);
      std::memcpy(&logits_.at(i * 2), &b, 2);
      break;
    }
    default: break;
  }
}

void RoutingCase::set_logit(std::int64_t t, std::int64_t e, float value) {
  write_element(t * row_stride_ + e * col_stride_, value);
}

float RoutingCase::logit(std::int64_t t, std::int64_t e) const {
  return load_logit(logits_.data(), config_.logits_dtype, t * row_stride_ + e * col_stride_);
}

void RoutingCase::set_padded(std::int64_t t, bool padded) {
  padding_.at(static_cast<std::size_t>(t * config_.padding_stride)) = padded ? 1 : 0;
}

RoutingParams RoutingCase::host_params() const {
  RoutingParams p;
  p.logits = logits_.data();
  p.logits_dtype = config_.logits_dtype;
  p.logits_row_stride = row_stride_;
  p.logits_col_stride = col_stride_;
  p.num_tokens = config_.tokens;
  p.num_experts = config_.experts;
  p.bias = bias_.data();
  p.topk = config_.topk;
  p.normalization = config_.normalization;
  p.route_scale = config_.route_scale;
  p.multiplier = config_.multiplier;
  p.eps = config_.eps;
  if (config_.padding != PaddingMode::kNone) {
    p.is_padding = reinterpret_cast<const bool*>(padding_.data());
    p.padding_stride = config_.padding_stride;
  }
  p.weights_rows = p.ids_rows = dest_rows();
  p.weights_cols = p.ids_cols = dest_cols();
  p.weights_row_stride = p.ids_row_stride = dest_cols();
  p.weights_col_stride = p.ids_col_stride = 1;
  p.ids_dtype = config_.ids_dtype;
  p.device = Device::kCpu;
  return p;
}

}  // namespace musespark::harness

// RapidCheck generators for router configurations and inputs. A generated
// CaseConfig carries its own input seed, so a shrunk counterexample prints
// (showValue) one line that rebuilds the exact case.
#pragma once

#include <rapidcheck.h>

#include <algorithm>
#include <vector>
#include <ostream>

#include "harness/routing_case.h"

namespace musespark::properties {

// Expert counts across the kernel tiers (<= 8, 16, 32, 64, 128, 256, 512),
// odd sizes around each boundary, and the shared-memory path.
inline rc::Gen<std::int64_t> gen_experts() {
  return rc::gen::weightedOneOf<std::int64_t>({
      {6, rc::gen::elementOf(std::vector<std::int64_t>{1, 2, 3, 7, 8, 9, 16, 31, 32, 33, 63, 64, 65, 127, 128, 129,
                                            255, 256, 257, 384, 511, 512})},
      {2, rc::gen::inRange<std::int64_t>(1, 300)},
      {1, rc::gen::elementOf(std::vector<std::int64_t>{513, 700, 1024})},
  });
}

inline rc::Gen<harness::CaseConfig> gen_case_config() {
  using harness::CaseConfig;
  return rc::gen::mapcat(gen_experts(), [](std::int64_t experts) {
    const std::int64_t k_max = std::min<std::int64_t>(experts, 64);
    return rc::gen::build<CaseConfig>(
        rc::gen::set(&CaseConfig::experts, rc::gen::just(experts)),
        rc::gen::set(&CaseConfig::topk, rc::gen::weightedOneOf<std::int64_t>({
                                            {3, rc::gen::inRange<std::int64_t>(1, std::min<std::int64_t>(k_max, 8) + 1)},
                                            {1, rc::gen::inRange<std::int64_t>(1, k_max + 1)},
                                            {1, rc::gen::just(k_max)}})),
        rc::gen::set(&CaseConfig::tokens, rc::gen::weightedOneOf<std::int64_t>({
                                              {1, rc::gen::elementOf(std::vector<std::int64_t>{0, 1})},
                                              {4, rc::gen::inRange<std::int64_t>(1, 24)},
                                              {1, rc::gen::inRange<std::int64_t>(24, 80)}})),
        rc::gen::set(&CaseConfig::logits_dtype,
                     rc::gen::elementOf(std::vector<DType>{DType::kFloat32, DType::kBFloat16, DType::kFloat16})),
        rc::gen::set(&CaseConfig::normalization,
                     rc::gen::elementOf(std::vector<Normalization>{Normalization::kSigmoid, Normalization::kSoftmax})),
        rc::gen::set(&CaseConfig::route_scale, rc::gen::elementOf(std::vector<double>{1.0, 2.5, 0.0, -2.5, 1e-3})),
        rc::gen::set(&CaseConfig::multiplier,
                     rc::gen::elementOf(std::vector<std::optional<double>>{std::nullopt, 1.0, 0.17677669529663687, 1e-3, 40.0})),
        rc::gen::set(&CaseConfig::eps,
                     rc::gen::elementOf(std::vector<std::optional<double>>{std::nullopt, 0.0, 1e-15, 1e-3, 10.0})),
        rc::gen::set(&CaseConfig::logits, rc::gen::cast<harness::LogitsDistribution>(rc::gen::inRange(0, 7))),
        rc::gen::set(&CaseConfig::bias, rc::gen::cast<harness::BiasDistribution>(rc::gen::inRange(0, 6))),
        rc::gen::set(&CaseConfig::layout, rc::gen::cast<harness::LogitsLayout>(rc::gen::inRange(0, 3))),
        rc::gen::set(&CaseConfig::padding, rc::gen::cast<harness::PaddingMode>(rc::gen::inRange(0, 3))),
        rc::gen::set(&CaseConfig::padding_stride, rc::gen::inRange<std::int64_t>(1, 4)),
        rc::gen::set(&CaseConfig::extra_rows, rc::gen::inRange<std::int64_t>(0, 3)),
        rc::gen::set(&CaseConfig::extra_cols, rc::gen::inRange<std::int64_t>(0, 3)),
        rc::gen::set(&CaseConfig::ids_dtype, rc::gen::elementOf(std::vector<DType>{DType::kInt32, DType::kInt64})),
        rc::gen::set(&CaseConfig::seed, rc::gen::arbitrary<std::uint32_t>()));
  });
}

}  // namespace musespark::properties

namespace rc {
template <>
struct Arbitrary<musespark::harness::CaseConfig> {
  static Gen<musespark::harness::CaseConfig> arbitrary() { return musespark::properties::gen_case_config(); }
};
}  // namespace rc

namespace musespark::harness {
// Shrunk counterexamples print as the one-line case description.
inline void showValue(const CaseConfig& c, std::ostream& os) { os << describe(c); }
}  // namespace musespark::harness

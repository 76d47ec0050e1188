#include "harness/check_grid.h"

#include <algorithm>
#include <array>

namespace musespark::harness {

std::vector<CaseConfig> check_grid(const GridOptions& o) {
  static constexpr std::array<std::int64_t, 17> kExperts = {1, 2, 3, 7, 8, 16, 31, 32, 33, 64, 127,
                                                           128, 255, 256, 257, 512, 1000};
  static constexpr std::array<std::int64_t, 6> kTokens = {1, 2, 7, 33, 64, 257};
  static constexpr std::array<LogitsDistribution, 7> kLogits = {
      LogitsDistribution::kNormal, LogitsDistribution::kQuantized, LogitsDistribution::kWide,
      LogitsDistribution::kInfinities, LogitsDistribution::kNaNs, LogitsDistribution::kHuge,
      LogitsDistribution::kConstant};
  static constexpr std::array<BiasDistribution, 6> kBias = {
      BiasDistribution::kNormal, BiasDistribution::kZero, BiasDistribution::kDominant,
      BiasDistribution::kAllEqual, BiasDistribution::kTiny, BiasDistribution::kNegative};
  static constexpr std::array<LogitsLayout, 3> kLayouts = {
      LogitsLayout::kContiguous, LogitsLayout::kTransposed, LogitsLayout::kColumnStrided};
  static constexpr std::array<DType, 3> kDtypes = {DType::kFloat32, DType::kBFloat16, DType::kFloat16};

  std::vector<CaseConfig> grid;
  std::uint64_t i = 0;
  for (std::int64_t E : kExperts) {
    if (E > o.max_experts) continue;
    for (Normalization norm : {Normalization::kSigmoid, Normalization::kSoftmax}) {
      for (DType dtype : kDtypes) {
        CaseConfig c;
        c.experts = E;
        c.normalization = norm;
        c.logits_dtype = dtype;
        // k sweeps 1, a middle value, and the largest allowed.
        const std::int64_t k_max = std::min<std::int64_t>(E, 64);
        const std::array<std::int64_t, 3> ks = {1, std::max<std::int64_t>(1, std::min<std::int64_t>(8, k_max)), k_max};
        c.topk = ks[i % 3];
        c.tokens = std::min(o.max_tokens, kTokens[i % kTokens.size()]);
        c.logits = kLogits[i % kLogits.size()];
        c.bias = kBias[(i / 2) % kBias.size()];
        c.layout = kLayouts[(i / 3) % kLayouts.size()];
        c.padding = static_cast<PaddingMode>((i / 5) % 3);
        c.padding_stride = (i % 4 == 0) ? 3 : 1;
        c.extra_rows = (i % 3 == 1) ? 2 : 0;
        c.extra_cols = (i % 4 == 2) ? 3 : 0;
        c.ids_dtype = (i % 5 == 3) ? DType::kInt64 : DType::kInt32;
        c.route_scale = (i % 6 == 0) ? 2.5 : ((i % 6 == 3) ? -1.0 : 1.0);
        if (i % 3 == 0) c.multiplier = 0.17677669529663687;  // 2^-2.5, Muse Spark's metap
        if (i % 4 == 1) c.eps = 1e-15;
        if (i % 8 == 5) c.eps = 0.5;
        c.seed = o.seed * 1000003u + i;
        grid.push_back(c);
        ++i;
      }
    }
  }
  // Edge cases the cycle does not reach.
  CaseConfig empty;
  empty.tokens = 0;
  empty.experts = 64;
  empty.topk = 8;
  empty.extra_rows = 2;
  grid.push_back(empty);
  CaseConfig all_padded = empty;
  all_padded.tokens = 17;
  all_padded.padding = PaddingMode::kAll;
  all_padded.seed = o.seed;
  grid.push_back(all_padded);
  return grid;
}

}  // namespace musespark::harness

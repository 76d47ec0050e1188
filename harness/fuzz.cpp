#include "harness/fuzz.h"

#include <algorithm>
#include <array>
#include <cstring>

namespace musespark::harness {
namespace {

// A copy of `c` with configuration `cfg` (same T x E or a row subset) and
// the same inputs for the rows listed.
RoutingCase rebuild(const RoutingCase& c, CaseConfig cfg, const std::vector<std::int64_t>& rows) {
  cfg.tokens = static_cast<std::int64_t>(rows.size());
  RoutingCase out = RoutingCase::blank(cfg);
  const RoutingParams in = c.host_params();
  for (std::size_t r = 0; r < rows.size(); ++r) {
    for (std::int64_t e = 0; e < cfg.experts; ++e) out.set_logit(static_cast<std::int64_t>(r), e, c.logit(rows[r], e));
    if (cfg.padding != PaddingMode::kNone)
      out.set_padded(static_cast<std::int64_t>(r), in.is_padding && in.is_padding[rows[r] * in.padding_stride]);
  }
  for (std::int64_t e = 0; e < cfg.experts; ++e) out.set_bias(e, c.bias()[e]);
  return out;
}

}  // namespace

CaseConfig random_config(std::mt19937_64& rng, const FuzzLimits& lim) {
  auto pick = [&](auto... values) {
    const std::array<std::common_type_t<decltype(values)...>, sizeof...(values)> a = {values...};
    return a[std::uniform_int_distribution<std::size_t>(0, a.size() - 1)(rng)];
  };
  auto uniform = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); };
  CaseConfig c;
  const int e_class = static_cast<int>(uniform(0, 9));
  if (e_class < 6) c.experts = pick(1, 2, 3, 7, 8, 9, 16, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257, 384, 511, 512);
  else if (e_class < 8) c.experts = uniform(1, 600);
  else c.experts = lim.max_experts > 512 ? uniform(513, lim.max_experts) : uniform(1, lim.max_experts);
  c.experts = std::min(c.experts, lim.max_experts);
  const std::int64_t k_max = std::min<std::int64_t>(c.experts, 64);
  c.topk = uniform(0, 3) == 0 ? k_max : uniform(1, std::min<std::int64_t>(k_max, 16));
  const int t_class = static_cast<int>(uniform(0, 9));
  const std::int64_t small_t = std::min<std::int64_t>(64, lim.max_tokens);
  c.tokens = t_class == 0 ? uniform(0, std::min<std::int64_t>(1, lim.max_tokens))
           : t_class < 8 || lim.max_tokens <= 64 ? uniform(1, std::max<std::int64_t>(1, small_t))
                                                 : uniform(65, lim.max_tokens);
  // Keep the float64 reference's work per case bounded.
  while (c.tokens > 1 && c.tokens * c.experts > (std::int64_t{1} << 21)) c.tokens /= 2;
  c.logits_dtype = pick(DType::kFloat32, DType::kBFloat16, DType::kFloat16);
  c.normalization = pick(Normalization::kSigmoid, Normalization::kSoftmax);
  c.route_scale = pick(1.0, 2.5, 0.0, -1.0, 1e-3, 100.0);
  const int m = static_cast<int>(uniform(0, 4));
  if (m == 1) c.multiplier = 0.17677669529663687;
  if (m == 2) c.multiplier = pick(1e-3, 40.0, -1.0);
  const int eps = static_cast<int>(uniform(0, 4));
  if (eps == 1) c.eps = 1e-15;
  if (eps == 2) c.eps = pick(0.0, 1e-3, 10.0);
  c.logits = static_cast<LogitsDistribution>(uniform(0, 6));
  c.bias = static_cast<BiasDistribution>(uniform(0, 5));
  c.layout = static_cast<LogitsLayout>(uniform(0, 2));
  c.padding = static_cast<PaddingMode>(uniform(0, 2));
  c.padding_stride = uniform(1, 3);
  c.extra_rows = uniform(0, 2);
  c.extra_cols = uniform(0, 2);
  c.ids_dtype = pick(DType::kInt32, DType::kInt64);
  c.seed = rng();
  return c;
}

FuzzVerdict check_case(const Implementation& impl, const RoutingCase& c, std::uint64_t row_pick) {
  FuzzVerdict v;
  const RoutingOutput a = impl.run(c);
  const ComparisonReport report = compare_output(c, a);
  v.near_ties = report.near_tie_tokens;
  if (!report.ok()) {
    v.ok = false;
    v.what = report.format();
    return v;
  }
  const RoutingOutput b = impl.run(c);
  for (std::size_t i = 0; i < a.weights.size(); ++i)
    if (float_as_bits(a.weights[i]) != float_as_bits(b.weights[i]) || a.ids[i] != b.ids[i]) {
      v.ok = false;
      v.what = "not deterministic: destination element " + std::to_string(i) + " differs between two runs\n";
      return v;
    }
  if (c.config().tokens > 1) {
    const std::int64_t t = static_cast<std::int64_t>(row_pick % static_cast<std::uint64_t>(c.config().tokens));
    CaseConfig one = c.config();
    one.layout = LogitsLayout::kContiguous;
    one.extra_rows = one.extra_cols = 0;
    const RoutingCase alone = rebuild(c, one, {t});
    const RoutingOutput o = impl.run(alone);
    for (std::int64_t j = 0; j < one.topk; ++j) {
      const std::size_t i = static_cast<std::size_t>(t * c.dest_cols() + j);
      if (float_as_bits(o.weights[j]) != float_as_bits(a.weights[i]) || o.ids[j] != a.ids[i]) {
        v.ok = false;
        v.what = "not batch invariant: row " + std::to_string(t) + " alone differs from the row in the batch at slot " +
                 std::to_string(j) + "\n";
        return v;
      }
    }
  }
  return v;
}

RoutingCase shrink_case(const Implementation& impl, const RoutingCase& failing, std::uint64_t row_pick) {
  RoutingCase best = rebuild(failing, failing.config(), [&] {
    std::vector<std::int64_t> all(static_cast<std::size_t>(failing.config().tokens));
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<std::int64_t>(i);
    return all;
  }());
  auto still_fails = [&](const RoutingCase& c) {
    try {
      return !check_case(impl, c, row_pick).ok;
    } catch (const std::exception&) {
      return true;  // an exception is a failure too
    }
  };
  // Rows: the failing rows reported by the comparator, one at a time.
  const ComparisonReport report = [&] {
    try {
      return compare_output(best, impl.run(best));
    } catch (const std::exception&) {
      return ComparisonReport{};
    }
  }();
  // Rows the comparator named first; invariant failures name none, so the
  // first rows are tried too.
  std::vector<std::int64_t> candidates;
  for (const Mismatch& m : report.first_mismatches)
    if (m.row >= 0 && m.row < best.config().tokens) candidates.push_back(m.row);
  for (std::int64_t t = 0; t < std::min<std::int64_t>(best.config().tokens, 16); ++t) candidates.push_back(t);
  for (std::int64_t row : candidates) {
    const RoutingCase one = rebuild(best, best.config(), {row});
    if (still_fails(one)) {
      best = rebuild(one, one.config(), {0});
      break;
    }
  }
  // Simplify the geometry, one knob at a time.
  const std::vector<void (*)(CaseConfig&)> simplifications = {
      [](CaseConfig& c) { c.layout = LogitsLayout::kContiguous; },
      [](CaseConfig& c) { c.padding = PaddingMode::kNone; c.padding_stride = 1; },
      [](CaseConfig& c) { c.extra_rows = 0; c.extra_cols = 0; },
      [](CaseConfig& c) { c.ids_dtype = DType::kInt32; },
  };
  for (auto simplify : simplifications) {
    CaseConfig cfg = best.config();
    simplify(cfg);
    std::vector<std::int64_t> rows(static_cast<std::size_t>(cfg.tokens));
    for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<std::int64_t>(i);
    RoutingCase simpler = rebuild(best, cfg, rows);
    if (still_fails(simpler)) best = std::move(simpler);
  }
  return best;
}

}  // namespace musespark::harness

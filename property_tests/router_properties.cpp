#include "router_properties.h"

#include <rapidcheck.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <sstream>

#include "harness/comparator.h"
#include "harness/implementations.h"
#include "harness/tolerance.h"
#include "reference/routing_reference.h"
#include "router_generators.h"

namespace musespark::properties {
namespace {

using harness::CaseConfig;
using harness::RoutingCase;
using harness::RoutingOutput;

std::int64_t at(const RoutingCase& c, std::int64_t t, std::int64_t j) { return t * c.dest_cols() + j; }

bool row_bitwise_equal(const RoutingCase& a, const RoutingOutput& oa, std::int64_t ta, const RoutingCase& b,
                       const RoutingOutput& ob, std::int64_t tb) {
  for (std::int64_t j = 0; j < a.config().topk; ++j) {
    if (oa.ids[at(a, ta, j)] != ob.ids[at(b, tb, j)]) return false;
    if (float_as_bits(oa.weights[at(a, ta, j)]) != float_as_bits(ob.weights[at(b, tb, j)])) return false;
  }
  return true;
}

void assert_passes(const RoutingCase& c, const RoutingOutput& out, const char* what) {
  const harness::ComparisonReport report = harness::compare_output(c, out);
  RC_CLASSIFY(report.near_tie_tokens > 0, "near ties");
  RC_CLASSIFY(report.padded_tokens > 0, "padding");
  RC_CLASSIFY(report.unresolved_weight_tokens > 0, "unresolved weights");
  if (!report.ok()) RC_FAIL(std::string(what) + "\n" + report.format());
}

// Rows whose top k+1 reference scores are separated by more than their fp32
// tolerances, with no NaN among them: every correct implementation selects
// the same ids there, in the same order.
std::vector<bool> clear_rows(const RoutingCase& c) {
  const RoutingParams in = c.host_params();
  const reference::RoutingReference ref(in);
  std::vector<bool> clear(static_cast<std::size_t>(c.config().tokens), false);
  for (std::int64_t t = 0; t < c.config().tokens; ++t) {
    const reference::TokenDecision d = ref.token(t);
    if (d.padded) continue;
    const harness::TokenTolerance tol = harness::derive_tolerance(d, in);
    if (tol.beyond_fp32) continue;
    bool ok = true;
    const std::size_t n = std::min<std::size_t>(d.ranking.size(), static_cast<std::size_t>(c.config().topk) + 1);
    for (std::size_t j = 0; j + 1 < n && ok; ++j) {
      const std::int32_t a = d.ranking[j], b = d.ranking[j + 1];
      ok = !std::isnan(d.q[a]) && !std::isnan(d.q[b]) && !harness::near_tie(tol, d, a, b);
    }
    clear[t] = ok;
  }
  return clear;
}

void tag(const CaseConfig& c) {
  RC_TAG(dtype_name(c.logits_dtype));
  RC_TAG(normalization_name(c.normalization));
  RC_CLASSIFY(c.experts <= 64, "E<=64");
  RC_CLASSIFY(c.experts > 64 && c.experts <= 512, "64<E<=512");
  RC_CLASSIFY(c.experts > 512, "E>512 (shared-memory path)");
  RC_CLASSIFY(c.tokens == 0, "T=0");
}

}  // namespace

void reference_agreement(const Runner& r, CaseConfig c) {
  tag(c);
  const RoutingCase rc(c);
  assert_passes(rc, r.run(rc), "reference agreement");
}

void tie_breaking(const Runner& r, CaseConfig c) {
  // Quantized logits and equal bias: exact ties everywhere; the comparator
  // requires the lower index first among identical inputs.
  c.logits = harness::LogitsDistribution::kQuantized;
  c.bias = c.seed % 2 ? harness::BiasDistribution::kAllEqual : harness::BiasDistribution::kZero;
  const RoutingCase rc(c);
  const RoutingOutput out = r.run(rc);
  assert_passes(rc, out, "ties");

  // Permuting experts together with their bias permutes the ids (outside ties).
  CaseConfig cn = c;
  cn.logits = harness::LogitsDistribution::kNormal;
  cn.bias = harness::BiasDistribution::kNormal;
  const RoutingCase base(cn);
  RoutingCase permuted(cn);
  std::vector<std::int64_t> perm(static_cast<std::size_t>(cn.experts));
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), std::mt19937_64(cn.seed));
  for (std::int64_t t = 0; t < cn.tokens; ++t)
    for (std::int64_t e = 0; e < cn.experts; ++e) permuted.set_logit(t, e, base.logit(t, perm[e]));
  for (std::int64_t e = 0; e < cn.experts; ++e) permuted.set_bias(e, base.bias()[perm[e]]);
  const RoutingOutput ob = r.run(base), op = r.run(permuted);
  const std::vector<bool> clear = clear_rows(base);
  for (std::int64_t t = 0; t < cn.tokens; ++t) {
    if (!clear[t]) continue;
    for (std::int64_t j = 0; j < cn.topk; ++j) {
      const std::int64_t id = op.ids[at(permuted, t, j)];
      RC_ASSERT(id >= 0 && id < cn.experts);
      RC_ASSERT(perm[id] == ob.ids[at(base, t, j)]);
    }
  }
}

void bias_only_for_selection(const Runner& r, CaseConfig c) {
  if (c.tokens == 0) c.tokens = 1;
  // A bias that pins the selection of row 0 as a set: +100 on its experts.
  c.tokens = 1;
  c.padding = harness::PaddingMode::kNone;
  const RoutingCase rc(c);
  const RoutingOutput out = r.run(rc);
  RoutingCase pinned(c);
  std::vector<bool> selected(static_cast<std::size_t>(c.experts), false);
  for (std::int64_t j = 0; j < c.topk; ++j) {
    const std::int64_t e = out.ids[at(rc, 0, j)];
    RC_ASSERT(e >= 0 && e < c.experts);
    selected[e] = true;
  }
  for (std::int64_t e = 0; e < c.experts; ++e) pinned.set_bias(e, rc.bias()[e] + (selected[e] ? 100.0f : -100.0f));
  const RoutingOutput out2 = r.run(pinned);
  // Same set; each expert's weight equal within the slot-order summation
  // rounding ((k+2) ulps): the weights never saw the bias.
  for (std::int64_t j = 0; j < c.topk; ++j) {
    const std::int64_t e = out2.ids[at(pinned, 0, j)];
    RC_ASSERT(e >= 0 && e < c.experts && selected[e]);
    std::int64_t j1 = 0;
    while (j1 < c.topk && out.ids[at(rc, 0, j1)] != e) ++j1;
    RC_ASSERT(j1 < c.topk);
    const float w1 = out.weights[at(rc, 0, j1)], w2 = out2.weights[at(pinned, 0, j)];
    if (!std::isfinite(w1) || !std::isfinite(w2)) {
      // Unresolved in fp32 (a subnormal selected score overflows 1/sum):
      // then both runs must land in the same non-finite class.
      RC_ASSERT(std::isnan(w1) == std::isnan(w2));
      if (!std::isnan(w1)) RC_ASSERT(w1 == w2);
      continue;
    }
    const double tol = (static_cast<double>(c.topk) + 2.0) * harness::kUnitRoundoff * std::fabs(w1) + 0x1p-126;
    RC_ASSERT(std::fabs(static_cast<double>(w1) - w2) <= tol);
  }
  // A large enough bias forces an expert in, first.
  RoutingCase forced(c);
  const std::int64_t star = static_cast<std::int64_t>(c.seed % static_cast<std::uint64_t>(c.experts));
  forced.set_bias(star, 1000.0f);
  const reference::TokenDecision d = reference::RoutingReference(forced.host_params()).token(0);
  if (!std::isnan(d.p[star])) RC_ASSERT(r.run(forced).ids[at(forced, 0, 0)] == star);
}

void eps_semantics(const Runner& r, CaseConfig c) {
  // Absent equals 0, bit for bit.
  CaseConfig absent = c, zero = c;
  absent.eps.reset();
  zero.eps = 0.0;
  const RoutingCase ra(absent), rz(zero);
  const RoutingOutput oa = r.run(ra), oz = r.run(rz);
  for (std::int64_t t = 0; t < c.tokens; ++t) RC_ASSERT(row_bitwise_equal(ra, oa, t, rz, oz, t));
  // eps > 0 with every score 0 (sigmoid of -inf): zero weights, not NaN.
  CaseConfig dead = c;
  dead.normalization = Normalization::kSigmoid;
  dead.eps = 1e-3;
  dead.multiplier.reset();
  RoutingCase rd(dead);
  for (std::int64_t t = 0; t < dead.tokens; ++t)
    for (std::int64_t e = 0; e < dead.experts; ++e) rd.set_logit(t, e, -INFINITY);
  const RoutingOutput od = r.run(rd);
  for (std::int64_t t = 0; t < dead.tokens; ++t)
    for (std::int64_t j = 0; j < dead.topk; ++j) RC_ASSERT(od.weights[at(rd, t, j)] == 0.0f);
  // The weights sum to s * sum(p) / (sum(p) + eps) within the bound.
  const RoutingCase rc(c);
  const RoutingOutput out = r.run(rc);
  const RoutingParams in = rc.host_params();
  const reference::RoutingReference ref(in);
  for (std::int64_t t = 0; t < c.tokens; ++t) {
    const reference::TokenDecision d = ref.token(t);
    if (d.padded) continue;
    const harness::TokenTolerance tol = harness::derive_tolerance(d, in);
    if (tol.beyond_fp32) continue;
    std::vector<std::int32_t> ids;
    double got = 0;
    for (std::int64_t j = 0; j < c.topk; ++j) {
      ids.push_back(static_cast<std::int32_t>(out.ids[at(rc, t, j)]));
      got += out.weights[at(rc, t, j)];
    }
    for (std::int32_t id : ids) RC_ASSERT(id >= 0 && id < c.experts);
    const std::vector<double> want = ref.weights_for(d, ids);
    const harness::WeightBound b = harness::weight_bound(d, tol, ids, want, in);
    const double want_sum = std::accumulate(want.begin(), want.end(), 0.0);
    if (!b.resolvable || !std::isfinite(want_sum)) continue;
    const double bound = std::accumulate(b.abs.begin(), b.abs.end(), 0.0) +
                         static_cast<double>(c.topk) * harness::kUnitRoundoff * std::fabs(want_sum);
    RC_ASSERT(std::fabs(got - want_sum) <= bound);
  }
}

void padding_semantics(const Runner& r, CaseConfig c) {
  if (c.padding == harness::PaddingMode::kNone) c.padding = harness::PaddingMode::kSparse;
  CaseConfig none = c;
  none.padding = harness::PaddingMode::kNone;
  const RoutingCase rp(c), rn(none);  // same logits: padding is drawn last
  const RoutingOutput op = r.run(rp), on = r.run(rn);
  const RoutingParams in = rp.host_params();
  for (std::int64_t t = 0; t < c.tokens; ++t) {
    const bool padded = in.is_padding[t * in.padding_stride];
    if (padded) {
      for (std::int64_t j = 0; j < c.topk; ++j) {
        RC_ASSERT(op.ids[at(rp, t, j)] == -1);
        RC_ASSERT(float_as_bits(op.weights[at(rp, t, j)]) == 0u);
      }
    } else {
      RC_ASSERT(row_bitwise_equal(rp, op, t, rn, on, t));
    }
  }
}

void normalization(const Runner& r, CaseConfig c) {
  // Without eps the weights sum to route_scale within the bound.
  c.eps.reset();
  c.padding = harness::PaddingMode::kNone;
  const RoutingCase rc(c);
  const RoutingOutput out = r.run(rc);
  assert_passes(rc, out, "normalization");
  // Softmax is invariant to adding a constant to a row: with quantized
  // logits (multiples of 1/2) a shift of 4 is exact, so the reference is
  // unchanged and both runs must meet it; clear rows select the same ids.
  CaseConfig sm = c;
  sm.normalization = Normalization::kSoftmax;
  sm.logits = harness::LogitsDistribution::kQuantized;
  sm.multiplier.reset();
  const RoutingCase base(sm);
  RoutingCase shifted(sm);
  for (std::int64_t t = 0; t < sm.tokens; ++t)
    for (std::int64_t e = 0; e < sm.experts; ++e) shifted.set_logit(t, e, base.logit(t, e) + 4.0f);
  const RoutingOutput ob = r.run(base), os = r.run(shifted);
  assert_passes(shifted, os, "softmax shifted by 4");
  const std::vector<bool> clear = clear_rows(base);
  for (std::int64_t t = 0; t < sm.tokens; ++t)
    if (clear[t])
      for (std::int64_t j = 0; j < sm.topk; ++j) RC_ASSERT(ob.ids[at(base, t, j)] == os.ids[at(shifted, t, j)]);
  // A multiplier equals pre-multiplied fp32 logits, bit for bit.
  if (c.logits_dtype == DType::kFloat32 && c.multiplier) {
    CaseConfig pre = c;
    pre.multiplier.reset();
    RoutingCase premul(pre);
    const float m = static_cast<float>(*c.multiplier);
    for (std::int64_t t = 0; t < c.tokens; ++t)
      for (std::int64_t e = 0; e < c.experts; ++e) premul.set_logit(t, e, m * rc.logit(t, e));
    const RoutingOutput op = r.run(premul);
    for (std::int64_t t = 0; t < c.tokens; ++t) RC_ASSERT(row_bitwise_equal(rc, out, t, premul, op, t));
  }
}

void determinism_and_batch_invariance(const Runner& r, CaseConfig c) {
  const RoutingCase rc(c);
  const RoutingOutput a = r.run(rc), b = r.run(rc);
  for (std::size_t i = 0; i < a.weights.size(); ++i) {
    RC_ASSERT(float_as_bits(a.weights[i]) == float_as_bits(b.weights[i]));
    RC_ASSERT(a.ids[i] == b.ids[i]);
  }
  // A row alone, contiguous, with an exact-size destination, equals the row
  // embedded in the batch.
  if (c.tokens == 0) return;
  for (std::int64_t t : {std::int64_t{0}, c.tokens / 2, c.tokens - 1}) {
    CaseConfig one = c;
    one.tokens = 1;
    one.layout = harness::LogitsLayout::kContiguous;
    one.padding = harness::PaddingMode::kNone;
    one.extra_rows = one.extra_cols = 0;
    RoutingCase alone(one);
    for (std::int64_t e = 0; e < c.experts; ++e) {
      alone.set_logit(0, e, rc.logit(t, e));
      alone.set_bias(e, rc.bias()[e]);  // a case of another T draws another bias
    }
    const RoutingParams in = rc.host_params();
    if (in.is_padding && in.is_padding[t * in.padding_stride]) continue;
    RC_ASSERT(row_bitwise_equal(alone, r.run(alone), 0, rc, a, t));
  }
}

void layout_invariance(const Runner& r, CaseConfig c) {
  // The generator draws values per (t, e), whatever the layout.
  CaseConfig contiguous = c;
  contiguous.layout = harness::LogitsLayout::kContiguous;
  const RoutingCase rc(c), rk(contiguous);
  const RoutingOutput oc = r.run(rc), ok = r.run(rk);
  for (std::int64_t t = 0; t < c.tokens; ++t) RC_ASSERT(row_bitwise_equal(rc, oc, t, rk, ok, t));
}

const std::vector<NamedProperty>& all_properties() {
  static const std::vector<NamedProperty> props = {
      {"reference_agreement", &reference_agreement},
      {"tie_breaking", &tie_breaking},
      {"bias_only_for_selection", &bias_only_for_selection},
      {"eps_semantics", &eps_semantics},
      {"padding_semantics", &padding_semantics},
      {"normalization", &normalization},
      {"determinism_and_batch_invariance", &determinism_and_batch_invariance},
      {"layout_invariance", &layout_invariance},
  };
  return props;
}

std::vector<Runner> production_runners() {
  std::vector<std::string> wanted;
  if (const char* env = std::getenv("MUSESPARK_PROPERTY_IMPLS")) {
    std::stringstream ss(env);
    for (std::string s; std::getline(ss, s, ',');)
      if (!s.empty()) wanted.push_back(s);
  }
  std::vector<Runner> runners;
  for (const harness::ImplementationPtr& impl : harness::registered_implementations()) {
    const bool named = std::find(wanted.begin(), wanted.end(), impl->name()) != wanted.end();
    if (!wanted.empty() && !named) continue;
    if (wanted.empty() && (impl->is_baseline() || !impl->unavailable_reason().empty())) continue;
    if (!impl->unavailable_reason().empty())
      throw std::runtime_error("MUSESPARK_PROPERTY_IMPLS names '" + impl->name() + "', which cannot run: " +
                               impl->unavailable_reason());
    runners.push_back({impl->name(), [impl](const RoutingCase& c) { return impl->run(c); }});
  }
  return runners;
}

}  // namespace musespark::properties

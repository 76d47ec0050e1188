#include "harness/comparator.h"

#include <cmath>
#include <cstring>
#include <iomanip>
#include <sstream>
#include <unordered_set>

#include "harness/tolerance.h"
#include "reference/routing_reference.h"

namespace musespark::harness {
namespace {

std::string num(double v) {
  std::ostringstream os;
  os << std::setprecision(9) << v;
  return os.str();
}

enum class Class { kNaN, kPosInf, kNegInf, kFinite };
Class class_of(double v) {
  if (std::isnan(v)) return Class::kNaN;
  if (std::isinf(v)) return v > 0 ? Class::kPosInf : Class::kNegInf;
  return Class::kFinite;
}
const char* class_name(Class c) {
  switch (c) {
    case Class::kNaN: return "NaN";
    case Class::kPosInf: return "+inf";
    case Class::kNegInf: return "-inf";
    case Class::kFinite: return "finite";
  }
  return "?";
}

class Judge {
 public:
  Judge(const RoutingCase& c, const RoutingOutput& out, const CompareOptions& o)
      : case_(c), out_(out), opt_(o), in_(c.host_params()), ref_(in_) {
    report_.case_description = describe(c.config());
    report_.tokens = c.config().tokens;
  }

  ComparisonReport run() {
    check_window_edges();
    for (std::int64_t t = 0; t < case_.config().tokens; ++t) {
      const std::int64_t before = report_.mismatch_count;
      check_token(t);
      if (report_.mismatch_count != before) ++report_.failed_tokens;
    }
    return std::move(report_);
  }

 private:
  void add(std::int64_t row, std::int64_t slot, MismatchKind kind, std::string detail) {
    ++report_.mismatch_count;
    if (report_.first_mismatches.size() < opt_.keep)
      report_.first_mismatches.push_back({row, slot, kind, std::move(detail)});
  }

  std::int64_t at(std::int64_t r, std::int64_t c) const { return r * case_.dest_cols() + c; }

  // Every element outside the window must still be poison, every element
  // inside must have been written.
  void check_window_edges() {
    const std::int64_t T = case_.config().tokens, k = case_.config().topk;
    const std::size_t n = static_cast<std::size_t>(case_.dest_rows() * case_.dest_cols());
    if (out_.weights.size() != n || out_.ids.size() != n) {
      add(-1, -1, MismatchKind::kNotWritten,
          "implementation returned " + std::to_string(out_.weights.size()) + " weights and " +
              std::to_string(out_.ids.size()) + " ids, destination holds " + std::to_string(n));
      return;
    }
    for (std::int64_t r = 0; r < case_.dest_rows(); ++r) {
      for (std::int64_t c = 0; c < case_.dest_cols(); ++c) {
        const bool inside = r < T && c < k;
        const bool w_poison = float_as_bits(out_.weights[at(r, c)]) == kPoisonWeightBits;
        const bool id_poison = out_.ids[at(r, c)] == kPoisonId;
        if (inside && (w_poison || id_poison))
          add(r, c, MismatchKind::kNotWritten, w_poison ? "weight still holds the poison" : "id still holds the poison");
        if (!inside && (!w_poison || !id_poison))
          add(r, c, MismatchKind::kOutsideWindow,
              "outside the [" + std::to_string(T) + ", " + std::to_string(k) + "] window: weight " +
                  num(out_.weights[at(r, c)]) + ", id " + std::to_string(out_.ids[at(r, c)]));
      }
    }
  }

  bool exact_tie(std::int64_t t, const reference::TokenDecision& d, std::int32_t a, std::int32_t b) const {
    if (std::isnan(d.q[a]) && std::isnan(d.q[b])) return true;
    if (std::isinf(d.q[a]) && d.q[a] == d.q[b]) return true;
    return case_.logit(t, a) == case_.logit(t, b) && case_.bias()[a] == case_.bias()[b];
  }

  void check_token(std::int64_t t) {
    const std::int64_t E = case_.config().experts, k = case_.config().topk;
    const reference::TokenDecision d = ref_.token(t);
    std::vector<std::int32_t> ids(k);
    std::vector<float> w(k);
    for (std::int64_t j = 0; j < k; ++j) {
      ids[j] = static_cast<std::int32_t>(out_.ids[at(t, j)]);
      w[j] = out_.weights[at(t, j)];
      if (out_.ids[at(t, j)] == kPoisonId || float_as_bits(w[j]) == kPoisonWeightBits) return;  // reported
    }

    if (d.padded) {
      ++report_.padded_tokens;
      for (std::int64_t j = 0; j < k; ++j)
        if (ids[j] != -1 || w[j] != 0.0f)
          add(t, j, MismatchKind::kPadding,
              "padded row: got (" + std::to_string(ids[j]) + ", " + num(w[j]) + "), want (-1, 0)");
      return;
    }

    std::unordered_set<std::int32_t> seen;
    bool ids_ok = true;
    for (std::int64_t j = 0; j < k; ++j) {
      const std::int64_t raw = out_.ids[at(t, j)];
      if (raw < 0 || raw >= E) {
        add(t, j, MismatchKind::kIdOutOfRange, "id " + std::to_string(raw) + " not in [0, " + std::to_string(E) + ")");
        ids_ok = false;
      } else if (!seen.insert(ids[j]).second) {
        add(t, j, MismatchKind::kDuplicateId, "expert " + std::to_string(ids[j]) + " selected twice");
        ids_ok = false;
      }
    }
    if (!ids_ok) return;

    const TokenTolerance tol = derive_tolerance(d, in_);
    if (tol.beyond_fp32) {
      ++report_.beyond_fp32_tokens;
      return;
    }
    if (!check_selection(t, d, tol, ids)) return;
    if (ids != d.ids) ++report_.near_tie_tokens;
    check_weights(t, d, tol, ids, w);
  }

  // Slot by slot: every expert the reference ranks above the chosen one, and
  // not chosen earlier, must be a near tie of it (and not an exact tie).
  bool check_selection(std::int64_t t, const reference::TokenDecision& d, const TokenTolerance& tol,
                       const std::vector<std::int32_t>& ids) {
    std::unordered_set<std::int32_t> taken;
    for (std::size_t j = 0; j < ids.size(); ++j) {
      const std::int32_t a = ids[j];
      for (std::int32_t c : d.ranking) {
        if (c == a) break;
        if (taken.count(c)) continue;
        if (exact_tie(t, d, a, c)) {
          add(t, static_cast<std::int64_t>(j), MismatchKind::kExactTieOrder,
              "got expert " + std::to_string(a) + " before expert " + std::to_string(c) +
                  " with identical selection inputs (q=" + num(d.q[a]) + "); the lower index comes first");
          return false;
        }
        if (!near_tie(tol, d, a, c)) {
          add(t, static_cast<std::int64_t>(j), MismatchKind::kWrongSelection,
              "got expert " + std::to_string(a) + " (q=" + num(d.q[a]) + "), but expert " +
                  std::to_string(c) + " (q=" + num(d.q[c]) + ") ranks higher by " + num(d.q[c] - d.q[a]) +
                  " > tolerance " + num(tol.q_abs[a] + tol.q_abs[c]) + "; reference ids " + ids_text(d.ids));
          return false;
        }
      }
      taken.insert(a);
    }
    return true;
  }

  void check_weights(std::int64_t t, const reference::TokenDecision& d, const TokenTolerance& tol,
                     const std::vector<std::int32_t>& ids, const std::vector<float>& w) {
    const std::vector<double> want = ref_.weights_for(d, ids);
    const WeightBound bound = weight_bound(d, tol, ids, want, in_);
    bool counted_unresolved = false;
    for (std::size_t j = 0; j < ids.size(); ++j) {
      const Class got_c = class_of(w[j]), want_c = class_of(want[j]);
      if (want_c == Class::kFinite && !bound.resolvable) {
        if (!counted_unresolved) ++report_.unresolved_weight_tokens;
        counted_unresolved = true;
        continue;
      }
      if (got_c != want_c) {
        add(t, static_cast<std::int64_t>(j), MismatchKind::kWeightClass,
            "weight of expert " + std::to_string(ids[j]) + ": got " + num(w[j]) + " (" + class_name(got_c) +
                "), want " + num(want[j]) + " (" + class_name(want_c) + ")");
        continue;
      }
      if (want_c != Class::kFinite) continue;
      const double err = std::fabs(static_cast<double>(w[j]) - want[j]);
      if (!(err <= bound.abs[j]))
        add(t, static_cast<std::int64_t>(j), MismatchKind::kWeightValue,
            "weight of expert " + std::to_string(ids[j]) + ": got " + num(w[j]) + ", want " + num(want[j]) +
                ", error " + num(err) + " > bound " + num(bound.abs[j]));
    }
  }

  static std::string ids_text(const std::vector<std::int32_t>& ids) {
    std::string s = "[";
    for (std::size_t i = 0; i < ids.size(); ++i) s += (i ? "," : "") + std::to_string(ids[i]);
    return s + "]";
  }

  const RoutingCase& case_;
  const RoutingOutput& out_;
  CompareOptions opt_;
  RoutingParams in_;
  reference::RoutingReference ref_;
  ComparisonReport report_;
};

}  // namespace

const char* mismatch_kind_name(MismatchKind k) {
  switch (k) {
    case MismatchKind::kNotWritten: return "not-written";
    case MismatchKind::kOutsideWindow: return "outside-window";
    case MismatchKind::kPadding: return "padding";
    case MismatchKind::kIdOutOfRange: return "id-out-of-range";
    case MismatchKind::kDuplicateId: return "duplicate-id";
    case MismatchKind::kExactTieOrder: return "exact-tie-order";
    case MismatchKind::kWrongSelection: return "wrong-selection";
    case MismatchKind::kWeightClass: return "weight-class";
    case MismatchKind::kWeightValue: return "weight-value";
  }
  return "?";
}

std::string ComparisonReport::format(std::size_t max_lines) const {
  std::ostringstream os;
  os << (ok() ? "PASS " : "FAIL ") << case_description << "\n  tokens " << tokens << ", padded "
     << padded_tokens << ", near ties " << near_tie_tokens << ", beyond fp32 " << beyond_fp32_tokens
     << ", unresolved weights " << unresolved_weight_tokens << ", failed tokens " << failed_tokens
     << ", mismatches " << mismatch_count << "\n";
  for (std::size_t i = 0; i < first_mismatches.size() && i < max_lines; ++i) {
    const Mismatch& m = first_mismatches[i];
    os << "  [row " << m.row << ", slot " << m.slot << "] " << mismatch_kind_name(m.kind) << ": "
       << m.detail << "\n";
  }
  if (mismatch_count > static_cast<std::int64_t>(std::min(max_lines, first_mismatches.size())))
    os << "  ... " << mismatch_count - static_cast<std::int64_t>(std::min(max_lines, first_mismatches.size()))
       << " more\n";
  return os.str();
}

ComparisonReport compare_output(const RoutingCase& c, const RoutingOutput& out, const CompareOptions& options) {
  return Judge(c, out, options).run();
}

}  // namespace musespark::harness

// Proof of strength: every deliberately broken router must fail at least one
// property of the suite. A suite that a broken kernel passes is worthless.
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <iostream>
#include <map>

#include "broken_implementations.h"
#include "router_generators.h"
#include "router_properties.h"

namespace musespark::properties {
namespace {

class CatchesBroken : public ::testing::TestWithParam<std::size_t> {};

TEST_P(CatchesBroken, SomePropertyFails) {
  const Runner broken = broken_runners()[GetParam()];
  std::string caught_by;
  for (const NamedProperty& prop : all_properties()) {
    std::cout << "---- '" << broken.name << "' against " << prop.name << " (a failure below is expected)\n";
    const bool passed = rc::check(std::string(prop.name) + " on '" + broken.name + "'",
                                  [&](harness::CaseConfig c) { prop.check(broken, c); });
    if (!passed) {
      caught_by = prop.name;
      break;
    }
  }
  EXPECT_FALSE(caught_by.empty()) << "no property caught the broken implementation '" << broken.name << "'";
  if (!caught_by.empty()) std::cout << "==== '" << broken.name << "' caught by " << caught_by << "\n";
}

INSTANTIATE_TEST_SUITE_P(Broken, CatchesBroken, ::testing::Range<std::size_t>(0, broken_runners().size()),
                         [](const auto& info) {
                           std::string n = broken_runners()[info.param].name;
                           for (char& ch : n) if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

// Each defect below also fails the property written for it, not only the
// broad reference check: the targeted properties are not vacuous.
const std::vector<std::pair<std::string, std::string>>& targeted() {
  static const std::vector<std::pair<std::string, std::string>> pairs = {
      {"weights from biased scores", "bias_only_for_selection"},
      {"ties to the higher index", "tie_breaking"},
      {"eps dropped", "eps_semantics"},
      {"padding ignored", "padding_semantics"},
      {"column stride ignored", "layout_invariance"},
      {"multiplier ignored", "normalization"},
      {"nondeterministic last bit", "determinism_and_batch_invariance"},
      {"depends on the batch", "determinism_and_batch_invariance"},
  };
  return pairs;
}

class TargetedPropertyCatches : public ::testing::TestWithParam<std::size_t> {};

TEST_P(TargetedPropertyCatches, ItsDefect) {
  const auto& [broken_name, property_name] = targeted()[GetParam()];
  const Runner* broken = nullptr;
  const std::vector<Runner> runners = broken_runners();
  for (const Runner& r : runners) if (r.name == broken_name) broken = &r;
  ASSERT_NE(broken, nullptr) << broken_name;
  const NamedProperty* prop = nullptr;
  for (const NamedProperty& p : all_properties()) if (property_name == p.name) prop = &p;
  ASSERT_NE(prop, nullptr) << property_name;
  std::cout << "---- '" << broken_name << "' against " << property_name << " (a failure below is expected)\n";
  EXPECT_FALSE(rc::check(property_name, [&](harness::CaseConfig c) { prop->check(*broken, c); }))
      << property_name << " did not catch '" << broken_name << "'";
}

INSTANTIATE_TEST_SUITE_P(Broken, TargetedPropertyCatches, ::testing::Range<std::size_t>(0, targeted().size()),
                         [](const auto& info) {
                           std::string n = targeted()[info.param].first + "_by_" + targeted()[info.param].second;
                           for (char& ch : n) if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

}  // namespace
}  // namespace musespark::properties

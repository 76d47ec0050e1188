// The property suite on every production implementation this machine can run
// (cpu here and in CI; cpu and cuda on the GPU machine). Replay a failure with
// the seed it prints: RC_PARAMS="seed=1234" ./test_router_properties
// Longer runs: RC_PARAMS="max_success=2000". Pin implementations with
// MUSESPARK_PROPERTY_IMPLS=cuda.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "router_generators.h"
#include "router_properties.h"

namespace musespark::properties {
namespace {

void for_each_runner(Property p, const harness::CaseConfig& c) {
  static const std::vector<Runner> runners = production_runners();
  RC_PRE(!runners.empty());
  for (const Runner& r : runners) p(r, c);
}

RC_GTEST_PROP(RouterProperties, ReferenceAgreement, (harness::CaseConfig c)) { for_each_runner(&reference_agreement, c); }
RC_GTEST_PROP(RouterProperties, TieBreaking, (harness::CaseConfig c)) { for_each_runner(&tie_breaking, c); }
RC_GTEST_PROP(RouterProperties, BiasOnlyForSelection, (harness::CaseConfig c)) { for_each_runner(&bias_only_for_selection, c); }
RC_GTEST_PROP(RouterProperties, EpsSemantics, (harness::CaseConfig c)) { for_each_runner(&eps_semantics, c); }
RC_GTEST_PROP(RouterProperties, PaddingSemantics, (harness::CaseConfig c)) { for_each_runner(&padding_semantics, c); }
RC_GTEST_PROP(RouterProperties, Normalization, (harness::CaseConfig c)) { for_each_runner(&normalization, c); }
RC_GTEST_PROP(RouterProperties, DeterminismAndBatchInvariance, (harness::CaseConfig c)) {
  for_each_runner(&determinism_and_batch_invariance, c);
}
RC_GTEST_PROP(RouterProperties, LayoutInvariance, (harness::CaseConfig c)) { for_each_runner(&layout_invariance, c); }

TEST(RouterProperties, ImplementationsUnderTest) {
  const std::vector<Runner> runners = production_runners();
  ASSERT_FALSE(runners.empty()) << "no production implementation can run here";
  std::string names;
  for (const Runner& r : runners) names += r.name + " ";
  std::cout << "properties run on: " << names << "\n";
}

}  // namespace
}  // namespace musespark::properties

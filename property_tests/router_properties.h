// The router's properties, each a function over (implementation, case) that
// fails through RapidCheck assertions. test_router_properties.cpp runs them
// on every production implementation available; test_properties_catch_broken
// runs them on deliberately broken implementations and requires each to be
// caught.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "harness/routing_case.h"

namespace musespark::properties {

struct Runner {
  std::string name;
  std::function<harness::RoutingOutput(const harness::RoutingCase&)> run;
};

using Property = void (*)(const Runner&, harness::CaseConfig);

struct NamedProperty {
  const char* name;
  Property check;
};

void reference_agreement(const Runner& r, harness::CaseConfig c);
void tie_breaking(const Runner& r, harness::CaseConfig c);
void bias_only_for_selection(const Runner& r, harness::CaseConfig c);
void eps_semantics(const Runner& r, harness::CaseConfig c);
void padding_semantics(const Runner& r, harness::CaseConfig c);
void normalization(const Runner& r, harness::CaseConfig c);
void determinism_and_batch_invariance(const Runner& r, harness::CaseConfig c);
void layout_invariance(const Runner& r, harness::CaseConfig c);

// Every property above, in a fixed order (cheapest catch first).
const std::vector<NamedProperty>& all_properties();

// Production implementations to check: MUSESPARK_PROPERTY_IMPLS=cpu,cuda
// pins the list; by default every available non-baseline one.
std::vector<Runner> production_runners();

}  // namespace musespark::properties

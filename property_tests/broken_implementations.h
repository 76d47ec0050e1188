// Deliberately broken routers, built on the CPU path, that exist only to
// prove the property suite rejects them.
#pragma once

#include <vector>

#include "router_properties.h"

namespace musespark::properties {

std::vector<Runner> broken_runners();

// Exact ties broken toward the higher expert index (the experts routed in
// reverse order, ids mapped back). Also the fuzzer's test subject.
harness::RoutingOutput ties_to_higher_index(const harness::RoutingCase& c);

}  // namespace musespark::properties

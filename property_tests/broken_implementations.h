// Deliberately broken routers, built on the CPU path, that exist only to
// prove the property suite rejects them.
#pragma once

#include <vector>

#include "router_properties.h"

namespace musespark::properties {

std::vector<Runner> broken_runners();

}  // namespace musespark::properties

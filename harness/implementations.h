// The implementations registry: everything the harness can judge, by name.
// Each one takes a RoutingCase, fills poisoned destinations of the case's
// geometry, runs, and returns the whole destinations for the comparator.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "harness/routing_case.h"

namespace musespark::harness {

class Implementation {
 public:
  virtual ~Implementation() = default;
  virtual std::string name() const = 0;
  virtual std::string description() const = 0;
  // Empty when it can run on this machine, else the reason it cannot.
  virtual std::string unavailable_reason() const = 0;
  // Baselines (the torch recipe) are measured and reported but do not gate
  // `musespark check`: they are not held to the contract.
  virtual bool is_baseline() const { return false; }
  virtual RoutingOutput run(const RoutingCase& c) const = 0;
};

using ImplementationPtr = std::shared_ptr<const Implementation>;

// cpu, cuda, torch-recipe, in that order; entries this build or machine
// cannot run are present and say why. (Defined in musespark_registry.)
std::vector<ImplementationPtr> registered_implementations();

// Throws ArgumentError naming the unknown value and the known names.
ImplementationPtr find_implementation(std::string_view name);

// Poisoned host destinations of a case's geometry, in the case's id dtype.
struct HostDestinations {
  std::vector<float> weights;
  std::vector<std::uint8_t> ids;  // raw int32 or int64 elements
  explicit HostDestinations(const RoutingCase& c);
  void point(RoutingParams& p);   // sets p.weights / p.ids to these buffers
  RoutingOutput to_output(const RoutingCase& c) const;
};

// Factories, one file each.
ImplementationPtr make_cpu_implementation();
ImplementationPtr make_cuda_implementation();
ImplementationPtr make_cuda_row_per_thread_implementation();
ImplementationPtr make_cuda_block_rank_implementation();
ImplementationPtr make_cuda_block_threshold_implementation();
ImplementationPtr make_cuda_filter_implementation();
ImplementationPtr make_torch_recipe_implementation();

}  // namespace musespark::harness

// The registry: the list of every implementation the harness knows.
#include "harness/implementations.h"
#include "musespark/errors.h"

namespace musespark::harness {

std::vector<ImplementationPtr> registered_implementations() {
  return {make_cpu_implementation(), make_cuda_implementation(), make_cuda_row_per_thread_implementation(),
          make_cuda_block_rank_implementation(), make_cuda_block_threshold_implementation(),
          make_cuda_filter_implementation(),
          make_torch_recipe_implementation()};
}

ImplementationPtr find_implementation(std::string_view name) {
  std::string known;
  for (const ImplementationPtr& impl : registered_implementations()) {
    if (impl->name() == name) return impl;
    known += (known.empty() ? "" : ", ") + impl->name();
  }
  throw ArgumentError("unknown implementation '" + std::string(name) + "'; known: " + known);
}

}  // namespace musespark::harness

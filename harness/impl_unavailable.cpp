// Registry entries for implementations this build does not contain, so that
// tables and test skips say why instead of leaving them out.
#include "harness/implementations.h"
#include "musespark/errors.h"

namespace musespark::harness {
namespace {

class UnavailableImplementation final : public Implementation {
 public:
  UnavailableImplementation(std::string name, std::string reason)
      : name_(std::move(name)), reason_(std::move(reason)) {}
  std::string name() const override { return name_; }
  std::string description() const override { return "not in this build"; }
  std::string unavailable_reason() const override { return reason_; }
  RoutingOutput run(const RoutingCase&) const override {
    throw ArgumentError("implementation '" + name_ + "' is unavailable: " + reason_);
  }

 private:
  std::string name_, reason_;
};

}  // namespace

#ifndef MUSESPARK_HAVE_CUDA
ImplementationPtr make_cuda_implementation() {
  return std::make_shared<UnavailableImplementation>(
      "cuda", "this build has no CUDA kernel (no nvcc found, or MUSESPARK_ENABLE_CUDA=OFF)");
}
ImplementationPtr make_cuda_row_per_thread_implementation() {
  return std::make_shared<UnavailableImplementation>(
      "cuda-row-per-thread", "this build has no CUDA kernel (no nvcc found, or MUSESPARK_ENABLE_CUDA=OFF)");
}
ImplementationPtr make_cuda_block_rank_implementation() {
  return std::make_shared<UnavailableImplementation>(
      "cuda-block-rank", "this build has no CUDA kernel (no nvcc found, or MUSESPARK_ENABLE_CUDA=OFF)");
}
ImplementationPtr make_cuda_block_threshold_implementation() {
  return std::make_shared<UnavailableImplementation>(
      "cuda-block-threshold", "this build has no CUDA kernel (no nvcc found, or MUSESPARK_ENABLE_CUDA=OFF)");
}
ImplementationPtr make_cuda_filter_implementation() {
  return std::make_shared<UnavailableImplementation>(
      "cuda-filter", "this build has no CUDA kernel (no nvcc found, or MUSESPARK_ENABLE_CUDA=OFF)");
}
#endif

#ifndef MUSESPARK_HAVE_TORCH
ImplementationPtr make_torch_recipe_implementation() {
  return std::make_shared<UnavailableImplementation>(
      "torch-recipe", "this build has no LibTorch (libtorch-dev or PyTorch's CMake path not found)");
}
#endif

}  // namespace musespark::harness

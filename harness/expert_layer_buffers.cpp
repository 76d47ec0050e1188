#include "harness/expert_layer_buffers.h"

#include <stdexcept>

#ifdef MUSESPARK_HAVE_CUDA
#include "harness/cuda_case.h"
#endif

namespace musespark::harness {

ExpertLayerBuffers::ExpertLayerBuffers(const ExpertLayerConfig& config, DType weight_dtype, Device device) {
#ifndef MUSESPARK_HAVE_CUDA
  if (device == Device::kCuda) throw std::invalid_argument("CUDA destinations: this build has no CUDA");
#endif
  for (const auto& [name, spec] : ConsolidatedExpertLoader::expected_params(config, weight_dtype)) {
    std::int64_t n = 1;
    for (std::int64_t d : spec.second) n *= d;
    const std::size_t size = static_cast<std::size_t>(n) * dtype_size(spec.first);
    void* data = nullptr;
    if (device == Device::kCpu) {
      data = host_.emplace_back(size).data();
    } else {
#ifdef MUSESPARK_HAVE_CUDA
      auto buffer = std::make_shared<DeviceBuffer>(size);
      check_cuda(cudaMemset(buffer->get(), 0, size), "cudaMemset (destinations)");
      data = buffer->get();
      device_.push_back(std::shared_ptr<void>(buffer, data));
#endif
    }
    params_[name] = ExpertParam{data, spec.first, spec.second, device};
    bytes_ += size;
  }
}

}  // namespace musespark::harness

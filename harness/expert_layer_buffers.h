// The parameters of one expert layer (the shapes the loader expects for a
// configuration), zero-filled, on the CPU or the current CUDA device: the
// destinations of `musespark load` and of perf/loader_benchmark.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "musespark/expert_loader.h"

namespace musespark::harness {

class ExpertLayerBuffers {
 public:
  // Throws std::invalid_argument for Device::kCuda in a build without CUDA,
  // DeviceError when an allocation fails.
  ExpertLayerBuffers(const ExpertLayerConfig& config, DType weight_dtype, Device device);

  const std::map<std::string, ExpertParam>& params() const { return params_; }
  std::size_t bytes() const { return bytes_; }

 private:
  std::vector<std::vector<std::uint8_t>> host_;
  std::vector<std::shared_ptr<void>> device_;  // freed with cudaFree
  std::map<std::string, ExpertParam> params_;
  std::size_t bytes_ = 0;
};

}  // namespace musespark::harness

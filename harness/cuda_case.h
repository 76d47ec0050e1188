// A RoutingCase copied to the GPU: inputs in the same layout, destinations
// poisoned. GPU tests use it directly (graphs, PDL, forced paths); the
// registry's `cuda` implementation wraps it.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <utility>

#include "harness/routing_case.h"
#include "routing_kernel.cuh"

namespace musespark::harness {

// Throws DeviceError naming the CUDA error and what was being done.
void check_cuda(cudaError_t err, const char* what);

// Empty when a CUDA device is usable, else why not (for skips and tables).
std::string cuda_unavailable_reason();

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes);
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = nullptr; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  ~DeviceBuffer();
  void* get() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

class CudaCase {
 public:
  explicit CudaCase(const RoutingCase& c);
  // Device-side params for the case (destinations included).
  const RoutingParams& params() const { return params_; }
  // Re-poisons the destinations (before a second run).
  void poison();
  RoutingOutput read_output() const;

 private:
  const RoutingCase& case_;
  DeviceBuffer logits_, bias_, padding_, weights_, ids_;
  RoutingParams params_;
};

// Runs the kernel once on a fresh stream and returns the destinations.
RoutingOutput run_cuda_case(const RoutingCase& c, const cuda::LaunchOptions& options = {});

}  // namespace musespark::harness

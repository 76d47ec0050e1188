// The CUDA runtime helpers every GPU-side tool here shares: error checks
// that name what failed, why a device is unusable, and an owned allocation.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <string>
#include <utility>

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

}  // namespace musespark::harness

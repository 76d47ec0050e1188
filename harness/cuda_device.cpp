#include "harness/cuda_device.h"

#include "musespark/errors.h"

namespace musespark::harness {

void check_cuda(cudaError_t err, const char* what) {
  if (err != cudaSuccess)
    throw DeviceError(std::string(what) + ": " + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")");
}

std::string cuda_unavailable_reason() {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) return std::string("no CUDA device: ") + cudaGetErrorName(err);
  if (count == 0) return "no CUDA device: cudaGetDeviceCount returned 0";
  return {};
}

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  if (bytes > 0) check_cuda(cudaMalloc(&ptr_, bytes), "cudaMalloc");
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) cudaFree(ptr_);
}

}  // namespace musespark::harness

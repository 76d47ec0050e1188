// Host-to-device engine for the expert loader: the loader's BlockCopy list
// (rows of a 2-D block in the mapped checkpoint) goes through pinned staging
// buffers, one per stream, so the CPU fills the next chunk while the
// previous one crosses the link (cudaMemcpy2DAsync with the destination's
// pitch). Not yet run on a GPU: property_tests/gpu/test_cuda_loader.cpp
// checks it bit for bit against the CPU path when a device is present.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

#include "musespark/expert_loader.h"

namespace musespark::cuda {

class ExpertCopyEngine {
 public:
  explicit ExpertCopyEngine(std::size_t staging_bytes_per_stream = std::size_t{64} << 20, int streams = 4);
  ~ExpertCopyEngine();
  ExpertCopyEngine(const ExpertCopyEngine&) = delete;
  ExpertCopyEngine& operator=(const ExpertCopyEngine&) = delete;

  // Copies every block to device memory and returns when all have landed.
  // Throws DeviceError naming the CUDA error.
  void copy(const std::vector<BlockCopy>& blocks, Device device);

  // For ConsolidatedExpertLoader; the engine must outlive the loader.
  CopyEngine as_copy_engine();

 private:
  struct Lane {
    void* staging = nullptr;
    cudaStream_t stream = nullptr;
    cudaEvent_t done = nullptr;
    bool busy = false;
  };
  std::size_t staging_bytes_;
  std::vector<Lane> lanes_;
};

}  // namespace musespark::cuda

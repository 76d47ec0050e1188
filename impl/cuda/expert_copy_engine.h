// Host-to-device engine for the expert loader. The loader's BlockCopy list
// (2-D blocks of the mapped checkpoint) is cut into chunks; several worker
// threads each own a CUDA stream and two pinned staging buffers, so while one
// buffer crosses the link the thread fills the other from the page cache.
// The fill is the CPU's part (a memcpy out of the mapping, page faults
// included) and one thread cannot keep up with the link; the workers split it.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

#include "musespark/expert_loader.h"

namespace musespark::cuda {

class ExpertCopyEngine {
 public:
  // staging_bytes: size of each of a worker's two pinned buffers.
  explicit ExpertCopyEngine(std::size_t staging_bytes = std::size_t{16} << 20, int workers = 16);
  ~ExpertCopyEngine();
  ExpertCopyEngine(const ExpertCopyEngine&) = delete;
  ExpertCopyEngine& operator=(const ExpertCopyEngine&) = delete;

  // Copies every block to device memory (the current device) and returns when
  // all have landed. Throws DeviceError naming the CUDA error; after an error
  // the destinations may be partly written.
  void copy(const std::vector<BlockCopy>& blocks, Device device);

  // For ConsolidatedExpertLoader; the engine must outlive the loader.
  CopyEngine as_copy_engine();

 private:
  struct Worker {
    void* staging[2] = {nullptr, nullptr};
    cudaEvent_t landed[2] = {nullptr, nullptr};
    cudaStream_t stream = nullptr;
  };
  void release();
  std::size_t staging_bytes_;
  std::vector<Worker> workers_;
};

// The baseline the engine is measured against: one synchronous
// cudaMemcpy2D per block straight from the (pageable) mapping, which is the
// shape of a per-expert `param[expert].copy_(loaded[expert])` loop.
void copy_blocks_one_call_each(const std::vector<BlockCopy>& blocks, Device device);

}  // namespace musespark::cuda

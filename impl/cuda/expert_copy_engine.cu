#include "expert_copy_engine.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "musespark/errors.h"

namespace musespark::cuda {
namespace {

void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess)
    throw DeviceError(std::string("expert loader: ") + what + ": " + cudaGetErrorName(err) + " (" +
                      cudaGetErrorString(err) + ")");
}

}  // namespace

ExpertCopyEngine::ExpertCopyEngine(std::size_t staging_bytes_per_stream, int streams)
    : staging_bytes_(staging_bytes_per_stream), lanes_(static_cast<std::size_t>(std::max(streams, 1))) {
  for (Lane& lane : lanes_) {
    check(cudaMallocHost(&lane.staging, staging_bytes_), "cudaMallocHost (staging)");
    check(cudaStreamCreateWithFlags(&lane.stream, cudaStreamNonBlocking), "cudaStreamCreate");
    check(cudaEventCreateWithFlags(&lane.done, cudaEventDisableTiming), "cudaEventCreate");
  }
}

ExpertCopyEngine::~ExpertCopyEngine() {
  for (Lane& lane : lanes_) {
    if (lane.stream) cudaStreamSynchronize(lane.stream);
    if (lane.done) cudaEventDestroy(lane.done);
    if (lane.stream) cudaStreamDestroy(lane.stream);
    if (lane.staging) cudaFreeHost(lane.staging);
  }
}

void ExpertCopyEngine::copy(const std::vector<BlockCopy>& blocks, Device device) {
  if (device != Device::kCuda) {
    copy_blocks_on_host(blocks, device);
    return;
  }
  std::size_t next = 0;
  for (const BlockCopy& b : blocks) {
    if (b.width_bytes > staging_bytes_)
      throw DeviceError("expert loader: a block row of " + std::to_string(b.width_bytes) +
                        " bytes is larger than the staging buffer (" + std::to_string(staging_bytes_) + ")");
    const std::size_t rows_per_chunk = std::max<std::size_t>(1, staging_bytes_ / b.width_bytes);
    for (std::size_t row = 0; row < b.height; row += rows_per_chunk) {
      const std::size_t rows = std::min(rows_per_chunk, b.height - row);
      Lane& lane = lanes_[next++ % lanes_.size()];
      if (lane.busy) check(cudaEventSynchronize(lane.done), "waiting for a staging buffer");
      auto* staging = static_cast<std::uint8_t*>(lane.staging);
      for (std::size_t r = 0; r < rows; ++r)
        std::memcpy(staging + r * b.width_bytes, b.src + (row + r) * b.src_pitch, b.width_bytes);
      check(cudaMemcpy2DAsync(b.dst + row * b.dst_pitch, b.dst_pitch, staging, b.width_bytes, b.width_bytes, rows,
                              cudaMemcpyHostToDevice, lane.stream),
            "cudaMemcpy2DAsync");
      check(cudaEventRecord(lane.done, lane.stream), "cudaEventRecord");
      lane.busy = true;
    }
  }
  for (Lane& lane : lanes_) {
    if (lane.busy) check(cudaEventSynchronize(lane.done), "finishing the copies");
    lane.busy = false;
  }
}

CopyEngine ExpertCopyEngine::as_copy_engine() {
  return [this](const std::vector<BlockCopy>& blocks, Device device) { copy(blocks, device); };
}

}  // namespace musespark::cuda

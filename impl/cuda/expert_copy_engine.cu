#include "expert_copy_engine.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>
#include <thread>

#include "musespark/errors.h"

namespace musespark::cuda {
namespace {

void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess)
    throw DeviceError(std::string("expert loader: ") + what + ": " + cudaGetErrorName(err) + " (" +
                      cudaGetErrorString(err) + ")");
}

// A piece of one block that fits a staging buffer: rows [row0, row0 + rows)
// and bytes [col0, col0 + cols) of each row.
struct Chunk {
  const BlockCopy* block;
  std::size_t row0, rows, col0, cols;
};

std::vector<Chunk> cut_into_chunks(const std::vector<BlockCopy>& blocks, std::size_t staging) {
  std::vector<Chunk> chunks;
  for (const BlockCopy& b : blocks) {
    if (b.width_bytes == 0 || b.height == 0) continue;
    if (b.width_bytes > staging) {  // a row wider than a buffer: column pieces, one row at a time
      for (std::size_t r = 0; r < b.height; ++r)
        for (std::size_t c = 0; c < b.width_bytes; c += staging)
          chunks.push_back({&b, r, 1, c, std::min(staging, b.width_bytes - c)});
      continue;
    }
    const std::size_t rows_per_chunk = staging / b.width_bytes;
    for (std::size_t r = 0; r < b.height; r += rows_per_chunk)
      chunks.push_back({&b, r, std::min(rows_per_chunk, b.height - r), 0, b.width_bytes});
  }
  return chunks;
}

}  // namespace

ExpertCopyEngine::ExpertCopyEngine(std::size_t staging_bytes, int workers)
    : staging_bytes_(staging_bytes), workers_(static_cast<std::size_t>(std::max(workers, 1))) {
  if (staging_bytes_ == 0) throw DeviceError("expert loader: staging buffer size 0");
  try {
    for (Worker& w : workers_) {
      for (int i = 0; i < 2; ++i) {
        check(cudaMallocHost(&w.staging[i], staging_bytes_), "cudaMallocHost (staging)");
        check(cudaEventCreateWithFlags(&w.landed[i], cudaEventDisableTiming), "cudaEventCreate");
      }
      check(cudaStreamCreateWithFlags(&w.stream, cudaStreamNonBlocking), "cudaStreamCreate");
    }
  } catch (...) {
    release();
    throw;
  }
}

ExpertCopyEngine::~ExpertCopyEngine() { release(); }

void ExpertCopyEngine::release() {
  for (Worker& w : workers_) {
    if (w.stream) cudaStreamSynchronize(w.stream), cudaStreamDestroy(w.stream), w.stream = nullptr;
    for (int i = 0; i < 2; ++i) {
      if (w.landed[i]) cudaEventDestroy(w.landed[i]), w.landed[i] = nullptr;
      if (w.staging[i]) cudaFreeHost(w.staging[i]), w.staging[i] = nullptr;
    }
  }
}

void ExpertCopyEngine::copy(const std::vector<BlockCopy>& blocks, Device device) {
  if (device != Device::kCuda) {
    copy_blocks_on_host(blocks, device);
    return;
  }
  const std::vector<Chunk> chunks = cut_into_chunks(blocks, staging_bytes_);
  int cuda_device = 0;
  check(cudaGetDevice(&cuda_device), "cudaGetDevice");

  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr first_error;
  std::mutex error_mutex;
  auto work = [&](Worker& w) {
    bool pending[2] = {false, false};
    try {
      check(cudaSetDevice(cuda_device), "cudaSetDevice");
      for (int turn = 0;; turn ^= 1) {
        const std::size_t i = next.fetch_add(1, std::memory_order_relaxed);
        if (i >= chunks.size() || failed.load(std::memory_order_relaxed)) break;
        const Chunk& c = chunks[i];
        const BlockCopy& b = *c.block;
        if (pending[turn]) check(cudaEventSynchronize(w.landed[turn]), "waiting for a staging buffer");
        auto* staging = static_cast<std::uint8_t*>(w.staging[turn]);
        const std::uint8_t* src = b.src + c.row0 * b.src_pitch + c.col0;
        for (std::size_t r = 0; r < c.rows; ++r) std::memcpy(staging + r * c.cols, src + r * b.src_pitch, c.cols);
        check(cudaMemcpy2DAsync(b.dst + c.row0 * b.dst_pitch + c.col0, b.dst_pitch, staging, c.cols, c.cols, c.rows,
                                cudaMemcpyHostToDevice, w.stream),
              "cudaMemcpy2DAsync");
        check(cudaEventRecord(w.landed[turn], w.stream), "cudaEventRecord");
        pending[turn] = true;
      }
      check(cudaStreamSynchronize(w.stream), "finishing the copies");
    } catch (...) {
      failed.store(true);
      cudaStreamSynchronize(w.stream);  // no copy may still read a staging buffer
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!first_error) first_error = std::current_exception();
    }
  };
  const std::size_t n = std::min(copy_workers_for(blocks, workers_.size()), std::max<std::size_t>(chunks.size(), 1));
  std::vector<std::thread> threads;
  threads.reserve(n);
  for (std::size_t t = 0; t < n; ++t) threads.emplace_back(work, std::ref(workers_[t]));
  for (std::thread& t : threads) t.join();
  if (first_error) std::rethrow_exception(first_error);
}

CopyEngine ExpertCopyEngine::as_copy_engine() {
  return [this](const std::vector<BlockCopy>& blocks, Device device) { copy(blocks, device); };
}

void copy_blocks_one_call_each(const std::vector<BlockCopy>& blocks, Device device) {
  if (device != Device::kCuda) {
    copy_blocks_on_host(blocks, device);
    return;
  }
  for (const BlockCopy& b : blocks)
    check(cudaMemcpy2D(b.dst, b.dst_pitch, b.src, b.src_pitch, b.width_bytes, b.height, cudaMemcpyHostToDevice),
          "cudaMemcpy2D (per-expert baseline)");
}

}  // namespace musespark::cuda

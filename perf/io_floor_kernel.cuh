// The io floor of a cell: the least a router launch can cost on it with the
// cell's own bytes and launch, and no selection. It sets apart, in a decode
// or small-batch cell's time, what the grid, the loads after the PDL wait
// and the stores cost (this kernel) from what the router's arithmetic and
// selection add (the cell's time minus this one).
#pragma once

#include <cstdint>

#include "routing_kernel_common.cuh"

namespace musespark::perf {

// One warp per row, blockDim.x / 32 rows a block: every 16-byte chunk of
// the row read after the wait and folded into one word by a warp reduction
// (so no load can be dropped), that word written to the row's k weight
// slots and j to id slot j.
// Rows must be contiguous and a multiple of 16 bytes (io_floor_unsupported).
// PDL as the router's launches (trigger_first_for), and entered as its
// decode kernels are: the wait is the first statement of the row loop's
// first iteration, so the row-invariant setup runs before it, while the
// previous grid finishes (routing_kernel_common.cuh, pdl_trigger_early).
// A floor launched less favourably than the kernels it bounds would not be
// a floor.
__global__ void io_floor_kernel(const unsigned char* logits, std::int64_t rows, std::int64_t row_bytes, int k,
                                float* weights, std::int32_t* ids, bool trigger_first) {
  cuda::pdl_trigger_early(trigger_first);
  const int lane = threadIdx.x % 32;
  const std::int64_t chunks = row_bytes / 16;
  const int warps = blockDim.x / 32;
  const std::int64_t first_row = static_cast<std::int64_t>(blockIdx.x) * warps + threadIdx.x / 32;
  for (std::int64_t row = first_row; row < rows; row += static_cast<std::int64_t>(gridDim.x) * warps) {
    if (row == first_row) cuda::pdl_wait_then_trigger(trigger_first);
    const uint4* src = reinterpret_cast<const uint4*>(logits + row * row_bytes);
    unsigned folded = 0;
    for (std::int64_t c = lane; c < chunks; c += 32) {
      const uint4 v = __ldg(src + c);
      folded ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    folded = __reduce_xor_sync(0xFFFFFFFFu, folded);
    for (int j = lane; j < k; j += 32) {
      weights[row * k + j] = __uint_as_float(folded);
      ids[row * k + j] = j;
    }
  }
}

// Why the io floor cannot run a cell whose rows are `row_bytes` long, or
// nullptr when it can.
inline const char* io_floor_unsupported(std::int64_t row_bytes) {
  return row_bytes % 16 != 0 ? "the io floor reads rows of a multiple of 16 bytes" : nullptr;
}

}  // namespace musespark::perf

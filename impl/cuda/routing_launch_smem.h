// How a launch holds its kernel to fewer blocks per SM than the kernel's
// registers allow: a dynamic shared memory request sized so that no more
// blocks fit. Host-only arithmetic, so that CPU tests check it.
#pragma once

#include <cstddef>

namespace musespark::cuda {

// The system's shared memory per block (sm_80 and later).
constexpr long long kReservedSmemPerBlock = 1024;

// A launch's shared memory: the dynamic bytes per block and the carveout
// (percent of the SM's shared memory; -1 leaves it to the driver).
struct LaunchSmem {
  std::size_t dynamic_bytes = 0;
  int carveout_percent = -1;
};

// The shared-memory sizes an SM of compute capability 9.0 can be split to
// (KB; the rest of its 256 KB is L1). The driver rounds a carveout hint up
// to one of them.
inline constexpr int kCarveoutsKb[] = {0, 8, 16, 32, 64, 100, 132, 164, 196, 228};

// A held block's share is sized in steps of 1 KB, so that `cap` blocks fit
// however finely the SM grants shared memory: sized in 128-byte steps, the
// register path's holds of three and four blocks per SM on carveouts of 8
// KB (blocks of 2.7 and 2 KB) ran 1.10-1.30x the time of the whole-SM
// padding's, as if one block fewer fit (H200, E = 64 / 128 at 3072 / 4096
// rows); in 1 KB steps the three-block cells were even. The row-per-thread
// holds (blocks of 20-25 KB) timed the same either way (H200, A/B of two
// rounds, 22 held cells: 1.001x / 1.002x).
constexpr long long kHeldBlockStep = 1024;

// Holds a kernel to `cap` blocks per SM and leaves it the most L1 that
// allows: the smallest carveout C that fits `cap` blocks of what the kernel
// needs (`need` dynamic bytes, its static share and the system's 1 KB),
// each block's request padded to C / cap so that one more does not fit.
// Padding to the SM's whole shared memory instead (blocks_per_sm_cap_smem)
// takes the carveout to its largest and L1 to 28 KB. Returns `need` and no
// carveout where no size does it.
inline LaunchSmem held_launch_smem(int cap, std::size_t need, long long static_bytes, long long per_sm_bytes) {
  const long long total_need = static_cast<long long>(need) + static_bytes + kReservedSmemPerBlock;
  for (int kb : kCarveoutsKb) {
    const long long c = static_cast<long long>(kb) * 1024;
    if (c == 0 || c > per_sm_bytes) continue;
    const long long per_block = c / cap / kHeldBlockStep * kHeldBlockStep;
    if (per_block < total_need || (cap + 1) * per_block <= c) continue;
    // The percent rounds down: the driver rounds up, and the next smaller
    // size is at least 8 KB (3.5%) below.
    return {static_cast<std::size_t>(per_block - static_bytes - kReservedSmemPerBlock),
            static_cast<int>(c * 100 / per_sm_bytes)};
  }
  return {need, -1};
}

}  // namespace musespark::cuda

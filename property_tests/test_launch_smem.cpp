// held_launch_smem: the dynamic shared memory and carveout with which a
// launch holds its kernel to `cap` blocks per SM. Host arithmetic, checked
// here against the SM's rules as the driver applies them: the carveout
// hint rounds up to a size the SM offers, and a block takes its request
// and static share in steps of the SM's allocation unit plus the system's
// 1 KB; the hold must stand for units of 128 bytes up to 1 KB.
#include <gtest/gtest.h>

#include <cstddef>

#include "routing_launch_smem.h"

namespace musespark::cuda {
namespace {

constexpr long long kH100SmemPerSm = 228 * 1024;  // cudaDevAttrMaxSharedMemoryPerMultiprocessor, H100 / H200

// The size the driver takes for a carveout hint of `percent`.
long long carveout_for(int percent, long long per_sm) {
  const long long asked = percent * per_sm / 100;
  for (int kb : kCarveoutsKb)
    if (kb * 1024LL >= asked) return kb * 1024LL;
  return per_sm;
}

long long block_bytes(long long dynamic, long long static_bytes, long long unit) {
  const long long kernel = dynamic + static_bytes;
  return (kernel + unit - 1) / unit * unit + kReservedSmemPerBlock;
}

TEST(HeldLaunchSmem, HoldsEveryCapAndLeavesTheMostL1) {
  int checked = 0;
  for (int cap = 1; cap <= 16; ++cap)
    for (long long static_bytes : {0LL, 1024LL})
      for (std::size_t need = 0; need <= 64 * 1024; need += 320) {
        const LaunchSmem held = held_launch_smem(cap, need, static_bytes, kH100SmemPerSm);
        const long long per_block_need = static_cast<long long>(need) + static_bytes + kReservedSmemPerBlock;
        SCOPED_TRACE(testing::Message() << "cap " << cap << ", need " << need << ", static " << static_bytes);
        if (held.carveout_percent < 0) {
          // Only where no size fits cap blocks of what the kernel needs,
          // each in whole steps.
          const long long stepped = (per_block_need + kHeldBlockStep - 1) / kHeldBlockStep * kHeldBlockStep;
          EXPECT_GT(cap * stepped, kH100SmemPerSm);
          EXPECT_EQ(held.dynamic_bytes, need);
          continue;
        }
        ASSERT_LE(held.carveout_percent, 100);
        ASSERT_GE(held.dynamic_bytes, need);
        const long long c = carveout_for(held.carveout_percent, kH100SmemPerSm);
        for (long long unit : {128LL, 256LL, 1024LL}) {
          const long long per_block = block_bytes(static_cast<long long>(held.dynamic_bytes), static_bytes, unit);
          EXPECT_LE(cap * per_block, c) << "cap blocks do not fit the " << c / 1024 << " KB carveout, unit " << unit;
          EXPECT_GT((cap + 1) * per_block, c) << "one block more fits the " << c / 1024 << " KB carveout, unit "
                                              << unit;
        }
        // No smaller size would have held cap blocks of that need.
        for (int kb : kCarveoutsKb) {
          const long long smaller = kb * 1024LL;
          if (smaller == 0 || smaller >= c) continue;
          const long long pad = smaller / cap / kHeldBlockStep * kHeldBlockStep;
          EXPECT_TRUE(pad < per_block_need || (cap + 1) * pad <= smaller) << kb << " KB would have held it";
        }
        ++checked;
      }
  EXPECT_GT(checked, 1000);
}

// The row-per-thread kernel of one lane per row at E = 64 with bf16 logits
// and its bias in shared memory asks 16640 bytes: at eight blocks per SM
// that is the 164 KB carveout (92 KB of L1), where padding to the whole
// 228 KB would leave 28 KB; each block's share 20 KB of the 20.5 that
// divide it.
TEST(HeldLaunchSmem, OneLaneRowPerThreadAtEightBlocks) {
  const LaunchSmem held = held_launch_smem(8, 16640, 0, kH100SmemPerSm);
  EXPECT_EQ(carveout_for(held.carveout_percent, kH100SmemPerSm), 164 * 1024);
  EXPECT_EQ(held.dynamic_bytes, 20 * 1024 - 1024);
}

TEST(HeldLaunchSmem, NeedsBeyondTheSmAreLeftAlone) {
  const LaunchSmem held = held_launch_smem(8, 40 * 1024, 0, kH100SmemPerSm);
  EXPECT_EQ(held.carveout_percent, -1);
  EXPECT_EQ(held.dynamic_bytes, 40u * 1024);
}

}  // namespace
}  // namespace musespark::cuda

// When the kernel's lanes that own whole rows (row-per-thread path, filter
// ranking) write a row's slots by vector stores (cuda::slot_vector_stores,
// impl/cuda/routing_kernel_common.cuh store_slots), and when one store per
// slot: a vector store into a destination that is not 16-byte aligned per
// row would fault or write the wrong slots, so every way a destination can
// miss the layout must give the scalar form. Host code only (no GPU); the
// GPU side writes such destinations in test_cuda_thread_row.
#include <gtest/gtest.h>

#include <cstdint>

#include "routing_kernel.cuh"

namespace musespark {
namespace {

alignas(16) float g_weights[4096];
alignas(16) std::int64_t g_ids[4096];

// A dense [T, k] pair of destinations, which the cases then bend.
RoutingParams dense_call(std::int64_t tokens, std::int64_t topk) {
  alignas(16) static unsigned char logits[16 * 256 * 4];
  RoutingParams p = shape_only_params(tokens, 64, topk, DType::kFloat32, Normalization::kSigmoid, logits, g_weights);
  set_contiguous_outputs(p, g_weights, g_ids, DType::kInt32);
  return p;
}

TEST(SlotStores, DenseAlignedDestinationsTakeVectors) {
  EXPECT_TRUE(cuda::slot_vector_stores(dense_call(16, 8)));
  EXPECT_TRUE(cuda::slot_vector_stores(dense_call(16, 4)));
  // One row: the row stride is never used, so it need not be aligned.
  RoutingParams one = dense_call(1, 8);
  one.weights_row_stride = one.ids_row_stride = 9;
  one.weights_cols = one.ids_cols = 9;
  EXPECT_TRUE(cuda::slot_vector_stores(one));
}

TEST(SlotStores, EveryOtherLayoutTakesOneStorePerSlot) {
  RoutingParams p = dense_call(16, 2);  // row stride 2 floats: rows 8 bytes apart
  EXPECT_FALSE(cuda::slot_vector_stores(p)) << "k = 2, dense";

  p = dense_call(16, 8);
  p.weights = g_weights + 1;  // base 4 bytes past a 16-byte boundary
  EXPECT_FALSE(cuda::slot_vector_stores(p)) << "weights base misaligned";

  p = dense_call(16, 8);
  p.ids = reinterpret_cast<std::int32_t*>(g_ids) + 2;  // 8 bytes past
  EXPECT_FALSE(cuda::slot_vector_stores(p)) << "ids base misaligned";

  p = dense_call(16, 8);
  p.weights_row_stride = p.weights_cols = 9;  // rows 36 bytes apart
  EXPECT_FALSE(cuda::slot_vector_stores(p)) << "weights row stride 9";

  p = dense_call(16, 8);
  p.ids_row_stride = p.ids_cols = 10;
  EXPECT_FALSE(cuda::slot_vector_stores(p)) << "ids row stride 10";

  p = dense_call(8, 8);
  p.weights_col_stride = 2;  // a strided view along k: every other column of [8, 16]
  p.weights_row_stride = 16;
  EXPECT_FALSE(cuda::slot_vector_stores(p)) << "weights column stride 2";

  p = dense_call(8, 8);
  p.ids_col_stride = 2;
  p.ids_row_stride = 16;
  EXPECT_FALSE(cuda::slot_vector_stores(p)) << "ids column stride 2";

  p = dense_call(16, 8);
  set_contiguous_outputs(p, g_weights, g_ids, DType::kInt64);
  EXPECT_FALSE(cuda::slot_vector_stores(p)) << "int64 ids";
}

}  // namespace
}  // namespace musespark

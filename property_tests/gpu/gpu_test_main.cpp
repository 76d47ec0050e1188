// main() for GPU test binaries: without a usable CUDA device it prints one
// line with the reason and the marker ctest turns into "Skipped", and runs
// nothing; with one it runs GoogleTest as usual.
#include <gtest/gtest.h>

#include <iostream>

#include "harness/cuda_case.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const std::string why = musespark::harness::cuda_unavailable_reason();
  if (!why.empty()) {
    std::cout << "MUSESPARK_GPU_TESTS_SKIPPED: " << why << "\n";
    return 0;
  }
  return RUN_ALL_TESTS();
}

// libFuzzer target over the safetensors reader: any byte string must either
// parse into views that lie inside the buffer, or raise SafetensorsError.
// Built and run by scripts/fuzz_reader.sh with ASan and UBSan.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "musespark/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const musespark::SafetensorsFile f =
        musespark::SafetensorsFile::from_bytes(std::vector<std::uint8_t>(data, data + size), "fuzz");
    std::size_t total = 0;
    for (const musespark::TensorView& v : f.tensors()) {
      total += v.nbytes;
      // Touch every byte: ASan reports any view outside the buffer.
      volatile std::uint8_t sink = 0;
      for (std::size_t i = 0; i < v.nbytes; ++i) sink ^= v.data[i];
      (void)sink;
    }
    if (total > size) std::abort();  // views cannot add up to more than the file
  } catch (const musespark::SafetensorsError&) {
  }
  return 0;
}

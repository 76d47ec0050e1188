// The safetensors reader refuses every malformed file with an error that
// names the file and the tensor, and round-trips what the writer writes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <functional>

#include "musespark/safetensors.h"

namespace musespark {
namespace {

using ::testing::HasSubstr;

std::vector<std::uint8_t> image(const std::string& header, std::size_t data_bytes) {
  std::vector<std::uint8_t> out(8);
  for (int i = 0; i < 8; ++i) out[i] = static_cast<std::uint8_t>(static_cast<std::uint64_t>(header.size()) >> (8 * i));
  out.insert(out.end(), header.begin(), header.end());
  out.resize(out.size() + data_bytes, 0xAB);
  return out;
}

void expect_refused(std::vector<std::uint8_t> bytes, const std::string& message) {
  try {
    SafetensorsFile::from_bytes(std::move(bytes), "bad.safetensors");
    ADD_FAILURE() << "accepted; expected: " << message;
  } catch (const SafetensorsError& e) {
    EXPECT_THAT(e.what(), HasSubstr("bad.safetensors"));
    EXPECT_THAT(e.what(), HasSubstr(message));
  }
}

TEST(Safetensors, RoundTrip) {
  const std::string path = (std::filesystem::temp_directory_path() / "musespark_rt.safetensors").string();
  std::vector<std::uint8_t> a(12), b(2);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<std::uint8_t>(i);
  b = {1, 0};
  write_safetensors(path, {{"w", DType::kFloat32, {3}, a}, {"mask", DType::kBool, {2}, b}}, {{"k", "v"}});
  const SafetensorsFile f = SafetensorsFile::open(path);
  EXPECT_EQ(f.metadata().at("k"), "v");
  const TensorView& w = f.at("w");
  EXPECT_EQ(w.dtype, DType::kFloat32);
  EXPECT_EQ(w.shape, std::vector<std::int64_t>{3});
  EXPECT_EQ(std::memcmp(w.data, a.data(), 12), 0);
  EXPECT_EQ(f.at("mask").data[0], 1);
  EXPECT_THROW(f.at("nope"), SafetensorsError);
  std::filesystem::remove(path);
}

TEST(Safetensors, MalformedFilesAreRefusedWithTheReason) {
  expect_refused({1, 2, 3}, "truncated: 3 bytes");
  {
    auto bytes = image("{}", 0);
    bytes[0] = 0xFF;  // header length 255 > file
    expect_refused(bytes, "runs past the end");
  }
  {
    auto bytes = image("{}", 0);
    bytes[7] = 0x01;  // 2^56 bytes
    expect_refused(bytes, "exceeds the");
  }
  expect_refused(image("{not json", 0), "header is not valid JSON");
  expect_refused(image("[1, 2]", 0), "header is not a JSON object");
  expect_refused(image(std::string("{\"a\xff\": 1}"), 0), "header is not valid JSON");  // not UTF-8
  expect_refused(image(R"({"t": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, "t": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})", 8),
                 "tensor 't' appears twice");
  expect_refused(image(R"({"t": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})", 4), "tensor 't': data_offsets end 8 is past the 4-byte data section");
  expect_refused(image(R"({"t": {"dtype": "F32", "shape": [1], "data_offsets": [4, 0]}})", 8), "tensor 't': data_offsets [4, 0] are reversed");
  expect_refused(image(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}, "b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})", 8),
                 "tensors 'a' and 'b' overlap");
  expect_refused(image(R"({"t": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})", 8), "tensor 't': 8 bytes, but shape and dtype F32 need 12");
  expect_refused(image(R"({"t": {"dtype": "Q4", "shape": [1], "data_offsets": [0, 1]}})", 1), "tensor 't': unknown dtype 'Q4'");
  expect_refused(image(R"({"t": {"dtype": "U8", "shape": [4294967296, 4294967296, 4294967296], "data_offsets": [0, 1]}})", 1),
                 "tensor 't': shape size overflows");
  expect_refused(image(R"({"t": {"shape": [1], "data_offsets": [0, 1]}})", 1), "tensor 't': missing or non-string 'dtype'");
  expect_refused(image(R"({"t": {"dtype": "U8", "data_offsets": [0, 1]}})", 1), "tensor 't': missing or non-array 'shape'");
  expect_refused(image(R"({"t": {"dtype": "U8", "shape": [1], "data_offsets": [0]}})", 1), "'data_offsets' must be [begin, end]");
  expect_refused(image(R"({"t": {"dtype": "U8", "shape": [-1], "data_offsets": [0, 1]}})", 1), "shape entries must be non-negative integers");
  expect_refused(image(R"({"t": 5})", 0), "tensor 't' is not an object");
  expect_refused(image(R"({"__metadata__": {"k": 1}})", 0), "__metadata__ value 'k' is not a string");
}

TEST(Safetensors, ZeroByteTensorsSitBesideOthers) {
  // A [0, E] tensor shares its offset with the next tensor: not an overlap.
  const SafetensorsFile f = SafetensorsFile::from_bytes(
      image(R"({"empty": {"dtype": "F32", "shape": [0, 8], "data_offsets": [0, 0]}, "b": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})", 8));
  EXPECT_EQ(f.at("empty").nbytes, 0u);
  EXPECT_EQ(f.at("b").nbytes, 8u);
}

TEST(Safetensors, MissingFileNamesThePath) {
  try {
    SafetensorsFile::open("/nonexistent/x.safetensors");
    ADD_FAILURE();
  } catch (const SafetensorsError& e) {
    EXPECT_THAT(e.what(), HasSubstr("/nonexistent/x.safetensors: cannot open"));
  }
}

}  // namespace
}  // namespace musespark

// safetensors files: 8-byte little-endian header length, a JSON header
// ({name: {dtype, shape, data_offsets}, "__metadata__": {str: str}}), data.
// The reader maps the file and validates everything before handing out
// zero-copy views; a malformed file is a SafetensorsError naming the file and
// the tensor, never a crash. The writer is used for case files.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "musespark/dtype.h"

namespace musespark {

class SafetensorsError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// "F32", "BF16", "F16", "I32", "I64", "BOOL", "U8", "F8_E4M3"; unknown names throw.
DType safetensors_dtype(const std::string& name);
const char* safetensors_dtype_name(DType t);

struct TensorView {
  std::string name;
  DType dtype;
  std::vector<std::int64_t> shape;
  const std::uint8_t* data;  // into the mapping; valid while the file object lives
  std::size_t nbytes;
  std::int64_t numel() const;
};

class SafetensorsFile {
 public:
  // Largest header accepted: a header this size is not a checkpoint.
  static constexpr std::uint64_t kMaxHeaderBytes = 100ull << 20;

  static SafetensorsFile open(const std::string& path);
  // Parses an in-memory image (the fuzz target and tests use this).
  static SafetensorsFile from_bytes(std::vector<std::uint8_t> bytes, std::string label = "<memory>");

  const std::string& path() const { return path_; }
  const std::vector<TensorView>& tensors() const { return tensors_; }  // in data-offset order
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // Throws SafetensorsError naming the file and the missing tensor.
  const TensorView& at(const std::string& name) const;
  bool contains(const std::string& name) const;

 private:
  void parse(const std::uint8_t* bytes, std::size_t size);

  std::string path_;
  std::shared_ptr<void> storage_;  // the mapping or the owned bytes
  std::vector<TensorView> tensors_;
  std::map<std::string, std::string> metadata_;
};

struct TensorToWrite {
  std::string name;
  DType dtype;
  std::vector<std::int64_t> shape;
  std::vector<std::uint8_t> bytes;
};

// Writes tensors in the given order; throws SafetensorsError when a
// tensor's byte length disagrees with its shape and dtype, or on I/O errors.
void write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata);

}  // namespace musespark

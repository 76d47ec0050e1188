// A checkpoint: one .safetensors file, or a directory whose
// model.safetensors.index.json maps tensor names to shard files.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "musespark/safetensors.h"

namespace musespark {

class Checkpoint {
 public:
  // Throws SafetensorsError naming the file and what is wrong.
  static Checkpoint open(const std::string& path);

  struct Entry {
    const TensorView* view;
    const std::string* file;
  };
  // Every tensor, in file order then data-offset order.
  const std::vector<Entry>& entries() const { return entries_; }

 private:
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::vector<std::string> paths_;
  std::vector<Entry> entries_;
};

}  // namespace musespark

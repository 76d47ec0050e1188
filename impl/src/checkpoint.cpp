#include "musespark/checkpoint.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

namespace musespark {

Checkpoint Checkpoint::open(const std::string& path) {
  namespace fs = std::filesystem;
  Checkpoint c;
  std::vector<std::string> shards;
  if (fs::is_directory(path)) {
    const fs::path index = fs::path(path) / "model.safetensors.index.json";
    if (!fs::exists(index)) throw SafetensorsError(path + ": a directory without model.safetensors.index.json");
    nlohmann::json j;
    try {
      std::ifstream in(index);
      j = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception& e) {
      throw SafetensorsError(index.string() + ": not valid JSON: " + e.what());
    }
    if (!j.contains("weight_map") || !j["weight_map"].is_object())
      throw SafetensorsError(index.string() + ": no 'weight_map' object");
    std::set<std::string> seen;
    for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
      if (!it->is_string()) throw SafetensorsError(index.string() + ": weight_map['" + it.key() + "'] is not a file name");
      const std::string file = (fs::path(path) / it->get<std::string>()).string();
      if (seen.insert(file).second) shards.push_back(file);
    }
  } else {
    shards.push_back(path);
  }
  std::set<std::string> names;
  for (const std::string& shard : shards) {
    c.files_.push_back(std::make_unique<SafetensorsFile>(SafetensorsFile::open(shard)));
    c.paths_.push_back(shard);
  }
  for (std::size_t i = 0; i < c.files_.size(); ++i)
    for (const TensorView& v : c.files_[i]->tensors()) {
      if (!names.insert(v.name).second)
        throw SafetensorsError(c.paths_[i] + ": tensor '" + v.name + "' is also in another shard");
      c.entries_.push_back({&v, &c.paths_[i]});
    }
  return c;
}

}  // namespace musespark

#include "musespark/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

namespace musespark {
namespace {

using json = nlohmann::json;

struct DTypeName {
  const char* name;
  DType dtype;
};
constexpr DTypeName kNames[] = {{"F32", DType::kFloat32}, {"BF16", DType::kBFloat16}, {"F16", DType::kFloat16},
                                {"I32", DType::kInt32},   {"I64", DType::kInt64},     {"BOOL", DType::kBool},
                                {"U8", DType::kUInt8},    {"F8_E4M3", DType::kFloat8E4M3}};

}  // namespace

DType safetensors_dtype(const std::string& name) {
  for (const DTypeName& n : kNames)
    if (name == n.name) return n.dtype;
  throw SafetensorsError("unknown dtype '" + name + "'");
}

const char* safetensors_dtype_name(DType t) {
  for (const DTypeName& n : kNames)
    if (n.dtype == t) return n.name;
  return "?";
}

std::int64_t TensorView::numel() const {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

SafetensorsFile SafetensorsFile::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) throw SafetensorsError(path + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    ::close(fd);
    throw SafetensorsError(path + ": cannot stat: " + std::strerror(errno));
  }
  const std::size_t size = static_cast<std::size_t>(st.st_size);
  void* map = nullptr;
  if (size > 0) {
    map = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
      ::close(fd);
      throw SafetensorsError(path + ": cannot map: " + std::strerror(errno));
    }
  }
  ::close(fd);
  SafetensorsFile f;
  f.path_ = path;
  f.storage_ = std::shared_ptr<void>(map, [size](void* p) {
    if (p) munmap(p, size);
  });
  f.parse(static_cast<const std::uint8_t*>(map), size);
  return f;
}

SafetensorsFile SafetensorsFile::from_bytes(std::vector<std::uint8_t> bytes, std::string label) {
  SafetensorsFile f;
  f.path_ = std::move(label);
  auto owned = std::make_shared<std::vector<std::uint8_t>>(std::move(bytes));
  f.storage_ = owned;
  f.parse(owned->data(), owned->size());
  return f;
}

void SafetensorsFile::parse(const std::uint8_t* bytes, std::size_t size) {
  auto fail = [&](const std::string& what) -> void { throw SafetensorsError(path_ + ": " + what); };
  if (size < 8) fail("truncated: " + std::to_string(size) + " bytes, the header length alone needs 8");
  std::uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | bytes[i];
  if (header_len > kMaxHeaderBytes)
    fail("header length " + std::to_string(header_len) + " exceeds the " + std::to_string(kMaxHeaderBytes) + "-byte limit");
  if (header_len > size - 8)
    fail("header length " + std::to_string(header_len) + " runs past the end of the " + std::to_string(size) + "-byte file");
  const std::string text(reinterpret_cast<const char*>(bytes + 8), static_cast<std::size_t>(header_len));

  // Duplicate names are an error: the default parser keeps the last silently.
  std::set<std::string> top_keys;
  std::string duplicate;
  json header;
  try {
    header = json::parse(text, [&](int depth, json::parse_event_t event, json& parsed) {
      if (depth == 1 && event == json::parse_event_t::key) {
        const std::string key = parsed.get<std::string>();
        if (!top_keys.insert(key).second && duplicate.empty()) duplicate = key;
      }
      return true;
    });
  } catch (const json::exception& e) {
    fail(std::string("header is not valid JSON: ") + e.what());
  }
  if (!duplicate.empty()) fail("tensor '" + duplicate + "' appears twice in the header");
  if (!header.is_object()) fail("header is not a JSON object");

  const std::uint8_t* data = bytes + 8 + header_len;
  const std::uint64_t data_size = size - 8 - header_len;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& name = it.key();
    if (name == "__metadata__") {
      if (!it->is_object()) fail("__metadata__ is not an object");
      for (auto m = it->begin(); m != it->end(); ++m) {
        if (!m->is_string()) fail("__metadata__ value '" + m.key() + "' is not a string");
        metadata_[m.key()] = m->get<std::string>();
      }
      continue;
    }
    const std::string where = "tensor '" + name + "'";
    const json& t = *it;
    if (!t.is_object()) fail(where + " is not an object");
    if (!t.contains("dtype") || !t["dtype"].is_string()) fail(where + ": missing or non-string 'dtype'");
    if (!t.contains("shape") || !t["shape"].is_array()) fail(where + ": missing or non-array 'shape'");
    if (!t.contains("data_offsets") || !t["data_offsets"].is_array() || t["data_offsets"].size() != 2)
      fail(where + ": 'data_offsets' must be [begin, end]");
    TensorView v;
    v.name = name;
    try {
      v.dtype = safetensors_dtype(t["dtype"].get<std::string>());
    } catch (const SafetensorsError& e) {
      fail(where + ": " + e.what());
    }
    std::uint64_t numel = 1;
    for (const json& d : t["shape"]) {
      if (!d.is_number_integer() || d.get<std::int64_t>() < 0) fail(where + ": shape entries must be non-negative integers");
      const std::uint64_t dim = d.get<std::uint64_t>();
      if (dim != 0 && numel > std::numeric_limits<std::uint64_t>::max() / dim / 8) fail(where + ": shape size overflows");
      numel *= dim;
      v.shape.push_back(static_cast<std::int64_t>(dim));
    }
    for (const json& o : t["data_offsets"])
      if (!o.is_number_integer() || o.get<std::int64_t>() < 0) fail(where + ": data_offsets must be non-negative integers");
    const std::uint64_t begin = t["data_offsets"][0].get<std::uint64_t>();
    const std::uint64_t end = t["data_offsets"][1].get<std::uint64_t>();
    if (begin > end) fail(where + ": data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) + "] are reversed");
    if (end > data_size)
      fail(where + ": data_offsets end " + std::to_string(end) + " is past the " + std::to_string(data_size) + "-byte data section");
    const std::uint64_t want = numel * dtype_size(v.dtype);
    if (end - begin != want)
      fail(where + ": " + std::to_string(end - begin) + " bytes, but shape and dtype " + t["dtype"].get<std::string>() +
           " need " + std::to_string(want));
    v.data = data + begin;
    v.nbytes = static_cast<std::size_t>(end - begin);
    tensors_.push_back(std::move(v));
  }
  std::sort(tensors_.begin(), tensors_.end(), [&](const TensorView& a, const TensorView& b) {
    return a.data != b.data ? a.data < b.data : a.nbytes < b.nbytes;
  });
  // Zero-byte tensors (a dimension of 0) occupy nothing and overlap nothing.
  const TensorView* previous = nullptr;
  for (const TensorView& t : tensors_) {
    if (t.nbytes == 0) continue;
    if (previous && t.data < previous->data + previous->nbytes)
      fail("tensors '" + previous->name + "' and '" + t.name + "' overlap");
    previous = &t;
  }
}

const TensorView& SafetensorsFile::at(const std::string& name) const {
  for (const TensorView& v : tensors_)
    if (v.name == name) return v;
  throw SafetensorsError(path_ + ": no tensor '" + name + "'");
}

bool SafetensorsFile::contains(const std::string& name) const {
  return std::any_of(tensors_.begin(), tensors_.end(), [&](const TensorView& v) { return v.name == name; });
}

void write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::uint64_t offset = 0;
  for (const TensorToWrite& t : tensors) {
    std::uint64_t numel = 1;
    for (std::int64_t d : t.shape) numel *= static_cast<std::uint64_t>(d);
    if (numel * dtype_size(t.dtype) != t.bytes.size())
      throw SafetensorsError(path + ": tensor '" + t.name + "' has " + std::to_string(t.bytes.size()) +
                             " bytes, its shape and dtype need " + std::to_string(numel * dtype_size(t.dtype)));
    header[t.name] = {{"dtype", safetensors_dtype_name(t.dtype)}, {"shape", t.shape},
                      {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
  }
  std::string text = header.dump();
  while (text.size() % 8 != 0) text.push_back(' ');
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw SafetensorsError(path + ": cannot open for writing");
  std::uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<std::uint8_t>(static_cast<std::uint64_t>(text.size()) >> (8 * i));
  out.write(reinterpret_cast<const char*>(len), 8);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  for (const TensorToWrite& t : tensors) out.write(reinterpret_cast<const char*>(t.bytes.data()), static_cast<std::streamsize>(t.bytes.size()));
  if (!out) throw SafetensorsError(path + ": write failed");
}

}  // namespace musespark

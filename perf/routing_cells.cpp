#include "routing_cells.h"

#include <optional>
#include <sstream>

#include "musespark/errors.h"

namespace musespark::perf {

std::string Cell::name() const {
  std::ostringstream os;
  os << "routing/impl:" << impl << "/tokens:" << tokens << "/experts:" << experts << "/topk:" << topk
     << "/dtype:" << dtype_name(dtype) << "/norm:" << normalization_name(norm)
     << "/padding:" << (half_padded ? "half" : "none");
  return os.str();
}

double Cell::bytes() const {
  return static_cast<double>(tokens) * static_cast<double>(experts) * static_cast<double>(dtype_size(dtype)) +
         static_cast<double>(tokens) * static_cast<double>(topk) * 8.0 + static_cast<double>(experts) * 4.0;
}

namespace {

void product(std::vector<Cell>& out, const std::vector<std::string>& impls, const std::vector<std::int64_t>& tokens,
             const std::vector<std::int64_t>& experts, const std::vector<std::int64_t>& topks,
             const std::vector<DType>& dtypes, const std::vector<Normalization>& norms, bool half_padded = false) {
  for (const std::string& impl : impls)
    for (DType d : dtypes)
      for (Normalization n : norms)
        for (std::int64_t e : experts)
          for (std::int64_t k : topks)
            for (std::int64_t t : tokens) {
              if (k > e) continue;
              // The CPU path is timed on small cells only.
              if (impl == "cpu" && static_cast<double>(t) * static_cast<double>(e) > 4.0e6) continue;
              out.push_back(Cell{impl, t, e, k, d, n, half_padded});
            }
}

}  // namespace

std::vector<Cell> preset_cells(std::string_view preset, const std::vector<std::string>& impls) {
  const std::vector<Normalization> both = {Normalization::kSigmoid, Normalization::kSoftmax};
  std::vector<Cell> cells;
  if (preset == "quick") {
    product(cells, impls, {1, 64}, {8, 64}, {1, 8}, {DType::kFloat32}, {Normalization::kSigmoid});
  } else if (preset == "anchor" || preset == "full") {
    product(cells, impls, {1, 16, 128, 1024, 8192, 65536}, {8, 64, 128, 256, 512}, {1, 4, 8},
            {DType::kFloat32, DType::kBFloat16}, both);
    if (preset == "full") {
      product(cells, impls, {1, 16, 128, 1024, 8192, 65536, 262144}, {16, 32, 384, 1024, 2048}, {8},
              {DType::kFloat32, DType::kBFloat16}, both);
      product(cells, impls, {1, 128, 8192, 65536, 262144}, {64, 256, 512}, {2, 6, 16},
              {DType::kFloat16}, {Normalization::kSigmoid});
      product(cells, impls, {262144}, {64, 256, 512}, {8}, {DType::kFloat32, DType::kBFloat16}, both);
      product(cells, impls, {128, 65536}, {256}, {8}, {DType::kBFloat16}, {Normalization::kSigmoid}, true);
    }
  } else if (preset == "decode") {
    product(cells, impls, {1, 2, 4, 8, 16, 32, 64, 128}, {8, 64, 128, 256, 384, 512, 1024, 2048}, {1, 4, 8},
            {DType::kFloat32, DType::kBFloat16}, both);
  } else if (preset == "prefill") {
    product(cells, impls, {1024, 4096, 16384, 65536, 262144}, {8, 64, 128, 256, 384, 512, 1024, 2048}, {1, 4, 8, 16},
            {DType::kFloat32, DType::kBFloat16}, both);
  } else {
    throw ArgumentError("unknown preset '" + std::string(preset) + "'; known: quick, decode, prefill, anchor, full");
  }
  return cells;
}

std::vector<std::string> split_list(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream ss(list);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

std::vector<Normalization> parse_norms(const std::string& list) {
  std::vector<Normalization> out;
  for (const std::string& v : split_list(list)) out.push_back(parse_normalization(v));
  if (out.empty()) throw ArgumentError("--norms is empty");
  return out;
}

bool parse_whole_integer(const std::string& text, long long* value) {
  std::size_t used = 0;
  try {
    *value = std::stoll(text, &used);
  } catch (const std::exception&) {
    return false;
  }
  return used == text.size();
}

std::vector<std::int64_t> parse_sizes(const std::string& axis, const std::string& list) {
  std::vector<std::int64_t> out;
  for (const std::string& v : split_list(list)) {
    long long n = 0;
    if (!parse_whole_integer(v, &n) || n < 1) throw ArgumentError("--" + axis + ": '" + v + "' is not a positive integer");
    out.push_back(n);
  }
  if (out.empty()) throw ArgumentError("--" + axis + " is empty");
  return out;
}

std::vector<DType> parse_dtypes(const std::string& list) {
  std::vector<DType> out;
  for (const std::string& v : split_list(list)) {
    const std::optional<DType> t = logits_dtype_named(v);
    if (!t) throw ArgumentError("--dtypes: '" + v + "' is not float32, bfloat16 or float16");
    out.push_back(*t);
  }
  if (out.empty()) throw ArgumentError("--dtypes is empty");
  return out;
}

std::vector<bool> parse_padding(const std::string& list) {
  std::vector<bool> out;
  for (const std::string& v : split_list(list)) {
    if (v == "none") out.push_back(false);
    else if (v == "half") out.push_back(true);
    else throw ArgumentError("--padding: '" + v + "' is not none or half");
  }
  if (out.empty()) throw ArgumentError("--padding is empty");
  return out;
}

std::vector<Cell> axes_cells(const Axes& a, const std::vector<std::string>& impls) {
  std::vector<Cell> cells;
  for (bool pad : a.half_padded) product(cells, impls, a.tokens, a.experts, a.topk, a.dtypes, a.norms, pad);
  return cells;
}

}  // namespace musespark::perf

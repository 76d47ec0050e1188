#include "harness/case_file.h"

#include <cstring>
#include <nlohmann/json.hpp>

#include "harness/implementations.h"
#include "musespark/safetensors.h"

namespace musespark::harness {
namespace {

using json = nlohmann::json;
constexpr const char* kFormat = "musespark-routing-cases/1";

std::string prefix(std::size_t i) { return "case" + std::to_string(i); }

}  // namespace

std::string config_to_json(const CaseConfig& c) {
  json j = {{"tokens", c.tokens},
            {"experts", c.experts},
            {"topk", c.topk},
            {"logits_dtype", safetensors_dtype_name(c.logits_dtype)},
            {"normalization", std::string(normalization_name(c.normalization))},
            {"route_scale", c.route_scale},
            {"logits", static_cast<int>(c.logits)},
            {"bias", static_cast<int>(c.bias)},
            {"layout", static_cast<int>(c.layout)},
            {"padding", static_cast<int>(c.padding)},
            {"padding_stride", c.padding_stride},
            {"extra_rows", c.extra_rows},
            {"extra_cols", c.extra_cols},
            {"ids_dtype", safetensors_dtype_name(c.ids_dtype)},
            {"seed", c.seed},
            {"description", describe(c)}};
  j["multiplier"] = c.multiplier ? json(*c.multiplier) : json(nullptr);
  j["eps"] = c.eps ? json(*c.eps) : json(nullptr);
  return j.dump();
}

CaseConfig config_from_json(const std::string& text) {
  const json j = json::parse(text);
  CaseConfig c;
  c.tokens = j.at("tokens").get<std::int64_t>();
  c.experts = j.at("experts").get<std::int64_t>();
  c.topk = j.at("topk").get<std::int64_t>();
  c.logits_dtype = safetensors_dtype(j.at("logits_dtype").get<std::string>());
  c.normalization = parse_normalization(j.at("normalization").get<std::string>());
  c.route_scale = j.at("route_scale").get<double>();
  if (!j.at("multiplier").is_null()) c.multiplier = j.at("multiplier").get<double>();
  if (!j.at("eps").is_null()) c.eps = j.at("eps").get<double>();
  c.logits = static_cast<LogitsDistribution>(j.value("logits", 0));
  c.bias = static_cast<BiasDistribution>(j.value("bias", 0));
  c.layout = static_cast<LogitsLayout>(j.value("layout", 0));
  c.padding = static_cast<PaddingMode>(j.value("padding", 0));
  c.padding_stride = j.value("padding_stride", std::int64_t{1});
  c.extra_rows = j.value("extra_rows", std::int64_t{0});
  c.extra_cols = j.value("extra_cols", std::int64_t{0});
  c.ids_dtype = safetensors_dtype(j.value("ids_dtype", std::string("I32")));
  c.seed = j.value("seed", std::uint64_t{0});
  return c;
}

void save_cases(const std::string& path, const std::vector<const RoutingCase*>& cases) {
  std::vector<TensorToWrite> tensors;
  std::map<std::string, std::string> meta = {{"format", kFormat}, {"num_cases", std::to_string(cases.size())}};
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const RoutingCase& rc = *cases[i];
    const CaseConfig& c = rc.config();
    meta[prefix(i)] = config_to_json(c);
    const std::size_t es = dtype_size(c.logits_dtype);
    TensorToWrite g{prefix(i) + "/gating_output", c.logits_dtype, {c.tokens, c.experts}, {}};
    g.bytes.resize(static_cast<std::size_t>(c.tokens * c.experts) * es);
    for (std::int64_t t = 0; t < c.tokens; ++t)
      for (std::int64_t e = 0; e < c.experts; ++e) {
        const std::int64_t src = t * rc.logits_row_stride() + e * rc.logits_col_stride();
        std::memcpy(&g.bytes[static_cast<std::size_t>(t * c.experts + e) * es], &rc.logits_bytes()[src * es], es);
      }
    tensors.push_back(std::move(g));
    TensorToWrite b{prefix(i) + "/bias", DType::kFloat32, {c.experts}, {}};
    b.bytes.resize(static_cast<std::size_t>(c.experts) * 4);
    std::memcpy(b.bytes.data(), rc.bias().data(), b.bytes.size());
    tensors.push_back(std::move(b));
    if (c.padding != PaddingMode::kNone) {
      TensorToWrite p{prefix(i) + "/is_padding", DType::kBool, {c.tokens}, {}};
      for (std::int64_t t = 0; t < c.tokens; ++t) p.bytes.push_back(rc.padding_bytes()[t * c.padding_stride]);
      tensors.push_back(std::move(p));
    }
  }
  write_safetensors(path, tensors, meta);
}

std::vector<RoutingCase> load_cases(const std::string& path) {
  const SafetensorsFile f = SafetensorsFile::open(path);
  const auto& meta = f.metadata();
  if (!meta.count("format") || meta.at("format") != kFormat)
    throw SafetensorsError(path + ": not a routing case file (metadata 'format' is not '" + kFormat + "')");
  const std::size_t n = std::stoul(meta.at("num_cases"));
  std::vector<RoutingCase> cases;
  for (std::size_t i = 0; i < n; ++i) {
    if (!meta.count(prefix(i))) throw SafetensorsError(path + ": no configuration for " + prefix(i));
    CaseConfig c;
    try {
      c = config_from_json(meta.at(prefix(i)));
    } catch (const std::exception& e) {
      throw SafetensorsError(path + ": " + prefix(i) + " configuration: " + e.what());
    }
    RoutingCase rc = RoutingCase::blank(c);
    const TensorView& g = f.at(prefix(i) + "/gating_output");
    if (g.dtype != c.logits_dtype || g.shape != std::vector<std::int64_t>{c.tokens, c.experts})
      throw SafetensorsError(path + ": " + g.name + " does not match its configuration (" + describe(c) + ")");
    const std::vector<std::uint8_t> aligned(g.data, g.data + g.nbytes);  // tensors need not be aligned in the file
    for (std::int64_t t = 0; t < c.tokens; ++t)
      for (std::int64_t e = 0; e < c.experts; ++e)
        rc.set_logit(t, e, load_logit(aligned.data(), c.logits_dtype, t * c.experts + e));
    const TensorView& b = f.at(prefix(i) + "/bias");
    if (b.dtype != DType::kFloat32 || b.numel() != c.experts) throw SafetensorsError(path + ": " + b.name + " must be F32 [" + std::to_string(c.experts) + "]");
    for (std::int64_t e = 0; e < c.experts; ++e) {
      float v;
      std::memcpy(&v, b.data + 4 * e, 4);
      rc.set_bias(e, v);
    }
    if (c.padding != PaddingMode::kNone) {
      const TensorView& p = f.at(prefix(i) + "/is_padding");
      if (p.numel() != c.tokens) throw SafetensorsError(path + ": " + p.name + " must have " + std::to_string(c.tokens) + " entries");
      for (std::int64_t t = 0; t < c.tokens; ++t) rc.set_padded(t, p.data[t] != 0);
    }
    cases.push_back(std::move(rc));
  }
  return cases;
}

std::vector<RoutingOutput> load_outputs(const std::string& path, const std::vector<RoutingCase>& cases) {
  const SafetensorsFile f = SafetensorsFile::open(path);
  std::vector<RoutingOutput> outs;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const CaseConfig& c = cases[i].config();
    const std::vector<std::int64_t> shape = {c.tokens, c.topk};
    const TensorView& w = f.at(prefix(i) + "/topk_weights");
    const TensorView& ids = f.at(prefix(i) + "/topk_ids");
    if (w.dtype != DType::kFloat32 || w.shape != shape)
      throw SafetensorsError(path + ": " + w.name + " must be F32 [" + std::to_string(c.tokens) + ", " + std::to_string(c.topk) + "]");
    if ((ids.dtype != DType::kInt32 && ids.dtype != DType::kInt64) || ids.shape != shape)
      throw SafetensorsError(path + ": " + ids.name + " must be I32 or I64 [" + std::to_string(c.tokens) + ", " + std::to_string(c.topk) + "]");
    // The file holds only the [T, k] window; the rest of the case's
    // destination geometry stays poison, as an untouched buffer would.
    RoutingOutput out = HostDestinations(cases[i]).to_output(cases[i]);
    for (std::int64_t t = 0; t < c.tokens; ++t)
      for (std::int64_t j = 0; j < c.topk; ++j) {
        const std::size_t src = static_cast<std::size_t>(t * c.topk + j);
        const std::size_t dst = static_cast<std::size_t>(t * cases[i].dest_cols() + j);
        std::memcpy(&out.weights[dst], w.data + 4 * src, 4);
        if (ids.dtype == DType::kInt64) {
          std::memcpy(&out.ids[dst], ids.data + 8 * src, 8);
        } else {
          std::int32_t v;
          std::memcpy(&v, ids.data + 4 * src, 4);
          out.ids[dst] = v;
        }
      }
    outs.push_back(std::move(out));
  }
  return outs;
}

void save_outputs(const std::string& path, const std::vector<RoutingCase>& cases, const std::vector<RoutingOutput>& outputs) {
  std::vector<TensorToWrite> tensors;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const RoutingCase& rc = cases[i];
    const CaseConfig& c = rc.config();
    TensorToWrite w{prefix(i) + "/topk_weights", DType::kFloat32, {c.tokens, c.topk}, {}};
    TensorToWrite ids{prefix(i) + "/topk_ids", DType::kInt64, {c.tokens, c.topk}, {}};
    for (std::int64_t t = 0; t < c.tokens; ++t)
      for (std::int64_t j = 0; j < c.topk; ++j) {
        const std::size_t src = static_cast<std::size_t>(t * rc.dest_cols() + j);
        const std::uint8_t* wb = reinterpret_cast<const std::uint8_t*>(&outputs[i].weights[src]);
        w.bytes.insert(w.bytes.end(), wb, wb + 4);
        const std::uint8_t* ib = reinterpret_cast<const std::uint8_t*>(&outputs[i].ids[src]);
        ids.bytes.insert(ids.bytes.end(), ib, ib + 8);
      }
    tensors.push_back(std::move(w));
    tensors.push_back(std::move(ids));
  }
  write_safetensors(path, tensors, {{"format", "musespark-routing-outputs/1"}});
}

}  // namespace musespark::harness

// The benchmark grid: named presets of (impl, tokens, experts, topk, dtype,
// normalization, padding) cells, and the byte count of SPEC section 4.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "musespark/routing_params.h"

namespace musespark::perf {

struct Cell {
  std::string impl;  // cuda, io-floor, torch-recipe, cpu
  std::int64_t tokens = 1;
  std::int64_t experts = 8;
  std::int64_t topk = 1;
  DType dtype = DType::kFloat32;
  Normalization norm = Normalization::kSigmoid;
  bool half_padded = false;

  // routing/impl:cuda/tokens:65536/experts:256/topk:8/dtype:float32/norm:sigmoid/padding:none
  std::string name() const;
  // T*E*sizeof(logit) + T*k*8 + E*4 (SPEC section 4)
  double bytes() const;
};

// quick: a seconds-long CPU smoke. decode: T <= 128. prefill: T >= 1024.
// anchor: exactly the cells of shared/anchors/h100_seed_router.csv.
// full: anchor plus the extra axes (fp16, 16/32/384/1024/2048 experts,
// top-2/6/16, 262144 tokens, half padding) at fewer combinations.
// Throws ArgumentError naming an unknown preset.
std::vector<Cell> preset_cells(std::string_view preset, const std::vector<std::string>& impls);

// Any product of axes, for sweeps no preset names. Values are validated
// (dtype and norm names, positive sizes); an empty axis is an error.
struct Axes {
  std::vector<std::int64_t> tokens, experts, topk;
  std::vector<DType> dtypes;
  std::vector<Normalization> norms;
  std::vector<bool> half_padded;
};
std::vector<Cell> axes_cells(const Axes& axes, const std::vector<std::string>& impls);
// "a,b,,c" -> {"a", "b", "c"}
std::vector<std::string> split_list(const std::string& list);
// "sigmoid,softmax" -> norms; throws ArgumentError naming a bad name.
std::vector<Normalization> parse_norms(const std::string& list);
// "float32,bfloat16" -> dtypes; "none,half" -> padding; throws ArgumentError naming the bad value.
std::vector<DType> parse_dtypes(const std::string& list);
std::vector<bool> parse_padding(const std::string& list);
std::vector<std::int64_t> parse_sizes(const std::string& axis, const std::string& list);
// Whether `text` is a whole integer (no sign-only, no trailing characters,
// within long long), and then its value in *value.
bool parse_whole_integer(const std::string& text, long long* value);

}  // namespace musespark::perf

// Case files: routing cases (configuration + the exact inputs) stored as
// safetensors so any language can read them, and implementation outputs
// under agreed names for `musespark verify`. Format: docs/case_files.md.
#pragma once

#include <string>
#include <vector>

#include "harness/routing_case.h"

namespace musespark::harness {

// Tensors "case<i>/gating_output" [T, E] (the case's dtype, contiguous),
// "case<i>/bias" [E] F32, "case<i>/is_padding" [T] BOOL (when padded);
// metadata "case<i>" = the configuration as JSON, "num_cases", "format".
void save_cases(const std::string& path, const std::vector<const RoutingCase*>& cases);

// Throws SafetensorsError naming the file and what is wrong.
std::vector<RoutingCase> load_cases(const std::string& path);

// Outputs of an outside implementation: "case<i>/topk_weights" [T, k] F32 and
// "case<i>/topk_ids" [T, k] I32 or I64, read into exact-size destinations.
std::vector<RoutingOutput> load_outputs(const std::string& path, const std::vector<RoutingCase>& cases);
void save_outputs(const std::string& path, const std::vector<RoutingCase>& cases,
                  const std::vector<RoutingOutput>& outputs);

std::string config_to_json(const CaseConfig& c);
CaseConfig config_from_json(const std::string& text);

}  // namespace musespark::harness

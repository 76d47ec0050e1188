// LibTorch adapter for the expert loader: loads a checkpoint layer into a
// layer's at::Tensor parameters (CPU or CUDA), the way a vLLM fused-MoE layer
// holds them. LibTorch without float8 (1.13) holds the NVFP4 block scales as
// uint8 tensors; with float8 (2.x) as float8_e4m3fn.
#pragma once

#include <ATen/ATen.h>

#include <map>
#include <string>
#include <vector>

#include "musespark/expert_loader.h"

namespace musespark::torch_adapter {

// Throws LoaderError / SafetensorsError naming the file, tensor and expectation.
std::vector<std::string> load_expert_layer(const ExpertLayerConfig& config, std::map<std::string, at::Tensor>& params,
                                           const std::string& checkpoint_path, const std::string& prefix);

// Allocates the parameters `config` expects (weights of weight_dtype unless
// NVFP4), filled with zeros, on `device`.
std::map<std::string, at::Tensor> allocate_expert_layer(const ExpertLayerConfig& config, at::ScalarType weight_dtype,
                                                        at::Device device);

}  // namespace musespark::torch_adapter

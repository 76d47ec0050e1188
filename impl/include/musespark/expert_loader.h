// The consolidated expert loader of SPEC section 2: a checkpoint stores each
// MoE layer's experts stacked over the global expert axis; the loader slices
// them into one rank's vLLM fused-MoE parameters (tensor and expert
// parallel), validating each tensor completely before copying any byte of it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "musespark/checkpoint.h"
#include "musespark/dtype.h"
#include "musespark/routing_params.h"

namespace musespark {

class LoaderError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class ExpertPlacement : std::uint8_t { kContiguous, kRoundRobin };

// Global expert -> local slot on this rank (-1: not here).
std::vector<std::int32_t> expert_map(std::int64_t num_experts, std::int64_t ep_size, std::int64_t ep_rank,
                                     ExpertPlacement placement);

// One destination parameter: a contiguous buffer on one device.
struct ExpertParam {
  void* data = nullptr;
  DType dtype = DType::kBFloat16;
  std::vector<std::int64_t> shape;  // e.g. w13_weight [E_local, 2*I_tp, H] (H/2 bytes when NVFP4-packed)
  Device device = Device::kCpu;
};

struct ExpertLayerConfig {
  std::string layer_name;  // for errors: "<layer>: unexpected expert weight '<name>'"
  std::int64_t num_experts = 0;        // E, global
  std::int64_t hidden_size = 0;        // H
  std::int64_t intermediate_size = 0;  // I, before tensor parallelism
  std::int64_t tp_size = 1, tp_rank = 0;
  std::int64_t ep_size = 1, ep_rank = 0;
  ExpertPlacement placement = ExpertPlacement::kContiguous;
  bool nvfp4 = false;  // packed uint8 weights, float8_e4m3 block scales of 16
};

// Copies one [height x width_bytes] block whose rows are src_pitch /
// dst_pitch bytes apart: the only copy shape the loader issues, so a CUDA
// engine maps each to one cudaMemcpy2DAsync.
struct BlockCopy {
  const std::uint8_t* src;
  std::uint8_t* dst;
  std::size_t src_pitch, dst_pitch, width_bytes, height;
};
using CopyEngine = std::function<void(const std::vector<BlockCopy>&, Device)>;
void copy_blocks_on_host(const std::vector<BlockCopy>& copies, Device device);

// How many of `available` copy workers a block list should use. Dense reads
// (the blocks cover at least half of the source rows they span: a whole
// layer, or a tensor-parallel rank's row slices) are bound by the link, and
// fewer threads contend less for it: 8 (H200, TP 1, 7.25 GB: 49.0-49.5 GB/s
// with 8, 41.4-42.5 with 16). Sparse reads (narrow column slices, as w2 of a
// TP 8 rank) fault in every page they touch for little data, and more
// threads split that work: all of them (TP 8 rank: 31.4-31.6 GB/s with 16,
// 21.0-21.6 with 8). docs/loader.md has the runs.
std::size_t copy_workers_for(const std::vector<BlockCopy>& copies, std::size_t available);

class ConsolidatedExpertLoader {
 public:
  // params: the layer's parameters by name (w13_weight, w13_weight_scale,
  // w2_weight, w2_weight_scale, w13_weight_scale_2, w13_input_scale,
  // w2_weight_scale_2, w2_input_scale; any subset). Throws LoaderError for a
  // configuration that cannot be sharded (naming the value).
  ConsolidatedExpertLoader(ExpertLayerConfig config, std::map<std::string, ExpertParam> params,
                           CopyEngine engine = copy_blocks_on_host);

  // Loads every checkpoint tensor named "<prefix>.<param>"; returns the
  // names loaded, in checkpoint order. A bad tensor throws LoaderError
  // naming the file, the tensor and what was expected, after the tensors
  // before it were loaded and before any byte of it was copied.
  std::vector<std::string> load(const Checkpoint& checkpoint, const std::string& prefix);

  // The parameter shapes this configuration expects (for allocation).
  static std::map<std::string, std::pair<DType, std::vector<std::int64_t>>> expected_params(const ExpertLayerConfig& c,
                                                                                           DType weight_dtype);

 private:
  // expected_params with the local expert count already known.
  static std::map<std::string, std::pair<DType, std::vector<std::int64_t>>> expected_params_for(
      const ExpertLayerConfig& c, DType weight_dtype, std::int64_t local_experts);

  // Validates one checkpoint tensor against its parameter and returns its
  // block copies over the local experts (nothing copied yet).
  std::vector<BlockCopy> plan_one(const Checkpoint::Entry& entry, const std::string& param_name);

  ExpertLayerConfig config_;
  std::map<std::string, ExpertParam> params_;
  CopyEngine engine_;
  std::vector<std::int32_t> local_of_global_;
  std::int64_t num_local_ = 0;
};

}  // namespace musespark

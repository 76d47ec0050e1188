#include "musespark/expert_loader.h"

#include <algorithm>
#include <cstring>
#include <sstream>

namespace musespark {
namespace {

// How each parameter is laid out over experts and sharded.
struct ParamRule {
  const char* name;
  int tp_dim;      // logical dim sliced by tensor parallelism; -1 = last; 0 = none
  int halves;      // w13: gate and up halves along tp_dim
  bool scalar;     // per-expert scalars ([E] or [E, 2])
};
constexpr ParamRule kRules[] = {
    {"w13_weight", 1, 2, false},         {"w13_weight_scale", 1, 2, false},
    {"w2_weight", -1, 1, false},         {"w2_weight_scale", -1, 1, false},
    {"w13_weight_scale_2", 0, 1, true},  {"w13_input_scale", 0, 1, true},
    {"w2_weight_scale_2", 0, 1, true},   {"w2_input_scale", 0, 1, true},
};

const ParamRule* rule_for(const std::string& name) {
  for (const ParamRule& r : kRules)
    if (name == r.name) return &r;
  return nullptr;
}

std::string shape_text(const std::vector<std::int64_t>& s) {
  std::ostringstream os;
  os << "[";
  for (std::size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << "]";
  return os.str();
}

}  // namespace

std::vector<std::int32_t> expert_map(std::int64_t E, std::int64_t ep_size, std::int64_t ep_rank, ExpertPlacement placement) {
  std::vector<std::int32_t> local(static_cast<std::size_t>(E), -1);
  if (placement == ExpertPlacement::kContiguous) {
    const std::int64_t per = E / ep_size;
    for (std::int64_t e = ep_rank * per; e < (ep_rank + 1) * per; ++e) local[e] = static_cast<std::int32_t>(e - ep_rank * per);
  } else {
    for (std::int64_t e = ep_rank; e < E; e += ep_size) local[e] = static_cast<std::int32_t>(e / ep_size);
  }
  return local;
}

void copy_blocks_on_host(const std::vector<BlockCopy>& copies, Device device) {
  if (device != Device::kCpu) throw LoaderError("copy_blocks_on_host: destination is not on the CPU; use the CUDA engine");
  for (const BlockCopy& c : copies)
    for (std::size_t r = 0; r < c.height; ++r) std::memcpy(c.dst + r * c.dst_pitch, c.src + r * c.src_pitch, c.width_bytes);
}

std::size_t copy_workers_for(const std::vector<BlockCopy>& copies, std::size_t available) {
  constexpr std::size_t kDenseWorkers = 8;
  long double read = 0, spanned = 0;  // bytes; a layer's 7 GB fit easily
  for (const BlockCopy& c : copies) {
    read += static_cast<long double>(c.width_bytes) * static_cast<long double>(c.height);
    spanned += static_cast<long double>(c.height == 0 ? 0 : (c.height - 1) * c.src_pitch + c.width_bytes);
  }
  const bool dense = 2 * read >= spanned;
  return dense ? std::min(available, kDenseWorkers) : available;
}

ConsolidatedExpertLoader::ConsolidatedExpertLoader(ExpertLayerConfig config, std::map<std::string, ExpertParam> params,
                                                   CopyEngine engine)
    : config_(std::move(config)), params_(std::move(params)), engine_(std::move(engine)) {
  const auto& c = config_;
  auto fail = [&](const std::string& what) { throw LoaderError(c.layer_name + ": " + what); };
  if (c.num_experts < 1 || c.hidden_size < 1 || c.intermediate_size < 1)
    fail("num_experts, hidden_size and intermediate_size must be >= 1, got " + std::to_string(c.num_experts) + ", " +
         std::to_string(c.hidden_size) + ", " + std::to_string(c.intermediate_size));
  if (c.tp_size < 1 || c.tp_rank < 0 || c.tp_rank >= c.tp_size)
    fail("tp_rank " + std::to_string(c.tp_rank) + " is not in [0, tp_size=" + std::to_string(c.tp_size) + ")");
  if (c.ep_size < 1 || c.ep_rank < 0 || c.ep_rank >= c.ep_size)
    fail("ep_rank " + std::to_string(c.ep_rank) + " is not in [0, ep_size=" + std::to_string(c.ep_size) + ")");
  if (c.intermediate_size % c.tp_size != 0)
    fail("intermediate_size " + std::to_string(c.intermediate_size) + " is not divisible by tp_size " + std::to_string(c.tp_size));
  if (c.placement == ExpertPlacement::kContiguous && c.num_experts % c.ep_size != 0)
    fail("num_experts " + std::to_string(c.num_experts) + " is not divisible by ep_size " + std::to_string(c.ep_size) +
         " (contiguous placement)");
  const std::int64_t i_tp = c.intermediate_size / c.tp_size;
  if (c.nvfp4 && i_tp % 16 != 0)
    fail("I_tp = " + std::to_string(i_tp) + " (intermediate_size / tp_size) splits a 16-element NVFP4 scale block");
  if (c.nvfp4 && c.hidden_size % 16 != 0)
    fail("hidden_size " + std::to_string(c.hidden_size) + " is not a multiple of the 16-element NVFP4 scale block");
  local_of_global_ = expert_map(c.num_experts, c.ep_size, c.ep_rank, c.placement);
  for (std::int32_t l : local_of_global_) num_local_ += l >= 0 ? 1 : 0;
}

std::map<std::string, std::pair<DType, std::vector<std::int64_t>>> ConsolidatedExpertLoader::expected_params(
    const ExpertLayerConfig& c, DType weight_dtype) {
  std::int64_t local = 0;
  for (std::int32_t l : expert_map(c.num_experts, c.ep_size, c.ep_rank, c.placement)) local += l >= 0 ? 1 : 0;
  return expected_params_for(c, weight_dtype, local);
}

std::map<std::string, std::pair<DType, std::vector<std::int64_t>>> ConsolidatedExpertLoader::expected_params_for(
    const ExpertLayerConfig& c, DType weight_dtype, std::int64_t local) {
  const std::int64_t i_tp = c.intermediate_size / c.tp_size, H = c.hidden_size;
  std::map<std::string, std::pair<DType, std::vector<std::int64_t>>> out;
  if (!c.nvfp4) {
    out["w13_weight"] = {weight_dtype, {local, 2 * i_tp, H}};
    out["w2_weight"] = {weight_dtype, {local, H, i_tp}};
    return out;
  }
  out["w13_weight"] = {DType::kUInt8, {local, 2 * i_tp, H / 2}};
  out["w2_weight"] = {DType::kUInt8, {local, H, i_tp / 2}};
  out["w13_weight_scale"] = {DType::kFloat8E4M3, {local, 2 * i_tp, H / 16}};
  out["w2_weight_scale"] = {DType::kFloat8E4M3, {local, H, i_tp / 16}};
  out["w13_weight_scale_2"] = {DType::kFloat32, {local, 2}};
  out["w13_input_scale"] = {DType::kFloat32, {local, 2}};
  out["w2_weight_scale_2"] = {DType::kFloat32, {local}};
  out["w2_input_scale"] = {DType::kFloat32, {local}};
  return out;
}

std::vector<std::string> ConsolidatedExpertLoader::load(const Checkpoint& checkpoint, const std::string& prefix) {
  // Every tensor is validated and planned before the copies go to the engine
  // together, so the engine's workers stay busy across tensor boundaries
  // (one drain per layer instead of one per tensor). A bad tensor first
  // lets the planned copies of the tensors before it land, then throws:
  // each destination ends as it was before that tensor.
  std::vector<std::string> loaded;
  std::vector<BlockCopy> pending;
  Device pending_device = Device::kCpu;
  auto flush = [&] {
    if (!pending.empty()) engine_(pending, pending_device);
    pending.clear();
  };
  const std::string lead = prefix.empty() ? "" : prefix + ".";
  try {
    for (const Checkpoint::Entry& entry : checkpoint.entries()) {
      const std::string& full = entry.view->name;
      if (full.compare(0, lead.size(), lead) != 0) continue;
      const std::string name = full.substr(lead.size());
      if (!params_.count(name)) throw LoaderError(config_.layer_name + ": unexpected expert weight '" + name + "'");
      if (!rule_for(name)) throw LoaderError(config_.layer_name + ": unsupported expert weight '" + name + "'");
      std::vector<BlockCopy> copies = plan_one(entry, name);
      if (params_.at(name).device != pending_device) flush();
      pending_device = params_.at(name).device;
      pending.insert(pending.end(), copies.begin(), copies.end());
      loaded.push_back(name);
    }
  } catch (const LoaderError&) {
    flush();
    throw;
  }
  flush();
  return loaded;
}

std::vector<BlockCopy> ConsolidatedExpertLoader::plan_one(const Checkpoint::Entry& entry, const std::string& name) {
  const TensorView& src = *entry.view;
  const ExpertParam& dst = params_.at(name);
  const ParamRule& rule = *rule_for(name);
  auto fail = [&](const std::string& what) {
    throw LoaderError(*entry.file + ": tensor '" + src.name + "' for " + config_.layer_name + "." + name + ": " + what);
  };
  // ---- validate everything first --------------------------------------------
  if (src.dtype != dst.dtype)
    fail(std::string("dtype ") + safetensors_dtype_name(src.dtype) + ", the parameter is " + safetensors_dtype_name(dst.dtype));
  if (dst.shape.empty() || dst.shape[0] != num_local_)
    fail("parameter shape " + shape_text(dst.shape) + " does not hold the " + std::to_string(num_local_) + " local experts");
  std::vector<std::int64_t> want = dst.shape;
  want[0] = config_.num_experts;
  const int rank = static_cast<int>(want.size());
  const int tp_dim = rule.tp_dim < 0 ? rank - 1 : rule.tp_dim;
  if (!rule.scalar) {
    if (rank < 2) fail("parameter shape " + shape_text(dst.shape) + " has no dimension to shard");
    want[tp_dim] *= config_.tp_size;
  } else if (!(rank == 1 || (rank == 2 && want[1] == 2))) {
    fail("parameter shape " + shape_text(dst.shape) + " is neither [E_local] nor [E_local, 2]");
  }
  if (rule.halves == 2 && dst.shape[tp_dim] % 2 != 0)
    fail("parameter shape " + shape_text(dst.shape) + " cannot hold gate and up halves along dim " + std::to_string(tp_dim));
  const auto expected = expected_params_for(config_, dst.dtype, num_local_);
  if (const auto it = expected.find(name); it != expected.end() && it->second.second != dst.shape)
    fail("parameter shape " + shape_text(dst.shape) + " disagrees with the layer configuration, which needs " +
         shape_text(it->second.second));
  if (src.shape != want) fail("shape " + shape_text(src.shape) + ", expected " + shape_text(want));
  if (dst.data == nullptr) fail("the parameter has no storage");

  // ---- plan block copies over local experts --------------------------------
  const std::size_t es = dtype_size(src.dtype);
  std::int64_t inner = 1;  // elements after tp_dim (or after dim 0 for scalars)
  for (int d = (rule.scalar ? 1 : tp_dim + 1); d < rank; ++d) inner *= want[d];
  std::int64_t outer = 1;  // elements between dim 0 and tp_dim
  for (int d = 1; d < tp_dim && !rule.scalar; ++d) outer *= want[d];
  const std::size_t src_expert = static_cast<std::size_t>(src.numel() / config_.num_experts) * es;
  const std::size_t dst_expert = static_cast<std::size_t>(src.numel() / config_.num_experts / config_.tp_size) * es;
  std::vector<BlockCopy> copies;
  auto* dst_base = static_cast<std::uint8_t*>(dst.data);
  for (std::int64_t g = 0; g < config_.num_experts; ++g) {
    const std::int32_t l = local_of_global_[g];
    if (l < 0) continue;
    const std::uint8_t* s = src.data + static_cast<std::size_t>(g) * src_expert;
    std::uint8_t* d = dst_base + static_cast<std::size_t>(l) * (rule.scalar ? src_expert : dst_expert);
    if (rule.scalar) {
      copies.push_back({s, d, src_expert, src_expert, src_expert, 1});
      continue;
    }
    // Along tp_dim the source holds `halves` halves of size n_half; this rank
    // takes rows [r * n_tp, (r+1) * n_tp) of each half.
    const std::int64_t n_full = want[tp_dim], n_half = n_full / rule.halves, n_tp = n_half / config_.tp_size;
    const std::size_t row = static_cast<std::size_t>(inner) * es;
    for (int h = 0; h < rule.halves; ++h) {
      const std::size_t src_off = static_cast<std::size_t>(h * n_half + config_.tp_rank * n_tp) * row;
      const std::size_t dst_off = static_cast<std::size_t>(h * n_tp) * row;
      // `outer` blocks of n_tp rows each: pitch is the full / local extent.
      copies.push_back({s + src_off, d + dst_off, static_cast<std::size_t>(n_full) * row,
                        static_cast<std::size_t>(n_tp * rule.halves) * row, static_cast<std::size_t>(n_tp) * row,
                        static_cast<std::size_t>(outer)});
    }
  }
  return copies;
}

}  // namespace musespark

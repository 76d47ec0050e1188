// The one dispatch point of the CUDA router: checks the range the kernels
// support, resolves PDL against the device, and picks the dtype instantiation.
#include <atomic>
#include <sstream>

#include "musespark/errors.h"
#include "routing_kernel.cuh"
#include "routing_tier_table.cuh"  // choose_path

namespace musespark::cuda {
namespace {

// Programmatic dependent launch needs sm_90+. The answer is cached per device
// (decode launches are a few microseconds; an attribute query on each one
// would be host time on the critical path).
bool device_supports_pdl() {
  constexpr int kMaxDevices = 64;
  static std::atomic<signed char> cached[kMaxDevices] = {};  // 0 unknown, 1 yes, -1 no
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return false;
  std::atomic<signed char>* slot = device >= 0 && device < kMaxDevices ? &cached[device] : nullptr;
  if (slot != nullptr) {
    const signed char known = slot->load(std::memory_order_relaxed);
    if (known != 0) return known > 0;
  }
  int major = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess)
    return false;
  if (slot != nullptr) slot->store(major >= 9 ? 1 : -1, std::memory_order_relaxed);
  return major >= 9;
}

template <typename... Parts>
[[noreturn]] void fail(const Parts&... parts) {
  throw_argument_error("fused_musespark1x_routing (CUDA)", parts...);
}

// Whether a row's slots j .. j + 3 can be written by one 16-byte store of
// weights and one of int32 ids: both contiguous along k, and every row's
// start 16-byte aligned (base and row stride).
bool slots_vec4_layout(const KernelParams& kp) {
  const auto aligned = [&](const void* base, std::int64_t row_stride) {
    return reinterpret_cast<std::uintptr_t>(base) % 16 == 0 && (kp.num_tokens <= 1 || row_stride % 4 == 0);
  };
  return !kp.ids_int64 && kp.weights_col_stride == 1 && kp.ids_col_stride == 1 &&
         aligned(kp.weights, kp.weights_row_stride) && aligned(kp.ids, kp.ids_row_stride);
}

// The kernels' copy of a validated call, scalars rounded to fp32.
KernelParams to_kernel_params(const RoutingParams& p) {
  const RoutingScalars s = fp32_scalars(p);
  KernelParams kp{};
  kp.logits = p.logits;
  kp.logits_row_stride = p.logits_row_stride;
  kp.logits_col_stride = p.logits_col_stride;
  kp.bias = p.bias;
  kp.is_padding = p.is_padding;
  kp.padding_stride = p.padding_stride;
  kp.weights = p.weights;
  kp.weights_row_stride = p.weights_row_stride;
  kp.weights_col_stride = p.weights_col_stride;
  kp.ids = p.ids;
  kp.ids_row_stride = p.ids_row_stride;
  kp.ids_col_stride = p.ids_col_stride;
  kp.num_tokens = p.num_tokens;
  kp.num_experts = static_cast<std::int32_t>(p.num_experts);
  kp.topk = static_cast<std::int32_t>(p.topk);
  kp.route_scale = s.route_scale;
  kp.multiplier = s.multiplier;  // 1 without one (fp32_scalars): apply_multiplier_unconditional
  kp.eps = s.eps;
  kp.has_multiplier = s.has_multiplier;
  kp.has_eps = s.has_eps;
  kp.softmax = p.normalization == Normalization::kSoftmax;
  kp.ids_int64 = p.ids_dtype == DType::kInt64;
  kp.threshold_select = false;  // decided with the tier, per launch
  kp.rank_select = false;
  kp.estimate_select = false;
  kp.slots_vec4 = slots_vec4_layout(kp);
  return kp;
}

}  // namespace

namespace {

// The layout the vectorized large-batch paths load: 16-byte vectors of
// logits along a row, and of the bias.
const char* vector_layout_unsupported(const KernelParams& kp, int logit_bytes) {
  if (kp.logits_col_stride != 1) return "the logits are not contiguous along the experts";
  if (reinterpret_cast<std::uintptr_t>(kp.logits) % 16 != 0) return "the logits are not 16-byte aligned";
  if (kp.num_tokens > 1 && (kp.logits_row_stride * logit_bytes) % 16 != 0)
    return "the logits row stride is not a multiple of 16 bytes";
  if (reinterpret_cast<std::uintptr_t>(kp.bias) % 16 != 0) return "the bias is not 16-byte aligned";
  return nullptr;
}

}  // namespace

const char* thread_row_unsupported(const KernelParams& kp, int logit_bytes) {
  if (kp.num_experts % 16 != 0) return "num_experts is not a multiple of 16";
  if (kp.num_experts > 512) return "num_experts > 512";
  if (kp.topk > 8) return "topk > 8";
  return vector_layout_unsupported(kp, logit_bytes);
}

const char* filter_unsupported(const KernelParams& kp, int logit_bytes) {
  const int E = kp.num_experts;
  if (E % 32 != 0 || E < 64 || E > 512) return "num_experts is not a multiple of 32 in [64, 512]";
  if (kp.topk > kFilterMaxTopK) return "topk > 8";
  return vector_layout_unsupported(kp, logit_bytes);
}

const char* filter_unsupported(const RoutingParams& p) {
  return filter_unsupported(to_kernel_params(p), static_cast<int>(dtype_size(p.logits_dtype)));
}

const char* thread_row_unsupported(const RoutingParams& p) {
  return thread_row_unsupported(to_kernel_params(p), static_cast<int>(dtype_size(p.logits_dtype)));
}

namespace {

// Everything launch_routing refuses, before any CUDA call. The forced
// row-per-thread and filter paths are checked against the call only when
// it has rows (an empty call launches nothing).
void check_launch(const RoutingParams& p, const LaunchOptions& options) {
  validate_routing_params(p);
  if (p.device != Device::kCuda) fail("tensors are not on a CUDA device");
  if (p.num_experts > kSharedPathMaxExperts)
    fail("num_experts = ", p.num_experts, " is above the kernel's maximum ", kSharedPathMaxExperts);
  if (p.topk > kMaxTopK) fail("topk = ", p.topk, " is above the kernel's maximum ", kMaxTopK);
  if (options.force_path < 0 || options.force_path > 8)
    fail("LaunchOptions::force_path = ", options.force_path, " is not 0, 1, 2, 3, 4, 5, 6, 7 or 8");
  if (options.filter_rows < 0 || options.filter_rows > kFilterMaxRows)
    fail("LaunchOptions::filter_rows = ", options.filter_rows, " is not in [0, ", kFilterMaxRows, "]");
  if (options.thread_row_lanes != 0 && options.thread_row_lanes != 1 && options.thread_row_lanes != 2 &&
      options.thread_row_lanes != 4)
    fail("LaunchOptions::thread_row_lanes = ", options.thread_row_lanes, " is not 0, 1, 2 or 4");
  if (options.thread_row_lanes != 0 && p.num_experts % (16 * options.thread_row_lanes) != 0)
    fail("LaunchOptions::thread_row_lanes = ", options.thread_row_lanes, " needs num_experts a multiple of ",
         16 * options.thread_row_lanes, "; num_experts = ", p.num_experts);
  if (options.force_path == 1 || options.force_path == 3 || options.force_path == 4 || options.force_path == 6 ||
      options.force_path == 8) {
    if (p.num_experts > kRegisterPathMaxExperts)
      fail(options.force_path == 4   ? "the split-row path"
           : options.force_path == 6 ? "the block-rank path"
           : options.force_path == 8 ? "the block-threshold path"
                                     : "the register path",
           " was forced but num_experts = ", p.num_experts, " > ", kRegisterPathMaxExperts);
  }
  if (p.num_tokens == 0) return;
  const KernelParams kp = to_kernel_params(p);
  const int logit_bytes = static_cast<int>(dtype_size(p.logits_dtype));
  if (options.force_path == 5) {
    if (const char* why = thread_row_unsupported(kp, logit_bytes)) fail("the row-per-thread path was forced but ", why);
  }
  if (options.force_path == 7) {
    if (const char* why = filter_unsupported(kp, logit_bytes)) fail("the filter path was forced but ", why);
  }
}

}  // namespace

const char* routing_path_name(RoutingPath path) {
  switch (path) {
    case RoutingPath::kRegister: return "register";
    case RoutingPath::kShared: return "shared";
    case RoutingPath::kRegisterScalarLoads: return "register-scalar-loads";
    case RoutingPath::kSplitRow: return "split-row";
    case RoutingPath::kThreadRow: return "row-per-thread";
    case RoutingPath::kBlockRank: return "block-rank";
    case RoutingPath::kFilter: return "filter";
    case RoutingPath::kBlockThreshold: return "block-threshold";
  }
  return "unknown";
}

RoutingPath chosen_path(const RoutingParams& p, const LaunchOptions& options) {
  check_launch(p, options);
  return choose_path(to_kernel_params(p), options, static_cast<int>(dtype_size(p.logits_dtype)));
}

bool estimated_selection_preferred(const RoutingParams& p, const LaunchOptions& options) {
  check_launch(p, options);
  return estimate_select_enabled(to_kernel_params(p), options);
}

bool threshold_selection_preferred(const RoutingParams& p, const LaunchOptions& options) {
  check_launch(p, options);
  return threshold_select_enabled(to_kernel_params(p), options);
}

namespace {

// Whether the register path's four-per-lane tier loads `kp` as vectors
// (the launch's register_tier_vector_ok<T, 4>, by the logits dtype).
bool register_vector4_ok(const KernelParams& kp, DType logits_dtype, const LaunchOptions& options) {
  if (options.force_path == static_cast<int>(RoutingPath::kRegisterScalarLoads)) return false;
  switch (logits_dtype) {
    case DType::kBFloat16: return register_tier_vector_ok<__nv_bfloat16, 4>(kp);
    case DType::kFloat16: return register_tier_vector_ok<__half, 4>(kp);
    default: return register_tier_vector_ok<float, 4>(kp);
  }
}

// The call's kernel parameters with the launch's selection choices.
KernelParams launch_choices(const RoutingParams& p, const LaunchOptions& options) {
  check_launch(p, options);
  return with_selection_choices(to_kernel_params(p), options);
}

RegisterTier register_tier_of(const KernelParams& kp, DType logits_dtype, const LaunchOptions& options) {
  return choose_register_tier(kp, static_cast<int>(dtype_size(logits_dtype)),
                              register_vector4_ok(kp, logits_dtype, options));
}

}  // namespace

RegisterTier register_tier(const RoutingParams& p, const LaunchOptions& options) {
  return register_tier_of(launch_choices(p, options), p.logits_dtype, options);
}

bool register_tier_built(const RegisterTier& tier) {
  for (const RegisterTier& built : kRegisterTiers)
    if (built == tier) return true;
  return false;
}

bool register_rows_ranked(const RoutingParams& p, const LaunchOptions& options) {
  const KernelParams kp = launch_choices(p, options);
  const RegisterTier tier = register_tier_of(kp, p.logits_dtype, options);
  return kp.rank_select && register_tier_ranks(tier.lanes, tier.experts_per_lane, kp.topk);
}

// The launch's own steps (launch_routing_typed_impl, then
// launch_register_tier_norm's grid), so the answer is the launch's.
int register_blocks_per_sm(const RoutingParams& p, int sm_count, const LaunchOptions& options) {
  const KernelParams kp = launch_choices(p, options);
  const RoutingPath path = choose_path(kp, options, static_cast<int>(dtype_size(p.logits_dtype)));
  if ((path != RoutingPath::kRegister && path != RoutingPath::kRegisterScalarLoads) ||
      kp.num_experts > kRegisterPathMaxExperts)
    return 0;
  const RegisterTier tier = register_tier_of(kp, p.logits_dtype, options);
  const std::int64_t rows_per_block = kBlockThreads / tier.lanes;
  const unsigned blocks = grid_for((kp.num_tokens + rows_per_block - 1) / rows_per_block);
  return register_blocks_per_sm_cap(tier.experts_per_lane, blocks, sm_count);
}

int thread_row_lanes(const RoutingParams& p, const LaunchOptions& options) {
  const KernelParams kp = launch_choices(p, options);
  const int logit_bytes = static_cast<int>(dtype_size(p.logits_dtype));
  if (choose_path(kp, options, logit_bytes) != RoutingPath::kThreadRow) return 0;
  return thread_row_launch_lanes(kp, options, logit_bytes);
}

// The launch's own steps (launch_thread_row_tier's grid and hold).
int thread_row_blocks_per_sm(const RoutingParams& p, int sm_count, const LaunchOptions& options) {
  const int lanes = thread_row_lanes(p, options);
  if (lanes == 0) return 0;
  return thread_row_blocks_per_sm_cap(static_cast<int>(dtype_size(p.logits_dtype)),
                                      p.normalization == Normalization::kSoftmax, lanes,
                                      thread_row_grid(p.num_tokens, lanes), sm_count);
}

int block_threshold_pair_warps(const RoutingParams& p, const LaunchOptions& options) {
  check_launch(p, options);
  const KernelParams kp = to_kernel_params(p);
  const int logit_bytes = static_cast<int>(dtype_size(p.logits_dtype));
  if (choose_path(kp, options, logit_bytes) != RoutingPath::kBlockThreshold) return 0;
  return block_threshold_pair_warps_preferred(kp, logit_bytes);
}

int block_threshold_pair_groups(const RoutingParams& p, const LaunchOptions& options) {
  const int warps = block_threshold_pair_warps(p, options);
  if (warps == 0) return 0;
  return block_threshold_pair_groups_preferred(to_kernel_params(p), warps);
}

bool slot_vector_stores(const RoutingParams& p) {
  check_launch(p, {});
  return to_kernel_params(p).slots_vec4;
}

cudaError_t launch_routing(const RoutingParams& p, cudaStream_t stream, const LaunchOptions& options) {
  check_launch(p, options);
  if (p.num_tokens == 0) return cudaSuccess;
  const KernelParams kp = to_kernel_params(p);
  const bool pdl = options.enable_pdl && device_supports_pdl();
  switch (p.logits_dtype) {
    case DType::kFloat32: return launch_routing_fp32(kp, stream, options, pdl);
    case DType::kBFloat16: return launch_routing_bf16(kp, stream, options, pdl);
    case DType::kFloat16: return launch_routing_fp16(kp, stream, options, pdl);
    default: fail("unsupported logits dtype ", dtype_name(p.logits_dtype));
  }
}

}  // namespace musespark::cuda

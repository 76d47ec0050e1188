#include "expert_loader_adapter.h"

#include <torch/version.h>

#ifdef MUSESPARK_TORCH_CUDA
#include "expert_copy_engine.h"
#endif

namespace musespark::torch_adapter {
namespace {

constexpr bool kTorchHasFloat8 = TORCH_VERSION_MAJOR >= 2;

bool is_block_scale(const std::string& name) { return name == "w13_weight_scale" || name == "w2_weight_scale"; }

DType core_dtype(const std::string& name, const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kBFloat16: return DType::kBFloat16;
    case at::kHalf: return DType::kFloat16;
    case at::kFloat: return DType::kFloat32;
    case at::kByte: return kTorchHasFloat8 || !is_block_scale(name) ? DType::kUInt8 : DType::kFloat8E4M3;
    default: break;
  }
#if TORCH_VERSION_MAJOR >= 2
  if (t.scalar_type() == at::kFloat8_e4m3fn) return DType::kFloat8E4M3;
#endif
  throw LoaderError("parameter '" + name + "' has dtype " + std::string(c10::toString(t.scalar_type())) +
                    ", which the expert loader does not copy");
}

at::ScalarType torch_dtype(DType t) {
  switch (t) {
    case DType::kBFloat16: return at::kBFloat16;
    case DType::kFloat16: return at::kHalf;
    case DType::kFloat32: return at::kFloat;
    case DType::kFloat8E4M3:
#if TORCH_VERSION_MAJOR >= 2
      return at::kFloat8_e4m3fn;
#else
      return at::kByte;
#endif
    default: return at::kByte;
  }
}

DType core_weight_dtype(at::ScalarType t) {
  switch (t) {
    case at::kBFloat16: return DType::kBFloat16;
    case at::kHalf: return DType::kFloat16;
    case at::kFloat: return DType::kFloat32;
    default: throw LoaderError("weight dtype must be bfloat16, float16 or float32, got " + std::string(c10::toString(t)));
  }
}

}  // namespace

std::map<std::string, at::Tensor> allocate_expert_layer(const ExpertLayerConfig& config, at::ScalarType weight_dtype,
                                                        at::Device device) {
  std::map<std::string, at::Tensor> params;
  for (const auto& [name, spec] : ConsolidatedExpertLoader::expected_params(config, core_weight_dtype(weight_dtype)))
    params[name] = at::zeros(spec.second, at::TensorOptions().dtype(torch_dtype(spec.first)).device(device));
  return params;
}

std::vector<std::string> load_expert_layer(const ExpertLayerConfig& config, std::map<std::string, at::Tensor>& params,
                                           const std::string& checkpoint_path, const std::string& prefix) {
  std::map<std::string, ExpertParam> views;
  bool any_cuda = false;
  int cuda_index = -1;  // the one CUDA device every CUDA parameter must be on
  for (auto& [name, t] : params) {
    if (!t.is_contiguous()) throw LoaderError(config.layer_name + ": parameter '" + name + "' is not contiguous");
    if (!t.is_cpu() && !t.is_cuda()) throw LoaderError(config.layer_name + ": parameter '" + name + "' is on " + t.device().str());
    if (t.is_cuda() && cuda_index >= 0 && t.get_device() != cuda_index)
      throw LoaderError(config.layer_name + ": parameter '" + name + "' is on " + t.device().str() +
                        ", another parameter on cuda:" + std::to_string(cuda_index) + "; a layer loads to one device");
    if (t.is_cuda()) cuda_index = t.get_device();
    any_cuda |= t.is_cuda();
    views[name] = ExpertParam{t.data_ptr(), core_dtype(name, t), t.sizes().vec(), t.is_cuda() ? Device::kCuda : Device::kCpu};
  }
  const Checkpoint checkpoint = Checkpoint::open(checkpoint_path);
  if (!any_cuda) return ConsolidatedExpertLoader(config, views).load(checkpoint, prefix);
#ifdef MUSESPARK_TORCH_CUDA
  // The engine copies to the current device: make it the parameters' one for
  // the call, and give the caller's back after.
  int previous = 0;
  if (cudaGetDevice(&previous) != cudaSuccess || cudaSetDevice(cuda_index) != cudaSuccess)
    throw LoaderError(config.layer_name + ": cannot select cuda:" + std::to_string(cuda_index));
  struct Restore {
    int device;
    ~Restore() { cudaSetDevice(device); }
  } restore{previous};
  cuda::ExpertCopyEngine engine;
  return ConsolidatedExpertLoader(config, views, engine.as_copy_engine()).load(checkpoint, prefix);
#else
  throw LoaderError(config.layer_name + ": CUDA parameters given, but this build has no CUDA copy engine");
#endif
}

}  // namespace musespark::torch_adapter

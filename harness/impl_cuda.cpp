// The production CUDA kernel, as the harness runs it.
#include "harness/cuda_case.h"
#include "harness/implementations.h"
#include "musespark/errors.h"

namespace musespark::harness {

namespace {
DeviceBuffer upload(const void* host, std::size_t bytes) {
  DeviceBuffer b(bytes);
  if (bytes > 0) check_cuda(cudaMemcpy(b.get(), host, bytes, cudaMemcpyHostToDevice), "upload");
  return b;
}
}  // namespace

CudaCase::CudaCase(const RoutingCase& c)
    : case_(c),
      logits_(upload(c.logits_bytes().data(), c.logits_bytes().size())),
      bias_(upload(c.bias().data(), c.bias().size() * sizeof(float))),
      padding_(upload(c.padding_bytes().data(), c.padding_bytes().size())) {
  HostDestinations host(c);
  weights_ = upload(host.weights.data(), host.weights.size() * sizeof(float));
  ids_ = upload(host.ids.data(), host.ids.size());
  params_ = c.host_params();
  params_.device = Device::kCuda;
  params_.logits = logits_.get();
  params_.bias = static_cast<const float*>(bias_.get());
  if (params_.is_padding) params_.is_padding = static_cast<const bool*>(padding_.get());
  params_.weights = static_cast<float*>(weights_.get());
  params_.ids = ids_.get();
}

void CudaCase::poison() {
  HostDestinations host(case_);
  check_cuda(cudaMemcpy(weights_.get(), host.weights.data(), weights_.bytes(), cudaMemcpyHostToDevice), "poison");
  check_cuda(cudaMemcpy(ids_.get(), host.ids.data(), ids_.bytes(), cudaMemcpyHostToDevice), "poison");
}

RoutingOutput CudaCase::read_output() const {
  HostDestinations host(case_);
  check_cuda(cudaDeviceSynchronize(), "kernel");
  check_cuda(cudaMemcpy(host.weights.data(), weights_.get(), weights_.bytes(), cudaMemcpyDeviceToHost), "download");
  check_cuda(cudaMemcpy(host.ids.data(), ids_.get(), ids_.bytes(), cudaMemcpyDeviceToHost), "download");
  return host.to_output(case_);
}

RoutingOutput run_cuda_case(const RoutingCase& c, const cuda::LaunchOptions& options) {
  return run_cuda_case(CudaCase(c), options);
}

RoutingOutput run_cuda_case(const CudaCase& dev, const cuda::LaunchOptions& options) {
  cudaStream_t stream;
  check_cuda(cudaStreamCreate(&stream), "cudaStreamCreate");
  const cudaError_t err = cuda::launch_routing(dev.params(), stream, options);
  const cudaError_t sync = cudaStreamSynchronize(stream);
  cudaStreamDestroy(stream);
  check_cuda(err, "launch_routing");
  check_cuda(sync, "routing kernel");
  return dev.read_output();
}

namespace {

class CudaImplementation final : public Implementation {
 public:
  std::string name() const override { return "cuda"; }
  std::string description() const override { return "production CUDA kernel"; }
  std::string unavailable_reason() const override { return cuda_unavailable_reason(); }
  RoutingOutput run(const RoutingCase& c) const override { return run_cuda_case(c); }
};

// The kernel with one of its paths forced on every call that path can take
// (the rest dispatched as usual), so that the fuzzer and the property suite
// reach it at any size, not only where the tier table sends it; `lanes`,
// where given, picks the row-per-thread path's lanes per row for the call.
class CudaForcedPathImplementation final : public Implementation {
 public:
  using Takes = bool (*)(const RoutingParams&);
  using Lanes = int (*)(const RoutingParams&);
  CudaForcedPathImplementation(std::string name, std::string description, int path, Takes takes,
                               Lanes lanes = nullptr)
      : name_(std::move(name)), description_(std::move(description)), path_(path), takes_(takes), lanes_(lanes) {}
  std::string name() const override { return name_; }
  std::string description() const override { return description_; }
  std::string unavailable_reason() const override { return cuda_unavailable_reason(); }
  RoutingOutput run(const RoutingCase& c) const override {
    const CudaCase dev(c);
    const RoutingParams& p = dev.params();
    if (!takes_(p)) return run_cuda_case(dev, {});
    return run_cuda_case(dev, {.force_path = path_, .thread_row_lanes = lanes_ != nullptr ? lanes_(p) : 0});
  }

 private:
  std::string name_, description_;
  int path_;
  Takes takes_;
  Lanes lanes_;
};

// The row-per-thread path's lanes per row (1, 2 or 4, as E allows) turned
// over from case to case by the shape, so that a fuzz campaign reaches
// every lane count at every E where the tier table would pick one of them
// only at some row counts.
int lanes_by_case(const RoutingParams& p) {
  constexpr int kLanes[] = {1, 2, 4};
  int lanes = kLanes[static_cast<std::uint64_t>(p.num_tokens * 31 + p.num_experts * 7 + p.topk) % 3];
  while (p.num_experts % (16 * lanes) != 0) lanes /= 2;  // E is a multiple of 16: 1 always fits
  return lanes;
}

}  // namespace

ImplementationPtr make_cuda_implementation() { return std::make_shared<CudaImplementation>(); }
ImplementationPtr make_cuda_row_per_thread_implementation() {
  return std::make_shared<CudaForcedPathImplementation>(
      "cuda-row-per-thread", "CUDA kernel, row-per-thread path forced where it can run, 1, 2 or 4 lanes per row by case",
      5, [](const RoutingParams& p) { return cuda::thread_row_unsupported(p) == nullptr; }, lanes_by_case);
}

// The block-rank path (one block per row, one expert per thread) takes any
// row count up to 512 experts; the tier table sends it few rows of some E, k.
ImplementationPtr make_cuda_block_rank_implementation() {
  return std::make_shared<CudaForcedPathImplementation>(
      "cuda-block-rank", "CUDA kernel, block-rank path forced where it can run", 6,
      [](const RoutingParams& p) { return p.num_experts <= cuda::kRegisterPathMaxExperts; });
}

// The block-threshold path (one block per row, tau from the warp maxima)
// takes any row count up to 512 experts; the tier table sends it few rows
// with k in (4, 8] (with sigmoid also k 3-4 up to 256 experts).
ImplementationPtr make_cuda_block_threshold_implementation() {
  return std::make_shared<CudaForcedPathImplementation>(
      "cuda-block-threshold", "CUDA kernel, block-threshold path forced where it can run", 8,
      [](const RoutingParams& p) { return p.num_experts <= cuda::kRegisterPathMaxExperts; });
}

// The filter path takes E a multiple of 32 in [64, 512] with k <= 8 and
// vector-loadable logits, at any row count; the tier table sends it large
// batches.
ImplementationPtr make_cuda_filter_implementation() {
  return std::make_shared<CudaForcedPathImplementation>(
      "cuda-filter", "CUDA kernel, filter path forced where it can run", 7,
      [](const RoutingParams& p) { return cuda::filter_unsupported(p) == nullptr; });
}

}  // namespace musespark::harness

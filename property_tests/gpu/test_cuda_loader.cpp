// The expert loader into CUDA destinations through the staging engine equals
// the CPU path bit for bit, for TP ranks and both EP placements.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "expert_copy_engine.h"
#include "harness/cuda_case.h"
#include "musespark/expert_loader.h"

namespace musespark {
namespace {

namespace fs = std::filesystem;

// Every engine shape: many chunks over few workers, a staging buffer narrower
// than one row (column pieces), and the per-expert baseline.
struct EngineCase {
  const char* name;
  std::size_t staging_bytes;
  int workers;
  bool baseline;
};

class CudaLoader : public ::testing::TestWithParam<EngineCase> {};

TEST_P(CudaLoader, MatchesTheCpuPathBitForBit) {
  const EngineCase ec = GetParam();
  ExpertLayerConfig global{"layer", 16, 256, 512, 1, 0, 1, 0, ExpertPlacement::kContiguous, true};
  const std::string path = (fs::temp_directory_path() / (std::string("cuda_loader_") + ec.name + ".safetensors")).string();
  std::vector<TensorToWrite> list;
  std::mt19937_64 rng(1);
  for (const auto& [name, spec] : ConsolidatedExpertLoader::expected_params(global, DType::kUInt8)) {
    std::int64_t n = 1;
    for (std::int64_t d : spec.second) n *= d;
    TensorToWrite t{"experts." + name, spec.first, spec.second, std::vector<std::uint8_t>(static_cast<std::size_t>(n) * dtype_size(spec.first))};
    for (auto& b : t.bytes) b = static_cast<std::uint8_t>(rng());
    list.push_back(std::move(t));
  }
  write_safetensors(path, list, {});
  const Checkpoint ckpt = Checkpoint::open(path);
  cuda::ExpertCopyEngine engine(ec.staging_bytes, ec.workers);
  const CopyEngine copy = ec.baseline ? CopyEngine(cuda::copy_blocks_one_call_each) : engine.as_copy_engine();
  for (auto [tp, tr, ep, er, placement] : std::vector<std::tuple<int, int, int, int, ExpertPlacement>>{
           {1, 0, 1, 0, ExpertPlacement::kContiguous}, {8, 5, 1, 0, ExpertPlacement::kContiguous},
           {2, 1, 4, 2, ExpertPlacement::kRoundRobin}, {4, 3, 2, 1, ExpertPlacement::kContiguous}}) {
    ExpertLayerConfig c = global;
    c.tp_size = tp, c.tp_rank = tr, c.ep_size = ep, c.ep_rank = er, c.placement = placement;
    std::map<std::string, std::vector<std::uint8_t>> host;
    std::map<std::string, harness::DeviceBuffer> device;
    std::map<std::string, ExpertParam> host_params, device_params;
    for (const auto& [name, spec] : ConsolidatedExpertLoader::expected_params(c, DType::kUInt8)) {
      std::int64_t n = 1;
      for (std::int64_t d : spec.second) n *= d;
      const std::size_t bytes = static_cast<std::size_t>(n) * dtype_size(spec.first);
      host[name].assign(bytes, 0xCD);
      device.emplace(name, harness::DeviceBuffer(bytes));
      harness::check_cuda(cudaMemset(device.at(name).get(), 0xCD, bytes), "poison");
      host_params[name] = ExpertParam{host[name].data(), spec.first, spec.second, Device::kCpu};
      device_params[name] = ExpertParam{device.at(name).get(), spec.first, spec.second, Device::kCuda};
    }
    ConsolidatedExpertLoader(c, host_params).load(ckpt, "experts");
    ConsolidatedExpertLoader(c, device_params, copy).load(ckpt, "experts");
    for (const auto& [name, want] : host) {
      std::vector<std::uint8_t> got(want.size());
      harness::check_cuda(cudaMemcpy(got.data(), device.at(name).get(), got.size(), cudaMemcpyDeviceToHost), "download");
      EXPECT_EQ(got, want) << name << " tp " << tr << "/" << tp << " ep " << er << "/" << ep;
    }
  }
  fs::remove(path);
}

INSTANTIATE_TEST_SUITE_P(Engines, CudaLoader,
                         ::testing::Values(EngineCase{"many_chunks", std::size_t{1} << 16, 3, false},
                                           EngineCase{"row_wider_than_staging", 96, 2, false},
                                           EngineCase{"default_engine", std::size_t{16} << 20, 8, false},
                                           EngineCase{"per_expert_baseline", 1, 1, true}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace musespark

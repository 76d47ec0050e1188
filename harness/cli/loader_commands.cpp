// musespark inspect | generate-checkpoint | load
#include <fmt/core.h>

#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <random>

#include "commands.h"
#include "harness/expert_layer_buffers.h"
#include "musespark/expert_loader.h"
#ifdef MUSESPARK_HAVE_CUDA
#include "expert_copy_engine.h"
#include "harness/cuda_case.h"
#endif

namespace musespark::cli {
namespace {

std::string shape_text(const std::vector<std::int64_t>& s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

int run_inspect(const std::string& path) {
  const Checkpoint ckpt = Checkpoint::open(path);
  std::size_t total = 0;
  fmt::print("{:<60} {:>8} {:>24} {:>14}  {}\n", "tensor", "dtype", "shape", "bytes", "file");
  for (const Checkpoint::Entry& e : ckpt.entries()) {
    fmt::print("{:<60} {:>8} {:>24} {:>14}  {}\n", e.view->name, safetensors_dtype_name(e.view->dtype),
               shape_text(e.view->shape), e.view->nbytes, *e.file);
    total += e.view->nbytes;
  }
  fmt::print("{} tensors, {} bytes ({:.3f} GB): valid\n", ckpt.entries().size(), total, total / 1e9);
  return 0;
}

struct LayerArgs {
  std::string prefix = "model.layers.0.mlp.experts";
  std::int64_t experts = 8, hidden = 256, intermediate = 512;
  bool nvfp4 = false;
  std::string dtype = "bf16";
  std::int64_t tp_size = 1, tp_rank = 0, ep_size = 1, ep_rank = 0;
  std::string placement = "contiguous";
  std::string path;
};

DType weight_dtype(const std::string& s) {
  if (s == "bf16") return DType::kBFloat16;
  if (s == "fp16") return DType::kFloat16;
  if (s == "fp32") return DType::kFloat32;
  throw std::invalid_argument("--dtype must be bf16, fp16 or fp32, got '" + s + "'");
}

ExpertLayerConfig layer_config(const LayerArgs& a) {
  ExpertLayerConfig c;
  c.layer_name = a.prefix;
  c.num_experts = a.experts;
  c.hidden_size = a.hidden;
  c.intermediate_size = a.intermediate;
  c.tp_size = a.tp_size, c.tp_rank = a.tp_rank, c.ep_size = a.ep_size, c.ep_rank = a.ep_rank;
  if (a.placement != "contiguous" && a.placement != "round-robin")
    throw std::invalid_argument("--placement must be contiguous or round-robin, got '" + a.placement + "'");
  c.placement = a.placement == "contiguous" ? ExpertPlacement::kContiguous : ExpertPlacement::kRoundRobin;
  c.nvfp4 = a.nvfp4;
  return c;
}

int run_generate(const LayerArgs& a) {
  ExpertLayerConfig c = layer_config(a);
  c.tp_size = 1, c.tp_rank = 0, c.ep_size = 1, c.ep_rank = 0;
  std::vector<TensorToWrite> tensors;
  std::uint64_t x = 0x9E3779B97F4A7C15ull;
  std::size_t total = 0;
  for (const auto& [name, spec] : ConsolidatedExpertLoader::expected_params(c, weight_dtype(a.dtype))) {
    std::int64_t n = 1;
    for (std::int64_t d : spec.second) n *= d;
    TensorToWrite t{a.prefix + "." + name, spec.first, spec.second, std::vector<std::uint8_t>(static_cast<std::size_t>(n) * dtype_size(spec.first))};
    for (std::size_t i = 0; i + 8 <= t.bytes.size(); i += 8) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      std::memcpy(&t.bytes[i], &x, 8);
    }
    total += t.bytes.size();
    tensors.push_back(std::move(t));
  }
  write_safetensors(a.path, tensors, {{"generator", "musespark generate-checkpoint"}});
  fmt::print("wrote {} tensors, {:.3f} GB, to {}\n", tensors.size(), total / 1e9, a.path);
  return 0;
}

struct LoadOptions {
  std::string device = "cpu";
  std::string engine = "staged";
  int workers = 16;
  std::size_t staging_mb = 16;
  int repeat = 1;
};

int run_load(const LayerArgs& a, const LoadOptions& o) {
  if (o.device != "cpu" && o.device != "cuda")
    throw std::invalid_argument("--device must be cpu or cuda, got '" + o.device + "'");
  if (o.engine != "staged" && o.engine != "per-expert")
    throw std::invalid_argument("--engine must be staged or per-expert, got '" + o.engine + "'");
  if (o.repeat < 1) throw std::invalid_argument("--repeat must be at least 1, got " + std::to_string(o.repeat));
  const bool cuda = o.device == "cuda";
  if (!cuda && o.engine != "staged")
    throw std::invalid_argument("--engine per-expert is the CUDA baseline; use it with --device cuda");
#ifdef MUSESPARK_HAVE_CUDA
  if (cuda) {
    const std::string why = harness::cuda_unavailable_reason();
    if (!why.empty()) throw std::invalid_argument("--device cuda: " + why);
  }
  std::unique_ptr<cuda::ExpertCopyEngine> staged;
#else
  if (cuda) throw std::invalid_argument("--device cuda: this build has no CUDA");
#endif
  const ExpertLayerConfig c = layer_config(a);
  const auto setup_start = std::chrono::steady_clock::now();
  const harness::ExpertLayerBuffers dst(c, weight_dtype(a.dtype), cuda ? Device::kCuda : Device::kCpu);
  CopyEngine engine = copy_blocks_on_host;
#ifdef MUSESPARK_HAVE_CUDA
  if (cuda && o.engine == "staged") {
    staged = std::make_unique<cuda::ExpertCopyEngine>(o.staging_mb << 20, o.workers);
    engine = staged->as_copy_engine();
  } else if (cuda) {
    engine = cuda::copy_blocks_one_call_each;
  }
#endif
  const double setup_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - setup_start).count();
  const std::string how = !cuda ? "host block copies"
                          : o.engine == "staged"
                              ? fmt::format("staged engine, {} workers x 2 x {} MB pinned", o.workers, o.staging_mb)
                              : "per-expert cudaMemcpy2D baseline";
  fmt::print("destinations: {:.3f} GB on {} ({}), set up in {:.3f} s\n", dst.bytes() / 1e9, o.device, how, setup_s);
  for (int i = 0; i < o.repeat; ++i) {
    const auto start = std::chrono::steady_clock::now();
    const Checkpoint ckpt = Checkpoint::open(a.path);
    const std::vector<std::string> names = ConsolidatedExpertLoader(c, dst.params(), engine).load(ckpt, a.prefix);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    fmt::print("load {}/{}: {} (tp {}/{}, ep {}/{} {}): {:.3f} GB in {:.3f} s = {:.2f} GB/s\n", i + 1, o.repeat, list,
               a.tp_rank, a.tp_size, a.ep_rank, a.ep_size, a.placement, dst.bytes() / 1e9, s, dst.bytes() / 1e9 / s);
  }
  return 0;
}

void add_layer_options(CLI::App* cmd, LayerArgs& a) {
  cmd->add_option("--prefix", a.prefix, "tensor name prefix of the layer");
  cmd->add_option("--experts", a.experts, "E, global");
  cmd->add_option("--hidden", a.hidden, "H");
  cmd->add_option("--intermediate", a.intermediate, "I");
  cmd->add_flag("--nvfp4", a.nvfp4, "NVFP4: packed uint8 weights, float8_e4m3 block scales, fp32 scalars");
  cmd->add_option("--dtype", a.dtype, "weight dtype without --nvfp4: bf16, fp16, fp32");
}

}  // namespace

void add_loader_commands(CLI::App& app, int& exit_code) {
  auto path = std::make_shared<std::string>();
  CLI::App* inspect = app.add_subcommand("inspect", "validate a checkpoint (file or index directory) and list its tensors");
  inspect->add_option("path", *path, "file.safetensors or a directory with model.safetensors.index.json")->required();
  inspect->callback([path, &exit_code] { exit_code = run_inspect(*path); });

  auto gen = std::make_shared<LayerArgs>();
  CLI::App* g = app.add_subcommand("generate-checkpoint", "write a synthetic Muse-shaped MoE layer");
  add_layer_options(g, *gen);
  g->add_option("--out", gen->path, "output .safetensors")->required();
  g->callback([gen, &exit_code] { exit_code = run_generate(*gen); });

  auto ld = std::make_shared<LayerArgs>();
  auto lo = std::make_shared<LoadOptions>();
  CLI::App* l = app.add_subcommand("load", "load one layer's experts into freshly allocated parameters and report GB/s");
  l->add_option("path", ld->path, "checkpoint")->required();
  add_layer_options(l, *ld);
  l->add_option("--tp-size", ld->tp_size, "tensor-parallel size");
  l->add_option("--tp-rank", ld->tp_rank, "tensor-parallel rank");
  l->add_option("--ep-size", ld->ep_size, "expert-parallel size");
  l->add_option("--ep-rank", ld->ep_rank, "expert-parallel rank");
  l->add_option("--placement", ld->placement, "contiguous or round-robin");
  l->add_option("--device", lo->device, "cpu or cuda");
  l->add_option("--engine", lo->engine, "staged (pinned staging, worker threads, streams) or per-expert (one cudaMemcpy2D per expert block: the baseline)");
  l->add_option("--workers", lo->workers, "staged engine: worker threads, each with a stream and two pinned buffers");
  l->add_option("--staging-mb", lo->staging_mb, "staged engine: size of each pinned buffer in MB");
  l->add_option("--repeat", lo->repeat, "load this many times (the first read may fill the page cache)");
  l->callback([ld, lo, &exit_code] { exit_code = run_load(*ld, *lo); });
}

}  // namespace musespark::cli

// `musespark path`: which path of the CUDA kernel a call takes, from the
// kernel's own tier table (cuda::chosen_path; on the register path its tier,
// cuda::register_tier, whether rows are ranked, and the blocks per SM to
// which the grid is held on a GPU of --sms SMs; on the row-per-thread path
// its lanes per row and hold), without a GPU. For a kernel
// engineer asking where a shape goes before timing it.
#include <fmt/core.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "commands.h"
#include "musespark/errors.h"
#include "musespark/routing_params.h"
#ifdef MUSESPARK_HAVE_CUDA
#include "routing_kernel.cuh"
#endif

namespace musespark::cli {
namespace {

struct PathSettings {
  std::vector<std::int64_t> tokens{1, 16, 128, 1024, 8192, 65536};
  std::vector<std::int64_t> experts{256};
  std::vector<std::int64_t> topk{8};
  std::string dtype = "float32";
  std::string norm = "sigmoid";
  int force_path = 0;
  int thread_row_lanes = 0;
  int sms = 132;  // an H100 SXM or H200
};

DType parse_logits_dtype(const std::string& name) {
  if (const std::optional<DType> t = logits_dtype_named(name)) return *t;
  throw ArgumentError("--dtype must be float32, bfloat16 or float16, got '" + name + "'");
}

#ifdef MUSESPARK_HAVE_CUDA
// The kernel's choice reads the shape, the dtype, the normalization and the
// alignment of the pointers, never the data: a 16-byte aligned host buffer
// stands in.
std::string path_of(std::int64_t T, std::int64_t E, std::int64_t k, DType dtype, Normalization norm, int force,
                    int lanes, int sms) {
  alignas(16) static unsigned char stand_in[16];
  cuda::LaunchOptions options;
  options.force_path = force;
  options.thread_row_lanes = lanes;
  const RoutingParams p = shape_only_params(T, E, k, dtype, norm, stand_in, stand_in);
  const cuda::RoutingPath chosen = cuda::chosen_path(p, options);
  std::string path = cuda::routing_path_name(chosen);
  if (const int warps = cuda::block_threshold_pair_warps(p, options); warps > 0) {
    const int groups = cuda::block_threshold_pair_groups(p, options);  // 1 says nothing more
    path += groups > 1 ? fmt::format(" ({} warps, two experts per thread, {} lane groups a warp)", warps, groups)
                       : fmt::format(" ({} warps, two experts per thread)", warps);
  }
  if (chosen == cuda::RoutingPath::kRegister || chosen == cuda::RoutingPath::kRegisterScalarLoads) {
    const cuda::RegisterTier tier = cuda::register_tier(p, options);
    const int blocks_per_sm = cuda::register_blocks_per_sm(p, sms, options);
    path += fmt::format(" ({} lanes per row x {} experts per lane{}{})", tier.lanes, tier.experts_per_lane,
                        cuda::register_rows_ranked(p, options) ? ", ranked" : "",
                        blocks_per_sm > 0 ? fmt::format(", at most {} blocks per SM", blocks_per_sm) : "");
  }
  if (chosen == cuda::RoutingPath::kThreadRow) {
    const int lanes = cuda::thread_row_lanes(p, options);
    const int blocks_per_sm = cuda::thread_row_blocks_per_sm(p, sms, options);
    path += fmt::format(" ({} lane{} per row{})", lanes, lanes == 1 ? "" : "s",
                        blocks_per_sm > 0 ? fmt::format(", at most {} blocks per SM", blocks_per_sm) : "");
  }
  return path;
}
#endif

int run_path(const PathSettings& s) {
#ifndef MUSESPARK_HAVE_CUDA
  (void)s;
  fmt::print(stderr, "musespark path: this build has no CUDA kernel (no nvcc found, or MUSESPARK_ENABLE_CUDA=OFF)\n");
  return 2;
#else
  const DType dtype = parse_logits_dtype(s.dtype);
  const Normalization norm = parse_normalization(s.norm);
  fmt::print("{:>8} {:>8} {:>5}  path ({} logits, {})\n", "tokens", "experts", "topk", s.dtype, s.norm);
  for (std::int64_t E : s.experts)
    for (std::int64_t k : s.topk)
      for (std::int64_t T : s.tokens)
        fmt::print("{:>8} {:>8} {:>5}  {}\n", T, E, k,
                   path_of(T, E, k, dtype, norm, s.force_path, s.thread_row_lanes, s.sms));
  return 0;
#endif
}

}  // namespace

void add_path_command(CLI::App& app, int& exit_code) {
  auto settings = std::make_shared<PathSettings>();
  CLI::App* cmd = app.add_subcommand("path", "which path of the CUDA kernel each call shape takes (no GPU needed)");
  cmd->add_option("--tokens", settings->tokens, "rows, comma-separated (default 1,16,128,1024,8192,65536)")
      ->delimiter(',');
  cmd->add_option("--experts", settings->experts, "experts, comma-separated (default 256)")->delimiter(',');
  cmd->add_option("--topk", settings->topk, "top-k, comma-separated (default 8)")->delimiter(',');
  cmd->add_option("--dtype", settings->dtype, "logits dtype: float32, bfloat16 or float16");
  cmd->add_option("--norm", settings->norm, "sigmoid or softmax");
  cmd->add_option("--force-path", settings->force_path, "check a forced path (1-8) against the call instead");
  cmd->add_option("--thread-row-lanes", settings->thread_row_lanes,
                  "the row-per-thread path's lanes per row (1, 2 or 4) instead of the table's");
  cmd->add_option("--sms", settings->sms, "the GPU's SM count, for the register path's blocks per SM (default 132)")
      ->check(CLI::Range(1, 1 << 20));
  cmd->callback([settings, &exit_code] { exit_code = run_path(*settings); });
}

}  // namespace musespark::cli

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
#include <stdexcept>
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
  std::string row_runs;  // FIRST:LAST:STEP, or empty for one line per row count
  bool marked_only = false;  // with row_runs: only the shapes with a marked run
};

// --row-runs FIRST:LAST:STEP: the rows FIRST, FIRST + STEP, ... up to LAST.
struct RowWalk {
  std::int64_t first, last, step;
};

RowWalk parse_row_walk(const std::string& text) {
  const std::string usage = "--row-runs takes FIRST:LAST:STEP with 1 <= FIRST <= LAST and STEP >= 1, got '" + text + "'";
  const std::size_t a = text.find(':');
  const std::size_t b = a == std::string::npos ? a : text.find(':', a + 1);
  if (b == std::string::npos || text.find(':', b + 1) != std::string::npos) throw ArgumentError(usage);
  RowWalk walk{};
  try {
    std::size_t used = 0;
    const std::string parts[3] = {text.substr(0, a), text.substr(a + 1, b - a - 1), text.substr(b + 1)};
    std::int64_t* const into[3] = {&walk.first, &walk.last, &walk.step};
    for (int i = 0; i < 3; ++i) {
      *into[i] = std::stoll(parts[i], &used);
      if (used != parts[i].size()) throw ArgumentError(usage);
    }
  } catch (const std::logic_error&) {  // stoll: not a number, or out of range
    throw ArgumentError(usage);
  }
  if (walk.first < 1 || walk.last < walk.first || walk.step < 1) throw ArgumentError(usage);
  // A walk is for reading; a million row counts a shape is past that.
  if (const std::int64_t counts = (walk.last - walk.first) / walk.step + 1; counts > 1'000'000)
    throw ArgumentError("--row-runs '" + text + "' walks " + std::to_string(counts) +
                        " row counts a shape; at most 1000000 (take a larger STEP)");
  return walk;
}

DType parse_logits_dtype(const std::string& name) {
  if (const std::optional<DType> t = logits_dtype_named(name)) return *t;
  throw ArgumentError("--dtype must be float32, bfloat16 or float16, got '" + name + "'");
}

#ifdef MUSESPARK_HAVE_CUDA
// The kernel's answer for one call: the path, its form, and the blocks per
// SM the grid is held to, kept apart so that a walk over the rows can
// compare forms while the hold, which follows the rows, changes.
struct PathAnswer {
  std::string name;       // cuda::routing_path_name
  std::string form;       // what goes in the parentheses but the hold; empty: none
  int blocks_per_sm = 0;  // the grid's hold; 0: none

  std::string text(bool with_hold) const {
    std::string inside = form;
    if (with_hold && blocks_per_sm > 0) inside += fmt::format(", at most {} blocks per SM", blocks_per_sm);
    return inside.empty() ? name : fmt::format("{} ({})", name, inside);
  }
};

// The kernel's choice reads the shape, the dtype, the normalization and the
// alignment of the pointers, never the data: a 16-byte aligned host buffer
// stands in.
PathAnswer path_of(std::int64_t T, std::int64_t E, std::int64_t k, DType dtype, Normalization norm, int force,
                   int lanes, int sms) {
  alignas(16) static unsigned char stand_in[16];
  cuda::LaunchOptions options;
  options.force_path = force;
  options.thread_row_lanes = lanes;
  const RoutingParams p = shape_only_params(T, E, k, dtype, norm, stand_in, stand_in);
  const cuda::RoutingPath chosen = cuda::chosen_path(p, options);
  PathAnswer answer{cuda::routing_path_name(chosen)};
  if (const int warps = cuda::block_threshold_pair_warps(p, options); warps > 0) {
    const int groups = cuda::block_threshold_pair_groups(p, options);  // 1 says nothing more
    answer.form = groups > 1 ? fmt::format("{} warps, two experts per thread, {} lane groups a warp", warps, groups)
                             : fmt::format("{} warps, two experts per thread", warps);
  }
  if (chosen == cuda::RoutingPath::kRegister || chosen == cuda::RoutingPath::kRegisterScalarLoads) {
    const cuda::RegisterTier tier = cuda::register_tier(p, options);
    answer.form = fmt::format("{} lanes per row x {} experts per lane{}", tier.lanes, tier.experts_per_lane,
                              cuda::register_rows_ranked(p, options) ? ", ranked" : "");
    answer.blocks_per_sm = cuda::register_blocks_per_sm(p, sms, options);
  }
  if (chosen == cuda::RoutingPath::kThreadRow) {
    const int row_lanes = cuda::thread_row_lanes(p, options);
    answer.form = fmt::format("{} lane{} per row", row_lanes, row_lanes == 1 ? "" : "s");
    answer.blocks_per_sm = cuda::thread_row_blocks_per_sm(p, sms, options);
  }
  return answer;
}

// One line per run of rows that take the same path and form (the grid's
// hold, which follows the rows, left out), for finding where the tier table
// changes its mind along the rows: a run between two runs of one other path
// is marked, as E = 192 sigmoid's register rows between two row-per-thread
// bands were (session 54). With marked_only, only the shapes that have
// such a run are printed (all their runs), so that one command audits the
// whole table for them; the last line counts them.
int print_row_runs(const RowWalk& walk, const PathSettings& s, DType dtype, Normalization norm) {
  struct Run {
    std::int64_t first, last;
    std::string path;  // the path and its form, without the hold
    std::string name;  // the path alone
  };
  fmt::print("{:>8} {:>5}  {:<17}  path ({} logits, {}; runs of rows {}:{}:{})\n", "experts", "topk", "rows", s.dtype,
             s.norm, walk.first, walk.last, walk.step);
  int shapes = 0, marked_shapes = 0;
  for (std::int64_t E : s.experts)
    for (std::int64_t k : s.topk) {
      ++shapes;
      std::vector<Run> runs;
      for (std::int64_t T = walk.first; T <= walk.last; T += walk.step) {
        PathAnswer answer = path_of(T, E, k, dtype, norm, s.force_path, s.thread_row_lanes, s.sms);
        std::string path = answer.text(false);
        if (!runs.empty() && runs.back().path == path) runs.back().last = T;
        else runs.push_back({T, T, std::move(path), std::move(answer.name)});
        if (walk.last - T < walk.step) break;  // T + step would pass LAST (or overflow)
      }
      const auto between = [&runs](std::size_t i) {
        return i > 0 && i + 1 < runs.size() && runs[i - 1].name == runs[i + 1].name && runs[i].name != runs[i - 1].name;
      };
      bool marked = false;
      for (std::size_t i = 0; i < runs.size(); ++i) marked = marked || between(i);
      marked_shapes += marked ? 1 : 0;
      if (s.marked_only && !marked) continue;
      for (std::size_t i = 0; i < runs.size(); ++i)
        fmt::print("{:>8} {:>5}  {:<17}  {}{}\n", E, k, fmt::format("{}-{}", runs[i].first, runs[i].last),
                   runs[i].path, between(i) ? fmt::format("  <- between two {} runs", runs[i - 1].name) : "");
    }
  if (s.marked_only) fmt::print("{} of {} shapes have a run between two runs of another path\n", marked_shapes, shapes);
  return 0;
}
#endif

int run_path(const PathSettings& s) {
  // Checked in every build, so that a bad walk is named before "no CUDA kernel".
  if (s.marked_only && s.row_runs.empty()) throw ArgumentError("--marked-only needs --row-runs FIRST:LAST:STEP");
  const std::optional<RowWalk> walk = s.row_runs.empty() ? std::nullopt : std::optional(parse_row_walk(s.row_runs));
#ifndef MUSESPARK_HAVE_CUDA
  (void)s;
  (void)walk;
  fmt::print(stderr, "musespark path: this build has no CUDA kernel (no nvcc found, or MUSESPARK_ENABLE_CUDA=OFF)\n");
  return 2;
#else
  const DType dtype = parse_logits_dtype(s.dtype);
  const Normalization norm = parse_normalization(s.norm);
  if (walk) return print_row_runs(*walk, s, dtype, norm);
  fmt::print("{:>8} {:>8} {:>5}  path ({} logits, {})\n", "tokens", "experts", "topk", s.dtype, s.norm);
  for (std::int64_t E : s.experts)
    for (std::int64_t k : s.topk)
      for (std::int64_t T : s.tokens)
        fmt::print("{:>8} {:>8} {:>5}  {}\n", T, E, k,
                   path_of(T, E, k, dtype, norm, s.force_path, s.thread_row_lanes, s.sms).text(true));
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
  cmd->add_option("--row-runs", settings->row_runs,
                  "FIRST:LAST:STEP: walk the rows and print each run of rows on one path and form, marking a run "
                  "between two runs of another path (instead of --tokens)");
  cmd->add_flag("--marked-only", settings->marked_only,
                "with --row-runs: print only the shapes with a marked run, and count them");
  cmd->add_option("--sms", settings->sms, "the GPU's SM count, for the register path's blocks per SM (default 132)")
      ->check(CLI::Range(1, 1 << 20));
  cmd->callback([settings, &exit_code] { exit_code = run_path(*settings); });
}

}  // namespace musespark::cli

// musespark fuzz | replay | export | verify
#include <fmt/core.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "commands.h"
#include "harness/case_file.h"
#include "harness/fuzz.h"

namespace musespark::cli {
namespace {

using harness::ImplementationPtr;

std::vector<ImplementationPtr> chosen(const std::string& impl) {
  std::vector<ImplementationPtr> out;
  if (impl == "all") {
    for (const auto& i : harness::registered_implementations())
      if (i->unavailable_reason().empty()) out.push_back(i);
    return out;
  }
  ImplementationPtr i = harness::find_implementation(impl);
  if (!i->unavailable_reason().empty())
    throw std::runtime_error("implementation '" + impl + "' cannot run here: " + i->unavailable_reason());
  out.push_back(i);
  return out;
}

struct FuzzSettings {
  std::string impl = "cpu";
  double seconds = 0;
  std::int64_t cases = 0;
  std::uint64_t seed = 1;
  std::int64_t max_tokens = 4096;
  std::int64_t max_experts = 4096;
  std::string out_dir = "fuzz-failures";
  std::string json_path;
  int max_failures = 5;
  double progress_seconds = 60;  // a line this often when stderr is not a terminal; 0: none
};

int run_fuzz(const FuzzSettings& s) {
  if ((s.seconds > 0) == (s.cases > 0)) throw std::runtime_error("give exactly one of --seconds N or --cases N");
  if (!(s.progress_seconds >= 0))
    throw std::runtime_error(fmt::format("--progress-seconds must be 0 (no lines) or more seconds, got {}", s.progress_seconds));
  const auto impls = chosen(s.impl);
  const bool tty = isatty(STDERR_FILENO);
  std::mt19937_64 rng(s.seed);
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  // Under --impl all a baseline (the torch recipe) is judged and reported
  // but does not gate: it fails the contract by design. Named alone, it gates.
  auto gates = [&](const harness::Implementation& impl) { return s.impl != "all" || !impl.is_baseline(); };
  std::int64_t done = 0, failures = 0, baseline_failures = 0, near_ties = 0, tokens = 0;
  double last_progress = -1, last_progress_line = 0;
  std::vector<nlohmann::json> failed;
  for (std::int64_t n = 0; s.cases > 0 ? n < s.cases : elapsed() < s.seconds; ++n) {
    const harness::CaseConfig cfg = harness::random_config(rng, {s.max_tokens, s.max_experts});
    const std::uint64_t row_pick = rng();
    const harness::RoutingCase c(cfg);
    for (const ImplementationPtr& impl : impls) {
      harness::FuzzVerdict v;
      try {
        v = check_case(*impl, c, row_pick);
      } catch (const std::exception& e) {
        v.ok = false;
        v.what = std::string("threw: ") + e.what() + "\n";
      }
      near_ties += v.near_ties;
      if (v.ok) continue;
      if (!gates(*impl)) {
        ++baseline_failures;
        continue;
      }
      ++failures;
      if (failures > s.max_failures) continue;
      const harness::RoutingCase small = shrink_case(*impl, c, row_pick);
      std::filesystem::create_directories(s.out_dir);
      const std::string file = fmt::format("{}/{}-seed{}-case{}.safetensors", s.out_dir, impl->name(), s.seed, n);
      harness::save_cases(file, {&small});
      if (tty) fmt::print(stderr, "\n");
      fmt::print("FAIL [{}] case {}: {}\n{}  shrunk to: {}\n  replay: musespark replay {} --impl {}\n", impl->name(), n,
                 describe(cfg), v.what, describe(small.config()), file, impl->name());
      failed.push_back({{"impl", impl->name()}, {"case", n}, {"config", describe(cfg)}, {"file", file}});
    }
    ++done;
    tokens += cfg.tokens;
    if (tty && elapsed() - last_progress > 0.5) {
      last_progress = elapsed();
      fmt::print(stderr, "\rfuzz: {} cases, {:.0f}/s, {} failures, {} near-tie tokens   ", done, done / std::max(elapsed(), 1e-9),
                 failures, near_ties);
    } else if (!tty && s.progress_seconds > 0 && elapsed() - last_progress_line >= s.progress_seconds) {
      // Logs of long runs (CI, nohup, a device script) get a plain line
      // now and then instead of the terminal's rewritten one.
      last_progress_line = elapsed();
      const std::string where = s.cases > 0 ? fmt::format("{} of {} cases", done, s.cases)
                                            : fmt::format("{:.0f} of {:.0f} s, {} cases", last_progress_line, s.seconds, done);
      fmt::print(stderr, "fuzz: {}, {} tokens, {} failures, {} near-tie tokens (seed {})\n", where, tokens, failures,
                 near_ties, s.seed);
    }
  }
  if (tty) fmt::print(stderr, "\n");
  std::string names;
  for (const auto& i : impls) names += (names.empty() ? "" : ",") + i->name();
  fmt::print("fuzz: {} on {}: {} cases, {} tokens, {:.1f} s, {} failures, {} near-tie tokens (seed {}){}\n",
             failures ? "FAILED" : "clean", names, done, tokens, elapsed(), failures, near_ties, s.seed,
             baseline_failures ? fmt::format("; baselines failed {} case checks, not gating", baseline_failures) : "");
  if (!s.json_path.empty()) {
    nlohmann::json j = {{"implementations", names}, {"seed", s.seed}, {"cases", done}, {"tokens", tokens},
                        {"seconds", elapsed()}, {"failures", failures}, {"baseline_failures_not_gating", baseline_failures},
                        {"near_tie_tokens", near_ties}, {"failed", failed}};
    std::ofstream(s.json_path) << j.dump(2) << "\n";
  }
  return failures ? 1 : 0;
}

int run_replay(const std::vector<std::string>& files, const std::string& impl) {
  bool ok = true;
  for (const std::string& file : files) {
    const std::vector<harness::RoutingCase> cases = harness::load_cases(file);
    for (const ImplementationPtr& i : chosen(impl)) {
      for (std::size_t n = 0; n < cases.size(); ++n) {
        harness::FuzzVerdict v;
        try {
          v = check_case(*i, cases[n], 0);
        } catch (const std::exception& e) {
          v.ok = false;
          v.what = std::string("threw: ") + e.what() + "\n";
        }
        const bool gates = impl != "all" || !i->is_baseline();
        ok &= v.ok || !gates;
        fmt::print("{} [{}] {} case {}: {}\n{}", v.ok ? "PASS" : (gates ? "FAIL" : "FAIL (baseline, not gating)"), i->name(),
                   file, n, describe(cases[n].config()), v.ok ? "" : v.what);
      }
    }
  }
  return ok ? 0 : 1;
}

int run_export(std::int64_t n, std::uint64_t seed, const std::string& out, std::int64_t max_tokens, std::int64_t max_experts) {
  std::mt19937_64 rng(seed);
  std::vector<harness::RoutingCase> cases;
  for (std::int64_t i = 0; i < n; ++i) {
    harness::CaseConfig c = harness::random_config(rng, {max_tokens, max_experts});
    // Outside implementations fill exact [T, k] outputs from contiguous inputs.
    c.layout = harness::LogitsLayout::kContiguous;
    c.extra_rows = c.extra_cols = 0;
    cases.emplace_back(c);
  }
  std::vector<const harness::RoutingCase*> ptrs;
  for (const auto& c : cases) ptrs.push_back(&c);
  harness::save_cases(out, ptrs);
  fmt::print("export: {} cases (seed {}) written to {}\n", n, seed, out);
  return 0;
}

int run_verify(const std::string& cases_file, const std::string& outputs_file) {
  const std::vector<harness::RoutingCase> cases = harness::load_cases(cases_file);
  const std::vector<harness::RoutingOutput> outs = harness::load_outputs(outputs_file, cases);
  std::int64_t failed = 0, near = 0;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const harness::ComparisonReport r = harness::compare_output(cases[i], outs[i]);
    near += r.near_tie_tokens;
    if (!r.ok()) {
      ++failed;
      fmt::print("case {}: {}", i, r.format());
    }
  }
  fmt::print("verify: {} of {} cases fail the contract, {} near-tie tokens ({} against {})\n", failed, cases.size(), near,
             outputs_file, cases_file);
  return failed ? 1 : 0;
}

}  // namespace

void add_fuzz_commands(CLI::App& app, int& exit_code) {
  auto fs = std::make_shared<FuzzSettings>();
  CLI::App* fuzz = app.add_subcommand("fuzz", "random configurations against the reference until something breaks");
  fuzz->add_option("--impl", fs->impl, "cpu, cuda, torch-recipe or all (under all, baselines are reported, not gating)");
  fuzz->add_option("--seconds", fs->seconds, "run for this long");
  fuzz->add_option("--cases", fs->cases, "or run this many cases");
  fuzz->add_option("--seed", fs->seed, "random seed (the same seed replays the same cases)");
  fuzz->add_option("--max-tokens", fs->max_tokens, "largest T generated");
  fuzz->add_option("--max-experts", fs->max_experts, "largest E generated");
  fuzz->add_option("--out-dir", fs->out_dir, "where shrunk failing cases are saved");
  fuzz->add_option("--json", fs->json_path, "write a JSON summary here");
  fuzz->add_option("--max-failures", fs->max_failures, "failures shrunk and saved before the rest are only counted");
  fuzz->add_option("--progress-seconds", fs->progress_seconds,
                   "when stderr is not a terminal, a progress line this often (0: none)");
  fuzz->callback([fs, &exit_code] { exit_code = run_fuzz(*fs); });

  auto replay_files = std::make_shared<std::vector<std::string>>();
  auto replay_impl = std::make_shared<std::string>("cpu");
  CLI::App* replay = app.add_subcommand("replay", "re-run saved case files (reference + invariants)");
  replay->add_option("files", *replay_files, "case files")->required()->check(CLI::ExistingFile);
  replay->add_option("--impl", *replay_impl, "cpu, cuda, torch-recipe or all");
  replay->callback([replay_files, replay_impl, &exit_code] { exit_code = run_replay(*replay_files, *replay_impl); });

  struct ExportArgs { std::int64_t cases = 16; std::uint64_t seed = 1; std::string out; std::int64_t max_tokens = 256, max_experts = 1024; };
  auto ex = std::make_shared<ExportArgs>();
  CLI::App* exp = app.add_subcommand("export", "write random cases for an outside implementation");
  exp->add_option("--cases", ex->cases, "how many");
  exp->add_option("--seed", ex->seed, "random seed");
  exp->add_option("--out", ex->out, "output .safetensors")->required();
  exp->add_option("--max-tokens", ex->max_tokens, "largest T");
  exp->add_option("--max-experts", ex->max_experts, "largest E");
  exp->callback([ex, &exit_code] { exit_code = run_export(ex->cases, ex->seed, ex->out, ex->max_tokens, ex->max_experts); });

  auto vc = std::make_shared<std::pair<std::string, std::string>>();
  CLI::App* ver = app.add_subcommand("verify", "judge an outside implementation's outputs for exported cases");
  ver->add_option("--cases", vc->first, "the exported cases")->required()->check(CLI::ExistingFile);
  ver->add_option("--outputs", vc->second, "case<i>/topk_weights and case<i>/topk_ids")->required()->check(CLI::ExistingFile);
  ver->callback([vc, &exit_code] { exit_code = run_verify(vc->first, vc->second); });
}

}  // namespace musespark::cli

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "commands.h"
#include "harness/check_grid.h"
#include "harness/comparator.h"
#include "harness/implementations.h"

namespace musespark::cli {
namespace {

struct CheckSettings {
  std::string impl = "all";
  std::uint64_t seed = 1;
  std::int64_t max_experts = 4096;
  int show = 3;
  bool verbose = false;
};

struct ImplSummary {
  std::string name, note;
  std::int64_t cases = 0, tokens = 0, near_ties = 0, beyond = 0, failed_cases = 0, errors = 0;
  double seconds = 0;
  bool ran = false, gating = true;
};

int run_check(const CheckSettings& s) {
  std::vector<harness::ImplementationPtr> impls;
  if (s.impl == "all") impls = harness::registered_implementations();
  else impls.push_back(harness::find_implementation(s.impl));

  const std::vector<harness::CaseConfig> grid =
      harness::check_grid({.seed = s.seed, .max_experts = s.max_experts});
  fmt::print("musespark check: {} cases per implementation (seed {})\n\n", grid.size(), s.seed);

  std::vector<ImplSummary> rows;
  bool gating_failure = false;
  for (const auto& impl : impls) {
    ImplSummary row{.name = impl->name(), .gating = !impl->is_baseline()};
    const std::string reason = impl->unavailable_reason();
    if (!reason.empty()) {
      row.note = "skipped: " + reason;
      if (s.impl != "all") gating_failure = true;  // asked for by name and cannot run
      rows.push_back(row);
      continue;
    }
    row.ran = true;
    int shown = 0;
    const auto start = std::chrono::steady_clock::now();
    for (const harness::CaseConfig& cfg : grid) {
      const harness::RoutingCase c(cfg);
      ++row.cases;
      row.tokens += cfg.tokens;
      harness::ComparisonReport report;
      try {
        report = harness::compare_output(c, impl->run(c));
      } catch (const std::exception& e) {
        ++row.errors;
        ++row.failed_cases;
        const std::string what = e.what();
        if (shown++ < s.show)
          fmt::print("[{}] ERROR {}\n  {}\n", impl->name(), harness::describe(cfg), what.substr(0, what.find('\n')));
        continue;
      }
      row.near_ties += report.near_tie_tokens;
      row.beyond += report.beyond_fp32_tokens;
      if (!report.ok()) {
        ++row.failed_cases;
        if (shown++ < s.show) fmt::print("[{}] {}", impl->name(), report.format());
      } else if (s.verbose) {
        fmt::print("[{}] {}", impl->name(), report.format(0));
      }
    }
    row.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (row.failed_cases > 0 && row.gating) gating_failure = true;
    row.note = impl->description();
    rows.push_back(row);
  }

  std::size_t name_width = std::string_view("implementation").size();
  for (const ImplSummary& r : rows) name_width = std::max(name_width, r.name.size());
  fmt::print("\n{:<{}} {:>6} {:>8} {:>10} {:>11} {:>7} {:>8}  {}\n", "implementation", name_width, "cases", "tokens",
             "near-ties", "beyond-fp32", "failed", "seconds", "");
  for (const ImplSummary& r : rows) {
    if (!r.ran) {
      fmt::print("{:<{}} {:>6} {:>8} {:>10} {:>11} {:>7} {:>8}  {}\n", r.name, name_width, "-", "-", "-", "-", "-", "-",
                 r.note);
      continue;
    }
    std::string verdict = r.failed_cases == 0 ? "PASS" : (r.gating ? "FAIL" : "fails contract (baseline, not gating)");
    fmt::print("{:<{}} {:>6} {:>8} {:>10} {:>11} {:>7} {:>8.2f}  {}: {}\n", r.name, name_width, r.cases, r.tokens,
               r.near_ties, r.beyond, r.failed_cases, r.seconds, verdict, r.note);
  }
  fmt::print("\n{}\n", gating_failure ? "check: FAILED" : "check: all production implementations pass");
  return gating_failure ? 1 : 0;
}

}  // namespace

void add_check_command(CLI::App& app, int& exit_code) {
  auto settings = std::make_shared<CheckSettings>();
  CLI::App* cmd = app.add_subcommand("check", "run every available implementation against the float64 reference");
  cmd->add_option("--impl", settings->impl, "implementation name, or 'all'");
  cmd->add_option("--seed", settings->seed, "grid seed");
  cmd->add_option("--max-experts", settings->max_experts, "skip grid cells above this many experts");
  cmd->add_option("--show", settings->show, "failing cases printed per implementation");
  cmd->add_flag("--verbose", settings->verbose, "print every case");
  cmd->callback([settings, &exit_code] { exit_code = run_check(*settings); });
}

}  // namespace musespark::cli

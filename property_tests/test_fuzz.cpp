// The fuzzer finds a broken implementation, shrinks the failure to one row,
// saves it as a case file that replays, and case files round-trip exactly.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <random>

#include "harness/case_file.h"
#include "broken_implementations.h"
#include "harness/fuzz.h"
#include "test_support.h"

namespace musespark {
namespace {

using namespace harness;

// The broken implementation of property_tests (ties toward the higher
// index), as a registry entry the fuzzer can judge.
class TiesToHigherIndex final : public Implementation {
 public:
  std::string name() const override { return "ties-to-higher"; }
  std::string description() const override { return "broken on purpose"; }
  std::string unavailable_reason() const override { return {}; }
  RoutingOutput run(const RoutingCase& c) const override { return properties::ties_to_higher_index(c); }
};

TEST(Fuzz, FindsShrinksAndReplaysABrokenImplementation) {
  const TiesToHigherIndex broken;
  std::mt19937_64 rng(testing::test_seed(11));
  bool found = false;
  for (int n = 0; n < 400 && !found; ++n) {
    const CaseConfig cfg = random_config(rng, {256, 512});
    const RoutingCase c(cfg);
    if (check_case(broken, c, 0).ok) continue;
    found = true;
    const RoutingCase small = shrink_case(broken, c, 0);
    EXPECT_LE(small.config().tokens, 1) << describe(small.config());
    EXPECT_FALSE(check_case(broken, small, 0).ok);
    const std::string path = (std::filesystem::temp_directory_path() / "musespark_fuzz_case.safetensors").string();
    save_cases(path, {&small});
    const std::vector<RoutingCase> loaded = load_cases(path);
    ASSERT_EQ(loaded.size(), 1u);
    EXPECT_FALSE(check_case(broken, loaded[0], 0).ok) << "the saved reproducer no longer fails";
    EXPECT_TRUE(check_case(*make_cpu_implementation(), loaded[0], 0).ok);
    std::filesystem::remove(path);
  }
  EXPECT_TRUE(found) << "400 random cases never exposed ties broken toward the higher index";
}

TEST(CaseFiles, RoundTripInputsBitForBit) {
  std::mt19937_64 rng(testing::test_seed(5));
  std::vector<RoutingCase> cases;
  for (int i = 0; i < 12; ++i) cases.emplace_back(random_config(rng, {64, 600}));
  std::vector<const RoutingCase*> ptrs;
  for (const auto& c : cases) ptrs.push_back(&c);
  const std::string path = (std::filesystem::temp_directory_path() / "musespark_cases.safetensors").string();
  save_cases(path, ptrs);
  const std::vector<RoutingCase> back = load_cases(path);
  ASSERT_EQ(back.size(), cases.size());
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const CaseConfig& c = cases[i].config();
    EXPECT_EQ(describe(back[i].config()), describe(c));
    for (std::int64_t t = 0; t < c.tokens; ++t)
      for (std::int64_t e = 0; e < c.experts; ++e) {
        const float a = cases[i].logit(t, e), b = back[i].logit(t, e);
        EXPECT_EQ(std::memcmp(&a, &b, 4), 0) << "case " << i << " (" << t << ", " << e << ")";
      }
    EXPECT_EQ(back[i].bias(), cases[i].bias());
    // Same outputs from the CPU path, so verdicts replay.
    const RoutingOutput o1 = make_cpu_implementation()->run(cases[i]), o2 = make_cpu_implementation()->run(back[i]);
    EXPECT_EQ(o1.ids, o2.ids);
  }
  std::filesystem::remove(path);
}

TEST(CaseFiles, VerifyJudgesOutsideOutputs) {
  std::mt19937_64 rng(testing::test_seed(9));
  std::vector<RoutingCase> cases;
  for (int i = 0; i < 6; ++i) {
    CaseConfig c = random_config(rng, {64, 300});
    c.extra_rows = c.extra_cols = 0;
    cases.emplace_back(c);
  }
  std::vector<RoutingOutput> outs;
  for (const auto& c : cases) outs.push_back(make_cpu_implementation()->run(c));
  const std::string path = (std::filesystem::temp_directory_path() / "musespark_outs.safetensors").string();
  save_outputs(path, cases, outs);
  const std::vector<RoutingOutput> back = load_outputs(path, cases);
  for (std::size_t i = 0; i < cases.size(); ++i) EXPECT_TRUE(testing::Passes(compare_output(cases[i], back[i])));
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace musespark

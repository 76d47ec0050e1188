// The production CPU path against the float64 reference over the check grid.
#include <gtest/gtest.h>

#include "harness/check_grid.h"
#include "harness/implementations.h"
#include "test_support.h"

namespace musespark {
namespace {

class CpuGrid : public ::testing::TestWithParam<harness::CaseConfig> {};

TEST_P(CpuGrid, MatchesReference) {
  const harness::RoutingCase c(GetParam());
  EXPECT_TRUE(testing::Passes(harness::compare_output(c, harness::make_cpu_implementation()->run(c))));
}

INSTANTIATE_TEST_SUITE_P(Grid, CpuGrid,
                         ::testing::ValuesIn(harness::check_grid({.seed = testing::test_seed()})),
                         [](const auto& info) { return "case" + std::to_string(info.index); });

}  // namespace
}  // namespace musespark

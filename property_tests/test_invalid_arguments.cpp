// Property: every invalid argument is refused with an ArgumentError that
// names it, and nothing is written, on the CPU path and (with a device) the
// CUDA kernel.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <cstring>

#include "harness/implementations.h"
#include "musespark/errors.h"
#include "musespark/route.h"
#include "router_generators.h"

#ifdef MUSESPARK_HAVE_CUDA
#include "harness/cuda_case.h"
#endif

namespace musespark::properties {
namespace {

struct Mutation {
  const char* name;
  const char* message;  // a substring the error must contain
  void (*apply)(RoutingParams&);
};

const std::vector<Mutation>& mutations() {
  static const std::vector<Mutation> m = {
      {"k = 0", "topk must be in [1, num_experts=", [](RoutingParams& p) { p.topk = 0; }},
      {"k > E", "topk must be in [1, num_experts=", [](RoutingParams& p) { p.topk = p.num_experts + 1; }},
      {"no experts", "num_experts must be >= 1", [](RoutingParams& p) { p.num_experts = 0; }},
      {"logits dtype", "gating_output dtype must be float32, bfloat16 or float16", [](RoutingParams& p) { p.logits_dtype = DType::kInt64; }},
      {"ids dtype", "topk_ids dtype must be int32 or int64", [](RoutingParams& p) { p.ids_dtype = DType::kBFloat16; }},
      {"weights too small", "topk_weights has shape", [](RoutingParams& p) { p.weights_cols = p.topk - 1; }},
      {"ids too few rows", "topk_ids has shape", [](RoutingParams& p) { p.ids_rows = p.num_tokens - 1; }},
      {"overlapping weights", "output window overlap", [](RoutingParams& p) { p.weights_row_stride = 0; p.weights_col_stride = 0; }},
      {"negative padding stride", "is_padding stride must be >= 0", [](RoutingParams& p) { p.padding_stride = -1; }},
      {"NaN route_scale", "route_scale must be finite", [](RoutingParams& p) { p.route_scale = NAN; }},
      {"inf multiplier", "router_output_multiplier must be finite", [](RoutingParams& p) { p.multiplier = -INFINITY; }},
      {"eps beyond fp32", "router_score_division_eps = ", [](RoutingParams& p) { p.eps = 1e40; }},
      {"negative logit stride", "gating_output strides must be >= 0", [](RoutingParams& p) { p.logits_row_stride = -5; }},
  };
  return m;
}

void check_refused(RoutingParams p, const Mutation& m, const std::function<bool()>& untouched) {
  try {
    route(p);
    RC_FAIL(std::string("no error for '") + m.name + "'");
  } catch (const ArgumentError& e) {
    if (std::string(e.what()).find(m.message) == std::string::npos)
      RC_FAIL(std::string("'") + m.name + "' raised: " + e.what() + "; expected it to contain: " + m.message);
  }
  RC_ASSERT(untouched());
}

RC_GTEST_PROP(RouterProperties, InvalidArgumentsAreRefusedAndWriteNothing, (harness::CaseConfig c)) {
  RC_PRE(c.tokens >= 2);
  std::vector<std::size_t> indices(mutations().size());
  for (std::size_t i = 0; i < indices.size(); ++i) indices[i] = i;
  const std::size_t which = *rc::gen::elementOf(indices);  // uniform, unlike inRange at small sizes
  const Mutation& m = mutations()[which];
  RC_TAG(m.name);
  const harness::RoutingCase rc(c);

  // CPU path.
  harness::HostDestinations dest(rc);
  const harness::HostDestinations pristine(rc);
  RoutingParams p = rc.host_params();
  dest.point(p);
  m.apply(p);
  check_refused(p, m, [&] {
    return std::memcmp(dest.weights.data(), pristine.weights.data(), dest.weights.size() * 4) == 0 && dest.ids == pristine.ids;
  });

#ifdef MUSESPARK_HAVE_CUDA
  if (harness::cuda_unavailable_reason().empty()) {
    harness::CudaCase dev(rc);
    RoutingParams q = dev.params();
    m.apply(q);
    const harness::RoutingOutput before = dev.read_output();
    check_refused(q, m, [&] {
      const harness::RoutingOutput after = dev.read_output();
      return std::memcmp(after.weights.data(), before.weights.data(), after.weights.size() * 4) == 0 && after.ids == before.ids;
    });
  }
#endif
}

}  // namespace
}  // namespace musespark::properties

#include "broken_implementations.h"

#include <cmath>
#include <cstring>

#include "harness/implementations.h"
#include "musespark/routing_cpu.h"
#include "reference/routing_reference.h"

namespace musespark::properties {
namespace {

using harness::CaseConfig;
using harness::RoutingCase;
using harness::RoutingOutput;

RoutingOutput cpu(const RoutingCase& c) { return harness::make_cpu_implementation()->run(c); }

// Runs the CPU path on `c`'s buffers after `edit` changes the parameters.
RoutingOutput cpu_with(const RoutingCase& c, void (*edit)(RoutingParams&)) {
  RoutingParams p = c.host_params();
  harness::HostDestinations dest(c);
  dest.point(p);
  edit(p);
  route_cpu(p);
  return dest.to_output(c);
}

// The CPU path on a case rebuilt from an edited configuration, same logits.
RoutingOutput cpu_on_config(const RoutingCase& c, void (*edit)(CaseConfig&)) {
  CaseConfig cfg = c.config();
  edit(cfg);
  RoutingCase changed(cfg);
  for (std::int64_t t = 0; t < cfg.tokens; ++t)
    for (std::int64_t e = 0; e < cfg.experts; ++e) changed.set_logit(t, e, c.logit(t, e));
  for (std::int64_t e = 0; e < cfg.experts; ++e) changed.set_bias(e, c.bias()[e]);
  return cpu(changed);  // the padding mask is drawn from the same seed
}

RoutingOutput biased_weights(const RoutingCase& c) {
  RoutingOutput out = cpu(c);
  const reference::RoutingReference ref(c.host_params());
  for (std::int64_t t = 0; t < c.config().tokens; ++t) {
    const reference::TokenDecision d = ref.token(t);
    if (d.padded) continue;
    double sum = 0;
    for (std::int64_t j = 0; j < c.config().topk; ++j) sum += d.q[out.ids[t * c.dest_cols() + j]];
    for (std::int64_t j = 0; j < c.config().topk; ++j) {
      const std::int64_t i = t * c.dest_cols() + j;
      out.weights[i] = static_cast<float>(c.config().route_scale * d.q[out.ids[i]] /
                                          (sum + c.config().eps.value_or(0.0)));
    }
  }
  return out;
}

RoutingOutput write_past_k(const RoutingCase& c) {
  RoutingOutput out = cpu(c);
  if (c.config().tokens > 0 && c.dest_cols() > c.config().topk) out.weights[c.config().topk] = 0.0f;
  else if (c.dest_rows() > c.config().tokens) out.ids[c.config().tokens * c.dest_cols()] = 0;
  return out;
}

RoutingOutput nondeterministic(const RoutingCase& c) {
  static int calls = 0;
  RoutingOutput out = cpu(c);
  if (++calls % 2 == 0)
    for (std::int64_t t = 0; t < c.config().tokens; ++t) {
      float& w = out.weights[t * c.dest_cols()];
      if (std::isfinite(w) && w != 0.0f) w = std::nextafter(w, INFINITY);
    }
  return out;
}

RoutingOutput batch_dependent(const RoutingCase& c) {
  RoutingOutput out = cpu(c);
  if (c.config().tokens > 1) {
    float& w = out.weights[0];
    if (std::isfinite(w) && w != 0.0f) w = std::nextafter(w, INFINITY);
  }
  return out;
}

}  // namespace

RoutingOutput ties_to_higher_index(const RoutingCase& c) {
  const std::int64_t E = c.config().experts;
  RoutingCase reversed = RoutingCase::blank(c.config());
  for (std::int64_t t = 0; t < c.config().tokens; ++t)
    for (std::int64_t e = 0; e < E; ++e) reversed.set_logit(t, e, c.logit(t, E - 1 - e));
  for (std::int64_t e = 0; e < E; ++e) reversed.set_bias(e, c.bias()[E - 1 - e]);
  const RoutingParams in = c.host_params();
  if (in.is_padding)
    for (std::int64_t t = 0; t < c.config().tokens; ++t) reversed.set_padded(t, in.is_padding[t * in.padding_stride]);
  RoutingOutput out = cpu(reversed);
  for (std::int64_t t = 0; t < c.config().tokens; ++t)
    for (std::int64_t j = 0; j < c.config().topk; ++j) {
      std::int64_t& id = out.ids[t * c.dest_cols() + j];
      if (id >= 0 && id < E) id = E - 1 - id;
    }
  return out;
}

std::vector<Runner> broken_runners() {
  return {
      {"weights from biased scores", &biased_weights},
      {"ties to the higher index", &ties_to_higher_index},
      {"eps dropped", [](const RoutingCase& c) { return cpu_on_config(c, [](CaseConfig& g) { g.eps.reset(); }); }},
      {"padding ignored", [](const RoutingCase& c) { return cpu_with(c, [](RoutingParams& p) { p.is_padding = nullptr; }); }},
      {"column stride ignored", [](const RoutingCase& c) { return cpu_with(c, [](RoutingParams& p) { p.logits_col_stride = 1; }); }},
      {"last expert never considered",
       [](const RoutingCase& c) {
         return cpu_with(c, [](RoutingParams& p) {
           if (p.num_experts > 1) {
             p.num_experts -= 1;
             if (p.topk > p.num_experts) p.topk = p.num_experts;
           }
         });
       }},
      {"a write past k", &write_past_k},
      {"multiplier ignored", [](const RoutingCase& c) { return cpu_with(c, [](RoutingParams& p) { p.multiplier.reset(); }); }},
      {"route_scale ignored", [](const RoutingCase& c) { return cpu_with(c, [](RoutingParams& p) { p.route_scale = 1.0; }); }},
      {"sigmoid and softmax swapped",
       [](const RoutingCase& c) {
         return cpu_with(c, [](RoutingParams& p) {
           p.normalization = p.normalization == Normalization::kSigmoid ? Normalization::kSoftmax : Normalization::kSigmoid;
         });
       }},
      {"nondeterministic last bit", &nondeterministic},
      {"depends on the batch", &batch_dependent},
  };
}

}  // namespace musespark::properties

#include "harness/implementations.h"

#include <cstring>

#include "musespark/errors.h"

namespace musespark::harness {

HostDestinations::HostDestinations(const RoutingCase& c) {
  const std::size_t n = static_cast<std::size_t>(c.dest_rows() * c.dest_cols());
  weights.resize(n);
  std::uint32_t poison = kPoisonWeightBits;
  for (float& w : weights) std::memcpy(&w, &poison, 4);
  const std::size_t id_size = dtype_size(c.config().ids_dtype);
  ids.resize(n * id_size);
  for (std::size_t i = 0; i < n; ++i) {
    if (id_size == 8) {
      const std::int64_t v = kPoisonId;
      std::memcpy(&ids[i * 8], &v, 8);
    } else {
      const std::int32_t v = static_cast<std::int32_t>(kPoisonId);
      std::memcpy(&ids[i * 4], &v, 4);
    }
  }
}

void HostDestinations::point(RoutingParams& p) {
  p.weights = weights.data();
  p.ids = ids.data();
}

RoutingOutput HostDestinations::to_output(const RoutingCase& c) const {
  RoutingOutput out;
  out.weights = weights;
  const std::size_t n = weights.size();
  out.ids.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (c.config().ids_dtype == DType::kInt64) {
      std::int64_t v;
      std::memcpy(&v, &ids[i * 8], 8);
      out.ids[i] = v;
    } else {
      std::int32_t v;
      std::memcpy(&v, &ids[i * 4], 4);
      out.ids[i] = v == static_cast<std::int32_t>(kPoisonId) ? kPoisonId : v;
    }
  }
  return out;
}

}  // namespace musespark::harness

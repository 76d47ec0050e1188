// The production CPU path, as the harness runs it.
#include "harness/implementations.h"
#include "musespark/routing_cpu.h"

namespace musespark::harness {
namespace {

class CpuImplementation final : public Implementation {
 public:
  std::string name() const override { return "cpu"; }
  std::string description() const override { return "production CPU path (fp32)"; }
  std::string unavailable_reason() const override { return {}; }
  RoutingOutput run(const RoutingCase& c) const override {
    RoutingParams p = c.host_params();
    HostDestinations dest(c);
    dest.point(p);
    route_cpu(p);
    return dest.to_output(c);
  }
};

}  // namespace

ImplementationPtr make_cpu_implementation() { return std::make_shared<CpuImplementation>(); }

}  // namespace musespark::harness

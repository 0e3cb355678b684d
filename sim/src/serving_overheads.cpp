// Serving overheads per engine. Every default is a measured or fitted number with its source;
// a term without data is 0 and says "not modelled".
#include "kvplan/sim/serving_overheads.h"

#include <cmath>

#include <fmt/format.h>

#include "kvplan/core/error.h"

namespace kvplan::sim {

std::string ServingOverheads::describe() const {
  return fmt::format("per request {:.3f} ms ({}); per step {:.3f} ms ({})", ns_to_ms(request.ns), request.source,
                     ns_to_ms(step.ns), step.source);
}

// Until kvplan_validate_serving fits them from measurements, no engine has a default: every term
// is 0, "not modelled".
ServingOverheads default_serving_overheads(Engine engine, bool cuda_graphs) {
  (void)engine;
  (void)cuda_graphs;
  return ServingOverheads{};
}

TimeNs overhead_ms_to_ns(double ms, const std::string& field) {
  if (!std::isfinite(ms) || ms < 0 || ms > 1e6) {
    throw ConfigError(fmt::format("{}={} must be in [0, 1e6] ms", field, ms));
  }
  return static_cast<TimeNs>(std::llround(ms * 1e6));
}

}  // namespace kvplan::sim

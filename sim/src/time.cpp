#include "kvplan/sim/time.h"

#include <fmt/format.h>

#include "kvplan/core/error.h"

namespace kvplan::sim {

void throw_beyond_time_limit(double seconds) {
  throw ConfigError(fmt::format("simulated time {:g} s is beyond the simulator's limit of {:g} s (about 31.7 years): "
                                "fewer requests, a higher rate or a shorter trace",
                                seconds, kMaxSimulatedSeconds));
}

}  // namespace kvplan::sim

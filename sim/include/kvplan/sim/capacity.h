// kvplan/sim/capacity.h — the largest load that still meets a latency SLO.
//
//   CapacitySearch s = find_max_rate(config);      // open loop or trace: requests per second
//   CapacitySearch u = find_max_users(config);     // closed loop: concurrent users
//   s.best;  s.probes;                               // the answer and every simulation behind it
//
// Both searches grow the load geometrically until the SLO fails, then bisect between the last load
// that met it and the first that did not. Every probe is a full deterministic simulation with the
// config's seed, so the same config gives the same answer. For a trace, the rate is changed by
// scaling its arrival times (time_scale = trace rate / target rate); lengths are unchanged. The SLO
// need not be monotone in the load; the search reports the bracket it found, and every probe, so a
// non-monotone region is visible. A bench client (bench_client.h) is searched over its concurrency
// (the closed loop's users); each probe runs at least 4 x C prompts so it keeps a steady state.
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <vector>

#include "kvplan/sim/simulation.h"

namespace kvplan::sim {

struct CapacityProbe {
  double load = 0;  // requests per second, or users
  bool meets = false;
  RunSummary summary;
};

struct CapacitySearch {
  double best = 0;              // the largest load that met the SLO (0: none did)
  double first_failing = 0;     // the smallest load found to fail
  RunSummary at_best;
  std::vector<CapacityProbe> probes;  // in the order they ran
  bool unbounded = false;       // met the SLO up to the search limit
};

struct CapacityOptions {
  double start = 1.0;            // first load tried (rate per second or users)
  double limit = 1e6;            // give up growing beyond this
  double relative_tolerance = 0.02;  // stop bisecting when (fail - pass) / pass < this
  std::function<void(const CapacityProbe&)> on_probe;
  // Read between simulated events of every probe; true abandons the search with SearchStopped (the
  // planner drops a search whose inputs changed). A half-run probe is never judged.
  std::function<bool()> should_stop;
};

// Thrown by the searches when CapacityOptions::should_stop returned true.
struct SearchStopped : std::runtime_error {
  SearchStopped() : std::runtime_error("capacity search stopped") {}
};

// Throws ConfigError when the config has no SLO or the wrong kind of workload.
CapacitySearch find_max_rate(const SimulationConfig& config, const CapacityOptions& options = {});
CapacitySearch find_max_users(const SimulationConfig& config, const CapacityOptions& options = {});
// One probe of either search: `load` users (closed loop; rounded to a whole user, at least 1) or
// requests per second, simulated and judged exactly as the searches judge it.
CapacityProbe probe_load(const SimulationConfig& config, double load);

}  // namespace kvplan::sim

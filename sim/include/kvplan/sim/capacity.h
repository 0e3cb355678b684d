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
// With CapacityOptions::run_ahead a second thread simulates the load the search will most likely
// probe next while the current one runs (with its own step-cost model: the memo is exact, so every
// probe's result is what it would have been); the probes, their order and the answer are those of
// the one-thread search, only the wall time changes.
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
  int run_ahead_unused = 0;     // probes run ahead (CapacityOptions::run_ahead) that were not needed
};

struct CapacityOptions {
  double start = 1.0;            // first load tried (rate per second or users)
  double limit = 1e6;            // give up growing beyond this
  double relative_tolerance = 0.02;  // stop bisecting when (fail - pass) / pass < this
  std::function<void(const CapacityProbe&)> on_probe;
  // Read between simulated events of every probe; true abandons the search with SearchStopped (the
  // planner drops a search whose inputs changed). A half-run probe is never judged.
  std::function<bool()> should_stop;
  // Simulate the likely next load on a second thread meanwhile (see above). Ignored when the config
  // brings its own step timer or shared cost model, which one thread at a time may use.
  bool run_ahead = false;
};

// Thrown by the searches when CapacityOptions::should_stop returned true.
struct SearchStopped : std::runtime_error {
  SearchStopped() : std::runtime_error("capacity search stopped") {}
};

// Throws ConfigError when the config has no SLO or the wrong kind of workload.
CapacitySearch find_max_rate(const SimulationConfig& config, const CapacityOptions& options = {});
CapacitySearch find_max_users(const SimulationConfig& config, const CapacityOptions& options = {});
// The search over any probe (find_max_rate and find_max_users give it simulations; tests, a rule):
// `integer` loads are whole numbers. `ahead`, when given and options.run_ahead is set, runs the
// look-ahead probes on a second thread; it must give the same result as `probe` for a load, and
// stop early when its hooks' should_stop says so (its result is then discarded).
using LoadProbe = std::function<CapacityProbe(double load, const RunHooks& hooks)>;
CapacitySearch search_capacity(const LoadProbe& probe, const CapacityOptions& options, bool integer,
                               const LoadProbe& ahead = nullptr);

// One probe of either search: `load` users (closed loop; rounded to a whole user, at least 1) or
// requests per second, simulated and judged exactly as the searches judge it.
CapacityProbe probe_load(const SimulationConfig& config, double load);

}  // namespace kvplan::sim

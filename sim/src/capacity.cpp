#include "kvplan/sim/capacity.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <future>
#include <optional>

#include <fmt/format.h>

#include "kvplan/core/error.h"

namespace kvplan::sim {

namespace {

// Where a search stands: the loads known to meet and to miss the SLO, and the load it probes next.
// The search grows geometrically from the start until the SLO fails (or, when the start fails,
// shrinks until it holds), then bisects. `integer`: loads are whole numbers (users).
struct SearchState {
  enum class Phase { kFirst, kGrow, kShrink, kBisect, kDone };
  Phase phase = Phase::kFirst;
  double load = 0;
  double pass = 0;
  double fail = 0;
  bool unbounded = false;
  double first_failing = 0;
};

// The state after `load` met the SLO or not.
void advance(SearchState& s, bool meets, const CapacityOptions& o, bool integer) {
  using Phase = SearchState::Phase;
  switch (s.phase) {
    case Phase::kFirst:
      (meets ? s.pass : s.fail) = s.load;
      s.phase = meets ? Phase::kGrow : Phase::kShrink;
      break;
    case Phase::kGrow:
      if (meets) {
        s.pass = s.load;
      } else {
        s.fail = s.load;
        s.phase = Phase::kBisect;
      }
      break;
    case Phase::kShrink:
      if (meets) {
        s.pass = s.load;
        s.phase = Phase::kBisect;
      } else {
        s.fail = s.load;
      }
      break;
    case Phase::kBisect:
      (meets ? s.pass : s.fail) = s.load;
      break;
    case Phase::kDone:
      return;
  }
  auto done = [&](bool unbounded) {
    s.phase = Phase::kDone;
    s.unbounded = unbounded;
    if (!unbounded) s.first_failing = s.fail;
  };
  if (s.phase == Phase::kGrow) {
    const double next = integer ? std::ceil(s.load * 2) : s.load * 2;
    if (next > o.limit) return done(true);
    s.load = next;
  } else if (s.phase == Phase::kShrink) {
    const double next = integer ? std::floor(s.load / 2) : s.load / 2;
    if (next < (integer ? 1.0 : o.start * 1e-4)) return done(false);
    s.load = next;
  } else {
    if ((s.fail - s.pass) / s.pass <= o.relative_tolerance) return done(false);
    const double mid = integer ? std::floor((s.pass + s.fail) / 2) : std::sqrt(s.pass * s.fail);
    if (integer && (mid <= s.pass || mid >= s.fail)) return done(false);
    s.load = mid;
  }
}

// The load probed after the current one if it goes the likely way: a growing search keeps
// meeting the SLO (it fails once), a shrinking one keeps failing; a bisection is a coin toss, and
// the lower half is taken (a miss shortens the bracket from above).
std::optional<double> likely_next(const SearchState& s, const CapacityOptions& o, bool integer) {
  using Phase = SearchState::Phase;
  const bool guess = s.phase == Phase::kFirst || s.phase == Phase::kGrow;
  SearchState next = s;
  advance(next, guess, o, integer);
  if (next.phase == Phase::kDone) return std::nullopt;
  return next.load;
}

}  // namespace

CapacitySearch search_capacity(const LoadProbe& probe, const CapacityOptions& o, bool integer, const LoadProbe& ahead) {
  CapacitySearch out;
  SearchState s;
  s.load = integer ? std::max(1.0, std::round(o.start)) : o.start;
  RunHooks hooks;
  hooks.should_stop = o.should_stop;
  // A load simulated ahead, with the flag that abandons it when the search goes the other way.
  struct Ahead {
    double load = 0;
    std::future<CapacityProbe> result;
  };
  std::optional<Ahead> pending;
  std::atomic<bool> abandon{false};
  auto drop_pending = [&] {
    if (!pending) return;
    abandon = true;
    try {
      pending->result.get();
    } catch (...) {  // an abandoned probe's end (stopped, or its error) does not matter
    }
    pending.reset();
    abandon = false;
    ++out.run_ahead_unused;
  };
  try {
    while (s.phase != SearchState::Phase::kDone) {
      const double load = s.load;
      CapacityProbe p;
      if (pending && pending->load == load) {
        p = pending->result.get();
        pending.reset();
      } else {
        drop_pending();
        if (ahead && o.run_ahead) {
          if (std::optional<double> next = likely_next(s, o, integer)) {
            RunHooks ahead_hooks;
            ahead_hooks.should_stop = [&abandon, stop = o.should_stop] { return abandon.load() || (stop && stop()); };
            pending = Ahead{*next, std::async(std::launch::async, ahead, *next, ahead_hooks)};
          }
        }
        p = probe(load, hooks);
      }
      if (o.should_stop && o.should_stop()) throw SearchStopped();
      out.probes.push_back(p);
      if (o.on_probe) o.on_probe(p);
      if (p.meets && load > out.best) {
        out.best = load;
        out.at_best = p.summary;
      }
      advance(s, p.meets, o, integer);
      if (pending && (s.phase == SearchState::Phase::kDone || s.load != pending->load)) drop_pending();
    }
  } catch (...) {
    drop_pending();  // the search's own error is the one that propagates
    throw;
  }
  out.unbounded = s.unbounded;
  out.first_failing = s.first_failing;
  return out;
}

namespace {

void need_slo(const SimulationConfig& c) {
  if (!c.slo.any()) throw ConfigError("capacity: needs an SLO (--slo-ttft-ms, --slo-tpot-ms or --slo-e2e-ms)");
}

}  // namespace

namespace {

// Requests per second of a trace as recorded (its rows over its arrival span).
double trace_rate_of(const SimulationConfig& config) {
  TraceLengths l = read_trace_lengths(config.workload.trace_path);
  int64_t n = static_cast<int64_t>(l.total.size());
  if (config.workload.trace.max_requests > 0) n = std::min(n, config.workload.trace.max_requests);
  if (l.duration_s <= 0 || n < 2) throw ConfigError(fmt::format("capacity: trace '{}' has no arrival spread to scale", config.workload.trace_path));
  return static_cast<double>(l.total.size()) / l.duration_s;
}

CapacityProbe rate_probe(const SimulationConfig& config, double trace_rate, double rate, const RunHooks& hooks = {}) {
  SimulationConfig c = config;
  if (c.workload.kind == WorkloadKind::kTrace) {
    c.workload.trace.time_scale = trace_rate / rate;
  } else {
    c.workload.open.rate_per_s = rate;
  }
  SimulationResult r = run_simulation(c, hooks);
  return CapacityProbe{rate, r.summary.meets_slo && r.summary.unfinished == 0, r.summary};
}

CapacityProbe users_probe(const SimulationConfig& config, double users, const RunHooks& hooks = {}) {
  SimulationConfig c = config;
  c.workload.closed.num_users = static_cast<int32_t>(users);
  if (c.workload.client == ClosedLoopClient::kBench) {
    // The bench client needs more prompts than its warm-up + cool-down (C each by default):
    // every probe runs at least 4 x C, so the measured half stays 2 x C or more.
    c.workload.bench.num_prompts = std::max<int64_t>(c.workload.bench.num_prompts, 4 * c.workload.closed.num_users);
  }
  SimulationResult r = run_simulation(c, hooks);
  return CapacityProbe{users, r.summary.meets_slo, r.summary};
}

// Every probe of one search prices its steps with one cost model, so later probes hit the memo
// entries of earlier ones (results are unchanged: simulation.h, shared_cost_model).
SimulationConfig sharing_one_cost_model(const SimulationConfig& config) {
  SimulationConfig c = config;
  if (!c.step_timer && !c.shared_cost_model) c.shared_cost_model = make_step_cost_model(config);
  return c;
}

// The run-ahead thread's config: the same with a cost model of its own, when the search may run
// ahead (a config's own step timer or shared cost model serves one thread at a time).
std::optional<SimulationConfig> run_ahead_config(const SimulationConfig& config, const CapacityOptions& o) {
  if (!o.run_ahead || config.step_timer || config.shared_cost_model) return std::nullopt;
  return sharing_one_cost_model(config);
}

}  // namespace

CapacitySearch find_max_rate(const SimulationConfig& config, const CapacityOptions& options) {
  need_slo(config);
  if (config.workload.kind == WorkloadKind::kClosedLoop) {
    throw ConfigError("capacity: a rate search needs an open-loop or trace workload; use find_max_users for closed-loop users");
  }
  const double trace_rate = config.workload.kind == WorkloadKind::kTrace ? trace_rate_of(config) : 0;
  CapacityOptions o = options;
  if (trace_rate > 0 && options.start == CapacityOptions{}.start) o.start = trace_rate;
  const SimulationConfig shared = sharing_one_cost_model(config);
  const std::optional<SimulationConfig> ahead = run_ahead_config(config, o);
  return search_capacity([&](double rate, const RunHooks& h) { return rate_probe(shared, trace_rate, rate, h); }, o, false,
                         ahead ? LoadProbe([&](double rate, const RunHooks& h) { return rate_probe(*ahead, trace_rate, rate, h); })
                               : LoadProbe());
}

CapacitySearch find_max_users(const SimulationConfig& config, const CapacityOptions& options) {
  need_slo(config);
  if (config.workload.kind != WorkloadKind::kClosedLoop) {
    throw ConfigError("capacity: a users search needs a closed-loop workload (--users)");
  }
  const SimulationConfig shared = sharing_one_cost_model(config);
  const std::optional<SimulationConfig> ahead = run_ahead_config(config, options);
  return search_capacity([&](double users, const RunHooks& h) { return users_probe(shared, users, h); }, options, true,
                         ahead ? LoadProbe([&](double users, const RunHooks& h) { return users_probe(*ahead, users, h); })
                               : LoadProbe());
}

CapacityProbe probe_load(const SimulationConfig& config, double load) {
  need_slo(config);
  if (config.workload.kind == WorkloadKind::kClosedLoop) return users_probe(config, std::max(1.0, std::round(load)));
  return rate_probe(config, config.workload.kind == WorkloadKind::kTrace ? trace_rate_of(config) : 0, load);
}

}  // namespace kvplan::sim

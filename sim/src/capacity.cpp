#include "kvplan/sim/capacity.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "kvplan/core/error.h"

namespace kvplan::sim {

namespace {

// Grows geometrically from `start` until `meets` fails, then bisects. `integer`: loads are whole
// numbers (users).
CapacitySearch search(const std::function<CapacityProbe(double)>& probe, const CapacityOptions& o, bool integer) {
  CapacitySearch out;
  auto run = [&](double load) {
    CapacityProbe p = probe(load);
    if (o.should_stop && o.should_stop()) throw SearchStopped();
    out.probes.push_back(p);
    if (o.on_probe) o.on_probe(p);
    if (p.meets && load > out.best) {
      out.best = load;
      out.at_best = p.summary;
    }
    return p.meets;
  };
  double load = integer ? std::max(1.0, std::round(o.start)) : o.start;
  double pass = 0;
  double fail = 0;
  if (run(load)) {
    pass = load;
    while (true) {
      double next = integer ? std::ceil(load * 2) : load * 2;
      if (next > o.limit) {
        out.unbounded = true;
        return out;
      }
      load = next;
      if (!run(load)) {
        fail = load;
        break;
      }
      pass = load;
    }
  } else {
    fail = load;
    // Shrink until something passes (or the load is negligible).
    while (true) {
      double next = integer ? std::floor(load / 2) : load / 2;
      if (next < (integer ? 1.0 : o.start * 1e-4)) {
        out.first_failing = fail;
        return out;
      }
      load = next;
      if (run(load)) {
        pass = load;
        break;
      }
      fail = load;
    }
  }
  while ((fail - pass) / pass > o.relative_tolerance) {
    double mid = integer ? std::floor((pass + fail) / 2) : std::sqrt(pass * fail);
    if (integer && (mid <= pass || mid >= fail)) break;
    if (run(mid)) {
      pass = mid;
    } else {
      fail = mid;
    }
  }
  out.first_failing = fail;
  return out;
}

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

RunHooks stop_hooks(const CapacityOptions& o) {
  RunHooks hooks;
  hooks.should_stop = o.should_stop;
  return hooks;
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
  const RunHooks hooks = stop_hooks(o);
  return search([&](double rate) { return rate_probe(shared, trace_rate, rate, hooks); }, o, false);
}

CapacitySearch find_max_users(const SimulationConfig& config, const CapacityOptions& options) {
  need_slo(config);
  if (config.workload.kind != WorkloadKind::kClosedLoop) {
    throw ConfigError("capacity: a users search needs a closed-loop workload (--users)");
  }
  const SimulationConfig shared = sharing_one_cost_model(config);
  const RunHooks hooks = stop_hooks(options);
  return search([&](double users) { return users_probe(shared, users, hooks); }, options, true);
}

CapacityProbe probe_load(const SimulationConfig& config, double load) {
  need_slo(config);
  if (config.workload.kind == WorkloadKind::kClosedLoop) return users_probe(config, std::max(1.0, std::round(load)));
  return rate_probe(config, config.workload.kind == WorkloadKind::kTrace ? trace_rate_of(config) : 0, load);
}

}  // namespace kvplan::sim

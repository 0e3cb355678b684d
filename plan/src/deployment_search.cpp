// plan/src/deployment_search.cpp — `kvplan plan`: enumerate the candidate space, drop what the
// memory model rules out, then search capacities in rounds with a one-probe test that prunes what
// cannot win or enter the front (deployment.h explains why the answer equals an exhaustive search).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <thread>

#include <fmt/format.h>

#include "kvplan/core/error.h"
#include "kvplan/core/number_text.h"
#include "kvplan/core/presets.h"
#include "kvplan/plan/cost.h"
#include "kvplan/plan/deployment.h"
#include "kvplan/plan/memory.h"
#include "kvplan/plan/simulate.h"
#include "kvplan/sim/capacity.h"
#include "internal/deployment_space.h"

namespace kvplan::plan {

namespace {

// Costs are sums of products of prices; two deployments whose costs differ by less than this
// share of the larger are equally dear.
constexpr double kCostEpsilon = 1e-9;
bool cost_at_most(double a, double b) { return a <= b * (1 + kCostEpsilon); }

// What the rounds before this one established; every candidate of a round sees the same one.
struct Incumbent {
  std::optional<double> best_usd_per_hour;
  struct Point {
    double replica_usd_per_hour;
    double capacity;
  };
  std::vector<Point> searched;  // every candidate with a capacity > 0
};

std::string candidate_label(const DeploymentCandidate& c) {
  const int32_t engines = c.prefill_engines > 0 ? c.prefill_engines + c.decode_engines : 1;
  std::string out = fmt::format("{} x {}, tp{} pp{}", engines * c.tensor_parallel * c.pipeline_parallel, c.gpu,
                                c.tensor_parallel, c.pipeline_parallel);
  if (c.prefill_engines > 0) out += fmt::format(", {}P+{}D", c.prefill_engines, c.decode_engines);
  for (const auto& [k, v] : c.values) out += fmt::format(", {}={}", k, v);
  return out;
}

// The GPUs given, or every preset with a price.
std::vector<std::string> searched_gpus(const DeploymentSearch& q) {
  std::vector<std::string> gpus = q.space.gpus;
  if (gpus.empty()) {
    for (const GpuSpec& g : gpu_presets()) {
      if (g.price_usd_per_gpu_hour > 0 || q.space.gpu_prices.count(g.id) > 0) gpus.push_back(g.id);
    }
  }
  return gpus;
}

// What the GPU limit was on each GPU, and whether the scenario's own deployment had to be added.
std::string space_note(const DeploymentSearch& q) {
  std::string raised, added;
  for (const std::string& gpu : searched_gpus(q)) {
    const internal::GpuSplits g = internal::gpu_splits(q, gpu);
    if (g.fitted) raised += fmt::format("{}{} {}", raised.empty() ? "" : ", ", gpu, g.max_gpus);
    if (g.added_scenario_split) {
      added = fmt::format("; the scenario's own {} x {} (tp{} pp{}) is outside that space and was added",
                          q.base.hardware.tensor_parallel_size * q.base.hardware.pipeline_parallel_size, gpu,
                          q.base.hardware.tensor_parallel_size, q.base.hardware.pipeline_parallel_size);
    }
  }
  std::string out = q.space.max_gpus > 0
                        ? fmt::format("GPUs per replica: at most {} (--max-gpus)", q.space.max_gpus)
                        : fmt::format("GPUs per replica: at most {}, or the smallest split that holds the model", kDefaultMaxGpusPerReplica);
  if (!raised.empty()) out += fmt::format(" ({})", raised);
  return out + added;
}

void check_search(const DeploymentSearch& q) {
  if ((q.target_users > 0) == (q.target_rate > 0)) {
    throw ConfigError("plan: give exactly one target: --target-users N (closed-loop users) or --target-rate R "
                      "(requests per second)");
  }
  if (q.target_users > 0 && (q.target_users != std::floor(q.target_users) || q.target_users > 1e7)) {
    throw ConfigError(fmt::format("--target-users={:g} must be a whole number of users, at most 10,000,000", q.target_users));
  }
  if (q.target_rate > 1e7) throw ConfigError(fmt::format("--target-rate={:g} must be at most 1e7 requests/s", q.target_rate));
  if (q.space.max_gpus < 0 || q.space.max_gpus > 1024) {
    throw ConfigError(fmt::format("--max-gpus={} must be 0 (8, or the smallest split that holds the model) or in [1, 1024]",
                                  q.space.max_gpus));
  }
  for (int32_t tp : q.space.tensor_parallel) {
    if (tp < 1 || tp > 1024) throw ConfigError(fmt::format("--tp value {} must be in [1, 1024]", tp));
  }
  for (int32_t pp : q.space.pipeline_parallel) {
    if (pp < 1 || pp > 1024) throw ConfigError(fmt::format("--pp value {} must be in [1, 1024]", pp));
  }
  for (const auto& [gpu, price] : q.space.gpu_prices) {
    if (!(price > 0) || price > 1e6) {
      throw ConfigError(fmt::format("--gpu-price {}={:g} must be a price in (0, 1e6] USD per GPU-hour", gpu, price));
    }
  }
  if (q.round_size < 1) throw ConfigError("plan: round size must be at least 1");
  const Scenario& b = q.base;
  if (b.hardware.prefill_replicas > 0 || b.hardware.decode_replicas > 0) {
    throw ConfigError("plan: give the serving splits to search with --disaggregation (e.g. off,1:1,1:2), not "
                      "--prefill-replicas/--decode-replicas");
  }
  for (const auto& [p, d] : q.space.disaggregation) {
    if ((p == 0) != (d == 0) || p < 0 || d < 0 || p > 64 || d > 64) {
      throw ConfigError(fmt::format("--disaggregation {}:{} must be 'off' or P:D with 1 to 64 prefill and decode "
                                    "engines each", p, d));
    }
  }
  if (!(b.slo.ttft_ms > 0 || b.slo.tpot_ms > 0 || b.slo.e2e_ms > 0)) {
    throw ConfigError("plan: give at least one SLO target (--slo-ttft-ms, --slo-tpot-ms, --slo-e2e-ms)");
  }
}

std::string workload_line(const sim::WorkloadConfig& w) {
  switch (w.kind) {
    case sim::WorkloadKind::kClosedLoop:
      return fmt::format("closed-loop users, think time {:g} s, {} turn(s); prompts {}, outputs {}{}", w.closed.think_time_s,
                         w.closed.turns, w.closed.first_prompt.describe(), w.closed.output.describe(),
                         w.horizon_ns > 0 ? fmt::format("; {:g} s simulated per probe", sim::ns_to_seconds(w.horizon_ns)) : "");
    case sim::WorkloadKind::kOpenLoop:
      return fmt::format("{} {} arrivals per probe; prompts {}, outputs {}", w.open.num_requests,
                         sim::arrival_kind_name(w.open.arrivals), w.open.prompt.describe(), w.open.output.describe());
    case sim::WorkloadKind::kTrace:
      return fmt::format("trace {}, arrival times scaled to each probe's rate", w.trace_path);
    case sim::WorkloadKind::kList:
      return fmt::format("{} listed requests", w.requests.size());
  }
  return "";
}

// Rounds grow 1, 2, 4, ... up to round_size: the first answer (the most promising candidate)
// prunes the second round, and so on. A fixed schedule, whatever runs the rounds.
std::vector<std::vector<size_t>> rounds_of(size_t n, int round_size) {
  std::vector<std::vector<size_t>> out;
  size_t next = 0, size = 1;
  while (next < n) {
    std::vector<size_t> round;
    for (size_t k = 0; k < size && next < n; ++k) round.push_back(next++);
    out.push_back(std::move(round));
    size = std::min<size_t>(size * 2, static_cast<size_t>(round_size));
  }
  return out;
}

std::vector<nlohmann::json> run_round_with_threads(const std::vector<size_t>& round, int threads,
                                                   const std::function<nlohmann::json(size_t)>& evaluate) {
  std::vector<nlohmann::json> out(round.size());
  const size_t workers = std::min<size_t>(std::max(1, threads), round.size());
  if (workers <= 1) {
    for (size_t k = 0; k < round.size(); ++k) out[k] = evaluate(round[k]);
    return out;
  }
  std::atomic<size_t> next{0};
  std::vector<std::string> errors(round.size());
  auto work = [&] {
    for (size_t k = next++; k < round.size(); k = next++) {
      try {
        out[k] = evaluate(round[k]);
      } catch (const std::exception& e) {
        errors[k] = e.what();
      }
    }
  };
  std::vector<std::thread> pool;
  for (size_t t = 0; t < workers; ++t) pool.emplace_back(work);
  for (std::thread& t : pool) t.join();
  for (const std::string& e : errors) {
    if (!e.empty()) throw ConfigError(e);
  }
  return out;
}

// The load one replica needs to matter, given the incumbent: the smaller of the load at which it
// would be no dearer than the cheapest deployment so far, and the load that would put it on the
// front (more than every searched candidate that costs no more per replica). nullopt: it must be
// searched in full (nothing known yet that it could be measured against).
std::optional<double> load_that_matters(const DeploymentCandidate& c, const Incumbent& inc, bool users, double target,
                                        bool exact_front, std::string* why_cheapest, std::string* why_front) {
  const double replica = c.replica_usd_per_hour();
  std::optional<double> cheapest_load;  // infinity: it cannot be the cheapest at any load
  if (inc.best_usd_per_hour) {
    const double r_max = std::floor(*inc.best_usd_per_hour / replica * (1 + kCostEpsilon));
    if (r_max < 1) {
      cheapest_load = std::numeric_limits<double>::infinity();
      *why_cheapest = fmt::format("one replica (${:.2f}/h) costs more than the cheapest deployment (${:.2f}/h)", replica,
                                  *inc.best_usd_per_hour);
    } else {
      cheapest_load = users ? std::ceil(target / r_max) : target / r_max;
      *why_cheapest = fmt::format("it would need {:g} {} per replica to serve {:g} with {:g} replica{} (${:.2f}/h, no "
                                  "dearer than the cheapest, ${:.2f}/h)",
                                  *cheapest_load, users ? "users" : "req/s", target, r_max, r_max == 1 ? "" : "s",
                                  r_max * replica, *inc.best_usd_per_hour);
    }
  }
  if (!exact_front) return cheapest_load;
  std::optional<double> front_load;
  double best_no_dearer = -1;
  for (const Incumbent::Point& p : inc.searched) {
    if (cost_at_most(p.replica_usd_per_hour, replica)) best_no_dearer = std::max(best_no_dearer, p.capacity);
  }
  if (best_no_dearer > 0) {
    front_load = users ? best_no_dearer + 1 : best_no_dearer;
    *why_front = fmt::format("it would need {}{:g} {} per replica to serve more than a candidate that costs no more",
                             users ? "" : "more than ", best_no_dearer, users ? "users" : "req/s");
  }
  if (!cheapest_load || !front_load) return std::nullopt;
  return std::min(*cheapest_load, *front_load);
}

nlohmann::json evaluate_candidate(const DeploymentSearch& q, const DeploymentCandidate& c, const Incumbent& inc,
                                  bool users, double target) {
  nlohmann::json r;
  const Scenario s = candidate_scenario(q, c);
  std::string why_cheapest, why_front;
  const std::optional<double> matters = load_that_matters(c, inc, users, target, q.exact_front, &why_cheapest, &why_front);
  int probes = 0;
  CapacityRequest request;
  request.tolerance = q.tolerance;
  if (matters && !std::isfinite(*matters)) {
    r["status"] = "pruned";
    r["why"] = why_cheapest;
    r["probes"] = 0;
    return r;
  }
  if (matters) {
    // One simulation at that load: a failure there is a failure at every higher load (the
    // capacity search's own assumption), so the full search could not reach it either.
    const sim::SimulationConfig config = simulation_config(s);
    const sim::CapacityProbe p = sim::probe_load(config, *matters);
    ++probes;
    if (!p.meets) {
      // The probe's step times rank this candidate too: their source is said (cost basis lines).
      const sim::StepTimeSource source = sim::resolve_step_time_source(config);
      r["step_time_source"] = source.summary;
      r["step_time_kind"] = source.kind;
      r["step_time_caveat"] = step_time_caveat(source.kind, source.profile);
      r["status"] = "pruned";
      r["why"] = fmt::format("fails the SLO at {:g} {} per replica (p90 TTFT {:.0f} ms, p90 TPOT {:.1f} ms); to matter {}{}{}",
                             p.load, users ? "users" : "req/s", p.summary.ttft_ms.p90, p.summary.tpot_ms.p90,
                             why_cheapest.empty() ? why_front : why_cheapest,
                             !why_cheapest.empty() && !why_front.empty() ? ", or " : "",
                             !why_cheapest.empty() && !why_front.empty() ? why_front : "");
      r["probes"] = probes;
      return r;
    }
    // It met the SLO at that load, so (by the same assumption) at every lower load: the full
    // search may begin at the last load of its usual doubling sequence (8, 16, 32, ... users, or
    // 1, 2, 4, ... req/s) that is not above it, and runs the same probes from there on.
    const double usual_start = users ? 8.0 : 1.0;
    const bool open_loop = s.workload.trace.empty();
    if ((users || open_loop) && p.load >= usual_start) {
      double start = usual_start;
      while (start * 2 <= p.load) start *= 2;
      request.start = start;
    }
  }
  const CapacityAnswer a = find_capacity(s, request);
  probes += static_cast<int>(a.search.probes.size());
  r["status"] = a.search.best > 0 ? "searched" : "no_capacity";
  r["capacity"] = a.search.best;
  r["unbounded"] = a.search.unbounded;
  r["binding"] = a.binding.kind;
  r["binding_why"] = a.binding.why;
  r["p90_ttft_ms"] = a.search.best > 0 ? a.search.at_best.ttft_ms.p90 : 0.0;
  r["p90_tpot_ms"] = a.search.best > 0 ? a.search.at_best.tpot_ms.p90 : 0.0;
  r["output_tokens_per_s"] = a.search.best > 0 ? a.search.at_best.output_tokens_per_s : 0.0;
  r["step_time_source"] = a.source.summary;
  r["step_time_kind"] = a.source.kind;
  r["step_time_caveat"] = step_time_caveat(a.source.kind, a.source.profile);
  r["probes"] = probes;
  return r;
}

void apply_result(DeploymentCandidate& c, const nlohmann::json& r, bool users, double target) {
  c.status = r.at("status").get<std::string>();
  c.probes = r.at("probes").get<int>();
  if (c.status == "pruned") {
    c.why = r.at("why").get<std::string>();
    if (r.contains("step_time_kind")) {  // pruned by a probe, whose step times decided it
      c.step_time_source = r.at("step_time_source").get<std::string>();
      c.step_time_kind = r.at("step_time_kind").get<std::string>();
      c.step_time_caveat = r.at("step_time_caveat").get<std::string>();
    }
    return;
  }
  c.capacity = r.at("capacity").get<double>();
  c.unbounded = r.at("unbounded").get<bool>();
  c.binding = r.at("binding").get<std::string>();
  c.binding_why = r.at("binding_why").get<std::string>();
  c.p90_ttft_ms = r.at("p90_ttft_ms").get<double>();
  c.p90_tpot_ms = r.at("p90_tpot_ms").get<double>();
  c.output_tokens_per_s = r.at("output_tokens_per_s").get<double>();
  c.step_time_source = r.at("step_time_source").get<std::string>();
  c.step_time_kind = r.at("step_time_kind").get<std::string>();
  c.step_time_caveat = r.at("step_time_caveat").get<std::string>();
  if (c.capacity > 0) {
    // Users are whole; a rate needs as many replicas as cover it (a hair of rounding is not a
    // replica more).
    c.replicas = static_cast<int64_t>(users ? std::ceil(target / c.capacity) : std::ceil(target / c.capacity - 1e-9));
    c.replicas = std::max<int64_t>(c.replicas, 1);
    c.served = static_cast<double>(c.replicas) * c.capacity;
    c.usd_per_hour = static_cast<double>(c.replicas) * c.replica_usd_per_hour();
  }
}

// Cheaper first; at equal cost the one serving more, then the earlier candidate.
bool better_deployment(const DeploymentCandidate& a, const DeploymentCandidate& b) {
  const bool a_cheaper = a.usd_per_hour < b.usd_per_hour * (1 - kCostEpsilon);
  const bool b_cheaper = b.usd_per_hour < a.usd_per_hour * (1 - kCostEpsilon);
  if (a_cheaper != b_cheaper) return a_cheaper;
  if (a.served != b.served) return a.served > b.served;
  return a.index < b.index;
}

}  // namespace

Scenario candidate_scenario(const DeploymentSearch& q, const DeploymentCandidate& c) {
  Scenario s = q.base;
  s.hardware.gpu = c.gpu;
  s.hardware.tensor_parallel_size = c.tensor_parallel;
  s.hardware.pipeline_parallel_size = c.pipeline_parallel;
  s.hardware.replicas = 1;
  s.hardware.prefill_replicas = c.prefill_engines;
  s.hardware.decode_replicas = c.decode_engines;
  for (const auto& [k, v] : c.values) setting(k).set(s, v);
  if (auto it = q.space.gpu_prices.find(c.gpu); it != q.space.gpu_prices.end()) s.cost.usd_per_gpu_hour = it->second;
  return s;
}

std::vector<DeploymentCandidate> enumerate_candidates(const DeploymentSearch& q) {
  check_search(q);
  const std::vector<std::string> gpus = searched_gpus(q);
  const std::vector<std::pair<int32_t, int32_t>> splits =
      q.space.disaggregation.empty() ? std::vector<std::pair<int32_t, int32_t>>{{0, 0}} : q.space.disaggregation;
  // The axes' cartesian product, the last axis fastest.
  std::vector<SettingValues> combos{{}};
  for (const SettingAxis& axis : q.space.axes) {
    std::vector<SettingValues> next;
    for (const SettingValues& v : combos) {
      for (const std::string& value : axis.values) {
        SettingValues w = v;
        w[axis.setting] = value;
        next.push_back(std::move(w));
      }
    }
    combos = std::move(next);
  }
  std::vector<DeploymentCandidate> out;
  const ReplicaSplit own{q.base.hardware.tensor_parallel_size, q.base.hardware.pipeline_parallel_size};
  for (const std::string& gpu : gpus) {
    for (const ReplicaSplit& split : internal::gpu_splits(q, gpu).splits) {
      for (const auto& [prefill, decode] : splits) {
        for (const SettingValues& values : combos) {
          DeploymentCandidate c;
          c.index = out.size();
          c.gpu = gpu;
          c.tensor_parallel = split.tensor_parallel;
          c.pipeline_parallel = split.pipeline_parallel;
          c.prefill_engines = prefill;
          c.decode_engines = decode;
          c.values = values;
          c.label = candidate_label(c);
          c.scenario_deployment = gpu == q.base.hardware.gpu && split.tensor_parallel == own.tensor_parallel &&
                                  split.pipeline_parallel == own.pipeline_parallel && prefill == 0;
          out.push_back(std::move(c));
        }
      }
    }
  }
  if (out.empty()) throw ConfigError(fmt::format("plan: the candidate space is empty (--max-gpus={})", q.space.max_gpus));
  return out;
}

DeploymentPlan search_deployments(const DeploymentSearch& q) {
  DeploymentPlan p;
  std::vector<DeploymentCandidate> all = enumerate_candidates(q);
  // The base scenario's own errors (workload, SLO, lengths) are the user's to fix, not a candidate's.
  const sim::SimulationConfig base_config = simulation_config(q.base);
  p.users = base_config.workload.kind == sim::WorkloadKind::kClosedLoop;
  if (p.users && q.target_users <= 0) {
    throw ConfigError("--target-rate: the workload is closed-loop users (--users/--workload); give --target-users N");
  }
  if (!p.users && q.target_rate <= 0) {
    throw ConfigError("--target-users: the workload is open loop (--rate or --trace); give --target-rate R, or a "
                      "closed-loop workload (--users)");
  }
  p.target = p.users ? q.target_users : q.target_rate;
  p.exact_front = q.exact_front;
  p.model = base_config.model.name;
  p.workload = workload_line(base_config.workload);
  p.slo = base_config.slo.describe();
  const double mean_tokens = p.users ? base_config.workload.closed.first_prompt.mean() + base_config.workload.closed.output.mean()
                             : base_config.workload.kind == sim::WorkloadKind::kOpenLoop
                                 ? base_config.workload.open.prompt.mean() + base_config.workload.open.output.mean()
                                 : 0.0;

  // 1. The memory model: configuration errors, weights that do not fit, prices; and an optimistic
  //    load per replica (sequences whose KV fits) to order the search.
  std::vector<DeploymentCandidate> live;
  for (DeploymentCandidate& c : all) {
    Scenario s;
    try {
      s = candidate_scenario(q, c);
      const ResolvedScenario r = resolve(s);
      const sim::SimulationConfig config = simulation_config(s, r);
      const MemoryPlan plan = plan_memory(config.model, config.gpu, config.scheme, config.parallel, config.serving);
      c.gpus_per_replica = deployment_cost(r, config.cluster).gpus;  // every engine of the unit
      c.usd_per_gpu_hour = r.usd_per_gpu_hour;
      c.price_source = r.price_source;
      c.warnings = plan.warnings;
      if (!plan.fits && config.kv_capacity_bytes <= 0) {
        c.status = "does_not_fit";
        c.why = plan.problems.empty()
                    ? fmt::format("the weights ({:.2f} GiB per GPU) and the engine's fixed memory leave no KV budget",
                                  static_cast<double>(plan.term("weights")) / 1073741824.0)
                    : plan.problems.front();
        continue;
      }
      if (c.usd_per_gpu_hour <= 0) {
        c.status = "unpriced";
        c.why = fmt::format("no price for {} (give --gpu-price {}=USD)", c.gpu, c.gpu);
        continue;
      }
      const double sequences = mean_tokens > 0 ? static_cast<double>(plan.total_kv_cache_tokens()) / mean_tokens
                                               : static_cast<double>(plan.max_num_seqs);
      c.estimate = std::max(1.0, std::min<double>(sequences, std::max(1, plan.max_num_seqs) * plan.data_parallel) *
                                     std::max(1, c.decode_engines));
    } catch (const ConfigError& e) {
      c.status = "invalid";
      c.why = e.what();
      continue;
    }
    live.push_back(c);
  }
  // Cheapest per optimistic load first; ties in enumeration order.
  std::stable_sort(live.begin(), live.end(), [](const DeploymentCandidate& a, const DeploymentCandidate& b) {
    return a.replica_usd_per_hour() / a.estimate < b.replica_usd_per_hour() / b.estimate;
  });

  // 2. Rounds of capacity searches.
  Incumbent inc;
  size_t done = 0;
  const size_t total = live.size();
  auto run_round = q.run_round ? q.run_round
                               : [threads = q.threads](const std::vector<size_t>& round,
                                                       const std::function<nlohmann::json(size_t)>& evaluate) {
                                   return run_round_with_threads(round, threads, evaluate);
                                 };
  size_t decided = 0;
  for (const std::vector<size_t>& round : rounds_of(live.size(), q.round_size)) {
    if (q.should_stop && q.should_stop()) {
      p.partial = true;
      break;
    }
    const Incumbent snapshot = inc;
    auto evaluate = [&](size_t i) { return evaluate_candidate(q, live[i], snapshot, p.users, p.target); };
    const std::vector<nlohmann::json> results = run_round(round, evaluate);
    for (size_t k = 0; k < round.size(); ++k) {
      DeploymentCandidate& c = live[round[k]];
      apply_result(c, results[k], p.users, p.target);
      p.simulations += c.probes;
      if (c.capacity > 0) {
        inc.searched.push_back({c.replica_usd_per_hour(), c.capacity});
        if (!inc.best_usd_per_hour || c.usd_per_hour < *inc.best_usd_per_hour) inc.best_usd_per_hour = c.usd_per_hour;
      }
      if (q.on_progress) q.on_progress(++done, total);
    }
    decided += round.size();
  }
  for (size_t i = decided; i < live.size(); ++i) {
    live[i].status = "not_reached";
    live[i].why = "the search was stopped before this candidate";
  }

  // Searched candidates first (search order), then the rest in enumeration order.
  std::vector<DeploymentCandidate> ordered = live;
  for (const DeploymentCandidate& c : all) {
    if (!c.status.empty()) ordered.push_back(c);
  }
  p.candidates = std::move(ordered);
  for (size_t i = 0; i < p.candidates.size(); ++i) p.candidates[i].index = i;

  // The cheapest, and the fronts, over the candidates with an answer.
  std::vector<size_t> answered;
  for (size_t i = 0; i < p.candidates.size(); ++i) {
    if (p.candidates[i].capacity > 0) answered.push_back(i);
  }
  for (size_t i : answered) {
    if (!p.cheapest || better_deployment(p.candidates[i], p.candidates[*p.cheapest])) p.cheapest = i;
  }
  std::vector<size_t> by_cost = answered;
  std::stable_sort(by_cost.begin(), by_cost.end(), [&](size_t a, size_t b) {
    const DeploymentCandidate& x = p.candidates[a];
    const DeploymentCandidate& y = p.candidates[b];
    const double cx = x.replica_usd_per_hour(), cy = y.replica_usd_per_hour();
    if (cx < cy * (1 - kCostEpsilon) || cy < cx * (1 - kCostEpsilon)) return cx < cy;
    if (x.capacity != y.capacity) return x.capacity > y.capacity;
    return a < b;
  });
  double most = 0;
  for (size_t i : by_cost) {
    if (p.candidates[i].capacity > most) {
      p.front.push_back(i);
      most = p.candidates[i].capacity;
    }
  }
  // Output tokens/s per GPU against what one user sees (tokens/s at the p90 TPOT).
  std::vector<size_t> by_throughput;
  for (size_t i : answered) {
    if (p.candidates[i].p90_tpot_ms > 0) by_throughput.push_back(i);
  }
  auto per_gpu = [&](size_t i) {
    return p.candidates[i].output_tokens_per_s / static_cast<double>(p.candidates[i].gpus_per_replica);
  };
  std::stable_sort(by_throughput.begin(), by_throughput.end(), [&](size_t a, size_t b) {
    if (per_gpu(a) != per_gpu(b)) return per_gpu(a) > per_gpu(b);
    return a < b;
  });
  double fastest = 0;
  for (size_t i : by_throughput) {
    const double per_user = 1000.0 / p.candidates[i].p90_tpot_ms;
    if (per_user > fastest) {
      p.token_front.push_back(i);
      fastest = per_user;
    }
  }
  size_t too_long = 0;
  for (const DeploymentCandidate& c : p.candidates) {
    if (c.status == "does_not_fit" && c.why.find("max_model_len") != std::string::npos) ++too_long;
  }
  if (too_long > 0) {
    p.notes.push_back(fmt::format("{} candidates cannot hold one request of max_model_len={} tokens (the engine would "
                                  "refuse to start); a smaller --max-model-len admits them",
                                  too_long, base_config.serving.max_model_len > 0
                                                ? with_commas(base_config.serving.max_model_len)
                                                : with_commas(base_config.model.max_position_embeddings)));
  }
  if (q.space.disaggregation.empty()) {
    p.notes.push_back("aggregated serving only (add --disaggregation off,1:1,1:2 to search prefill/decode splits)");
  }
  if (q.space.pipeline_parallel.empty()) {
    p.notes.push_back("pipeline parallel 1 only, but for a split that needs it to hold the model (add --pp 1,2 to search it)");
  }
  p.notes.push_back(space_note(q));
  return p;
}

}  // namespace kvplan::plan

// fit_runs (runs_fit.h): each benchmark run as a kvplan simulation of the same load and lengths,
// the checks that refuse contradictory runs, the deterministic held-out quarter, the staged fit
// (serving_terms_fit.cpp) and the errors before and after it.
#include <algorithm>
#include <cmath>
#include <filesystem>

#include <fmt/format.h>

#include "kvplan/calibration/heldout_split.h"
#include "kvplan/core/error.h"
#include "kvplan/plan/runs_fit.h"
#include "kvplan/plan/simulate.h"
#include "kvplan/sim/metrics.h"
#include "kvplan/sim/serving_overheads.h"
#include "kvplan/sim/time.h"

namespace kvplan::plan {

namespace {

using calibration::RunLoad;
using calibration::ServingRun;

// The terms are fitted on runs with at most this many requests in flight per engine instance, as in
// bench/validate_serving (kFitMaxConcurrency): above it the engine queues and TPOT and TTFT say
// little about the step time. Open-loop runs count their measured requests in flight (Little's law).
constexpr int64_t kStepFitMaxConcurrency = 128;

// Two runs of the same load and lengths whose TTFT or TPOT differ by more than this ratio
// contradict each other.
constexpr double kSameLoadMaxRatio = 1.5;
// Little's law: requests in flight = throughput x E2E may not exceed the concurrency cap by more
// than this share (clients measure throughput and latency over slightly different windows).
constexpr double kLittleSlack = 0.15;

// The share of requests that may fail before a run is left out.
constexpr double kMaxFailedShare = 0.01;

// The run's key for the split: the file name (not its folder) and the line, so the split is the
// same wherever the files are.
std::string split_key(const ServingRun& r) {
  const std::string base = std::filesystem::path(r.file).filename().string();
  const size_t hash = r.id.find(" #");
  return hash == std::string::npos ? base : base + r.id.substr(hash);
}

// The run as simulation flags: the same load, the mean lengths, statistics over every request as
// the benchmark clients print them (no warm-up left out), seed 1.
SettingValues run_flags(const ServingRun& r) {
  SettingValues f;
  const int64_t isl = std::max<int64_t>(1, std::llround(r.mean_input_tokens));
  const int64_t osl = std::max<int64_t>(1, std::llround(r.mean_output_tokens));
  const int64_t prompts = std::max<int64_t>(r.num_prompts > 0 ? r.num_prompts : r.completed, 1);
  f["seed"] = std::to_string(1);  // (a literal trips GCC 12 -Wrestrict)
  switch (r.load) {
    case RunLoad::kConcurrency:
      f["client"] = "bench";
      f["max-concurrency"] = std::to_string(r.concurrency);
      f["num-prompts"] = std::to_string(std::max<int64_t>(prompts, r.concurrency));
      f["random-input-len"] = std::to_string(isl);
      f["random-output-len"] = std::to_string(osl);
      f["warmup-requests"] = std::to_string(0);
      f["cooldown-requests"] = std::to_string(0);
      break;
    case RunLoad::kRate:
      f["arrivals"] = r.arrival_cv == 1.0 ? "poisson" : r.arrival_cv == 0.0 ? "constant" : "gamma";
      if (r.arrival_cv != 1.0 && r.arrival_cv != 0.0) f["cv"] = fmt::format("{}", r.arrival_cv);
      f["rate"] = fmt::format("{}", r.rate_per_s);
      f["num-requests"] = std::to_string(prompts);
      f["prompt-lengths"] = fmt::format("fixed:{}", isl);
      f["output-lengths"] = fmt::format("fixed:{}", osl);
      break;
    case RunLoad::kBurst:
      // Every request at t = 0: an open-loop burst 1 ns apart.
      f["arrivals"] = "constant";
      f["rate"] = "1e9";
      f["num-requests"] = std::to_string(prompts);
      f["prompt-lengths"] = fmt::format("fixed:{}", isl);
      f["output-lengths"] = fmt::format("fixed:{}", osl);
      break;
  }
  return f;
}

void add_terms(SettingValues& f, const ServingTerms& t) {
  f["request-overhead-ms"] = fmt::format("{}", t.request_ms);
  f["request-overhead-per-in-flight-ms"] = fmt::format("{}", t.per_in_flight_ms);
  f["request-overhead-per-in-flight-prefill-share"] = fmt::format("{}", t.prefill_share);
  f["step-overhead-ms"] = fmt::format("{}", t.step_ms);
  f["step-time-factor"] = fmt::format("{}", t.factor);
}

Scenario run_scenario(const RunsDeployment& d, const SettingValues& sim_flags) {
  return with_values(with_values(Scenario{}, d.flags), sim_flags);
}

// The compared statistics of one simulation: {TTFT, TPOT} as mean or median like the file's.
struct Stats {
  bool ttft_median = false, tpot_median = false;
};

std::optional<std::pair<double, double>> simulate_point(const RunsDeployment& d, const RunPoint& p, const Stats& s,
                                                        std::optional<ServingTerms> terms) {
  SettingValues f = p.sim_flags;
  if (terms) add_terms(f, *terms);
  sim::SimulationResult r;
  try {
    r = sim::run_simulation(simulation_config(run_scenario(d, f)));
  } catch (const ConfigError& e) {
    throw ConfigError(fmt::format("run {}: kvplan cannot simulate it: {}", p.run->id, e.what()));
  }
  if (r.summary.measured == 0) return std::nullopt;
  return std::make_pair(s.ttft_median ? r.summary.ttft_ms.p50 : r.summary.ttft_ms.mean,
                        s.tpot_median ? r.summary.tpot_ms.p50 : r.summary.tpot_ms.mean);
}

double rel(double pred, double meas) { return (pred - meas) / meas; }

RunErrors errors(const std::vector<RunPoint>& points, bool held_out_only, bool after) {
  std::vector<double> t, p;
  for (const RunPoint& q : points) {
    if (held_out_only && !q.held_out) continue;
    t.push_back(std::fabs(rel(after ? q.after_ttft_ms : q.before_ttft_ms, q.measured_ttft_ms)));
    p.push_back(std::fabs(rel(after ? q.after_tpot_ms : q.before_tpot_ms, q.measured_tpot_ms)));
  }
  RunErrors e;
  e.runs = t.size();
  if (t.empty()) return e;
  e.ttft_median_abs = sim::percentile(t, 50);
  e.ttft_p90_abs = sim::percentile(t, 90);
  e.tpot_median_abs = sim::percentile(p, 50);
  e.tpot_p90_abs = sim::percentile(p, 90);
  return e;
}

// Refuses runs that contradict each other or themselves, naming them.
void check_consistency(const std::vector<const ServingRun*>& runs) {
  auto close = [](double a, double b) { return std::fabs(a - b) <= 0.05 * std::max(a, b); };
  auto first = [](const calibration::RunLatency& l) { return l.mean_ms ? *l.mean_ms : l.median_ms.value_or(0); };
  auto per_token = [&](const ServingRun& r) { return first(r.tpot) > 0 ? first(r.tpot) : first(r.itl); };
  for (size_t i = 0; i < runs.size(); ++i) {
    const ServingRun& a = *runs[i];
    // Little's law: a closed loop of C users holds at most C requests in flight.
    if (a.load == RunLoad::kConcurrency && a.e2e.mean_ms && a.request_throughput_per_s > 0) {
      const double in_flight = a.request_throughput_per_s * *a.e2e.mean_ms / 1000.0;
      if (in_flight > a.concurrency * (1 + kLittleSlack)) {
        throw ConfigError(fmt::format(
            "run {}: its own numbers break Little's law: throughput {:.3f} req/s x mean E2E {:.1f} ms = {:.1f} requests "
            "in flight, above its concurrency {}: check that the file is the run it says",
            a.id, a.request_throughput_per_s, *a.e2e.mean_ms, in_flight, a.concurrency));
      }
    }
    for (size_t j = i + 1; j < runs.size(); ++j) {
      const ServingRun& b = *runs[j];
      if (a.load_text() != b.load_text() || !close(a.mean_input_tokens, b.mean_input_tokens) ||
          !close(a.mean_output_tokens, b.mean_output_tokens)) {
        continue;
      }
      const double ta = first(a.ttft), tb = first(b.ttft), pa = per_token(a), pb = per_token(b);
      const double ttft_ratio = std::max(ta, tb) / std::max(1e-9, std::min(ta, tb));
      const double tpot_ratio = std::max(pa, pb) / std::max(1e-9, std::min(pa, pb));
      if (ttft_ratio > kSameLoadMaxRatio || tpot_ratio > kSameLoadMaxRatio) {
        throw ConfigError(fmt::format(
            "runs {} and {} contradict each other: the same load ({}, {:.0f}/{:.0f} tokens in/out) measured TTFT "
            "{:.1f} vs {:.1f} ms and TPOT {:.2f} vs {:.2f} ms (more than {}x apart): were they the same deployment?",
            a.id, b.id, a.load_text(), a.mean_input_tokens, a.mean_output_tokens, ta, tb, pa, pb, kSameLoadMaxRatio));
      }
    }
  }
}

}  // namespace

RunsFit fit_runs(const std::vector<ServingRun>& runs, const RunsDeployment& deployment) {
  RunsFit fit;
  fit.deployment = deployment;
  const Engine engine = parse_engine(deployment.engine);
  {
    const sim::ServingOverheads d = sim::default_serving_overheads(engine, true);
    fit.shipped = ServingTerms{sim::ns_to_ms(d.request.ns), sim::ns_to_ms(d.request_per_in_flight.ns),
                               d.request_per_in_flight_prefill_share.value, sim::ns_to_ms(d.step.ns),
                               d.step_factor.value};
  }

  // Runs with failed requests measured a different load than they sent: left out.
  std::vector<const ServingRun*> usable;
  for (const ServingRun& r : runs) {
    if (r.completed > 0 && r.num_prompts > 0 &&
        static_cast<double>(r.num_prompts - r.completed) > kMaxFailedShare * static_cast<double>(r.num_prompts)) {
      fit.notes.push_back(fmt::format("run {} left out: {} of {} requests failed (the statistics cover a different load "
                                      "than was sent)",
                                      r.id, r.num_prompts - r.completed, r.num_prompts));
      continue;
    }
    usable.push_back(&r);
  }
  check_consistency(usable);
  if (usable.size() < 2) {
    throw ConfigError(fmt::format("calibrate from-runs: {} usable run(s); the fit needs at least 2 (runs at different "
                                  "loads; 4 or more to hold a quarter out)",
                                  usable.size()));
  }

  // The held-out quarter: the runs with the smallest split hashes, N/4 of them (>= 1), when N >= 4.
  fit.held_out = usable.size() >= 4;
  std::vector<size_t> order(usable.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return calibration::split_hash(split_key(*usable[a])) < calibration::split_hash(split_key(*usable[b]));
  });
  std::vector<bool> held(usable.size(), false);
  if (fit.held_out) {
    for (size_t k = 0; k < std::max<size_t>(1, usable.size() / 4); ++k) held[order[k]] = true;
  }

  std::vector<Stats> stats;
  for (size_t i = 0; i < usable.size(); ++i) {
    const ServingRun& r = *usable[i];
    RunPoint p;
    p.run = &r;
    p.held_out = held[i];
    p.sim_flags = run_flags(r);
    Stats s;
    s.ttft_median = !r.ttft.mean_ms;
    p.measured_ttft_ms = r.ttft.mean_ms ? *r.ttft.mean_ms : *r.ttft.median_ms;
    p.ttft_stat = s.ttft_median ? "median TTFT" : "mean TTFT";
    // TPOT, or ITL when the file has no TPOT (per request the same over a steady decode).
    if (r.tpot.mean_ms) {
      p.measured_tpot_ms = *r.tpot.mean_ms;
      p.tpot_stat = "mean TPOT";
    } else if (r.tpot.median_ms) {
      p.measured_tpot_ms = *r.tpot.median_ms;
      p.tpot_stat = "median TPOT";
      s.tpot_median = true;
    } else if (r.itl.mean_ms) {
      p.measured_tpot_ms = *r.itl.mean_ms;
      p.tpot_stat = "mean ITL (as TPOT)";
    } else {
      p.measured_tpot_ms = *r.itl.median_ms;
      p.tpot_stat = "median ITL (as TPOT)";
      s.tpot_median = true;
    }
    // Others in flight when a request is sent: C - 1 for a closed loop; throughput x E2E (Little's
    // law, measured) for an open loop; (N - 1) / 2 on average for a burst.
    const double e2e_s = (r.e2e.mean_ms ? *r.e2e.mean_ms
                                        : p.measured_ttft_ms + (r.mean_output_tokens - 1) * p.measured_tpot_ms) /
                         1000.0;
    switch (r.load) {
      case RunLoad::kConcurrency: p.others_in_flight = static_cast<double>(std::max<int64_t>(0, r.concurrency - 1)); break;
      case RunLoad::kRate: p.others_in_flight = std::max(0.0, r.request_throughput_per_s * e2e_s - 1); break;
      case RunLoad::kBurst: p.others_in_flight = std::max(0.0, static_cast<double>(r.num_prompts - 1) / 2); break;
    }
    if (r.per_request) {
      fit.notes.push_back(fmt::format("run {}: per-request lengths ({} requests) simulated at their means ({:.0f} in, "
                                      "{:.0f} out)",
                                      r.id, r.input_lens.size(), r.mean_input_tokens, r.mean_output_tokens));
    }
    fit.points.push_back(std::move(p));
    stats.push_back(s);
  }

  // Before: the shipped defaults (no overhead flags: what `kvplan simulate` does).
  for (size_t i = 0; i < fit.points.size(); ++i) {
    RunPoint& p = fit.points[i];
    const auto b = simulate_point(deployment, p, stats[i], std::nullopt);
    if (!b) throw ConfigError(fmt::format("run {}: no simulated request finished", p.run->id));
    p.before_ttft_ms = b->first;
    p.before_tpot_ms = b->second;
  }

  // The fit on the runs not held out.
  ServingFitRows rows;
  std::vector<size_t> fit_index;
  for (size_t i = 0; i < fit.points.size(); ++i) {
    const RunPoint& p = fit.points[i];
    if (p.held_out) continue;
    fit_index.push_back(i);
    rows.measured_ttft_ms.push_back(p.measured_ttft_ms);
    rows.measured_tpot_ms.push_back(p.measured_tpot_ms);
    rows.others_in_flight.push_back(p.others_in_flight);
    const StepExplanation e = explain_step(run_scenario(deployment, p.sim_flags),
                                           StepShape{.batch = 0, .context = 0,
                                                     .prefill = std::max<int64_t>(1, std::llround(p.run->mean_input_tokens))});
    rows.prompt_prefill_ms.push_back(sim::ns_to_ms(e.breakdown.total_ns));
    // Requests in flight: the concurrency, or Little's law's throughput x E2E for an open loop.
    rows.step_row.push_back(p.others_in_flight + 1 <= static_cast<double>(kStepFitMaxConcurrency));
  }
  const ServingTermsFitResult r = fit_serving_terms(rows, [&](size_t k, const ServingTerms& t) {
    const size_t i = fit_index[k];
    return simulate_point(deployment, fit.points[i], stats[i], t);
  });
  fit.fitted = r.terms;
  fit.prefill_shaped = r.prefill_shaped;

  for (size_t i = 0; i < fit.points.size(); ++i) {
    RunPoint& p = fit.points[i];
    const auto a = simulate_point(deployment, p, stats[i], fit.fitted);
    if (!a) throw ConfigError(fmt::format("run {}: no simulated request finished with the fitted terms", p.run->id));
    p.after_ttft_ms = a->first;
    p.after_tpot_ms = a->second;
  }
  fit.before = errors(fit.points, fit.held_out, false);
  fit.after = errors(fit.points, fit.held_out, true);
  return fit;
}

}  // namespace kvplan::plan

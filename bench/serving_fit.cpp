// Simulating published runs with serving terms and fitting the per-engine terms (serving_fit.h).
#include "serving_fit.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <set>

#include <fmt/format.h>

#include "kvplan/core/engine_memory.h"
#include "kvplan/core/error.h"
#include "kvplan/plan/runs_fit.h"
#include "kvplan/plan/simulate.h"
#include "kvplan/sim/simulation.h"
#include "kvplan/sim/time.h"

namespace kvplan::bench {

namespace sim = kvplan::sim;

ValidateOptions& options() {
  static ValidateOptions o;
  return o;
}

bool in_fit_half(const ServingCase& c) { return in_fit_half(c, options().split); }

size_t jobs() {
  if (const char* env = std::getenv("KVPLAN_JOBS")) {
    const long n = std::strtol(env, nullptr, 10);
    if (n >= 1) return static_cast<size_t>(n);
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

std::vector<Result> simulate_all(const std::vector<const ServingCase*>& cases, Client client,
                                 const std::function<std::optional<Terms>(const ServingCase&)>& terms) {
  const std::vector<Prediction> p =
      parallel_map<Prediction>(cases.size(), [&](size_t i) { return simulate(*cases[i], client, terms(*cases[i])); });
  std::vector<Result> out;
  out.reserve(cases.size());
  for (size_t i = 0; i < cases.size(); ++i) out.push_back({cases[i], p[i]});
  return out;
}

Prediction simulate(const ServingCase& c, Client client, std::optional<Terms> terms) {
  Prediction p;
  try {
    kvplan::plan::SettingValues sim_flags = c.sim_flags;
    if (!options().profile.empty()) sim_flags["profile"] = options().profile;
    if (client == Client::kBurst) sim_flags["bench-start"] = "burst";
    if (client == Client::kBench) sim_flags["bench-start"] = "staggered";
    if (terms) {
      sim_flags["request-overhead-ms"] = fmt::format("{}", terms->request_ms);
      sim_flags["request-overhead-per-in-flight-ms"] = fmt::format("{}", terms->per_in_flight_ms);
      sim_flags["request-overhead-per-in-flight-prefill-share"] = fmt::format("{}", terms->prefill_share);
      sim_flags["step-overhead-ms"] = fmt::format("{}", terms->step_ms);
      sim_flags["step-time-factor"] = fmt::format("{}", terms->factor);
      sim_flags["prefill-time-factor"] = fmt::format("{}", terms->prefill_factor);
    }
    const sim::SimulationConfig cfg = kvplan::plan::simulation_config(
        kvplan::plan::with_values(kvplan::plan::with_values(kvplan::plan::Scenario{}, c.memory_flags), sim_flags));
    const sim::SimulationResult r = sim::run_simulation(cfg);
    if (r.summary.measured == 0) {
      p.error = "no request finished";
      return p;
    }
    p.ok = true;
    p.ttft_ms = r.summary.ttft_ms.mean;
    p.tpot_ms = r.summary.tpot_ms.mean;
    p.measured = r.summary.measured;
  } catch (const kvplan::ConfigError& e) {
    p.error = e.what();
  } catch (const std::exception& e) {
    p.error = std::string("error: ") + e.what();
  }
  return p;
}

// The fit rows: fit half, concurrency <= kFitMaxConcurrency per engine instance, simulated.
namespace {

bool fit_row(const Result& r) {
  return in_fit_half(*r.c) && r.pred.ok && r.c->concurrency_per_replica() <= kFitMaxConcurrency;
}

// The cost model's time (ms) for the row's prompt prefilled alone (sim::prompt_prefill_ns), what the
// prefill-shaped per-in-flight term is a share of. Memoised per row.
double prompt_prefill_ms(const ServingCase& c) {
  static std::map<std::string, double> memo;
  const std::string key = c.gpu + " " + c.id;
  auto it = memo.find(key);
  if (it != memo.end()) return it->second;
  kvplan::plan::SettingValues sim_flags = c.sim_flags;
  if (!options().profile.empty()) sim_flags["profile"] = options().profile;
  const kvplan::plan::Scenario scenario =
      kvplan::plan::with_values(kvplan::plan::with_values(kvplan::plan::Scenario{}, c.memory_flags), sim_flags);
  const kvplan::plan::StepExplanation e =
      kvplan::plan::explain_step(scenario, kvplan::plan::StepShape{.batch = 0, .context = 0, .prefill = c.isl});
  return memo[key] = sim::ns_to_ms(e.breakdown.total_ns);
}

}  // namespace

// Steps 2-5 of the fit (see the top of the file) on the fit half of g.none, per engine: the staged
// fit kvplan calibrate from-runs makes too (plan::fit_serving_terms, plan/runs_fit.h), each row
// simulated with this start rule.
void fit_terms(Regime& g) {
  std::map<std::string, std::vector<const Result*>> by_engine;
  for (const Result& r : g.none) {
    if (fit_row(r)) by_engine[r.c->engine].push_back(&r);
  }
  for (const auto& [engine, results] : by_engine) {
    kvplan::plan::ServingFitRows rows;
    rows.split_prefill_factor = options().split_prefill;
    for (const Result* r : results) {
      rows.measured_ttft_ms.push_back(r->c->measured_ttft_ms);
      rows.measured_tpot_ms.push_back(r->c->measured_tpot_ms);
      rows.others_in_flight.push_back(static_cast<double>(std::max<int64_t>(0, r->c->concurrency - 1)));
      rows.prompt_prefill_ms.push_back(prompt_prefill_ms(*r->c));
      rows.step_row.push_back(true);  // fit_row: concurrency <= kFitMaxConcurrency already
    }
    // fit_serving_terms asks for one row at a time, every row with the same terms in a stage: the
    // first ask with new terms simulates all rows with them at once (parallel_map), the rest read.
    std::map<std::vector<double>, std::vector<Prediction>> by_terms;
    const kvplan::plan::ServingTermsFitResult fit = kvplan::plan::fit_serving_terms(
        rows, [&](size_t i, const kvplan::plan::ServingTerms& t) -> std::optional<std::pair<double, double>> {
          // No terms: the run of the pass already made.
          if (t == kvplan::plan::ServingTerms{}) {
            if (!results[i]->pred.ok) return std::nullopt;
            return std::make_pair(results[i]->pred.ttft_ms, results[i]->pred.tpot_ms);
          }
          const Terms terms{t.request_ms, t.per_in_flight_ms, t.step_ms, t.factor, t.prefill_share, t.prefill_factor};
          const std::vector<double> key{terms.request_ms, terms.per_in_flight_ms, terms.step_ms,
                                        terms.factor,     terms.prefill_share,    terms.prefill_factor};
          auto it = by_terms.find(key);
          if (it == by_terms.end()) {
            it = by_terms
                     .emplace(key, parallel_map<Prediction>(results.size(),
                                                            [&](size_t j) { return simulate(*results[j]->c, g.client, terms); }))
                     .first;
          }
          const Prediction& p = it->second[i];
          if (!p.ok) return std::nullopt;
          return std::make_pair(p.ttft_ms, p.tpot_ms);
        });
    const kvplan::plan::ServingTerms& t = fit.terms;
    g.fit[engine] = Terms{t.request_ms, t.per_in_flight_ms, t.step_ms, t.factor, t.prefill_share, t.prefill_factor};
    g.step[engine] = fit.step;
    g.request[engine] = fit.request;
    g.prefill_shaped[engine] = fit.prefill_shaped;
  }
}

std::map<std::string, double> fit_half_scores(const std::vector<Result>& results) {
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> errs;
  for (const Result& r : results) {
    if (!r.pred.ok || !in_fit_half(*r.c)) continue;
    errs[r.c->engine].first.push_back(rel(r.pred.ttft_ms, r.c->measured_ttft_ms));
    errs[r.c->engine].second.push_back(rel(r.pred.tpot_ms, r.c->measured_tpot_ms));
  }
  std::map<std::string, double> out;
  for (const auto& [engine, e] : errs) {
    const Stats t = stats(e.first), p = stats(e.second);
    out[engine] = t.med_abs + t.p90_abs + p.med_abs + p.p90_abs;
  }
  return out;
}

std::string shipped_start(const std::string& engine, const Regime& g) {
  const kvplan::Engine e = kvplan::parse_engine(engine);
  std::set<std::string> starts;
  for (const Result& r : g.none) {
    if (r.c->engine != engine || !fit_row(r)) continue;
    const auto v = r.c->memory_flags.find("engine-version");
    const EngineVersion version = v == r.c->memory_flags.end() ? EngineVersion{} : parse_engine_version(v->second);
    starts.insert(std::string(sim::bench_start_name(sim::default_bench_start(e, version))));
  }
  if (starts.empty()) return std::string(sim::bench_start_name(sim::default_bench_start(e, EngineVersion{})));
  return starts.size() == 1 ? *starts.begin() : "by release";
}

bool shipped_matches(const std::string& engine, const Regime& g) {
  const Terms& t = g.fit.at(engine);
  const kvplan::Engine e = kvplan::parse_engine(engine);
  const sim::ServingOverheads d = sim::default_serving_overheads(e, true);
  return std::llround(sim::ns_to_ms(d.request.ns) * 1000) == std::llround(t.request_ms * 1000) &&
         std::llround(sim::ns_to_ms(d.request_per_in_flight.ns) * 1000) == std::llround(t.per_in_flight_ms * 1000) &&
         std::llround(d.request_per_in_flight_prefill_share.value * 10000) == std::llround(t.prefill_share * 10000) &&
         std::llround(sim::ns_to_ms(d.step.ns) * 1000) == std::llround(t.step_ms * 1000) &&
         std::llround(d.step_factor.value * 1000) == std::llround(t.factor * 1000) &&
         std::llround(d.prefill_step_factor.value * 1000) == std::llround(t.prefill_factor * 1000) &&
         shipped_start(engine, g) == g.name;
}

// --fit-overheads: the chosen fit per engine as the lines of sim/src/serving_overheads.cpp (kVllm,
// kSglang, kTrtllm) and the start rule of default_bench_start, to paste there. Every number and
// every word of the description comes from this run.
void print_fitted_source(const std::map<std::string, const Regime*>& chosen, const std::vector<ServingCase>& cases) {
  const std::map<std::string, std::pair<std::string, std::string>> names = {
      {"vllm", {"kVllm", "vLLM"}}, {"sglang", {"kSglang", "SGLang"}}, {"trtllm", {"kTrtllm", "TensorRT-LLM"}}};
  auto ns = [](double ms) {
    // 12'345'000 as C++ writes it: digit separators every three digits.
    std::string digits = std::to_string(std::llround(ms * 1e6));
    std::string out;
    for (size_t i = 0; i < digits.size(); ++i) {
      if (i > 0 && (digits.size() - i) % 3 == 0) out += '\'';
      out += digits[i];
    }
    return out;
  };
  fmt::print("\n--fit-overheads: paste into sim/src/serving_overheads.cpp (and default_bench_start in "
             "sim/src/bench_client.cpp: the start rule named in each description):\n\n");
  for (const auto& [engine, g] : chosen) {
    auto it = names.find(engine);
    if (it == names.end()) continue;
    std::set<std::string> models;
    int64_t c_lo = 0, c_hi = 0;
    for (const ServingCase& c : cases) {
      if (c.engine != engine || !c.why_not.empty() || !in_fit_half(c) || c.concurrency_per_replica() > kFitMaxConcurrency) {
        continue;
      }
      models.insert(c.memory_flags.at("model"));
      const int64_t cc = c.concurrency_per_replica();
      c_lo = c_lo == 0 ? cc : std::min(c_lo, cc);
      c_hi = std::max(c_hi, cc);
    }
    std::string model_list;
    for (const std::string& m : models) model_list += (model_list.empty() ? "" : ", ") + m;
    const Terms& t = g->fit.at(engine);
    const std::string what = fmt::format(
        "{}, {} bench client: {} fit rows at concurrency {}-{} per instance ({})", it->second.second, g->name,
        g->step.at(engine).rows, c_lo, c_hi, model_list);
    fmt::print("constexpr Fitted {}{{{}, {}, {:.4f}, {}, {:.3f}, {:.3f},\n    \"{}\"}};\n", it->second.first,
               ns(t.request_ms), ns(t.per_in_flight_ms), t.prefill_share, ns(t.step_ms), t.factor, t.prefill_factor,
               what);
  }
}

}  // namespace kvplan::bench

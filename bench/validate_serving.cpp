// kvplan_validate_serving: whole-model serving predictions against published measurements.
//
//   ./build/bench/kvplan_validate_serving [--data DIR] [--csv rows.csv] [--rows] [--profile P]
//                                         [--write-band] [--fit-overheads] [--split-prefill-factor]
//                                         [--trtllm-aic-schedule]
//
// For every mode=agg row of aiconfigurator's silicon_sample.csv (H100 SXM; data/measurements/) that
// kvplan can express, the run is simulated as it was made: engine, TP/EP/attention-DP, precision,
// fixed isl/osl, the bench client at the row's concurrency with enough prompts for a steady state,
// and kvplan's default step costs (the GPU's published profile, data/profiles/<gpu>.json, with the
// engine's custom all-reduce; --profile auto|published|datasheet|FILE to compare another source).
// Mean TTFT and TPOT are compared with the measured ones. Rows whose own measurements contradict
// a closed-loop steady state (serving_consistency.h: Little's law against the same sweep) are
// listed as not expressible, with the numbers, before anything is simulated.
//
// The per-engine serving terms (serving_overheads.h) are fitted here on half of the rows (chosen by
// a hash of the row id) and reported on the other half, for each start rule of the bench client:
//   1. run the fit half with none (factor 1, no overheads);
//   2. per engine, step-time factor f and step overhead o by least squares of the relative TPOT
//      error over the fit rows at concurrency <= 128 per engine instance: measured TPOT ~ f x
//      predicted + o (one step per output token); o < 0 is not allowed: then o = 0 and f alone
//      (sim::fit_step_terms). With --split-prefill-factor, TPOT ~ f x decode part + g x prefill part
//      + o, the parts of each row's predicted TPOT found by rerunning it with the prefill part of
//      every step x 1.25 (an experiment, not what the shipped terms use);
//   3. rerun the same fit rows with f and o; request overhead a and per-in-flight overhead b by least
//      absolute relative TTFT error: measured TTFT ~ predicted + a + b x (concurrency - 1), a, b >= 0
//      (sim::fit_request_terms), with b either in ms or as a share of the cost model's time for the
//      row's prompt prefilled alone (b x prefill(isl) x (concurrency - 1)); per engine the form with
//      the smaller objective is kept;
//   4. rerun them with a and b (factor 1, no step overhead) and refit f and o as in 2: requests that
//      reach the engine later change its batches;
//   5. refit a and b as in 3 with the new f and o;
//   6. per engine, the start rule with the smaller fit-half score: median + p90 of |e|, TTFT and
//      TPOT summed (the p90s keep a rule that fits the median but misses a third of the rows out).
// Passes reported: both start rules without and with their fitted terms, and the shipped defaults
// (what `kvplan simulate` does with no overhead flags); per engine, fit half and held-out half apart.
// --write-band writes the shipped defaults' held-out p90 |error| of TTFT and TPOT (all engines
// pooled) into data/profiles/h100-sxm.json's "band" (deterministic; rebuild to embed it).
// --fit-overheads prints the chosen fit as the source lines of sim/src/serving_overheads.cpp.
// Then data/serving_measurements/public_runs.csv (other GPUs and sources), with the shipped defaults.
// --public GPU runs only that GPU's public rows (e.g. mi300x; --profile datasheet for the datasheet
// profile), and with --write-band writes their pooled p90 |error| into data/profiles/<GPU>.json.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kvplan/calibration/heldout_split.h"
#include "kvplan/core/atomic_file.h"
#include "kvplan/core/engine_memory.h"
#include "kvplan/core/error.h"
#include "kvplan/core/json_input.h"
#include "kvplan/core/model_config.h"
#include "kvplan/core/perf_profile.h"
#include "kvplan/core/presets.h"
#include "kvplan/sim/serving_overheads.h"
#include "kvplan/sim/simulation.h"
#include "kvplan/sim/time.h"
#include "kvplan/plan/runs_fit.h"
#include "kvplan/plan/simulate.h"
#include "serving_cases.h"
#include "serving_consistency.h"
#include "serving_errors.h"

namespace {

using namespace kvplan::bench;  // ServingCase, its Prediction and Result, the error tables (serving_errors.h)
namespace sim = kvplan::sim;

constexpr int64_t kFitMaxConcurrency = 128;  // per engine instance: rows the step terms are fitted on

// The per-engine terms a pass runs with (ServingOverheads); nullopt in simulate(): the shipped defaults.
struct Terms {
  double request_ms = 0, per_in_flight_ms = 0, step_ms = 0, factor = 1.0;
  double prefill_share = 0;  // per other request in flight, as a share of the prompt's prefill
  double prefill_factor = 1.0;  // the prefill part of a step
};

// The deterministic 50/50 split: FNV-1a 64 of the row id (the calibration split's hash), even -> fit half.
bool in_fit_half(const ServingCase& c) { return (kvplan::calibration::split_hash(c.id) & 1u) == 0; }

enum class Client { kBench, kBurst, kAsGiven };

// --profile: passed to every simulation ("" = kvplan's default step-time source).
std::string g_profile;

// --split-prefill-factor: fit a separate factor for the prefill part of a step (an experiment: its
// fit-half score is worse than one factor's, docs/benchmarks.md; the shipped terms use one).
bool g_split_prefill = false;

// --trtllm-aic-schedule (an experiment): TensorRT-LLM rows run with the scheduler settings
// aiconfigurator's generator writes for agg workers (rule_plugin/trtllm.rule, extra_engine_args
// templates): no chunked prefill, max_num_tokens = round_up(batch + isl + 1500, 32), max_seq_len
// isl + osl.
bool g_trtllm_aic = false;

void apply_trtllm_aic_schedule(std::vector<ServingCase>& cases) {
  for (ServingCase& c : cases) {
    if (c.engine != "trtllm" || !c.why_not.empty()) continue;
    const int64_t tokens = (c.concurrency_per_replica() + c.isl + 1500 + 31) / 32 * 32;
    c.memory_flags["max-num-batched-tokens"] = std::to_string(tokens);
    c.memory_flags["max-model-len"] = std::to_string(c.isl + c.osl);
    c.sim_flags["chunked-prefill"] = "false";
  }
}

Prediction simulate(const ServingCase& c, Client client, std::optional<Terms> terms) {
  Prediction p;
  try {
    kvplan::plan::SettingValues sim_flags = c.sim_flags;
    if (!g_profile.empty()) sim_flags["profile"] = g_profile;
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

// One start rule: its runs without and with its own fitted terms.
struct Regime {
  Client client;
  std::string name;
  std::vector<Result> none, fitted;               // in `runnable` order
  std::map<std::string, Terms> fit;                // per engine
  std::map<std::string, sim::StepTermsFit> step;   // per engine: the TPOT fit
  std::map<std::string, sim::RequestTermsFit> request;  // per engine: the TTFT fit
  std::map<std::string, bool> prefill_shaped;            // per engine: the per-in-flight form kept
  std::map<std::string, double> score;             // per engine: fit-half score after fitting
};

// The fit rows: fit half, concurrency <= kFitMaxConcurrency per engine instance, simulated.
bool fit_row(const Result& r) {
  return in_fit_half(*r.c) && r.pred.ok && r.c->concurrency_per_replica() <= kFitMaxConcurrency;
}

// The cost model's time (ms) for the row's prompt prefilled alone (sim::prompt_prefill_ns), what the
// prefill-shaped per-in-flight term is a share of. Memoised per row.
double prompt_prefill_ms(const ServingCase& c) {
  static std::map<std::string, double> memo;
  auto it = memo.find(c.id);
  if (it != memo.end()) return it->second;
  kvplan::plan::SettingValues sim_flags = c.sim_flags;
  if (!g_profile.empty()) sim_flags["profile"] = g_profile;
  const kvplan::plan::Scenario scenario =
      kvplan::plan::with_values(kvplan::plan::with_values(kvplan::plan::Scenario{}, c.memory_flags), sim_flags);
  const kvplan::plan::StepExplanation e =
      kvplan::plan::explain_step(scenario, kvplan::plan::StepShape{.batch = 0, .context = 0, .prefill = c.isl});
  return memo[c.id] = sim::ns_to_ms(e.breakdown.total_ns);
}

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
    rows.split_prefill_factor = g_split_prefill;
    for (const Result* r : results) {
      rows.measured_ttft_ms.push_back(r->c->measured_ttft_ms);
      rows.measured_tpot_ms.push_back(r->c->measured_tpot_ms);
      rows.others_in_flight.push_back(static_cast<double>(std::max<int64_t>(0, r->c->concurrency - 1)));
      rows.prompt_prefill_ms.push_back(prompt_prefill_ms(*r->c));
      rows.step_row.push_back(true);  // fit_row: concurrency <= kFitMaxConcurrency already
    }
    const kvplan::plan::ServingTermsFitResult fit = kvplan::plan::fit_serving_terms(
        rows, [&](size_t i, const kvplan::plan::ServingTerms& t) -> std::optional<std::pair<double, double>> {
          // No terms: the run of the pass already made.
          const Prediction p = t == kvplan::plan::ServingTerms{}
                                   ? results[i]->pred
                                   : simulate(*results[i]->c, g.client,
                                              Terms{t.request_ms, t.per_in_flight_ms, t.step_ms, t.factor,
                                                    t.prefill_share, t.prefill_factor});
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

// Median + p90 of |e|, TTFT and TPOT summed, per engine over the fit half.
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

// The architecture family a row's model belongs to, for the per-family tables: "MLA + MoE"
// (DeepSeek-style), "hybrid" (linear attention or Mamba layers), "MoE", "dense"; "?" when the
// model is not one kvplan resolves.
std::string model_family(const std::string& model_id) {
  try {
    const kvplan::ModelConfig m = kvplan::resolve_model(model_id);
    bool moe = false;
    for (const kvplan::LayerSpec& l : m.layers) moe |= l.mlp.kind == kvplan::MlpKind::kMoe;
    if (m.count_layers(kvplan::LayerKind::kLinearAttention) + m.count_layers(kvplan::LayerKind::kMamba2) +
            m.count_layers(kvplan::LayerKind::kMamba1) > 0) {
      return "hybrid";
    }
    if (m.count_layers(kvplan::LayerKind::kMla) > 0) return moe ? "MLA + MoE" : "MLA";
    return moe ? "MoE" : "dense";
  } catch (const kvplan::ConfigError&) {
    return "?";
  }
}

std::string concurrency_bucket(const ServingCase& c) {
  const int64_t x = c.concurrency_per_replica();
  if (x <= 8) return "c<=8";
  if (x <= 32) return "c16-32";
  if (x <= 128) return "c64-128";
  return "c>128";
}

// The held-out p90 |error| of TTFT and TPOT of `results` (all engines pooled, and per engine).
struct Band {
  double ttft_p90 = 0, tpot_p90 = 0;
  size_t rows = 0;
  std::map<std::string, std::pair<double, double>> per_engine;  // TTFT p90, TPOT p90
  std::map<std::string, size_t> per_engine_rows;
};

Band held_out_band(const std::vector<Result>& results) {
  Band b;
  std::vector<double> t, p;
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> per;
  for (const Result& r : results) {
    if (!r.pred.ok || in_fit_half(*r.c)) continue;
    const double et = rel(r.pred.ttft_ms, r.c->measured_ttft_ms), ep = rel(r.pred.tpot_ms, r.c->measured_tpot_ms);
    t.push_back(et);
    p.push_back(ep);
    per[r.c->engine].first.push_back(et);
    per[r.c->engine].second.push_back(ep);
  }
  b.rows = t.size();
  b.ttft_p90 = stats(t).p90_abs;
  b.tpot_p90 = stats(p).p90_abs;
  for (const auto& [engine, e] : per) {
    b.per_engine[engine] = {stats(e.first).p90_abs, stats(e.second).p90_abs};
    b.per_engine_rows[engine] = e.first.size();
  }
  return b;
}

// Writes `band` into the profile file (PerfProfile::set_band), in the layout `kvplan calibrate fit`
// writes, atomically. Rounded to 0.001 so the file does not change with the last bits of a median.
void write_band(const std::string& path, const Band& band) {
  std::ifstream in(path);
  if (!in) throw kvplan::ConfigError(fmt::format("--write-band: cannot read '{}'", path));
  std::stringstream text;
  text << in.rdbuf();
  kvplan::PerfProfile profile =
      kvplan::PerfProfile::from_json(kvplan::parse_json_input(text.str(), path), path);
  kvplan::ProfileBand b;
  b.ttft_p90_rel_error = std::round(band.ttft_p90 * 1000) / 1000;
  b.tpot_p90_rel_error = std::round(band.tpot_p90 * 1000) / 1000;
  std::string per;
  for (const auto& [engine, e] : band.per_engine) {
    per += fmt::format("{}{} {} runs: TTFT {:.0f}%, TPOT {:.0f}%", per.empty() ? "" : "; ", engine,
                       band.per_engine_rows.at(engine), e.first * 100, e.second * 100);
  }
  b.how = fmt::format(
      "p90 |error| of mean TTFT and TPOT, kvplan's defaults against {} held-out whole-model runs of NVIDIA "
      "aiconfigurator's H100 SXM e2e set (data/measurements/aiconfigurator_silicon_e2e_h100.csv, mode=agg; vLLM, "
      "SGLang, TensorRT-LLM; the other half fitted the per-engine serving terms); per engine: {} "
      "(bench/validate_serving.cpp, --write-band)",
      band.rows, per);
  profile.set_band(b);
  kvplan::write_file_atomically(path, kvplan::json_text_flat_arrays(profile.to_json()) + "\n");
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

// --gpu h200: the H200 e2e file (aiconfigurator_silicon_e2e_h200.csv, mode=agg), every family
// including those added in issue 24, simulated with the shipped defaults (nothing fitted: the
// H100 half chose the terms). Errors per model and engine, and why each other row did not run.
int validate_h200(const std::string& data, bool print_rows) {
  std::vector<ServingCase> cases;
  try {
    cases = kvplan::bench::read_aiconfigurator_e2e(data + "/measurements/aiconfigurator_silicon_e2e_h200.csv", "h200",
                                                   true);
    kvplan::bench::mark_inconsistent_runs(cases);
  } catch (const kvplan::ConfigError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
  fmt::print("kvplan_validate_serving --gpu h200: {} mode=agg rows of aiconfigurator_silicon_e2e_h200.csv (H200 SXM), "
             "shipped defaults (serving terms fitted on the H100 file), client as given\n", cases.size());
  std::vector<Result> results;
  std::map<std::string, std::map<std::string, int>> skipped;  // model -> reason -> rows
  for (const ServingCase& c : cases) {
    if (!c.why_not.empty()) {
      skipped[c.model][c.why_not] += 1;
      continue;
    }
    Prediction p = simulate(c, Client::kAsGiven, std::nullopt);
    if (!p.ok) {
      skipped[c.model]["kvplan refuses the run: " + p.error.substr(0, 160)] += 1;
      continue;
    }
    results.push_back({&c, p});
    if (print_rows) {
      fmt::print("{} TTFT meas {:.1f} pred {:.1f} | TPOT meas {:.2f} pred {:.2f} | {}\n", c.id, c.measured_ttft_ms,
                 p.ttft_ms, c.measured_tpot_ms, p.tpot_ms, c.command());
    }
  }
  kvplan::bench::print_table("H200 rows, shipped defaults, by model", results,
                             [](const ServingCase& c) { return c.memory_flags.at("model"); });
  kvplan::bench::print_table("H200 rows, shipped defaults, by engine", results,
                             [](const ServingCase& c) { return c.engine; });
  fmt::print("\nRows not run, by model and reason:\n");
  for (const auto& [model, reasons] : skipped) {
    for (const auto& [why, n] : reasons) fmt::print("- {} ({} rows): {}\n", model, n, why);
  }
  return 0;
}

// Whether the shipped terms of `engine` are this regime's fit, to the digits
// `--fit-overheads` prints (and the same bench start rule).
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
         sim::bench_start_name(sim::default_bench_start(e)) == g.name;
}

}  // namespace

// --public GPU: only the public runs (data/serving_measurements/public_runs.csv) on one GPU preset, with
// the default step-time source or --profile; per row, per source and engine, and pooled. Nothing is
// fitted on them, so every run is out of sample. With --write-band the pooled p90 |error| of mean
// TTFT and TPOT becomes data/profiles/<GPU>.json's band, when at least kMinPublicBandRuns runs from
// at least two sources could be simulated (else the profile stays "not validated" and this says so).
constexpr size_t kMinPublicBandRuns = 20;

int validate_public_gpu(const std::string& data, const std::string& gpu, bool write) {
  if (write && !g_profile.empty()) {
    std::fprintf(stderr, "kvplan_validate_serving: --public --write-band measures the GPU's shipped profile; drop "
                         "--profile\n");
    return 2;
  }
  const auto t0 = std::chrono::steady_clock::now();
  const std::string path = data + "/serving_measurements/public_runs.csv";
  std::vector<ServingCase> pub;
  try {
    pub = kvplan::bench::read_public_runs(path);
  } catch (const kvplan::ConfigError& e) {
    std::fprintf(stderr, "kvplan_validate_serving: %s\n", e.what());
    return 2;
  }
  fmt::print("kvplan_validate_serving --public {}: {} ({}), step times: {}\n", gpu, path, "shipped serving terms",
             g_profile.empty() ? std::string("kvplan's default for the GPU") : "--profile " + g_profile);
  fmt::print("| row | engine | model | load | isl/osl | TTFT meas | TTFT pred | err | TPOT meas | TPOT pred | err |\n");
  fmt::print("|---|---|---|---|---|---:|---:|---:|---:|---:|---:|\n");
  std::vector<Result> results;
  std::map<std::string, std::vector<std::string>> reasons;
  std::set<std::string> sources;
  size_t on_gpu = 0;
  for (const ServingCase& c : pub) {
    if (c.gpu != gpu) continue;
    ++on_gpu;
    if (!c.why_not.empty()) {
      reasons[c.why_not].push_back(c.id);
      continue;
    }
    const Prediction p = simulate(c, Client::kAsGiven, std::nullopt);
    if (!p.ok) {
      reasons["kvplan refuses the run: " + p.error].push_back(c.id);
      continue;
    }
    results.push_back({&c, p});
    sources.insert(c.id.substr(0, c.id.find(" row ")));
    const std::string load = c.rate > 0 ? fmt::format("rate {}", c.rate)
                                        : fmt::format("{} {}", c.burst ? "burst" : "c", c.concurrency);
    fmt::print("| {} | {} | {} | {} | {}/{} | {:.0f} | {:.0f} | {} | {:.1f} | {:.1f} | {} |\n", c.id, c.engine,
               c.memory_flags.at("model"), load, c.isl, c.osl, c.measured_ttft_ms, p.ttft_ms,
               pc(rel(p.ttft_ms, c.measured_ttft_ms)), c.measured_tpot_ms, p.tpot_ms,
               pc(rel(p.tpot_ms, c.measured_tpot_ms)));
  }
  print_table(fmt::format("Public runs on {} by source, engine and model", gpu), results, [](const ServingCase& c) {
    return c.id.substr(0, c.id.find(" row ")) + " " + c.engine + " " + c.memory_flags.at("model");
  });
  print_table(fmt::format("Public runs on {}, all", gpu), results, [](const ServingCase&) { return std::string("all"); });
  fmt::print("\n{} public rows on {}; {} simulated; not expressible:\n", on_gpu, gpu, results.size());
  for (const auto& [why, ids] : reasons) fmt::print("- {} ({} rows)\n", why, ids.size());
  std::vector<double> t, p;
  for (const Result& r : results) {
    t.push_back(rel(r.pred.ttft_ms, r.c->measured_ttft_ms));
    p.push_back(rel(r.pred.tpot_ms, r.c->measured_tpot_ms));
  }
  const Stats ts = stats(t), ps = stats(p);
  fmt::print("pooled: TTFT median |e| {:.0f}%, p90 {:.0f}%; TPOT median |e| {:.0f}%, p90 {:.0f}% ({} runs, {} sources)\n",
             ts.med_abs * 100, ts.p90_abs * 100, ps.med_abs * 100, ps.p90_abs * 100, results.size(), sources.size());
  if (write) {
    if (results.size() < kMinPublicBandRuns || sources.size() < 2) {
      fmt::print("no band written: {} runs from {} source(s), need >= {} runs from >= 2 sources; data/profiles/{}.json "
                 "stays not validated\n",
                 results.size(), sources.size(), kMinPublicBandRuns, gpu);
    } else {
      const std::string file = KVPLAN_SOURCE_DIR "/data/profiles/" + gpu + ".json";
      std::ifstream in(file);
      if (!in) throw kvplan::ConfigError(fmt::format("--write-band: cannot read '{}'", file));
      std::stringstream text;
      text << in.rdbuf();
      kvplan::PerfProfile profile = kvplan::PerfProfile::from_json(kvplan::parse_json_input(text.str(), file), file);
      kvplan::ProfileBand b;
      b.ttft_p90_rel_error = std::round(ts.p90_abs * 1000) / 1000;
      b.tpot_p90_rel_error = std::round(ps.p90_abs * 1000) / 1000;
      std::string names;
      for (const std::string& s : sources) names += (names.empty() ? "" : ", ") + s;
      b.how = fmt::format(
          "p90 |error| of mean TTFT and TPOT, kvplan's defaults against {} public whole-model runs on {} "
          "(data/serving_measurements/public_runs.csv: {}; nothing fitted on them; median |error| TTFT {:.0f}%, TPOT "
          "{:.0f}%, bias TTFT {:+.0f}%, TPOT {:+.0f}%) (bench/validate_serving.cpp, --public {} --write-band)",
          results.size(), gpu, names, ts.med_abs * 100, ps.med_abs * 100, ts.bias * 100, ps.bias * 100, gpu);
      profile.set_band(b);
      kvplan::write_file_atomically(file, kvplan::json_text_flat_arrays(profile.to_json()) + "\n");
      fmt::print("wrote the band into {} (rebuild to embed it): TTFT {:.3f}, TPOT {:.3f}\n", file,
                 b.ttft_p90_rel_error, b.tpot_p90_rel_error);
    }
  }
  fmt::print("total wall time {:.1f} s\n", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return 0;
}

int main(int argc, char** argv) {
  std::string data = KVPLAN_SOURCE_DIR "/data";
  std::string csv_path;
  std::string e2e_path;  // --e2e: another GPU's silicon_sample rows (aiconfigurator_silicon_e2e_h200.csv)
  bool print_rows = false;
  bool write_band_flag = false;
  std::string gpu_flag;
  bool fit_overheads_flag = false;
  // --check-shipped: exit 1 when a chosen fit differs from the shipped terms (a stale constant in
  // sim/src/serving_overheads.cpp); --engine E: only that engine's rows (the test runs SGLang's).
  bool check_shipped = false;
  std::string engine_flag;
  std::string public_gpu;  // --public GPU: only that GPU's public runs (validate_public_gpu)
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--data" && i + 1 < argc) data = argv[++i];
    else if (a == "--csv" && i + 1 < argc) csv_path = argv[++i];
    else if (a == "--e2e" && i + 1 < argc) e2e_path = argv[++i];
    else if (a == "--rows") print_rows = true;
    else if (a == "--profile" && i + 1 < argc) g_profile = argv[++i];
    else if (a == "--write-band") write_band_flag = true;
    else if (a == "--fit-overheads") fit_overheads_flag = true;
    else if (a == "--split-prefill-factor") g_split_prefill = true;
    else if (a == "--trtllm-aic-schedule") g_trtllm_aic = true;
    else if (a == "--gpu" && i + 1 < argc) gpu_flag = argv[++i];
    else if (a == "--check-shipped") check_shipped = true;
    else if (a == "--engine" && i + 1 < argc) engine_flag = argv[++i];
    else if (a == "--public" && i + 1 < argc) public_gpu = argv[++i];
    else {
      std::fprintf(stderr,
                   "usage: kvplan_validate_serving [--data DIR] [--csv FILE] [--rows] [--profile P] [--write-band] "
                   "[--fit-overheads] [--split-prefill-factor] [--trtllm-aic-schedule] [--gpu h200] [--engine E] "
                   "[--check-shipped] [--public GPU [--write-band]]\n");
      return 2;
    }
  }
  if (!public_gpu.empty()) return validate_public_gpu(data, public_gpu, write_band_flag);
  if (!gpu_flag.empty()) {
    if (gpu_flag != "h200") {
      std::fprintf(stderr, "kvplan_validate_serving: --gpu %s: only h200 has a second e2e file\n", gpu_flag.c_str());
      return 2;
    }
    return validate_h200(data, print_rows);
  }
  if (write_band_flag && (g_split_prefill || g_trtllm_aic)) {
    std::fprintf(stderr, "kvplan_validate_serving: --write-band writes the shipped terms' band; drop %s\n",
                 g_split_prefill ? "--split-prefill-factor" : "--trtllm-aic-schedule");
    return 2;
  }
  if ((write_band_flag || fit_overheads_flag) && !g_profile.empty()) {
    std::fprintf(stderr, "kvplan_validate_serving: --write-band and --fit-overheads are for kvplan's default step "
                         "costs; drop --profile\n");
    return 2;
  }
  const auto wall_start = std::chrono::steady_clock::now();
  auto wall = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count(); };

  std::vector<ServingCase> cases;
  try {
    cases = kvplan::bench::read_aiconfigurator_e2e(e2e_path.empty() ? data + "/measurements/aiconfigurator_silicon_e2e_h100.csv"
                                                                    : e2e_path);
    kvplan::bench::mark_inconsistent_runs(cases);  // before any simulation: measured numbers only
    if (g_trtllm_aic) apply_trtllm_aic_schedule(cases);
    if (!engine_flag.empty()) {
      // Each engine's terms are fitted on its own rows, so one engine's fit is the same alone.
      std::erase_if(cases, [&](const ServingCase& c) { return c.engine != engine_flag; });
      if (cases.empty()) throw kvplan::ConfigError("--engine " + engine_flag + ": no rows of that engine");
    }
  } catch (const kvplan::ConfigError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
  fmt::print("kvplan_validate_serving: {} mode=agg rows of {}\n", cases.size(),
             e2e_path.empty() ? std::string("aiconfigurator_silicon_e2e_h100.csv (H100 SXM)") : e2e_path);
  fmt::print("step costs: {}; client: bench (steady state); split: FNV-1a(id) even = fit half\n",
             g_profile.empty() ? std::string("kvplan's default (the GPU's published profile, engine custom all-reduce)")
                               : fmt::format("--profile {}", g_profile));

  // Which rows kvplan can run at all (the staggered pass with no terms decides).
  std::map<std::string, std::string> not_expressible;  // id -> reason
  std::vector<const ServingCase*> runnable;
  Regime staggered{Client::kBench, "staggered", {}, {}, {}, {}, {}, {}, {}};
  Regime burst{Client::kBurst, "burst", {}, {}, {}, {}, {}, {}, {}};
  for (const ServingCase& c : cases) {
    if (!c.why_not.empty()) {
      not_expressible[c.id] = c.why_not;
      continue;
    }
    Prediction p = simulate(c, Client::kBench, Terms{});
    if (!p.ok) {
      not_expressible[c.id] = "kvplan refuses the run: " + p.error;
      continue;
    }
    runnable.push_back(&c);
    staggered.none.push_back({&c, p});
  }
  fmt::print("pass staggered start, no terms: {} rows simulated, {} not expressible, {:.1f} s wall\n",
             runnable.size(), not_expressible.size(), wall());
  for (const ServingCase* c : runnable) burst.none.push_back({c, simulate(*c, Client::kBurst, Terms{})});
  fmt::print("pass burst start, no terms: {:.1f} s wall\n", wall());

  for (Regime* g : {&staggered, &burst}) {
    fit_terms(*g);
    for (const ServingCase* c : runnable) g->fitted.push_back({c, simulate(*c, g->client, g->fit[c->engine])});
    g->score = fit_half_scores(g->fitted);
    fmt::print("pass {} start + its fitted terms: {:.1f} s wall\n", g->name, wall());
  }
  std::vector<Result> shipped;
  for (const ServingCase* c : runnable) shipped.push_back({c, simulate(*c, Client::kAsGiven, std::nullopt)});
  fmt::print("pass shipped defaults: {:.1f} s wall\n", wall());

  // Per engine, the start rule with the smaller fit-half score.
  std::map<std::string, const Regime*> chosen;
  for (const Regime* g : {&staggered, &burst}) {
    for (const auto& [engine, score] : g->score) {
      if (!chosen.count(engine) || score < chosen[engine]->score.at(engine)) chosen[engine] = g;
    }
  }

  fmt::print("\nFitted terms (fit half, CUDA graphs on). Step terms: least squares of the relative TPOT error over the "
             "fit rows at concurrency <= {} per engine instance, step overhead >= 0 (raw: before that rule). Request "
             "terms: least absolute relative TTFT error over the same rows rerun with the step terms, TTFT ~ predicted "
             "+ request + per-in-flight x (concurrency - 1), both >= 0, per-in-flight either in ms or as a share of "
             "the prompt's prefill alone (the form with the smaller objective).\n", kFitMaxConcurrency);
  fmt::print("| engine | start | rows | step-time factor (decode / prefill) | step overhead ms (raw) | request "
             "overhead ms | per other request in flight | fit-half score | chosen | shipped default |\n");
  fmt::print("|---|---|---:|---:|---:|---:|---:|---:|---|---|\n");
  for (const Regime* g : {&staggered, &burst}) {
    for (const auto& [engine, t] : g->fit) {
      const kvplan::Engine e = kvplan::parse_engine(engine);
      const sim::ServingOverheads d = sim::default_serving_overheads(e, true);
      const bool same = shipped_matches(engine, *g);
      const bool is_chosen = chosen[engine] == g;
      const sim::StepTermsFit& st = g->step.at(engine);
      const size_t request_rows = g->request.count(engine) ? g->request.at(engine).rows : 0;
      const std::string per_in_flight = t.prefill_share > 0 ? fmt::format("{:.4f} x prefill", t.prefill_share)
                                                            : fmt::format("{:.3f} ms", t.per_in_flight_ms);
      fmt::print("| {} | {} | {} / {} | {:.3f} / {:.3f} | {:.3f} ({:.3f}) | {:.3f} | {} | {:.2f} | {} | {} |\n", engine,
                 g->name, st.rows, request_rows, t.factor, t.prefill_factor, t.step_ms, st.unconstrained_overhead_ms,
                 t.request_ms,
                 per_in_flight, g->score.at(engine), is_chosen ? "yes" : "no",
                 !is_chosen ? "-"
                 : same     ? "matches this fit"
                            : fmt::format("DIFFERS: shipped {} start, {:.3f} ms per request + {:.3f} ms and {:.4f} x "
                                          "prefill per other in flight, {:.3f} ms per step, factor {:.3f} / {:.3f}",
                                          sim::bench_start_name(sim::default_bench_start(e)),
                                          sim::ns_to_ms(d.request.ns), sim::ns_to_ms(d.request_per_in_flight.ns),
                                          d.request_per_in_flight_prefill_share.value, sim::ns_to_ms(d.step.ns),
                                          d.step_factor.value, d.prefill_step_factor.value));
    }
  }
  if (fit_overheads_flag) print_fitted_source(chosen, cases);
  if (check_shipped) {
    std::vector<std::string> stale;
    for (const auto& [engine, g] : chosen) {
      if (!shipped_matches(engine, *g)) stale.push_back(engine);
    }
    if (!stale.empty()) {
      fmt::print("STALE: the shipped terms of {} differ from what the fit gives now: rerun "
                 "`kvplan_validate_serving --fit-overheads` and paste its lines into sim/src/serving_overheads.cpp\n",
                 fmt::join(stale, ", "));
      return 1;
    }
    fmt::print("shipped terms match the fit for every engine fitted\n");
    return 0;
  }
  std::vector<Result> chosen_results;
  for (size_t i = 0; i < runnable.size(); ++i) {
    const Regime* g = chosen.count(runnable[i]->engine) ? chosen[runnable[i]->engine] : &staggered;
    chosen_results.push_back(g->fitted[i]);
  }

  auto half = [](const std::vector<Result>& all, bool fit_half) {
    std::vector<Result> out;
    for (const Result& r : all) {
      if (in_fit_half(*r.c) == fit_half) out.push_back(r);
    }
    return out;
  };
  auto by_engine = [](const ServingCase& c) { return c.engine; };
  fmt::print("\nErrors are (predicted - measured) / measured of the mean TTFT / TPOT; med|e| and p90|e| of the "
             "absolute error, bias = median signed error.\n");
  for (bool fit_half : {true, false}) {
    const std::string h = fit_half ? "FIT half" : "HELD-OUT half";
    for (const Regime* g : {&staggered, &burst}) {
      print_table(fmt::format("[{}] {} start, no terms", h, g->name), half(g->none, fit_half), by_engine);
      print_table(fmt::format("[{}] {} start + its fitted terms", h, g->name), half(g->fitted, fit_half), by_engine);
    }
    print_table(fmt::format("[{}] per engine the chosen start + its fitted terms (this fit)", h),
                half(chosen_results, fit_half), by_engine);
    print_table(fmt::format("[{}] shipped defaults (kvplan simulate with no overhead flags)", h),
                half(shipped, fit_half), by_engine);
  }
  print_table("[HELD-OUT half] shipped defaults, by engine and concurrency per instance", half(shipped, false),
              [](const ServingCase& c) { return c.engine + " " + concurrency_bucket(c); });
  print_table("[HELD-OUT half] shipped defaults, by engine and model", half(shipped, false),
              [](const ServingCase& c) { return c.engine + " " + c.memory_flags.at("model"); });
  print_table("[ALL rows] shipped defaults, by engine and model family (dense, MoE, MLA + MoE, hybrid)", shipped,
              [](const ServingCase& c) { return c.engine + " " + model_family(c.memory_flags.at("model")); });
  print_table("[HELD-OUT half] shipped defaults, by engine and tensor parallelism", half(shipped, false),
              [](const ServingCase& c) { return c.engine + " tp" + c.memory_flags.at("tensor-parallel-size"); });

  const Band band = held_out_band(shipped);
  fmt::print("\nBand (held-out p90 |error|, shipped defaults, {} runs): TTFT {:.3f}, TPOT {:.3f}\n", band.rows,
             band.ttft_p90, band.tpot_p90);
  if (write_band_flag) {
    const std::string path = data + "/profiles/h100-sxm.json";
    try {
      write_band(path, band);
    } catch (const kvplan::ConfigError& e) {
      std::fprintf(stderr, "%s\n", e.what());
      return 2;
    }
    fmt::print("wrote the band into {} (rebuild to embed it)\n", path);
  }

  std::map<std::string, std::vector<std::string>> reasons;
  for (const auto& [id, why] : not_expressible) reasons[why].push_back(id);
  fmt::print("\nRows not expressible ({}):\n", not_expressible.size());
  for (const auto& [why, ids] : reasons) {
    fmt::print("- {} ({} rows): ", why, ids.size());
    for (size_t i = 0; i < ids.size(); ++i) fmt::print("{}{}", i ? ", " : "", ids[i]);
    fmt::print("\n");
  }

  if (!csv_path.empty()) {
    std::ofstream out(csv_path);
    out << "id,engine,model,half,concurrency,replicas,isl,osl,measured_ttft_ms,measured_tpot_ms,staggered_ttft_ms,"
           "staggered_tpot_ms,burst_ttft_ms,burst_tpot_ms,staggered_fit_ttft_ms,staggered_fit_tpot_ms,burst_fit_ttft_ms,"
           "burst_fit_tpot_ms,shipped_ttft_ms,shipped_tpot_ms,notes\n";
    for (size_t i = 0; i < runnable.size(); ++i) {
      const ServingCase& c = *runnable[i];
      out << fmt::format(
          "{},{},{},{},{},{},{},{},{:.3f},{:.3f},{:.3f},{:.3f},{:.3f},{:.3f},{:.3f},{:.3f},{:.3f},{:.3f},{:.3f},{:.3f},\"{}\"\n",
          c.id, c.engine, c.memory_flags.at("model"), in_fit_half(c) ? "fit" : "held-out", c.concurrency, c.replicas,
          c.isl, c.osl, c.measured_ttft_ms, c.measured_tpot_ms, staggered.none[i].pred.ttft_ms,
          staggered.none[i].pred.tpot_ms, burst.none[i].pred.ttft_ms, burst.none[i].pred.tpot_ms,
          staggered.fitted[i].pred.ttft_ms, staggered.fitted[i].pred.tpot_ms, burst.fitted[i].pred.ttft_ms,
          burst.fitted[i].pred.tpot_ms, shipped[i].pred.ttft_ms, shipped[i].pred.tpot_ms, c.notes);
    }
    fmt::print("\nwrote {}\n", csv_path);
  }
  if (print_rows) {
    for (size_t i = 0; i < runnable.size(); ++i) {
      const ServingCase& c = *runnable[i];
      fmt::print("{} [{}] TTFT meas {:.1f} pred {:.1f} | TPOT meas {:.2f} pred {:.2f} | {}\n", c.id,
                 in_fit_half(c) ? "fit" : "held-out", c.measured_ttft_ms, shipped[i].pred.ttft_ms,
                 c.measured_tpot_ms, shipped[i].pred.tpot_ms, c.command());
    }
  }

  // Public runs on other GPUs: shipped defaults (no fitting on them), each row with its source.
  const std::string public_path = data + "/serving_measurements/public_runs.csv";
  std::vector<ServingCase> pub;
  try {
    pub = kvplan::bench::read_public_runs(public_path);
  } catch (const kvplan::ConfigError& e) {
    fmt::print("\npublic runs: {} ({})\n", public_path, e.what());
  }
  if (!pub.empty()) {
    fmt::print("\nPublic runs ({}), shipped default overheads; error = (pred - meas) / meas of the mean:\n", public_path);
    // The last TTFT column adds the bench client's per-in-flight request term (fitted on closed-loop
    // sweeps with equal lengths; kvplan applies it to the bench client only), to show what it does to
    // traffic that is not such a sweep.
    fmt::print("| row | engine | GPU | model | load | isl/osl | TTFT meas | TTFT pred | err | TPOT meas | TPOT pred | err | "
               "TTFT pred with the bench client's per-in-flight term | err | notes |\n");
    fmt::print("|---|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
    std::vector<Result> pub_with_term;
    std::vector<Result> pub_results;
    std::map<std::string, std::vector<std::string>> pub_reasons;
    for (const ServingCase& c : pub) {
      if (!c.why_not.empty()) {
        pub_reasons[c.why_not].push_back(c.id);
        continue;
      }
      Prediction p = simulate(c, Client::kAsGiven, std::nullopt);
      if (!p.ok) {
        pub_reasons["kvplan refuses the run: " + p.error].push_back(c.id);
        continue;
      }
      pub_results.push_back({&c, p});
      ServingCase with_term = c;
      const kvplan::sim::ServingOverheads bench_terms =
          kvplan::sim::default_serving_overheads(kvplan::parse_engine(c.engine), true);
      with_term.sim_flags["request-overhead-per-in-flight-ms"] =
          fmt::format("{}", kvplan::sim::ns_to_ms(bench_terms.request_per_in_flight.ns));
      with_term.sim_flags["request-overhead-per-in-flight-prefill-share"] =
          fmt::format("{}", bench_terms.request_per_in_flight_prefill_share.value);
      const Prediction q = simulate(with_term, Client::kAsGiven, std::nullopt);
      pub_with_term.push_back({&c, q});
      const std::string load = c.rate > 0 ? fmt::format("rate {}", c.rate)
                                          : fmt::format("{} {}", c.burst ? "burst" : "c", c.concurrency);
      fmt::print("| {} | {} | {} | {} | {} | {}/{} | {:.0f} | {:.0f} | {} | {:.1f} | {:.1f} | {} | {:.0f} | {} | {} |\n",
                 c.id, c.engine, c.gpu, c.memory_flags.at("model"), load, c.isl, c.osl, c.measured_ttft_ms, p.ttft_ms,
                 pc(rel(p.ttft_ms, c.measured_ttft_ms)), c.measured_tpot_ms, p.tpot_ms,
                 pc(rel(p.tpot_ms, c.measured_tpot_ms)), q.ttft_ms, pc(rel(q.ttft_ms, c.measured_ttft_ms)), c.notes);
    }
    const auto by_source = [](const ServingCase& c) {
      return c.id.substr(0, c.id.find(" row ")) + " " + c.engine + " " + c.gpu;
    };
    print_table("Public runs by source, engine and GPU (shipped defaults)", pub_results, by_source);
    print_table("Public runs by source, engine and GPU (shipped defaults plus the bench client's per-in-flight term)",
                pub_with_term, by_source);
    fmt::print("\nPublic rows not expressible:\n");
    for (const auto& [why, ids] : pub_reasons) {
      fmt::print("- {} ({} rows): ", why, ids.size());
      for (size_t i = 0; i < ids.size(); ++i) fmt::print("{}{}", i ? ", " : "", ids[i]);
      fmt::print("\n");
    }
    fmt::print("sources: ");
    std::map<std::string, std::set<std::string>> srcs;
    for (const ServingCase& c : pub) srcs[c.id.substr(0, c.id.find(" row "))].insert(c.source.substr(0, c.source.find(" line ")));
    for (const auto& [id, urls] : srcs) {
      for (const std::string& url : urls) fmt::print("\n  {}: {}", id, url);
    }
    fmt::print("\n");
  }
  fmt::print("\ntotal wall time {:.1f} s\n", wall());
  return 0;
}

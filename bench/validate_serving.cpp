// kvplan_validate_serving: whole-model serving predictions against published measurements.
//
//   ./build/bench/kvplan_validate_serving [--data DIR] [--gpu h100|h200] [--e2e FILE] [--split sweep|row]
//                                         [--shipped-only] [--csv rows.csv] [--rows] [--profile P]
//                                         [--write-band] [--fit-overheads] [--check-shipped] [--engine E]
//                                         [--split-prefill-factor] [--trtllm-aic-schedule]
//
// For every row of aiconfigurator's silicon_sample.csv as shipped for H100 SXM and H200 SXM
// (data/measurements/aiconfigurator_silicon_e2e_h100.csv and _h200.csv; --gpu: one of them; --e2e:
// another file of that format) — aggregated, attention-DP and prefill/decode-disaggregated runs —
// the run is simulated as it was made (serving_cases.cpp): engine, TP/EP/attention-DP, the prefill
// and decode pools, precision,
// fixed isl/osl, the bench client at the row's concurrency with enough prompts for a steady state,
// and kvplan's default step costs (the GPU's published profile, data/profiles/<gpu>.json, with the
// engine's custom all-reduce; --profile auto|published|datasheet|FILE to compare another source).
// Mean TTFT and TPOT are compared with the measured ones. Rows whose own measurements contradict
// a closed-loop steady state (serving_consistency.h: Little's law against the same sweep), or
// whose throughput needs more decoder linear-layer work per GPU than the fastest GEMM in the GPU's
// published table (serving_compute.h), are listed as not expressible, with the numbers, before
// anything is simulated.
//
// Runs kvplan refuses to simulate are misses in every table (serving_errors.h); runs whose record is
// at fault (contradicts its own sweep, needs more compute than the GPU has shown, or lacks the
// prefill/decode worker counts) are listed, not scored.
//
// The per-engine serving terms (serving_overheads.h) are fitted here on half of the sweeps of BOTH
// GPUs (serving_split.h: a run and every run differing from it only in concurrency fall in the same
// half; --split row: the rule before issue 26, by row id) — one set of terms per engine for both
// GPUs — and reported on the other half, for each start rule of the bench client:
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
// Held-out tables per engine, per GPU, per family and per deployment (agg, attention DP, disagg),
// then issue 26's goals, met or not.
// --shipped-only: the shipped defaults pass alone (no fit; what `--gpu h200` was before issue 26);
// with --write-band it writes the same band as a full run, in one pass.
// --write-band writes each GPU's held-out p90 |error| of TTFT and TPOT of the shipped defaults (all
// engines pooled, answered runs) into data/profiles/h100-sxm.json and h200.json (rebuild to embed).
// --fit-overheads prints the chosen fit as the source lines of sim/src/serving_overheads.cpp.
// Then data/serving_measurements/public_runs.csv (other GPUs and sources), with the shipped defaults.
// --public GPU runs only that GPU's public rows (e.g. mi300x; --profile datasheet for the datasheet
// profile), and with --write-band writes their pooled p90 |error| into data/profiles/<GPU>.json.
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kvplan/core/engine_memory.h"
#include "kvplan/core/error.h"
#include "kvplan/sim/serving_overheads.h"
#include "kvplan/sim/time.h"
#include "serving_band.h"
#include "serving_cases.h"
#include "serving_compute.h"
#include "serving_consistency.h"
#include "serving_errors.h"
#include "serving_fit.h"
#include "serving_groups.h"
#include "serving_public.h"
#include "serving_split.h"

namespace {

using namespace kvplan::bench;  // ServingCase, Result, the fit and the tables
namespace sim = kvplan::sim;

// --trtllm-aic-schedule (an experiment): TensorRT-LLM rows run with the scheduler settings
// aiconfigurator's generator writes for agg workers (rule_plugin/trtllm.rule, extra_engine_args
// templates): no chunked prefill, max_num_tokens = round_up(batch + isl + 1500, 32), max_seq_len
// isl + osl.
void apply_trtllm_aic_schedule(std::vector<ServingCase>& cases) {
  for (ServingCase& c : cases) {
    if (c.engine != "trtllm" || !c.why_not.empty() || c.deployment == "disagg") continue;
    const int64_t tokens = (c.concurrency_per_replica() + c.isl + 1500 + 31) / 32 * 32;
    c.memory_flags["max-num-batched-tokens"] = std::to_string(tokens);
    c.memory_flags["max-model-len"] = std::to_string(c.isl + c.osl);
    c.sim_flags["chunked-prefill"] = "false";
  }
}

std::string gpu_name(const std::string& gpu) { return gpu == "h200" ? "H200" : gpu == "h100-sxm" ? "H100" : gpu; }

// Issue 26's goals on the held-out half (shipped defaults), met or not, with the figures.
void print_goals(const std::vector<Result>& held_out, const std::vector<Result>& pub) {
  struct Goal {
    std::string what;
    std::function<bool(const ServingCase&)> rows;
    double ttft, tpot;  // <= 0: no goal on it
  };
  std::vector<Goal> goals;
  for (const std::string gpu : {"h100-sxm", "h200"}) {
    goals.push_back({gpu_name(gpu) + " held-out", [gpu](const ServingCase& c) { return c.gpu == gpu; }, 0.20, 0.10});
    for (const std::string engine : {"sglang", "trtllm", "vllm"}) {
      goals.push_back({gpu_name(gpu) + " " + engine,
                       [gpu, engine](const ServingCase& c) { return c.gpu == gpu && c.engine == engine; }, 0.30, 0});
    }
  }
  goals.push_back({"disagg and attention-DP held-out (both GPUs)",
                   [](const ServingCase& c) { return c.deployment != "agg"; }, 0.30, 0.15});
  fmt::print("\nIssue 26 goals (held-out half, shipped defaults; refused runs are misses):\n");
  fmt::print("| goal | rows | refused | TTFT med|e| | goal | TPOT med|e| | goal | met |\n|---|---:|---:|---:|---:|---:|---:|---|\n");
  auto line = [](const std::string& what, const std::vector<Result>& rs, double ttft_goal, double tpot_goal) {
    std::vector<double> t, p;
    size_t refused = 0;
    for (const Result& r : rs) {
      if (!r.pred.ok) {
        ++refused;
        continue;
      }
      t.push_back(rel(r.pred.ttft_ms, r.c->measured_ttft_ms));
      p.push_back(rel(r.pred.tpot_ms, r.c->measured_tpot_ms));
    }
    const Stats a = stats(t, refused), b = stats(p, refused);
    const bool met = a.n + a.refused > 0 && a.med_abs <= ttft_goal && (tpot_goal <= 0 || b.med_abs <= tpot_goal);
    fmt::print("| {} | {} | {} | {} | <= {} | {} | {} | {} |\n", what, a.n + a.refused, a.refused, upc(a.med_abs),
               upc(ttft_goal), upc(b.med_abs), tpot_goal > 0 ? "<= " + upc(tpot_goal) : std::string("-"),
               a.n + a.refused == 0 ? "no rows" : met ? "met" : "NOT met");
  };
  for (const Goal& g : goals) {
    std::vector<Result> rs;
    for (const Result& r : held_out) {
      if (g.rows(*r.c)) rs.push_back(r);
    }
    line(g.what, rs, g.ttft, g.tpot);
  }
  line("public runs (other GPUs and sources)", pub, 0.35, 0.15);
}

}  // namespace

int main(int argc, char** argv) {
  std::string data = KVPLAN_SOURCE_DIR "/data";
  std::string csv_path;
  std::string e2e_path;  // --e2e: another file of silicon_sample rows instead of the shipped ones
  std::string gpu_flag;  // --gpu h100|h200: that GPU's shipped file only
  bool print_rows = false;
  bool write_band_flag = false;
  bool fit_overheads_flag = false;
  bool shipped_only = false;
  bool trtllm_aic = false;
  // --check-shipped: exit 1 when a chosen fit differs from the shipped terms (a stale constant in
  // sim/src/serving_overheads.cpp); --engine E: only that engine's rows (the test runs SGLang's).
  bool check_shipped = false;
  std::string engine_flag;
  std::string public_gpu;  // --public GPU: only that GPU's public runs (serving_public.h)
  ValidateOptions& opt = options();
  try {
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      if (a == "--data" && i + 1 < argc) data = argv[++i];
      else if (a == "--csv" && i + 1 < argc) csv_path = argv[++i];
      else if (a == "--e2e" && i + 1 < argc) e2e_path = argv[++i];
      else if (a == "--rows") print_rows = true;
      else if (a == "--profile" && i + 1 < argc) opt.profile = argv[++i];
      else if (a == "--write-band") write_band_flag = true;
      else if (a == "--fit-overheads") fit_overheads_flag = true;
      else if (a == "--split-prefill-factor") opt.split_prefill = true;
      else if (a == "--trtllm-aic-schedule") trtllm_aic = true;
      else if (a == "--gpu" && i + 1 < argc) gpu_flag = argv[++i];
      else if (a == "--split" && i + 1 < argc) opt.split = parse_split_rule(argv[++i]);
      else if (a == "--shipped-only") shipped_only = true;
      else if (a == "--check-shipped") check_shipped = true;
      else if (a == "--engine" && i + 1 < argc) engine_flag = argv[++i];
      else if (a == "--public" && i + 1 < argc) public_gpu = argv[++i];
      else {
        std::fprintf(stderr,
                     "usage: kvplan_validate_serving [--data DIR] [--gpu h100|h200] [--e2e FILE] [--split sweep|row] "
                     "[--shipped-only] [--csv FILE] [--rows] [--profile P] [--write-band] [--fit-overheads] "
                     "[--check-shipped] [--engine E] [--split-prefill-factor] [--trtllm-aic-schedule] "
                     "[--public GPU [--write-band]]\n");
        return 2;
      }
    }
    if (!public_gpu.empty()) {
      if (write_band_flag && !opt.profile.empty()) {
        throw kvplan::ConfigError("--public --write-band measures the GPU's shipped profile; drop --profile");
      }
      return validate_public_gpu(data, public_gpu, write_band_flag);
    }
    if (!gpu_flag.empty() && gpu_flag != "h100" && gpu_flag != "h200") {
      throw kvplan::ConfigError("--gpu " + gpu_flag + ": must be h100 or h200 (the GPUs with a shipped e2e file)");
    }
    if (write_band_flag && (opt.split_prefill || trtllm_aic || opt.split != SplitRule::kSweep || !gpu_flag.empty() ||
                            !e2e_path.empty() || !engine_flag.empty())) {
      throw kvplan::ConfigError("--write-band writes the shipped terms' band from both GPUs' sweep split: drop "
                                "--split-prefill-factor, --trtllm-aic-schedule, --split row, --gpu, --e2e and --engine");
    }
    if ((write_band_flag || fit_overheads_flag) && !opt.profile.empty()) {
      throw kvplan::ConfigError("--write-band and --fit-overheads are for kvplan's default step costs; drop --profile");
    }
    if (shipped_only && (fit_overheads_flag || check_shipped)) {
      throw kvplan::ConfigError("--shipped-only runs no fit: drop --fit-overheads and --check-shipped");
    }
  } catch (const kvplan::ConfigError& e) {
    std::fprintf(stderr, "kvplan_validate_serving: %s\n", e.what());
    return 2;
  }
  const auto wall_start = std::chrono::steady_clock::now();
  auto wall = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count(); };

  std::vector<ServingCase> cases;
  std::vector<std::string> files;
  try {
    if (!e2e_path.empty()) {
      files.push_back(e2e_path);
    } else {
      if (gpu_flag.empty() || gpu_flag == "h100") files.push_back(data + "/measurements/aiconfigurator_silicon_e2e_h100.csv");
      if (gpu_flag.empty() || gpu_flag == "h200") files.push_back(data + "/measurements/aiconfigurator_silicon_e2e_h200.csv");
    }
    for (const std::string& f : files) {
      std::vector<ServingCase> part = read_aiconfigurator_e2e(f);
      cases.insert(cases.end(), std::make_move_iterator(part.begin()), std::make_move_iterator(part.end()));
    }
    mark_inconsistent_runs(cases);  // before any simulation: measured numbers only
    mark_runs_beyond_compute(cases, fastest_published_gemm(data + "/measurements/aiconfigurator_vllm_gemm_h100_h200.csv"));
    if (trtllm_aic) apply_trtllm_aic_schedule(cases);
    if (!engine_flag.empty()) {
      // Each engine's terms are fitted on its own rows, so one engine's fit is the same alone.
      std::erase_if(cases, [&](const ServingCase& c) { return c.engine != engine_flag; });
      if (cases.empty()) throw kvplan::ConfigError("--engine " + engine_flag + ": no rows of that engine");
    }
  } catch (const kvplan::ConfigError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
  fmt::print("kvplan_validate_serving: {} rows of {}\n", cases.size(), fmt::join(files, ", "));
  fmt::print("step costs: {}; client: bench (steady state); split: {}\n",
             opt.profile.empty() ? std::string("kvplan's default (the GPU's published profile, engine custom all-reduce)")
                                 : fmt::format("--profile {}", opt.profile),
             split_rule_description(opt.split));

  // Which rows kvplan runs (the staggered pass with no terms decides); the others are refused
  // (misses in every table) or excluded (their record is at fault; listed at the end).
  std::map<std::string, std::string> excluded;  // id -> reason
  std::vector<const ServingCase*> runnable;
  std::vector<Result> refused;  // every table's misses
  Regime staggered{Client::kBench, "staggered", {}, {}, {}, {}, {}, {}, {}};
  Regime burst{Client::kBurst, "burst", {}, {}, {}, {}, {}, {}, {}};
  Regime by_release{Client::kByRelease, "by release", {}, {}, {}, {}, {}, {}, {}};
  const std::array<Regime*, 3> regimes{&staggered, &burst, &by_release};  // the start rules fitted
  for (const ServingCase& c : cases) {
    if (c.excluded) {
      excluded[c.gpu + " " + c.id] = c.why_not;
      continue;
    }
    if (!c.why_not.empty()) {
      Prediction p;
      p.error = c.why_not;
      refused.push_back({&c, p});
      continue;
    }
    runnable.push_back(&c);
  }
  if (!shipped_only) {
    std::vector<const ServingCase*> answered;
    for (Result& r : simulate_all(runnable, Client::kBench, [](const ServingCase&) { return Terms{}; })) {
      if (!r.pred.ok) {
        r.pred.error = "kvplan refuses the run: " + r.pred.error;
        refused.push_back(r);
        continue;
      }
      answered.push_back(r.c);
      staggered.none.push_back(r);
    }
    runnable = answered;
  }
  // The shipped pass decides refusals when no other pass runs.
  std::vector<Result> shipped;
  if (shipped_only) {
    std::vector<const ServingCase*> answered;
    for (Result& r : simulate_all(runnable, Client::kAsGiven, [](const ServingCase&) { return std::optional<Terms>{}; })) {
      if (!r.pred.ok) {
        r.pred.error = "kvplan refuses the run: " + r.pred.error;
        refused.push_back(r);
        continue;
      }
      answered.push_back(r.c);
      shipped.push_back(r);
    }
    runnable = answered;
    fmt::print("pass shipped defaults: {} rows simulated, {} refused, {} excluded, {:.1f} s wall\n", runnable.size(),
               refused.size(), excluded.size(), wall());
  } else {
    fmt::print("pass staggered start, no terms: {} rows simulated, {} refused, {} excluded, {:.1f} s wall\n",
               runnable.size(), refused.size(), excluded.size(), wall());
  }

  auto half = [&](const std::vector<Result>& all, bool fit_half) {
    std::vector<Result> out;
    for (const Result& r : all) {
      if (in_fit_half(*r.c) == fit_half) out.push_back(r);
    }
    for (const Result& r : refused) {
      if (in_fit_half(*r.c) == fit_half) out.push_back(r);
    }
    return out;
  };
  auto by_engine = [](const ServingCase& c) { return c.engine; };
  auto by_gpu_engine = [](const ServingCase& c) { return gpu_name(c.gpu) + " " + c.engine; };

  std::map<std::string, const Regime*> chosen;
  if (!shipped_only) {
    burst.none = simulate_all(runnable, Client::kBurst, [](const ServingCase&) { return Terms{}; });
    fmt::print("pass burst start, no terms: {:.1f} s wall\n", wall());
    by_release.none = simulate_all(runnable, Client::kByRelease, [](const ServingCase&) { return Terms{}; });
    fmt::print("pass start by release, no terms: {:.1f} s wall\n", wall());
    std::fflush(stdout);  // progress is visible while the next pass runs
    for (Regime* g : regimes) {
      fit_terms(*g);
      g->fitted = simulate_all(runnable, g->client, [g](const ServingCase& c) { return g->fit.at(c.engine); });
      g->score = fit_half_scores(g->fitted);
      fmt::print("pass {} start + its fitted terms: {:.1f} s wall\n", g->name, wall());
    }
    shipped = simulate_all(runnable, Client::kAsGiven, [](const ServingCase&) { return std::optional<Terms>{}; });
    fmt::print("pass shipped defaults: {:.1f} s wall\n", wall());
    std::fflush(stdout);  // progress is visible while the next pass runs

    // Per engine, the start rule with the smaller fit-half score; on a tie (by release gives every
    // fit row the start of another rule), the shipped rule's name.
    for (const Regime* g : regimes) {
      for (const auto& [engine, score] : g->score) {
        const bool tie = chosen.count(engine) && score == chosen[engine]->score.at(engine);
        if (!chosen.count(engine) || score < chosen[engine]->score.at(engine) ||
            (tie && g->name == shipped_start(engine, *g))) {
          chosen[engine] = g;
        }
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
    for (const Regime* g : regimes) {
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
                                            shipped_start(engine, *g),
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
    fmt::print("\nErrors are (predicted - measured) / measured of the mean TTFT / TPOT; med|e| and p90|e| of the "
               "absolute error, bias = median signed error of the answered runs. rows = answered + refused; a refused "
               "run is a miss: |e| = infinity in med|e| and p90|e| (\"miss\" when the statistic lands on one).\n");
    for (bool fit_half : {true, false}) {
      const std::string h = fit_half ? "FIT half" : "HELD-OUT half";
      for (const Regime* g : regimes) {
        print_table(fmt::format("[{}] {} start, no terms", h, g->name), half(g->none, fit_half), by_gpu_engine);
        print_table(fmt::format("[{}] {} start + its fitted terms", h, g->name), half(g->fitted, fit_half),
                    by_gpu_engine);
      }
      print_table(fmt::format("[{}] per engine the chosen start + its fitted terms (this fit: one set per engine for "
                              "both GPUs)", h),
                  half(chosen_results, fit_half), by_gpu_engine);
      if (fit_half) {
        print_table(fmt::format("[{}] shipped defaults (kvplan simulate with no overhead flags)", h),
                    half(shipped, fit_half), by_gpu_engine);
      }
    }
    for (const auto& [name, key] :
         std::vector<std::pair<std::string, std::function<std::string(const ServingCase&)>>>{
             {"GPU", [](const ServingCase& c) { return gpu_name(c.gpu); }},
             {"GPU and deployment (agg, attention DP, disagg)",
              [](const ServingCase& c) { return gpu_name(c.gpu) + " " + c.deployment; }},
             {"GPU and model family", [](const ServingCase& c) { return gpu_name(c.gpu) + " " + model_family(c); }}}) {
      print_table("[HELD-OUT half] the chosen fit (this fit), by " + name, half(chosen_results, false), key);
    }
  }

  // The held-out half (by the split) with the shipped defaults; --shipped-only adds every row (the
  // shipped terms may have been fitted on another split or file, so all rows are out of their fit).
  const std::string shipped_title = "[HELD-OUT half] shipped defaults";
  auto shown = [&](const std::vector<Result>& all) { return half(all, false); };
  if (shipped_only) {
    std::vector<Result> all = shipped;
    all.insert(all.end(), refused.begin(), refused.end());
    print_table("[ALL rows] shipped defaults, by GPU and engine", all, by_gpu_engine);
    print_table("[ALL rows] shipped defaults, by GPU and deployment", all,
                [](const ServingCase& c) { return gpu_name(c.gpu) + " " + c.deployment; });
  }
  print_table(shipped_title + " (kvplan simulate with no overhead flags), by GPU and engine", shown(shipped),
              by_gpu_engine);
  print_table(shipped_title + ", by GPU", shown(shipped), [](const ServingCase& c) { return gpu_name(c.gpu); });
  print_table(shipped_title + ", by engine", shown(shipped), by_engine);
  print_table(shipped_title + ", by GPU and deployment (agg, attention DP, disagg)", shown(shipped),
              [](const ServingCase& c) { return gpu_name(c.gpu) + " " + c.deployment; });
  print_table(shipped_title + ", by deployment, both GPUs", shown(shipped),
              [](const ServingCase& c) { return c.deployment; });
  print_table(shipped_title + ", by GPU and model family (dense, MoE, MLA + MoE, hybrid, DSA)", shown(shipped),
              [](const ServingCase& c) { return gpu_name(c.gpu) + " " + model_family(c); });
  print_table(shipped_title + ", by engine and model family", shown(shipped),
              [](const ServingCase& c) { return c.engine + " " + model_family(c); });
  print_table(shipped_title + ", by GPU, engine and concurrency per instance", shown(shipped),
              [](const ServingCase& c) { return gpu_name(c.gpu) + " " + c.engine + " " + concurrency_bucket(c); });
  print_table(shipped_title + ", by GPU, engine and model", shown(shipped), [](const ServingCase& c) {
    const auto m = c.memory_flags.find("model");
    return gpu_name(c.gpu) + " " + c.engine + " " + (m == c.memory_flags.end() ? c.model : m->second);
  });

  // The band needs the shipped pass only (--shipped-only --write-band gives the same band faster).
  std::vector<Band> bands;
  std::vector<Result> banded = shipped;
  banded.insert(banded.end(), refused.begin(), refused.end());
  for (const std::string gpu : {"h100-sxm", "h200"}) {
    if (opt.split != SplitRule::kSweep) break;
    const Band band = held_out_band(banded, gpu);
    if (band.rows == 0) continue;
    fmt::print("\nBand {} (held-out p90 |error|, shipped defaults, {} answered runs, {} refused not in it): TTFT "
               "{:.3f}, TPOT {:.3f}\n", gpu, band.rows, band.refused, band.ttft_p90, band.tpot_p90);
    bands.push_back(band);
  }
  if (write_band_flag) {
    for (const Band& band : bands) {
      const std::string path = data + "/profiles/" + band.gpu + ".json";
      try {
        write_band(path, band);
      } catch (const kvplan::ConfigError& e) {
        std::fprintf(stderr, "%s\n", e.what());
        return 2;
      }
      fmt::print("wrote the band into {} (rebuild to embed it)\n", path);
    }
  }

  std::map<std::string, std::vector<std::string>> reasons;
  for (const auto& [id, why] : excluded) reasons[reason_group(why)].push_back(id);
  fmt::print("\nRows excluded, their record at fault (not scored; {}):\n", excluded.size());
  for (const auto& [why, ids] : reasons) {
    fmt::print("- {} ({} rows): ", why, ids.size());
    for (size_t i = 0; i < ids.size(); ++i) fmt::print("{}{}", i ? ", " : "", ids[i]);
    fmt::print("\n");
  }
  std::map<std::string, std::vector<std::string>> refused_reasons;
  for (const Result& r : refused) refused_reasons[reason_group(r.pred.error)].push_back(gpu_name(r.c->gpu) + " " + r.c->id);
  fmt::print("\nRows kvplan refuses (misses in every table; {}):\n", refused.size());
  for (const auto& [why, ids] : refused_reasons) {
    fmt::print("- {} ({} rows): ", why, ids.size());
    for (size_t i = 0; i < std::min<size_t>(ids.size(), 6); ++i) fmt::print("{}{}", i ? ", " : "", ids[i]);
    fmt::print("{}\n", ids.size() > 6 ? ", ..." : "");
  }

  if (!csv_path.empty()) {
    std::ofstream out(csv_path);
    out << "id,gpu,engine,model,deployment,family,half,concurrency,replicas,isl,osl,measured_ttft_ms,measured_tpot_ms,"
           "shipped_ttft_ms,shipped_tpot_ms,notes\n";
    for (const Result& r : shipped) {
      const ServingCase& c = *r.c;
      out << fmt::format("{},{},{},{},{},{},{},{},{},{},{},{:.3f},{:.3f},{:.3f},{:.3f},\"{}\"\n", c.id, c.gpu, c.engine,
                         c.model, c.deployment, model_family(c), in_fit_half(c) ? "fit" : "held-out", c.concurrency,
                         c.replicas, c.isl, c.osl, c.measured_ttft_ms, c.measured_tpot_ms, r.pred.ttft_ms,
                         r.pred.tpot_ms, c.notes);
    }
    fmt::print("\nwrote {}\n", csv_path);
  }
  if (print_rows) {
    for (const Result& r : shipped) {
      const ServingCase& c = *r.c;
      fmt::print("{} {} [{}] TTFT meas {:.1f} pred {:.1f} | TPOT meas {:.2f} pred {:.2f} | {}\n", gpu_name(c.gpu), c.id,
                 in_fit_half(c) ? "fit" : "held-out", c.measured_ttft_ms, r.pred.ttft_ms, c.measured_tpot_ms,
                 r.pred.tpot_ms, c.command());
    }
  }

  const std::vector<Result> pub = validate_public_runs(data);
  print_goals(half(shipped, false), pub);
  fmt::print("\ntotal wall time {:.1f} s\n", wall());
  return 0;
}

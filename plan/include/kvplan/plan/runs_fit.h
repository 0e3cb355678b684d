// kvplan/plan/runs_fit.h — calibrate kvplan to a user's own deployment from the benchmark runs it
// already has (`kvplan calibrate from-runs`, `kvplan.fit_runs`):
//
//   std::vector<calibration::ServingRun> runs = ...;               // calibration/serving_run.h
//   RunsDeployment d = resolve_runs_deployment(runs, {.log = "server.log"});  // model, GPU, engine
//   RunsFit fit = fit_runs(runs, d);                                // step-time factor + serving terms
//   write_file(..., json_text_flat_arrays(runs_profile_json(fit)));  // `--profile FILE` reads it
//
// The fit is the one bench/validate_serving makes on the published H100 set (its steps are
// fit_serving_terms below, shared by both): the step-time factor f and step overhead o by least
// squares of the relative TPOT error (sim::fit_step_terms), then the per-request overhead a and
// per-in-flight overhead b by least absolute relative TTFT error (sim::fit_request_terms, b in ms
// or as a share of the prompt's prefill, the smaller objective kept), refitted once each with the
// other in place. With 4 or more runs a deterministic quarter (calibration::split_hash of the
// run's file name and line) is held out and the errors on it are reported; with fewer the errors
// are in-sample and say so. Runs that contradict each other (the same load twice with results
// more than 1.5x apart; throughput x E2E above the concurrency, Little's law) are refused with
// both named; runs with failed requests are left out with a note.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kvplan/calibration/serving_run.h"
#include "kvplan/plan/settings.h"
#include "kvplan/sim/serving_overheads.h"

namespace kvplan::plan {

struct Scenario;  // scenario.h

// What the start-up log or the command line says about the deployment. Empty: not given.
struct RunsDeploymentOptions {
  std::string log;             // a vLLM / SGLang / TensorRT-LLM start-up log (core/vllm_log.h)
  std::string model, gpu, engine, engine_version;
  int tensor_parallel_size = 0, pipeline_parallel_size = 0;
  SettingValues extra;         // further memory/engine settings by flag name
};

// The deployment a planner scenario describes (the GUI's "Fit to my benchmark runs..."): its model,
// GPU, engine, engine version and parallelism.
RunsDeploymentOptions runs_deployment_options(const Scenario& scenario);

struct RunsDeployment {
  SettingValues flags;   // model, gpu, engine, parallelism, ... by flag name
  std::string model, gpu, engine, engine_version;
  std::vector<std::string> from;  // where each setting came from ("gpu h100-sxm from --gpu")
};

// Refuses (ConfigError naming the field, the CLI exits 2) when the model, the GPU or the engine is
// stated neither by a log, the runs nor the command line, or the runs name different models.
RunsDeployment resolve_runs_deployment(const std::vector<calibration::ServingRun>& runs,
                                       const RunsDeploymentOptions& options);

// The terms a simulation runs with (ms; factors dimensionless).
struct ServingTerms {
  double request_ms = 0, per_in_flight_ms = 0, prefill_share = 0, step_ms = 0, factor = 1.0;
  double prefill_factor = 1.0;  // the prefill part of a step (fit_serving_terms with split_prefill_factor)
  bool operator==(const ServingTerms&) const = default;
};

// One run as the fit sees it: the statistic compared (mean, or median when the file has no mean)
// and the predictions before (shipped defaults) and after the fit.
struct RunPoint {
  const calibration::ServingRun* run = nullptr;
  bool held_out = false;
  std::string ttft_stat, tpot_stat;  // "mean TTFT", "median ITL", ...
  double measured_ttft_ms = 0, measured_tpot_ms = 0;
  double before_ttft_ms = 0, before_tpot_ms = 0, after_ttft_ms = 0, after_tpot_ms = 0;
  double others_in_flight = 0;  // what the per-in-flight term multiplies for this run
  SettingValues sim_flags;      // the run as a kvplan simulation (load, lengths, seed)
};

struct RunErrors {
  size_t runs = 0;
  double ttft_median_abs = 0, ttft_p90_abs = 0, tpot_median_abs = 0, tpot_p90_abs = 0;
};

struct RunsFit {
  RunsDeployment deployment;
  ServingTerms shipped, fitted;  // shipped: the engine's defaults (serving_overheads.h)
  bool prefill_shaped = false;   // the per-in-flight term is a share of the prompt's prefill
  bool held_out = false;         // >= 4 runs: errors on the held-out quarter; else in-sample
  std::vector<RunPoint> points;  // in input order
  RunErrors before, after;       // on the held-out quarter (or in-sample)
  std::vector<std::string> notes;  // runs left out and why; approximations made
};

// Throws ConfigError for contradictory runs (both named), for fewer than 2 usable runs, and for
// runs kvplan cannot simulate (the simulator's own ConfigError, with the run named).
RunsFit fit_runs(const std::vector<calibration::ServingRun>& runs, const RunsDeployment& deployment);

// The staged fit shared with bench/validate_serving, for one engine: `simulate(i, terms)` returns
// row i's predicted {TTFT, TPOT} in ms (nullopt when it cannot run); measured values, the others
// in flight per row and each row's prompt prefilled alone (ms) as the fit needs them.
struct ServingFitRows {
  std::vector<double> measured_ttft_ms, measured_tpot_ms, others_in_flight, prompt_prefill_ms;
  std::vector<bool> step_row;  // rows the terms are fitted on (validate_serving: C <= 128)
  // validate_serving --split-prefill-factor (an experiment): each step row runs once more with the
  // prefill part of every step x 1.25, the difference splits its TPOT into decode and prefill time,
  // and a factor is fitted to each (sim::fit_step_terms with three terms).
  bool split_prefill_factor = false;
};
struct ServingTermsFitResult {
  ServingTerms terms;
  bool prefill_shaped = false;     // the per-in-flight term kept is the prefill-shaped one
  sim::StepTermsFit step;          // the last step fit (rows, the overhead before the o >= 0 rule)
  sim::RequestTermsFit request;    // the last request fit, of the form kept
};
ServingTermsFitResult fit_serving_terms(
    const ServingFitRows& rows,
    const std::function<std::optional<std::pair<double, double>>(size_t, const ServingTerms&)>& simulate);

// The profile file: the GPU's default operator costs, every class labelled "fitted to your runs
// (...)", the band from the held-out (or in-sample) p90 errors, and "serving_fit" with the terms,
// the runs (their dates and loads), the engine, its version and the GPU.
nlohmann::json runs_profile_json(const RunsFit& fit);

// "serving_fit" of a profile file, when it is one `kvplan calibrate from-runs` wrote.
struct RunsProfileTerms {
  ServingTerms terms;
  std::string engine, gpu, label;
};
std::optional<RunsProfileTerms> read_runs_profile_terms(const std::string& path);

// When `profile_path` is such a file: its terms replace the engine's defaults in `o` (before any
// overhead flag, which still wins), each with the source "fitted to your runs (--profile=...)".
// Refused (ConfigError) when the file was fitted to another engine or GPU than the scenario's.
void apply_runs_profile(const std::string& profile_path, const std::string& engine, const std::string& gpu_id,
                        sim::ServingOverheads& o);

// `--explain`: per run measured / before / after, the fitted terms next to the shipped defaults and
// a sentence for each large change.
std::string runs_fit_text(const RunsFit& fit, bool explain);
nlohmann::json runs_fit_json(const RunsFit& fit);

}  // namespace kvplan::plan

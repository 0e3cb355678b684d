// cli/commands.h — the subcommands of `kvplan`: each takes the typed scenario the flags (and any
// --scenario file) describe, asks plan/ for the answer and prints it. Each returns the process exit
// status and throws ConfigError for bad input (main prints it and exits with status 2).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kvplan/core/vllm_log_scenario.h"
#include "kvplan/plan/scenario.h"

namespace kvplan::cli {

int run_models(bool json);
int run_gpus(bool json);

struct MemoryRequest {
  plan::Scenario scenario;
  bool json = false;
  std::string compare;        // KEY=V1,V2,...
  std::string from_vllm_log;  // path
  LogOverrides log_overrides; // --from-vllm-log: the model and GPU when given
};
int run_memory(const MemoryRequest& request);

struct SimRequest {
  plan::Scenario scenario;
  bool json = false;
  std::string out_dir;      // simulate: write summary.json, requests.csv, timeseries.csv here
  double tolerance = 0;     // capacity: relative bracket width at which the search stops
  std::string explain_step; // simulate: "B,C[,P]" explains one step instead of simulating
  std::vector<std::string> compare;  // capacity: KEY=V1,V2,... (several: their cartesian product)
};
int run_simulate(const SimRequest& request);
// `simulate --explain-step B,C[,P]` (explain_step.cpp).
int run_explain_step(const SimRequest& request);
int run_capacity(const SimRequest& request);
// The default run's simulated answer: concurrent chat users under an SLO.
int run_default_users();

// `kvplan plan` (plan_command.cpp): the cheapest deployment for a target load.
struct PlanRequest {
  plan::Scenario scenario;
  double target_users = 0;
  double target_rate = 0;
  std::string gpus;                     // comma-separated presets; "" = every priced preset
  int32_t max_gpus = 0;  // 0: plan's default (8, or per GPU the smallest split that holds the model)
  std::string tp, pp;                   // comma-separated sizes; "" = the defaults
  std::string disaggregation;           // "off,1:1,1:2"; "" = off only
  std::vector<std::string> vary;        // KEY=V1,V2,... (several: every combination)
  std::vector<std::string> gpu_prices;  // GPU=USD
  double tolerance = 0;
  int threads = 1;
  bool json = false;
  bool explain = false;
  bool exact_front = false;
  bool progress = true;
  std::string out_dir;
};
int run_plan(const PlanRequest& request);

// How `kvplan plan` shares its rounds out: one process (threads) by default; under MPI
// (mpi_session.h) every rank takes a share and only the root prints.
struct PlanDistribution {
  std::function<std::vector<nlohmann::json>(const std::vector<size_t>&, const std::function<nlohmann::json(size_t)>&)>
      run_round;                                       // empty: --threads
  bool root = true;                                    // prints and writes --out
  std::function<bool(bool)> any_rank = [](bool b) { return b; };  // Ctrl-C on any rank stops all
  int ranks = 1;
};
PlanDistribution& plan_distribution();

// `kvplan report SCENARIO --pdf F --html F --csv F --json F` (report_command.cpp). --pdf is handed
// to kvplan-report-pdf next to kvplan (gui/); in a build without Qt: prints "PDF needs a build with
// Qt", returns 2 and writes nothing.
struct ReportRequest {
  std::string scenario;
  std::string pdf, html, csv, json;  // empty: not written
};
int run_report(const ReportRequest& request);

// `kvplan calibrate ...` (calibrate_command.cpp).
int run_calibrate_inspect(const std::string& file, bool json);
int run_calibrate_import(const std::string& dest, const std::string& src);
struct CalibrateImportPublishedRequest {
  std::string dir;  // folder of published tables (data/measurements)
  std::string out;  // database to write (created when missing)
  std::string gpu;  // GPU preset: only its tables; "" = every GPU
};
int run_calibrate_import_published(const CalibrateImportPublishedRequest& request);
struct CalibrateFitRequest {
  std::string file;
  std::string run;  // as typed: "" = the newest complete run; "all" = every complete run; "3" or "1,2,5"
  std::string gpu;  // preset the efficiencies are relative to; "" = matched from the run's GPU name
  std::string out;  // PerfProfile JSON
};
int run_calibrate_fit(const CalibrateFitRequest& request);
struct CalibrateRunRequest {
  bool full = false;  // --full grid instead of --quick
  std::string out;
  bool resume = false;
  int device = 0;
  int reps = 0;
  int warmup = 0;
  bool list_only = false;
  std::string kernel;
};
// Without CUDA: prints "this kvplan was built without CUDA; calibration needs a GPU build", returns 2.
int run_calibrate_run(const CalibrateRunRequest& request);

// `kvplan calibrate from-runs FILE...` (calibrate_from_runs.cpp).
struct CalibrateFromRunsRequest {
  std::vector<std::string> files;  // benchmark result files (calibration/serving_run.h)
  std::string log, model, gpu, engine, engine_version;
  int tensor_parallel_size = 0, pipeline_parallel_size = 0;
  std::vector<std::string> where;  // KEY=VALUE: only runs whose top-level field KEY is VALUE
  std::string out;  // the profile file to write ("" = none)
  bool explain = false;
  bool json = false;
};
int run_calibrate_from_runs(const CalibrateFromRunsRequest& request);

}  // namespace kvplan::cli

// kvplan — KV-cache capacity planner. `kvplan` alone runs the default scenario (Llama-3.1-8B on
// one H100 SXM with vLLM defaults); subcommands: models, gpus, memory, simulate, capacity, plan,
// report, calibrate. Flags become a typed plan::Scenario (setting_options.h); memory, simulate and capacity
// take --scenario FILE (kvplan/plan/scenario_file.h): the file's scenario is the base and flags
// typed on the command line override it. The answers, their JSON and text come from plan/.
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "commands.h"
#include "mpi_session.h"
#include "sibling_exec.h"
#include "kvplan/config.h"
#include "kvplan/core/build_info.h"
#include "kvplan/core/atomic_file.h"
#include "kvplan/core/error.h"
#include "kvplan/plan/scenario_file.h"
#include "setting_options.h"

namespace {

constexpr int kBadInput = 2;
constexpr int kInternalError = 70;  // EX_SOFTWARE (sysexits.h)

// A switch or option that is not a setting: its help in the settings' form.
std::string plain_help(const char* description, const char* unit) {
  return fmt::format("{}. Unit: {}.", description, unit);
}

int run_command_line(int argc, char** argv);

}  // namespace

// Runs the command, then checks that everything written to stdout reached it: `kvplan ... >
// /dev/full` or a closed pipe is exit 2 with a message, never a silent success.
int main(int argc, char** argv) {
#ifdef KVPLAN_MPI_MAIN
  kvplan::cli::MpiSession mpi(&argc, &argv);  // kvplan-mpi: this rank's share of `plan`
#else
  if (kvplan::cli::launched_by_mpirun()) {  // mpirun -np N kvplan ...: the MPI build does it
    try {
      kvplan::cli::exec_sibling("kvplan-mpi", std::vector<std::string>(argv + 1, argv + argc),
                                "mpirun needs a build with MPI (KVPLAN_BUILD_MPI=ON, Debian libopenmpi-dev)");
    } catch (const kvplan::ConfigError& e) {
      std::cerr << "kvplan: " << e.what() << "\n";
      return kBadInput;
    }
  }
#endif
  int status = run_command_line(argc, argv);
  try {
    kvplan::check_stdout();
  } catch (const kvplan::ConfigError& e) {
    std::cerr << "kvplan: " << e.what() << "\n";
    return status == 0 ? kBadInput : status;
  }
  return status;
}

namespace {

int run_command_line(int argc, char** argv) {
  CLI::App app{fmt::format("kvplan {} — how many concurrent users fit on this hardware, with this model "
                           "and KV-cache scheme", KVPLAN_VERSION)};
  app.set_help_flag("-h,--help", plain_help("Print this help and exit", "none (a switch)"));
  app.set_version_flag("--version", kvplan::version_stamp());
  app.require_subcommand(0, 1);

  bool json = false;
  auto* models = app.add_subcommand("models", "List model presets");
  models->add_flag("--json", json, plain_help("Print JSON instead of text", "none (a switch)"));
  auto* gpus = app.add_subcommand("gpus", "List GPU presets (datasheet figures with sources)");
  gpus->add_flag("--json", json, plain_help("Print JSON instead of text", "none (a switch)"));

  auto* memory = app.add_subcommand("memory", "Where every byte of GPU memory goes, and how many requests fit");
  kvplan::cli::SettingOptions memory_settings;
  memory_settings.add_to(*memory, kvplan::plan::Command::kMemory);
  kvplan::cli::MemoryRequest request;
  memory->add_flag("--json", request.json, plain_help("Print JSON instead of text", "none (a switch)"));
  memory->add_option("--compare", request.compare,
                     plain_help("Vary one setting, side by side, e.g. kv-cache-dtype=auto,fp8,int4",
                                "KEY=V1,V2,... (a setting and its values)"))
      ->type_name("KEY=V1,V2");
  memory->add_option("--from-vllm-log", request.from_vllm_log,
                     plain_help("A vLLM start-up log: predict its printed figures and compare term by term", "path"))
      ->type_name("FILE");
  std::string scenario_path;
  const std::string scenario_help =
      plain_help("Scenario JSON (docs/reports.md): its settings are the base; flags given here override them", "path");
  memory->add_option("--scenario", scenario_path, scenario_help)->type_name("FILE");

  auto* simulate = app.add_subcommand("simulate", "Simulate serving a workload: latency, throughput, KV memory over time");
  auto* capacity = app.add_subcommand("capacity", "Largest arrival rate or number of users that meets an SLO");
  kvplan::cli::SettingOptions simulate_settings, capacity_settings;
  simulate_settings.add_to(*simulate, kvplan::plan::Command::kSimulate);
  capacity_settings.add_to(*capacity, kvplan::plan::Command::kSimulate);
  kvplan::cli::SimRequest sim_request;
  for (CLI::App* cmd : {simulate, capacity}) {
    cmd->add_flag("--json", sim_request.json, plain_help("Print JSON instead of text", "none (a switch)"));
    cmd->add_option("--scenario", scenario_path, scenario_help)->type_name("FILE");
  }
  simulate->add_option("--out", sim_request.out_dir,
                       plain_help("Write summary.json, requests.csv and timeseries.csv here", "directory"))
      ->type_name("DIR");
  simulate->add_option("--explain-step", sim_request.explain_step,
                       plain_help("B,C[,P]: explain one step (B decode sequences of C tokens, plus a prefill chunk of P "
                                  "tokens) operator by operator, with each term's source, instead of simulating",
                                  "sequences,tokens[,tokens]"))
      ->type_name("B,C[,P]");
  capacity->add_option("--compare", sim_request.compare,
                       plain_help("Vary settings, side by side; repeat for several (every combination), e.g. "
                                  "--compare gpu=h100-sxm,h200 --compare kv-cache-dtype=auto,fp8",
                                  "KEY=V1,V2,... (a setting and its values)"))
      ->type_name("KEY=V1,V2")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  capacity->add_option("--tolerance", sim_request.tolerance,
                       plain_help("Stop when the bracket is this narrow; default 0.02", "relative width"))
      ->type_name("NUMBER");

  auto* plan_cmd = app.add_subcommand(
      "plan", "The cheapest deployment that serves a target load at an SLO: GPUs, parallelism, replicas, cost");
  kvplan::cli::SettingOptions plan_settings;
  plan_settings.add_to(*plan_cmd, kvplan::plan::Command::kSimulate, {"gpu-price"});
  kvplan::cli::PlanRequest plan_request;
  plan_cmd->add_option("--scenario", scenario_path, scenario_help)->type_name("FILE");
  plan_cmd->add_option("--target-users", plan_request.target_users,
                       plain_help("Closed-loop users the deployment must serve (workload with --users or a preset)", "users"))
      ->type_name("N");
  plan_cmd->add_option("--target-rate", plan_request.target_rate,
                       plain_help("Requests per second the deployment must serve (open loop or trace)", "requests/s"))
      ->type_name("R");
  plan_cmd->add_option("--gpus", plan_request.gpus,
                       plain_help("GPU presets to consider, comma-separated; default: every preset with a price", "GPU preset ids"))
      ->type_name("GPU,GPU");
  plan_cmd->add_option("--max-gpus", plan_request.max_gpus,
                       plain_help("Most GPUs per replica (TP x PP); default 0: 8, or per GPU the smallest TP x PP that holds the "
                                  "model. The scenario's own GPU, TP and PP are always searched",
                                  "GPUs"))
      ->type_name("INT");
  plan_cmd->add_option("--tp", plan_request.tp,
                       plain_help("Tensor-parallel sizes to consider; default 1,2,4,... up to --max-gpus", "sizes"))
      ->type_name("N,N");
  plan_cmd->add_option("--pp", plan_request.pp, plain_help("Pipeline-parallel sizes to consider; default 1", "sizes"))
      ->type_name("N,N");
  plan_cmd->add_option("--disaggregation", plan_request.disaggregation,
                       plain_help("Serving splits to consider: 'off' (aggregated) and P:D units of P prefill and D "
                                  "decode engines, e.g. off,1:1,1:2; default off",
                                  "splits"))
      ->type_name("off,P:D");
  plan_cmd->add_option("--vary", plan_request.vary,
                       plain_help("Also vary a setting; repeat for several (every combination), e.g. "
                                  "--vary kv-cache-dtype=auto,fp8 --vary engine=vllm,sglang",
                                  "KEY=V1,V2,... (a setting and its values)"))
      ->type_name("KEY=V1,V2")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  plan_cmd->add_option("--gpu-price", plan_request.gpu_prices,
                       plain_help("A GPU's price over its preset's; repeat or comma-separate, e.g. h200=3.50",
                                  "GPU=USD per GPU-hour"))
      ->type_name("GPU=USD")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  plan_cmd->add_option("--tolerance", plan_request.tolerance,
                       plain_help("Each capacity search stops when its bracket is this narrow; default 0.02", "relative width"))
      ->type_name("NUMBER");
  plan_cmd->add_option("--threads", plan_request.threads,
                       plain_help("Candidates searched at once; the answer is the same for any number; default 1", "threads"))
      ->type_name("INT");
  plan_cmd->add_flag("--explain", plan_request.explain,
                     plain_help("List every candidate with its status and why it lost", "none (a switch)"));
  plan_cmd->add_flag("--exact-front", plan_request.exact_front,
                     plain_help("Search every candidate that could be on the cost/users Pareto front (slower); default: "
                                "the front of the candidates searched for the cheapest", "none (a switch)"));
  plan_cmd->add_flag("--json", plan_request.json, plain_help("Print JSON instead of text", "none (a switch)"));
  plan_cmd->add_option("--out", plan_request.out_dir,
                       plain_help("Write plan.json, candidates.csv and front.csv here", "directory"))
      ->type_name("DIR");

  auto* report = app.add_subcommand("report", "Write a report of a scenario, led by its capacity answer: PDF with charts, HTML with SVG charts, CSV, JSON");
  kvplan::cli::ReportRequest report_request;
  report->add_option("scenario", report_request.scenario, plain_help("Scenario JSON, version 2 or 1 (docs/reports.md)", "path"))
      ->required()
      ->type_name("FILE");
  report->add_option("--pdf", report_request.pdf, plain_help("PDF file to write (builds with Qt)", "path"))->type_name("FILE");
  report->add_option("--html", report_request.html, plain_help("Self-contained HTML file to write", "path"))->type_name("FILE");
  report->add_option("--csv", report_request.csv, plain_help("CSV file to write", "path"))->type_name("FILE");
  report->add_option("--json", report_request.json, plain_help("JSON file to write", "path"))->type_name("FILE");

  auto* calibrate = app.add_subcommand("calibrate", "GPU calibration: measure (GPU builds), inspect, merge and fit databases");
  calibrate->require_subcommand(1, 1);
  std::string cal_file, cal_src;
  bool cal_json = false;
  auto* cal_inspect = calibrate->add_subcommand("inspect", "Runs, GPUs, kernels, rows, CUPTI/event agreement and fits in a database");
  cal_inspect->add_option("file", cal_file, plain_help("Calibration database (.sqlite)", "path"))->required();
  cal_inspect->add_flag("--json", cal_json, plain_help("Print JSON instead of text", "none (a switch)"));
  auto* cal_import = calibrate->add_subcommand("import", "Copy every run of SRC into DEST as new runs (never overwrites)");
  cal_import->add_option("dest", cal_file, plain_help("Destination database (created when missing)", "path"))->required();
  cal_import->add_option("src", cal_src, plain_help("Database to copy from", "path"))->required();
  kvplan::cli::CalibrateImportPublishedRequest published_request;
  auto* cal_published = calibrate->add_subcommand(
      "import-published", "Read published GPU operator tables (data/measurements) into a database as 'published' runs");
  cal_published->add_option("dir", published_request.dir, plain_help("Folder of the tables (data/measurements)", "path"))->required();
  cal_published->add_option("--out", published_request.out, plain_help("Database to write (created when missing)", "path"))->required();
  cal_published->add_option("--gpu", published_request.gpu, plain_help("Only this GPU preset's tables (default: every GPU)", "GPU preset id"));
  kvplan::cli::CalibrateFitRequest fit_request;
  auto* cal_fit = calibrate->add_subcommand("fit", "Fit efficiency curves per operator class; write a PerfProfile JSON");
  cal_fit->add_option("file", fit_request.file, plain_help("Calibration database (.sqlite)", "path"))->required();
  cal_fit->add_option("--run", fit_request.run,
                      plain_help("Run id, ids joined by commas, or 'all' (every complete run, pooled; default: the newest "
                                 "complete run)", "run ids"));
  cal_fit->add_option("--gpu", fit_request.gpu, plain_help("GPU preset the efficiencies are relative to (default: from the run)", "GPU preset id"));
  cal_fit->add_option("--out", fit_request.out, plain_help("PerfProfile JSON to write (use with --profile)", "path"))->required();
  kvplan::cli::CalibrateFromRunsRequest runs_request;
  auto* cal_runs = calibrate->add_subcommand(
      "from-runs", "Fit kvplan to your deployment's own benchmark runs (vllm bench serve, SGLang bench_serving, "
                   "genai-perf/AIPerf, GuideLLM); write a profile for --profile");
  cal_runs->add_option("files", runs_request.files, plain_help("Benchmark result files", "paths"))->required();
  cal_runs->add_option("--log", runs_request.log,
                       plain_help("The server's start-up log (vLLM, SGLang, TensorRT-LLM): model, GPU, parallelism, "
                                  "engine version", "path"));
  cal_runs->add_option("--model", runs_request.model, plain_help("Model (default: the log's, or the runs')", "model preset, HF id or config"));
  cal_runs->add_option("--gpu", runs_request.gpu, plain_help("GPU (default: the log's)", "GPU preset id"));
  cal_runs->add_option("--engine", runs_request.engine, plain_help("Serving engine (default: the log's)", "vllm | sglang | trtllm"));
  cal_runs->add_option("--engine-version", runs_request.engine_version, plain_help("Engine version (default: the log's)", "version"));
  cal_runs->add_option("--tensor-parallel-size", runs_request.tensor_parallel_size,
                       plain_help("Tensor parallel size (default: the log's)", "GPUs"));
  cal_runs->add_option("--pipeline-parallel-size", runs_request.pipeline_parallel_size,
                       plain_help("Pipeline parallel size (default: the log's, else 1)", "stages"));
  cal_runs->add_option("--where", runs_request.where,
                       plain_help("Only the runs whose top-level field KEY is VALUE (e.g. vllm bench serve --metadata); "
                                  "repeatable", "KEY=VALUE"));
  cal_runs->add_option("--out", runs_request.out, plain_help("Profile file to write (use with --profile)", "path"));
  cal_runs->add_flag("--explain", runs_request.explain,
                     plain_help("Every run measured / before / after, the terms against the defaults", "none (a switch)"));
  cal_runs->add_flag("--json", runs_request.json, plain_help("Print JSON instead of text", "none (a switch)"));
  kvplan::cli::CalibrateRunRequest run_request;
  auto* cal_run = calibrate->add_subcommand("run", "Measure this machine's GPU into a database (GPU builds only)");
  bool cal_quick = true;  // the default grid; --full overrides
  cal_run->add_flag("--quick", cal_quick, plain_help("Quick grid (default)", "none (a switch)"));
  cal_run->add_flag("--full", run_request.full, plain_help("Full grid", "none (a switch)"));
  cal_run->add_option("--out", run_request.out, plain_help("Calibration database to write (created when missing)", "path"));
  cal_run->add_flag("--resume", run_request.resume, plain_help("Continue the newest unfinished run in --out", "none (a switch)"));
  cal_run->add_option("--device", run_request.device, plain_help("CUDA device index", "index (0 = first GPU)"));
  cal_run->add_option("--reps", run_request.reps, plain_help("Timed repetitions per shape; 0 means the grid's", "repetitions"));
  cal_run->add_option("--warmup", run_request.warmup, plain_help("Warm-up repetitions per shape; 0 means the grid's", "repetitions"));
  cal_run->add_flag("--list", run_request.list_only, plain_help("Print the shape grid and exit", "none (a switch)"));
  cal_run->add_option("--kernel", run_request.kernel, plain_help("Measure only this kernel id", "kernel id"));

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ValidationError& e) {
    std::cerr << "kvplan: " << kvplan::cli::validation_message(e) << "\n";
    return kBadInput;
  } catch (const CLI::ParseError& e) {
    std::cerr << "kvplan: " << e.what() << "\n";
    return kBadInput;
  }

  try {
    if (models->parsed()) return kvplan::cli::run_models(json);
    if (gpus->parsed()) return kvplan::cli::run_gpus(json);
    kvplan::plan::Scenario scenario;
    kvplan::plan::SettingValues from_file;  // what the file sets (differs from the defaults)
    if (!scenario_path.empty()) {
      const kvplan::plan::ScenarioFile file = kvplan::plan::load_scenario_file(scenario_path);
      const std::string note = kvplan::plan::migration_note(file, scenario_path);
      if (!note.empty()) std::cerr << note << "\n";
      kvplan::plan::validate_scenario_file(file, scenario_path);  // every part, used here or not
      scenario = file.scenario;
      from_file = kvplan::plan::non_default_values(scenario);
    }
    if (memory->parsed()) {
      const kvplan::plan::SettingValues typed = memory_settings.given();
      request.scenario = kvplan::plan::with_values(scenario, typed);
      // --from-vllm-log reads the setup from the log; a model or GPU given here replaces the log's.
      auto set_here = [&](const char* name) { return typed.count(name) > 0 || from_file.count(name) > 0; };
      if (set_here("model")) request.log_overrides.model = request.scenario.model.id;
      if (set_here("gpu")) request.log_overrides.gpu = request.scenario.hardware.gpu;
      return kvplan::cli::run_memory(request);
    }
    if (report->parsed()) return kvplan::cli::run_report(report_request);
    if (cal_inspect->parsed()) return kvplan::cli::run_calibrate_inspect(cal_file, cal_json);
    if (cal_import->parsed()) return kvplan::cli::run_calibrate_import(cal_file, cal_src);
    if (cal_published->parsed()) return kvplan::cli::run_calibrate_import_published(published_request);
    if (cal_fit->parsed()) return kvplan::cli::run_calibrate_fit(fit_request);
    if (cal_run->parsed()) return kvplan::cli::run_calibrate_run(run_request);
    if (cal_runs->parsed()) return kvplan::cli::run_calibrate_from_runs(runs_request);
    if (plan_cmd->parsed()) {
      plan_request.scenario = kvplan::plan::with_values(scenario, plan_settings.given());
      return kvplan::cli::run_plan(plan_request);
    }
    if (simulate->parsed() || capacity->parsed()) {
      const kvplan::cli::SettingOptions& given = simulate->parsed() ? simulate_settings : capacity_settings;
      sim_request.scenario = kvplan::plan::with_values(scenario, given.given());
      if (simulate->parsed() && !sim_request.explain_step.empty()) return kvplan::cli::run_explain_step(sim_request);
      return simulate->parsed() ? kvplan::cli::run_simulate(sim_request) : kvplan::cli::run_capacity(sim_request);
    }
    // No subcommand: the default scenario.
    std::cout << "kvplan default scenario: Llama-3.1-8B on one H100 SXM, vLLM defaults "
                 "(run `kvplan --help` for more)\n\n";
    kvplan::cli::MemoryRequest defaults;
    defaults.scenario.kv_cache.fit_lengths = "lognormal:6.9,1.0";
    int status = kvplan::cli::run_memory(defaults);
    if (status != 0) return status;
    return kvplan::cli::run_default_users();
  } catch (const kvplan::ConfigError& e) {
    std::cerr << "kvplan: " << e.what() << "\n";
    return kBadInput;
  } catch (const std::exception& e) {
    // Last resort. Bad input is always a ConfigError (exit 2); reaching this is a kvplan defect.
    std::cerr << "kvplan: internal error: " << e.what()
              << "\nThis is a bug in kvplan, not in your input. Please report it with the command line and the "
                 "files it names.\n";
    return kInternalError;
  } catch (...) {
    std::cerr << "kvplan: internal error (unknown exception). This is a bug in kvplan; please report it with the "
                 "command line and the files it names.\n";
    return kInternalError;
  }
}

}  // namespace

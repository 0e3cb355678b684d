// The deployment behind a user's benchmark runs (runs_fit.h, resolve_runs_deployment): what the
// start-up log fixes (core/vllm_log.h: model, GPU, parallelism, engine and version, scheduler
// limits), what the command line gives, and what the run files say (the model id the client sent;
// SGLang's native backend names its engine). A setting nobody states is refused, never assumed.
#include <fmt/format.h>

#include "kvplan/core/engine_memory.h"
#include "kvplan/core/error.h"
#include "kvplan/core/presets.h"
#include "kvplan/core/vllm_log.h"
#include "kvplan/core/vllm_log_scenario.h"
#include "kvplan/plan/runs_fit.h"
#include "kvplan/plan/scenario.h"

namespace kvplan::plan {

namespace {

[[noreturn]] void missing(const std::string& field, const std::string& flag, const std::string& why) {
  throw ConfigError(fmt::format("calibrate from-runs: the {} is not stated ({}); give {} or a start-up log with "
                                "--log (vLLM, SGLang or TensorRT-LLM)",
                                field, why, flag));
}

}  // namespace

RunsDeploymentOptions runs_deployment_options(const Scenario& scenario) {
  RunsDeploymentOptions o;
  o.model = scenario.model.id;
  o.gpu = scenario.hardware.gpu;
  o.engine = std::string(engine_name(scenario.engine.name));
  o.engine_version = scenario.engine.version.text();
  o.tensor_parallel_size = scenario.hardware.tensor_parallel_size;
  o.pipeline_parallel_size = scenario.hardware.pipeline_parallel_size;
  return o;
}

RunsDeployment resolve_runs_deployment(const std::vector<calibration::ServingRun>& runs,
                                       const RunsDeploymentOptions& o) {
  RunsDeployment d;
  std::optional<VllmLog> log;
  if (!o.log.empty()) log = load_vllm_log(o.log);

  // Model: --model, else the log, else the runs (all the same).
  std::string run_model;
  for (const calibration::ServingRun& r : runs) {
    if (r.model.empty()) continue;
    if (!run_model.empty() && r.model != run_model && o.model.empty()) {
      throw ConfigError(fmt::format("calibrate from-runs: the runs name different models ('{}' and '{}' in {}); fit one "
                                    "deployment at a time, or give --model",
                                    run_model, r.model, r.id));
    }
    if (run_model.empty()) run_model = r.model;
  }
  // GPU: --gpu, else the log's. The run files never name it.
  if (log) {
    LogOverrides overrides{o.model, o.gpu.empty() ? "" : resolve_gpu(o.gpu).id};
    if (overrides.gpu.empty() && log->kvplan_gpu.empty() && gpu_preset_from_text(log->gpu).empty()) {
      missing("GPU", "--gpu", fmt::format("the log {} does not name it", o.log));
    }
    const LogScenario s = scenario_from_vllm_log(*log, o.log, overrides);
    d.model = s.model.id;
    d.gpu = s.gpu.id;
    d.from.push_back(fmt::format("model {} and GPU {} from {}", d.model, d.gpu, o.model.empty() && o.gpu.empty()
                                                                                   ? "the log " + o.log
                                                                                   : "--model/--gpu and the log"));
  } else {
    if (o.gpu.empty()) missing("GPU", "--gpu", "benchmark result files do not record it");
    d.gpu = resolve_gpu(o.gpu).id;
    const std::string model = !o.model.empty() ? o.model : run_model;
    if (model.empty()) missing("model", "--model", "the run files do not name it");
    d.model = resolve_model(model).id;
    d.from.push_back(fmt::format("GPU {} from --gpu; model {} from {}", d.gpu, d.model,
                                 o.model.empty() ? "the run files" : "--model"));
  }

  // Engine: --engine, else the log's (recognised from its lines), else a run file that names it.
  std::string run_engine;
  for (const calibration::ServingRun& r : runs) {
    if (!r.engine.empty()) run_engine = r.engine;
  }
  d.engine = !o.engine.empty() ? o.engine : log ? log->engine : run_engine;
  if (d.engine.empty()) {
    missing("serving engine", "--engine vllm|sglang|trtllm",
            "vllm bench serve's 'backend' names the client's API, not the server");
  }
  d.engine = std::string(engine_name(parse_engine(d.engine)));  // "tensorrt-llm" -> "trtllm"
  d.engine_version = !o.engine_version.empty() ? o.engine_version : log ? log->version : "";
  if (d.engine == "vllm" && d.engine_version.empty()) {
    missing("vLLM version", "--engine-version", "it selects the V0 or V1 engine's scheduler and memory rules");
  }

  int tp = o.tensor_parallel_size;
  int pp = o.pipeline_parallel_size;
  if (log && tp == 0 && log->tensor_parallel_size) tp = *log->tensor_parallel_size;
  if (log && pp == 0 && log->pipeline_parallel_size) pp = *log->pipeline_parallel_size;
  if (tp == 0) missing("tensor parallel size", "--tensor-parallel-size", "the run files do not record it");

  d.flags["model"] = d.model;
  d.flags["gpu"] = d.gpu;
  d.flags["engine"] = d.engine;
  if (!d.engine_version.empty() && d.engine == "vllm") d.flags["engine-version"] = d.engine_version;
  d.flags["tensor-parallel-size"] = std::to_string(tp);
  if (pp > 1) d.flags["pipeline-parallel-size"] = std::to_string(pp);
  if (log) {
    // The scheduler limits and memory settings the log printed.
    if (log->max_num_seqs) d.flags["max-num-seqs"] = std::to_string(*log->max_num_seqs);
    if (log->max_num_batched_tokens) d.flags["max-num-batched-tokens"] = std::to_string(*log->max_num_batched_tokens);
    if (log->max_model_len) d.flags["max-model-len"] = std::to_string(*log->max_model_len);
    if (log->gpu_memory_utilization) d.flags["gpu-memory-utilization"] = fmt::format("{}", *log->gpu_memory_utilization);
    if (log->enforce_eager && *log->enforce_eager) d.flags["enforce-eager"] = "true";
    if (log->mem_fraction_static) d.flags["mem-fraction-static"] = fmt::format("{}", *log->mem_fraction_static);
    d.from.push_back(fmt::format("engine {} {}, parallelism and scheduler limits from the log {}", d.engine,
                                 d.engine_version, o.log));
  } else {
    d.from.push_back(fmt::format("engine {} {} and tensor parallel size {} from the command line", d.engine,
                                 d.engine_version.empty() ? "(version not stated)" : d.engine_version, tp));
  }
  for (const auto& [k, v] : o.extra) d.flags[k] = v;
  return d;
}

}  // namespace kvplan::plan

// kvplan/core/vllm_log_scenario.h — turns a parsed vLLM start-up log into a kvplan scenario and
// compares kvplan's prediction with what the log printed, term by term.
//
//   VllmLog log = load_vllm_log("run.log");
//   LogScenario s = scenario_from_vllm_log(log, "run.log", {});
//   MemoryPlan plan = plan_memory(s.model, s.gpu, s.scheme, s.parallel, s.serving);
//   for (const LogComparisonRow& r : compare_to_log(log, plan)) ...
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kvplan/core/engine_memory.h"
#include "kvplan/core/vllm_log.h"

namespace kvplan {

struct LogScenario {
  ModelConfig model;
  GpuSpec gpu;
  KvScheme scheme;
  Parallelism parallel;
  ServingConfig serving;
  std::vector<std::string> assumptions;  // settings the log did not state
};

struct LogOverrides {
  std::string model;  // preset id or config path; empty: from the log
  std::string gpu;    // preset id; empty: from the log
};

// `log_path` locates configs named relative to the log (annotation "# kvplan_model:").
// Throws ConfigError when the model or GPU cannot be determined.
LogScenario scenario_from_vllm_log(const VllmLog& log, const std::string& log_path, const LogOverrides& overrides);

// Maps free text such as "NVIDIA H100 80GB HBM3" or "2x A100 40GB" to a GPU preset id ("" if none):
// first a preset id or alias equal to the whole text, or a preset's device name inside it (the
// longest wins), then substring rules for free text.
std::string gpu_preset_from_text(const std::string& text);

struct LogComparisonRow {
  std::string term;
  std::optional<double> printed;  // in `unit`
  double predicted = 0;
  std::string unit;               // "GiB", "tokens", "x"
};

std::vector<LogComparisonRow> compare_to_log(const VllmLog& log, const MemoryPlan& plan);

}  // namespace kvplan

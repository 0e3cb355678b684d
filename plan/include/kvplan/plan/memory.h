// kvplan/plan/memory.h — the analytic answer: where every byte of one GPU goes, how many KV blocks,
// tokens and requests fit (`kvplan memory`), side-by-side comparisons, and a vLLM start-up log
// predicted term by term. Microseconds per answer; no simulation.
//
//   plan::MemoryAnswer a = plan::answer_memory(scenario);
//   a.plan.kv_cache_tokens;                        // vLLM's "GPU KV cache size: N tokens"
//   std::string j = json_text(plan::memory_json(a), 2);   // what `kvplan memory --json` prints
//
// The JSON and text here are what the CLI prints, byte for byte: a C++ program calling these gets
// the CLI's output.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kvplan/core/document_writer.h"
#include "kvplan/core/engine_memory.h"
#include "kvplan/core/vllm_log_scenario.h"
#include "kvplan/plan/scenario.h"
#include "kvplan/plan/settings.h"

namespace kvplan::plan {

struct MemoryAnswer {
  ResolvedScenario scenario;
  MemoryPlan plan;
  KvLayout layout;  // of the plan's pipeline stage
  ParamCount params;
  double kv_bytes_per_token = 0;  // whole model, one copy
  std::optional<DistributionFit> fit;  // with kv_cache.fit_lengths
};

// Throws ConfigError for a scenario that cannot be resolved (resolve()).
MemoryAnswer answer_memory(const Scenario& scenario);
MemoryAnswer answer_memory(const ResolvedScenario& scenario);
nlohmann::json memory_json(const MemoryAnswer& a);
// The same document to any writer (the Python module builds its dict from it without the JSON step).
void write_memory(const MemoryAnswer& a, DocumentWriter& w);
std::string memory_text(const MemoryAnswer& a);  // `kvplan memory` without --json

// One setting varied over several values, every other setting as in the base (`--compare`).
struct MemoryComparison {
  std::string setting;               // its flag, e.g. "kv-cache-dtype"
  std::vector<std::string> values;   // as given
  std::vector<MemoryAnswer> answers;  // same order
};
// `setting` is a flag or file key of a memory setting; throws ConfigError naming it and the value.
MemoryComparison compare_memory(const Scenario& base, const std::string& setting, const std::vector<std::string>& values);
nlohmann::json comparison_json(const MemoryComparison& c);
std::string comparison_text(const MemoryComparison& c);

// A vLLM start-up log: its setup read from the log (model and GPU overridable), its printed figures
// against kvplan's (`kvplan memory --from-vllm-log`).
struct LogCheck {
  std::string log_path;
  VllmLog log;
  LogScenario scenario;
  MemoryPlan plan;
  std::vector<LogComparisonRow> rows;
};
LogCheck check_vllm_log(const std::string& path, const LogOverrides& overrides);
nlohmann::json log_check_json(const LogCheck& c);
std::string log_check_text(const LogCheck& c);

}  // namespace kvplan::plan

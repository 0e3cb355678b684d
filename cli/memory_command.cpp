// `kvplan memory`: the memory breakdown, side-by-side comparisons, and vLLM log checks; `kvplan
// models` and `kvplan gpus`. The answers and their JSON and text are plan/'s.
#include <iostream>

#include <fmt/format.h>

#include "commands.h"
#include "kvplan/core/error.h"
#include "kvplan/core/json_input.h"
#include "kvplan/plan/memory.h"
#include "kvplan/plan/presets.h"
#include "kvplan/plan/settings.h"

namespace kvplan::cli {

namespace {

int run_compare(const MemoryRequest& r) {
  const plan::SettingAxis axis = plan::parse_setting_axis(r.compare, plan::Command::kMemory, "memory");
  const plan::MemoryComparison c = plan::compare_memory(r.scenario, axis.setting, axis.values);
  std::cout << (r.json ? json_text(plan::comparison_json(c), 2) + "\n" : plan::comparison_text(c));
  return 0;
}

}  // namespace

int run_memory(const MemoryRequest& r) {
  if (!r.from_vllm_log.empty()) {
    const plan::LogCheck c = plan::check_vllm_log(r.from_vllm_log, r.log_overrides);
    std::cout << (r.json ? json_text(plan::log_check_json(c), 2) + "\n" : plan::log_check_text(c));
    return 0;
  }
  if (!r.compare.empty()) return run_compare(r);
  const plan::MemoryAnswer a = plan::answer_memory(r.scenario);
  std::cout << (r.json ? json_text(plan::memory_json(a), 2) + "\n" : plan::memory_text(a));
  return 0;
}

int run_models(bool json) {
  std::cout << (json ? json_text(plan::models_json(), 2) + "\n" : plan::models_text());
  return 0;
}

int run_gpus(bool json) {
  std::cout << (json ? json_text(plan::gpus_json(), 2) + "\n" : plan::gpus_text());
  return 0;
}

}  // namespace kvplan::cli

// `kvplan memory`: the memory breakdown, side-by-side comparisons, and vLLM log checks; `kvplan
// models` and `kvplan gpus`. The answers and their JSON and text are plan/'s.
#include <iostream>

#include <fmt/format.h>

#include "commands.h"
#include "kvplan/core/error.h"
#include "kvplan/core/json_input.h"
#include "kvplan/plan/memory.h"
#include "kvplan/plan/presets.h"

namespace kvplan::cli {

namespace {

int run_compare(const MemoryRequest& r) {
  auto eq = r.compare.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == r.compare.size()) {
    throw ConfigError(fmt::format("--compare={} must look like KEY=V1,V2,... e.g. kv-cache-dtype=auto,fp8,int4", r.compare));
  }
  const std::string key = r.compare.substr(0, eq);
  std::vector<std::string> values;
  const std::string rest = r.compare.substr(eq + 1);
  size_t start = 0;
  while (start <= rest.size()) {
    size_t comma = rest.find(',', start);
    values.push_back(rest.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  const plan::MemoryComparison c = plan::compare_memory(r.scenario, key, values);
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

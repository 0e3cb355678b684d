// cli/report_format.h — renders a memory plan as readable text or as JSON.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "kvplan/core/engine_memory.h"
#include "memory_options.h"

namespace kvplan::cli {

struct MemoryAnswer {
  Scenario scenario;
  MemoryPlan plan;
  KvLayout layout;  // of the plan's pipeline stage
  ParamCount params;
  double kv_bytes_per_token = 0;  // whole model, one copy
  std::optional<DistributionFit> fit;
};

MemoryAnswer answer_memory(const Scenario& scenario);
std::string format_memory_text(const MemoryAnswer& a);
nlohmann::json memory_json(const MemoryAnswer& a);
// Human number helpers shared by the commands.
std::string with_commas(int64_t v);
std::string gib_text(int64_t bytes);
std::string parallel_text(const Parallelism& p);  // e.g. tp=4, pp=1, dp=2, ep=8

}  // namespace kvplan::cli

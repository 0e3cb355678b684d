// cli/memory_options.h — the flags of `kvplan memory`, kept as text so --compare can override any
// one of them, and their conversion into a validated scenario.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "flag_parse.h"
#include "kvplan/core/engine_memory.h"

namespace kvplan::cli {


struct Scenario {
  ModelConfig model;
  GpuSpec gpu;
  KvScheme scheme;
  Parallelism parallel;
  ServingConfig serving;
  std::string lengths;  // --lengths spec, empty if none
};

// GpuSpec::usable_memory_source when --gpu-total-memory replaced the preset's total.
inline constexpr std::string_view kGpuTotalMemoryGiven = "given with --gpu-total-memory";

// Names of every flag `memory` accepts that --compare may vary, with their default values.
const FlagDefaults& memory_flag_defaults();

// Throws ConfigError naming the flag, the value and the rule.
Scenario build_scenario(const FlagValues& flags);

}  // namespace kvplan::cli

// cli/scenario_file.h — a scenario saved as JSON: the same flags the CLI takes, so the GUI and
// `kvplan memory|simulate|capacity|report --scenario FILE` read and write one format.
//
//   ScenarioFile s = load_scenario_file("chat.json");            // throws ConfigError naming the field
//   Scenario hw = build_scenario(s.memory_flags);                 // memory_options.h
//   sim::SimulationConfig cfg = build_simulation(hw, s.sim_flags); // sim_options.h
//
// Format (version 1):
//   {"kvplan_scenario": 1, "name": "chat on H100",
//    "memory": {"model": "llama-3.1-8b", "gpu": "h100-sxm", "kv-cache-dtype": "fp8", ...},
//    "simulate": {"users": "64", "think-time": "10", "slo-ttft-ms": "2000", ...},
//    "compare": [{"kv-cache-dtype": "auto"}, {"kv-cache-dtype": "fp8"}]}     // optional, GUI schemes
// Values are strings exactly as typed on the command line (numbers are accepted and converted);
// keys are flag names without "--". Unknown keys are an error that names them.
#pragma once

#include <string>
#include <vector>

#include "flag_parse.h"

namespace kvplan::cli {

struct ScenarioFile {
  std::string name;
  FlagValues memory_flags;
  FlagValues sim_flags;
  std::vector<FlagValues> compare;  // per scheme: memory-flag overrides (may be empty)
};

ScenarioFile load_scenario_file(const std::string& path);
// Every section checked as the command that uses it would check it, whichever command reads the
// file: memory and each compare entry (build_scenario), simulate (build_simulation, traces
// opened). Throws ConfigError "scenario '<origin>': <section>: <message>".
void validate_scenario_file(const ScenarioFile& s, const std::string& origin);
ScenarioFile parse_scenario_json(const std::string& text, const std::string& origin);
std::string scenario_json(const ScenarioFile& s);  // pretty, keys sorted: stable for diffs
void save_scenario_file(const std::string& path, const ScenarioFile& s);

}  // namespace kvplan::cli

// cli/sim_options.h — the flags of `kvplan simulate` and `kvplan capacity` (on top of the memory
// flags, which pick the model, GPU, engine and KV scheme) and their conversion into a validated
// SimulationConfig.
//
//   FlagValues sim = {{"trace", "data/traces/azure_llm_2023_conv.csv"}, {"seed", "7"}};
//   sim::SimulationConfig cfg = build_simulation(build_scenario(memory_flags), sim);
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "memory_options.h"
#include "kvplan/sim/simulation.h"

namespace kvplan::cli {

// Names of every simulation flag with its default ("" = derived from the engine or unset).
const FlagDefaults& sim_flag_defaults();

// Throws ConfigError naming the flag, the value and the rule.
sim::SimulationConfig build_simulation(const Scenario& scenario, const FlagValues& flags);

// Where shipped data (traces) lives: $KVPLAN_DATA_DIR, else the source tree's data/.
std::string data_dir();

}  // namespace kvplan::cli

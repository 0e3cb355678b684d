// Fuzz target: a scenario file (--scenario / kvplan report), then the memory answer and the
// simulation config it describes (not the simulation itself, whose run time grows with the load
// asked for).
#include <cstdint>

#include "fuzz_support.h"
#include "report_format.h"
#include "scenario_file.h"
#include "sim_options.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  kvplan::fuzz::expect_only_config_errors([&] {
    const kvplan::cli::ScenarioFile s = kvplan::cli::parse_scenario_json(text, "fuzz");
    const kvplan::cli::Scenario scenario = kvplan::cli::build_scenario(s.memory_flags);
    (void)kvplan::cli::answer_memory(scenario);
    (void)kvplan::cli::build_simulation(scenario, s.sim_flags);
    (void)kvplan::cli::scenario_json(s);
  });
  return 0;
}

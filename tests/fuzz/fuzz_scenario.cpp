// Fuzz target: a scenario file (--scenario / kvplan report), version 1 or 2, then the memory answer
// and the simulation config it describes (not the simulation itself, whose run time grows with the
// load asked for), and the file written back as version 2 and read again.
#include <cstdint>

#include "fuzz_support.h"
#include "kvplan/plan/memory.h"
#include "kvplan/plan/scenario_file.h"
#include "kvplan/plan/simulate.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  kvplan::fuzz::expect_only_config_errors([&] {
    const kvplan::plan::ScenarioFile s = kvplan::plan::parse_scenario_json(text, "fuzz");
    const std::string v2 = kvplan::plan::scenario_json(s);
    (void)kvplan::plan::parse_scenario_json(v2, "fuzz (written back)");
    (void)kvplan::plan::answer_memory(s.scenario);
    (void)kvplan::plan::simulation_config(s.scenario);
  });
  return 0;
}

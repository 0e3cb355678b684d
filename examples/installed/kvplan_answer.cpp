// examples/installed/kvplan_answer.cpp — a scenario file answered through the installed kvplan
// package (find_package(kvplan), kvplan::plan): the JSON `kvplan memory|simulate --json
// --scenario FILE` prints, byte for byte.
//
//   kvplan_answer memory data/scenarios/chat-h100.json
//   kvplan_answer simulate data/scenarios/chat-h100.json
#include <iostream>
#include <string>

#include "kvplan/core/error.h"
#include "kvplan/core/json_input.h"
#include "kvplan/plan/memory.h"
#include "kvplan/plan/scenario_file.h"
#include "kvplan/plan/simulate.h"

int main(int argc, char** argv) {
  namespace plan = kvplan::plan;
  const std::string answer = argc == 3 ? argv[1] : "";
  if (answer != "memory" && answer != "simulate") {
    std::cerr << "usage: kvplan_answer memory|simulate SCENARIO.json\n";
    return 2;
  }
  try {
    const plan::Scenario s = plan::load_scenario_file(argv[2]).scenario;
    const nlohmann::json j =
        answer == "memory" ? plan::memory_json(plan::answer_memory(s)) : plan::simulation_json(plan::simulate(s));
    std::cout << kvplan::json_text(j, 2) << "\n";
  } catch (const kvplan::ConfigError& e) {  // bad input: the message names the field and the rule
    std::cerr << "kvplan_answer: " << e.what() << "\n";
    return 2;
  }
  return 0;
}

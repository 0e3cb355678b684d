// kvplan/plan/simulate.h — the simulated answers over a Scenario: one serving run (`kvplan
// simulate`), the largest load that meets the SLO (`kvplan capacity`), and the cost of one engine
// step operator by operator (`kvplan simulate --explain-step`).
//
//   plan::Scenario s;  s.workload.users = 64;  s.slo.ttft_ms = 2000;
//   plan::SimulationAnswer run = plan::simulate(s);             // deterministic for a seed
//   plan::CapacityAnswer cap = plan::find_capacity(s);          // bisects on users (or rate)
//   std::string j = json_text(plan::capacity_json(cap), 2);     // what `kvplan capacity --json` prints
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kvplan/plan/binding.h"
#include "kvplan/plan/cost.h"
#include "kvplan/plan/scenario.h"
#include "kvplan/plan/settings.h"
#include "kvplan/sim/capacity.h"
#include "kvplan/sim/cost_model.h"
#include "kvplan/sim/simulation.h"

namespace kvplan::plan {

// The simulator's configuration of a scenario: the memory settings resolved (resolve()), then the
// scheduler, cluster, workload (traces opened), SLO and step-time source. Throws ConfigError naming
// the flag, the value and the rule.
sim::SimulationConfig simulation_config(const Scenario& scenario);
sim::SimulationConfig simulation_config(const Scenario& scenario, const ResolvedScenario& resolved);

// `kvplan` alone: the default Scenario (Llama-3.1-8B on one H100 SXM, vLLM defaults, the chat
// workload preset) with an SLO of p90 TTFT <= 2 s and p90 TPOT <= 100 ms, seed 1. Its workload is
// the one every command, the planner and Python start from: nothing here overrides the preset.
Scenario default_scenario();

// Whether the engine (and version) caches prompt prefixes when --enable-prefix-caching is not
// given: vLLM V1, SGLang and TensorRT-LLM do, vLLM V0 and static batching do not (simulate.cpp
// cites each). A reserving --kv-policy turns the default off (prefix sharing needs paged blocks).
bool engine_prefix_caching_default(const ServingConfig& serving);

struct SimulationAnswer {
  sim::SimulationConfig config;
  sim::SimulationResult result;
  std::string interrupted;  // why the run stopped early ("" = complete)
  DeploymentCost cost;      // the price of every GPU of the run (unpriced when the GPU has none)
};
// One run; `hooks` may stream request records, report progress and stop the run early (then
// `interrupted` should be set by the caller, who knows why).
SimulationAnswer simulate(const Scenario& scenario, const sim::RunHooks& hooks = {});
// summary.json of the run, plus its "cost" (`kvplan simulate --json`).
nlohmann::json simulation_json(const SimulationAnswer& a);
// The run's unit costs: per concurrent user (closed loop) or per request per second served, and
// per million output tokens at the run's throughput.
CostAtLoad simulation_cost(const SimulationAnswer& a);

struct CapacityRequest {
  double tolerance = 0;  // relative bracket width at which the search stops; 0: 0.02
  double start = 0;      // first load tried; 0: 8 users, or 1 request per second
  // After each simulated load; `users`: the load is closed-loop users (else requests per second).
  std::function<void(const sim::CapacityProbe&, bool users)> on_probe;
  // Read during every probe; true abandons the search: find_capacity throws sim::SearchStopped.
  std::function<bool()> should_stop;
  // Simulate the search's likely next load on a second thread meanwhile (sim::CapacityOptions::
  // run_ahead): the same probes and answer, sooner on a machine with a core to spare.
  bool run_ahead = false;
};
struct CapacityAnswer {
  sim::SimulationConfig config;
  bool users = false;  // searched over closed-loop users (else the arrival rate)
  sim::CapacitySearch search;
  std::vector<std::string> warnings;  // the memory plan's (unknown architecture, ...)
  sim::StepTimeSource source;
  MemoryPlan plan;                    // one replica's; when it does not fit nothing is simulated
  BindingConstraint binding;          // which limit binds, and the others' margins at the answer
  DeploymentCost cost;
};
// Throws ConfigError without an SLO target. Weights that leave no KV budget (and no
// --kv-capacity-gib) are an answer, not an error: best 0, binding "weights".
CapacityAnswer find_capacity(const Scenario& scenario, const CapacityRequest& request = {});
nlohmann::json capacity_json(const CapacityAnswer& a);
// The answer's unit costs at its load and throughput.
CostAtLoad capacity_cost(const CapacityAnswer& a);

// Several settings varied together (`capacity --compare KEY=V1,V2 [--compare KEY2=...]`): every
// combination (the cartesian product, first axis slowest), each answered as find_capacity would.
struct CapacityComparison {
  std::vector<SettingAxis> axes;
  std::vector<std::vector<std::string>> combinations;  // one value per axis
  std::vector<CapacityAnswer> answers;                  // same order
};
// Checks every combination (resolve, simulation_config) before simulating any; throws ConfigError
// "--compare KEY=V, ...: <why>" for the first that is bad.
CapacityComparison compare_capacity(const Scenario& base, const std::vector<SettingAxis>& axes,
                                    const CapacityRequest& request = {});
// An array: each combination's capacity_json with "compare": {KEY: V, ...}.
nlohmann::json capacity_comparison_json(const CapacityComparison& c);
// A table: each combination's answer, binding constraint, and costs.
std::string capacity_comparison_text(const CapacityComparison& c);

// One engine step: `batch` decode sequences of `context` tokens each, plus (prefill > 0) one
// prefill chunk of `prefill` new tokens.
struct StepShape {
  int64_t batch = 0;
  int64_t context = 0;
  int64_t prefill = 0;
};
struct StepExplanation {
  StepShape shape;
  sim::SimulationConfig config;
  sim::StepTimeSource source;
  MemoryPlan plan;
  sim::StepBreakdown breakdown;
  sim::TimeNs decode_only_ns = 0;  // the step's decodes alone (the rest is its prefill part)
  std::string weights_note;
  std::vector<std::string> sources;  // per operator class: where its numbers come from
  bool cuda_graphs = false;          // this step replays a CUDA graph
  bool piecewise_graphs = false;     // a step with prefill: everything but attention replays graphs
};
// Throws ConfigError for a step with no work or out of range.
StepExplanation explain_step(const Scenario& scenario, const StepShape& shape);
nlohmann::json step_json(const StepExplanation& e);
std::string step_text(const StepExplanation& e);

}  // namespace kvplan::plan

// kvplan/plan/cost.h — what a deployment costs, and what one unit of its answer costs: per hour
// (every GPU of every replica), per concurrent user (or per request per second of a rate answer),
// and per million output tokens at the answer's throughput. Prices come from the scenario (--gpu-price)
// or the GPU preset (data/gpus/PRICES.md); a GPU without a price gives no figures, never a guess.
//
//   plan::DeploymentCost c = plan::deployment_cost(resolved, config.cluster);   // 8 GPUs x $3.99
//   plan::CostAtLoad at = plan::cost_at_load(c, 120, true, 5400.0);  // 120 users, 5,400 output tok/s
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "kvplan/plan/scenario.h"
#include "kvplan/sim/simulation.h"

namespace kvplan::plan {

struct DeploymentCost {
  int64_t gpus = 0;              // every GPU of every replica (prefill and decode replicas too)
  int64_t gpus_per_replica = 0;
  int64_t replicas = 0;
  std::string gpu;               // preset id
  double usd_per_gpu_hour = 0;   // 0: no price known
  std::string source;            // "given (--gpu-price)" or the preset's price source
  bool priced() const { return usd_per_gpu_hour > 0; }
  double usd_per_hour() const { return usd_per_gpu_hour * static_cast<double>(gpus); }
};
DeploymentCost deployment_cost(const ResolvedScenario& scenario, const sim::ClusterConfig& cluster);

// The answer's unit costs; each is empty when there is no price (or nothing to divide by).
struct CostAtLoad {
  DeploymentCost deployment;
  double load = 0;             // users, or requests per second
  bool users = false;
  double output_tokens_per_s = 0;
  std::optional<double> usd_per_hour;
  std::optional<double> usd_per_load_unit;          // per concurrent user, or per req/s
  std::optional<double> usd_per_million_output_tokens;
};
CostAtLoad cost_at_load(const DeploymentCost& deployment, double load, bool users, double output_tokens_per_s);

// {"gpus", "usd_per_gpu_hour", "usd_per_hour", "usd_per_user" | "usd_per_request_per_s",
//  "usd_per_million_output_tokens", "source", "note"}: null figures when unpriced.
nlohmann::json cost_json(const CostAtLoad& c);
// Two lines: the figures (or why there are none), then the price's source.
std::string cost_text(const CostAtLoad& c);

}  // namespace kvplan::plan

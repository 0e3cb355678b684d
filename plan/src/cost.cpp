// plan/src/cost.cpp — the deployment's price and the answer's unit costs (cost.h).
#include "kvplan/plan/cost.h"

#include <fmt/format.h>

namespace kvplan::plan {

DeploymentCost deployment_cost(const ResolvedScenario& s, const sim::ClusterConfig& cluster) {
  DeploymentCost c;
  c.gpus_per_replica = s.parallel.gpus();
  // Disaggregated: prefill and decode replicas both hold GPUs (the unified count is ignored).
  c.replicas = cluster.prefill_replicas > 0 ? int64_t{cluster.prefill_replicas} + cluster.decode_replicas
                                            : int64_t{cluster.replicas};
  c.gpus = c.gpus_per_replica * c.replicas;
  c.gpu = s.gpu.id;
  c.usd_per_gpu_hour = s.usd_per_gpu_hour;
  c.source = s.price_source;
  return c;
}

CostAtLoad cost_at_load(const DeploymentCost& d, double load, bool users, double output_tokens_per_s) {
  CostAtLoad c;
  c.deployment = d;
  c.load = load;
  c.users = users;
  c.output_tokens_per_s = output_tokens_per_s;
  if (!d.priced()) return c;
  const double per_hour = d.usd_per_hour();
  c.usd_per_hour = per_hour;
  if (load > 0) c.usd_per_load_unit = per_hour / load;
  // Tokens in an hour at this rate: output_tokens_per_s x 3600.
  if (output_tokens_per_s > 0) c.usd_per_million_output_tokens = per_hour / (output_tokens_per_s * 3600.0) * 1e6;
  return c;
}

namespace {

nlohmann::json number_or_null(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

std::string no_price_note(const DeploymentCost& d) {
  return fmt::format("GPU '{}' has no price in its preset; give one with --gpu-price USD (per GPU-hour)", d.gpu);
}

}  // namespace

nlohmann::json cost_json(const CostAtLoad& c) {
  const DeploymentCost& d = c.deployment;
  nlohmann::json j;
  j["gpus"] = d.gpus;
  j["usd_per_gpu_hour"] = d.priced() ? nlohmann::json(d.usd_per_gpu_hour) : nlohmann::json(nullptr);
  j["usd_per_hour"] = number_or_null(c.usd_per_hour);
  j[c.users ? "usd_per_user" : "usd_per_request_per_s"] = number_or_null(c.usd_per_load_unit);
  j["usd_per_million_output_tokens"] = number_or_null(c.usd_per_million_output_tokens);
  j["source"] = d.source;
  j["note"] = d.priced() ? "" : no_price_note(d);
  return j;
}

std::string cost_text(const CostAtLoad& c) {
  const DeploymentCost& d = c.deployment;
  const std::string gpus = fmt::format("{} GPU{} ({} replica{} x {})", d.gpus, d.gpus == 1 ? "" : "s", d.replicas,
                                       d.replicas == 1 ? "" : "s", d.gpus_per_replica);
  if (!d.priced()) return fmt::format("cost: unknown for {} — {}\n", gpus, no_price_note(d));
  std::string out = fmt::format("cost: ${:.2f}/hour for {} at ${:g}/GPU-hour", *c.usd_per_hour, gpus, d.usd_per_gpu_hour);
  if (c.usd_per_load_unit) {
    out += fmt::format("; ${:.4f}/hour per {}", *c.usd_per_load_unit, c.users ? "concurrent user" : "request/s");
  }
  if (c.usd_per_million_output_tokens) {
    out += fmt::format("; ${:.3f} per million output tokens", *c.usd_per_million_output_tokens);
  }
  out += fmt::format("\nprice source: {}\n", d.source);
  return out;
}

}  // namespace kvplan::plan

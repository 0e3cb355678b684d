#include "internal/deployment_space.h"

#include <algorithm>

#include "kvplan/core/error.h"
#include "kvplan/core/presets.h"
#include "kvplan/plan/simulate.h"

namespace kvplan::plan {

namespace {

int32_t largest_power_of_two_at_most(int32_t n) {
  int32_t p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}

const GpuSpec* gpu_preset(const std::string& id) {
  for (const GpuSpec& g : gpu_presets()) {
    if (g.id == id) return &g;
  }
  return nullptr;
}

// The engine would start: the search's own first test (deployment_search.cpp, "does_not_fit").
bool replica_fits(Scenario s, const std::string& gpu, ReplicaSplit split) {
  s.hardware.gpu = gpu;
  s.hardware.tensor_parallel_size = split.tensor_parallel;
  s.hardware.pipeline_parallel_size = split.pipeline_parallel;
  s.hardware.replicas = 1;
  try {
    const ResolvedScenario r = resolve(s);
    const sim::SimulationConfig c = simulation_config(s, r);
    const MemoryPlan plan = plan_memory(c.model, c.gpu, c.scheme, c.parallel, c.serving);
    return plan.fits || c.kv_capacity_bytes > 0;
  } catch (const ConfigError&) {
    return false;  // e.g. heads that TP does not divide: not a split of this model
  }
}

}  // namespace

std::optional<ReplicaSplit> smallest_fitting_split(const Scenario& base, const std::string& gpu) {
  const GpuSpec* spec = gpu_preset(gpu);
  if (spec == nullptr) return std::nullopt;
  // Tensor parallelism within one scale-up domain first (its all-reduces stay on NVLink), then
  // pipeline stages of that width, as large models are served across nodes.
  constexpr int32_t kMaxStages = 8;
  const int32_t domain_tp = largest_power_of_two_at_most(std::max(spec->scale_up_domain_gpus, 1));
  for (int32_t tp = 1; tp <= domain_tp; tp *= 2) {
    if (replica_fits(base, gpu, {tp, 1})) return ReplicaSplit{tp, 1};
  }
  for (int32_t pp = 2; pp <= kMaxStages; pp *= 2) {
    if (replica_fits(base, gpu, {domain_tp, pp})) return ReplicaSplit{domain_tp, pp};
  }
  return std::nullopt;
}

namespace internal {

GpuSplits gpu_splits(const DeploymentSearch& q, const std::string& gpu) {
  GpuSplits out;
  const DeploymentSpace& space = q.space;
  std::optional<ReplicaSplit> fit;
  out.max_gpus = space.max_gpus;
  if (space.max_gpus == 0) {
    out.max_gpus = kDefaultMaxGpusPerReplica;
    fit = smallest_fitting_split(q.base, gpu);
    if (fit && fit->gpus() > out.max_gpus) {
      out.max_gpus = fit->gpus();
      out.fitted = true;
    }
  }
  std::vector<int32_t> tps = space.tensor_parallel;
  if (tps.empty()) {
    // Powers of two up to the limit; with the default limit, TP stays within max(8, the domain).
    int32_t tp_limit = out.max_gpus;
    if (space.max_gpus == 0) {
      const GpuSpec* spec = gpu_preset(gpu);
      tp_limit = std::min(tp_limit, std::max(kDefaultMaxGpusPerReplica, spec != nullptr ? spec->scale_up_domain_gpus : 0));
    }
    for (int32_t tp = 1; tp <= tp_limit; tp *= 2) tps.push_back(tp);
  }
  const std::vector<int32_t> pps = space.pipeline_parallel.empty() ? std::vector<int32_t>{1} : space.pipeline_parallel;
  auto listed = [&out](ReplicaSplit s) {
    return std::any_of(out.splits.begin(), out.splits.end(), [s](const ReplicaSplit& t) {
      return t.tensor_parallel == s.tensor_parallel && t.pipeline_parallel == s.pipeline_parallel;
    });
  };
  for (int32_t tp : tps) {
    for (int32_t pp : pps) {
      if (static_cast<int64_t>(tp) * pp <= out.max_gpus) out.splits.push_back({tp, pp});
    }
  }
  // The split that holds the model, when the default lists lack it (a PP of 2 or more).
  if (fit && space.tensor_parallel.empty() && space.pipeline_parallel.empty() && !listed(*fit)) out.splits.push_back(*fit);
  // The scenario's own deployment is always a candidate on its GPU: the question "is mine the
  // cheapest?" must have an answer whatever the space.
  const ReplicaSplit own{q.base.hardware.tensor_parallel_size, q.base.hardware.pipeline_parallel_size};
  if (gpu == q.base.hardware.gpu && !listed(own)) {
    out.splits.push_back(own);
    out.added_scenario_split = true;
  }
  return out;
}

}  // namespace internal

}  // namespace kvplan::plan

// What one pool of identical engine instances runs with (internal/engine_pool.h).
#include "internal/engine_pool.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "kvplan/core/error.h"

namespace kvplan::sim::internal {

SchedulerConfig resolve_scheduler(SchedulerConfig s, const MemoryPlan& plan, int64_t max_model_len) {
  if (s.max_num_seqs <= 0) s.max_num_seqs = plan.max_num_seqs;
  if (s.max_num_batched_tokens <= 0) s.max_num_batched_tokens = plan.max_num_batched_tokens;
  if (s.max_model_len <= 0) s.max_model_len = max_model_len;
  if (!s.chunked_prefill) s.max_num_batched_tokens = std::max(s.max_num_batched_tokens, s.max_model_len);
  if (s.kind == SchedulerKind::kStatic) s.max_num_batched_tokens = std::numeric_limits<int32_t>::max();
  validate(s);
  return s;
}

int64_t pool_kv_capacity(const MemoryPlan& plan, KvPolicy policy) {
  return policy == KvPolicy::kPaged ? plan.num_blocks * plan.block_bytes : plan.kv_budget_bytes;
}

std::string describe_pool(int32_t engines, const Parallelism& p) {
  return fmt::format("{} engine(s) of tp {} pp {}{}{}", engines, p.tensor_parallel, p.pipeline_parallel,
                     p.data_parallel > 1 ? fmt::format(" (one attention-DP rank of {})", p.data_parallel) : "",
                     p.expert_parallel ? fmt::format(", experts over {} {}", p.expert_parallel_size(),
                                                     p.expert_tensor_parallel() > 1 ? "groups" : "GPUs")
                                       : "");
}

std::optional<PrefillPool> build_prefill_pool(const SimulationConfig& cfg, const SchedulerConfig& decode,
                                              const PerfProfile& profile) {
  if (cfg.cluster.prefill_replicas <= 0 || !cfg.cluster.prefill_parallel) return std::nullopt;
  const Parallelism& p = *cfg.cluster.prefill_parallel;
  const Parallelism& d = cfg.parallel;
  if (p.tensor_parallel == d.tensor_parallel && p.pipeline_parallel == d.pipeline_parallel &&
      p.data_parallel == d.data_parallel && p.expert_parallel == d.expert_parallel &&
      p.expert_parallel_size() == d.expert_parallel_size()) {
    return std::nullopt;
  }
  validate_split(cfg.model, p, cfg.serving.weights);
  const MemoryPlan plan = plan_memory(cfg.model, cfg.gpu, cfg.scheme, p, cfg.serving);
  if (!plan.fits) {
    throw ConfigError(fmt::format("scenario: the prefill pool ({} GPUs per engine) of {} on {} does not fit: {}",
                                  p.tensor_parallel * p.pipeline_parallel, cfg.model.name, cfg.gpu.name,
                                  plan.problems.empty() ? std::string("no KV budget") : plan.problems.front()));
  }
  PrefillPool pool;
  pool.parallel = p;
  pool.layout = std::make_unique<KvLayout>(build_kv_layout(cfg.model, cfg.scheme, p, plan.pipeline_stage));
  pool.kv_capacity_bytes = pool_kv_capacity(plan, cfg.kv_policy);
  // The decode pool's max_model_len: a request either pool would refuse is refused at arrival.
  pool.scheduler = resolve_scheduler(cfg.scheduler, plan, decode.max_model_len);
  if (!cfg.step_timer) {
    CostOptions cost = cfg.cost;
    cost.weights = cfg.serving.weights;
    pool.cost = std::make_shared<StepCostModel>(cfg.model, cfg.gpu, cfg.scheme, p, profile, cost);
  }
  return pool;
}

}  // namespace kvplan::sim::internal

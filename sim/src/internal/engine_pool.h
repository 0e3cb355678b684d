// sim/src/internal/engine_pool.h — what one pool of identical engine instances runs with, given its
// parallelism: KV capacity, scheduler limits, and, for a disaggregated prefill pool with its own
// parallelism, its memory plan, KV layout and step costs.
//
//   const SchedulerConfig decode = resolve_scheduler(cfg.scheduler, plan, plan.max_model_len);
//   std::optional<PrefillPool> pool = build_prefill_pool(cfg, decode, profile);  // nullopt: same as decode
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "kvplan/core/kv_layout.h"
#include "kvplan/core/engine_memory.h"
#include "kvplan/core/parallelism.h"
#include "kvplan/sim/cost_model.h"
#include "kvplan/sim/kv_manager.h"
#include "kvplan/sim/scheduler_config.h"
#include "kvplan/sim/simulation.h"

namespace kvplan::sim::internal {

// The scheduler limits an engine of this memory plan runs under: each one the user left at 0 takes
// the plan's (the engine's default), `max_model_len` when none was given; without chunked prefill a
// step must hold a whole prompt; static batching has no token budget. Validated.
SchedulerConfig resolve_scheduler(SchedulerConfig s, const MemoryPlan& plan, int64_t max_model_len);

// KV bytes one engine of this plan caches: whole blocks under paged KV, the budget otherwise.
int64_t pool_kv_capacity(const MemoryPlan& plan, KvPolicy policy);

// "2 engine(s) of tp 8 pp 1 (one attention-DP rank of 8), experts over 64 GPUs"
std::string describe_pool(int32_t engines, const Parallelism& parallel);

// A disaggregated deployment's prefill pool with a parallelism of its own.
struct PrefillPool {
  Parallelism parallel;
  std::unique_ptr<KvLayout> layout;
  int64_t kv_capacity_bytes = 0;
  SchedulerConfig scheduler;
  std::shared_ptr<StepCostModel> cost;  // null when a substituted StepTimer times every step
};

// The prefill pool when cfg.cluster.prefill_parallel differs from cfg.parallel; nullopt when the
// prefill engines are laid out as the decode ones (they share its plan, layout and costs). Throws
// ConfigError when the split is refused or the pool's engines do not fit.
std::optional<PrefillPool> build_prefill_pool(const SimulationConfig& cfg, const SchedulerConfig& decode,
                                              const PerfProfile& profile);

}  // namespace kvplan::sim::internal

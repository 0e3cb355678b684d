#include "kvplan/sim/scheduler_config.h"

#include <fmt/format.h>

#include "kvplan/core/error.h"

namespace kvplan::sim {

std::string_view scheduler_kind_name(SchedulerKind kind) {
  switch (kind) {
    case SchedulerKind::kStatic: return "static";
    case SchedulerKind::kOrca: return "orca";
    case SchedulerKind::kVllm: return "vllm";
    case SchedulerKind::kSglang: return "sglang";
    case SchedulerKind::kTrtllm: return "trtllm";
  }
  return "?";
}

SchedulerKind parse_scheduler_kind(std::string_view text) {
  if (text == "static") return SchedulerKind::kStatic;
  if (text == "orca") return SchedulerKind::kOrca;
  if (text == "vllm") return SchedulerKind::kVllm;
  if (text == "sglang") return SchedulerKind::kSglang;
  if (text == "trtllm") return SchedulerKind::kTrtllm;
  throw ConfigError(fmt::format("scheduler: value '{}' must be one of static, orca, vllm, sglang, trtllm", text));
}

std::string_view capacity_policy_name(CapacityPolicy policy) {
  return policy == CapacityPolicy::kMaxUtilization ? "max_utilization" : "guaranteed_no_evict";
}

CapacityPolicy parse_capacity_policy(std::string_view text) {
  if (text == "guaranteed_no_evict") return CapacityPolicy::kGuaranteedNoEvict;
  if (text == "max_utilization") return CapacityPolicy::kMaxUtilization;
  throw ConfigError(fmt::format("capacity-scheduler-policy: value '{}' must be guaranteed_no_evict or max_utilization", text));
}

std::string_view preemption_mode_name(PreemptionMode mode) {
  return mode == PreemptionMode::kSwap ? "swap" : "recompute";
}

PreemptionMode parse_preemption_mode(std::string_view text) {
  if (text == "recompute") return PreemptionMode::kRecompute;
  if (text == "swap") return PreemptionMode::kSwap;
  throw ConfigError(fmt::format("preemption: value '{}' must be recompute or swap", text));
}

void validate(const SchedulerConfig& c) {
  if (c.max_num_seqs < 1) throw ConfigError(fmt::format("max-num-seqs: {} must be >= 1", c.max_num_seqs));
  if (c.max_num_batched_tokens < 1) {
    throw ConfigError(fmt::format("max-num-batched-tokens: {} must be >= 1", c.max_num_batched_tokens));
  }
  if (c.max_model_len < 2) throw ConfigError(fmt::format("max-model-len: {} must be >= 2", c.max_model_len));
  if (!c.chunked_prefill && c.max_num_batched_tokens < c.max_model_len) {
    throw ConfigError(fmt::format("max-num-batched-tokens: {} must be >= max-model-len={} without chunked "
                                  "prefill (a whole prompt must fit in one step)",
                                  c.max_num_batched_tokens, c.max_model_len));
  }
  if (c.max_prefill_tokens < 1) {
    throw ConfigError(fmt::format("max-prefill-tokens: {} must be >= 1", c.max_prefill_tokens));
  }
  if (c.kind == SchedulerKind::kTrtllm && c.preemption == PreemptionMode::kSwap) {
    throw ConfigError("preemption: swap is vLLM V0's; scheduler trtllm pauses requests and recomputes them (use recompute)");
  }
  const SpecDecodeConfig& s = c.spec;
  if (s.draft_tokens < 0 || s.draft_tokens > 16) {
    throw ConfigError(fmt::format("spec-draft-tokens: {} must be in [0, 16]", s.draft_tokens));
  }
  if (!(s.acceptance_rate >= 0 && s.acceptance_rate <= 1)) {
    throw ConfigError(fmt::format("spec-acceptance: {} must be in [0, 1]", s.acceptance_rate));
  }
  if (!(s.draft_cost_ratio >= 0 && s.draft_cost_ratio <= 1)) {
    throw ConfigError(fmt::format("spec-draft-cost: {} must be in [0, 1]", s.draft_cost_ratio));
  }
}

}  // namespace kvplan::sim

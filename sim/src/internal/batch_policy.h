// sim/src/internal/batch_policy.h — how one engine forms the batch of its next step.
//
//   std::unique_ptr<BatchPolicy> p = make_batch_policy(config);   // from SchedulerConfig::kind
//   p->plan_step(core, now);   // once per step: fills core.plan, may admit, preempt, retract
//
// One implementation per engine, each in its own file and each rule citing the engine source it
// follows: policy_static.cpp (Hugging Face generate), policy_orca.cpp (Orca), policy_vllm.cpp (vLLM
// V1), policy_sglang.cpp (SGLang), policy_trtllm.cpp (TensorRT-LLM). One virtual call per step,
// never per token. The step loop that calls it (replica.cpp) knows no engine.
#pragma once

#include <memory>

#include "internal/replica_core.h"

namespace kvplan::sim::internal {

class BatchPolicy {
 public:
  explicit BatchPolicy(PolicyTraits traits) : traits_(traits) {}
  virtual ~BatchPolicy() = default;
  BatchPolicy(const BatchPolicy&) = delete;
  BatchPolicy& operator=(const BatchPolicy&) = delete;

  // Forms the next step's batch in core.plan (empty: nothing to run now).
  virtual void plan_step(ReplicaCore& core, TimeNs now) = 0;
  const PolicyTraits& traits() const { return traits_; }

 private:
  PolicyTraits traits_;
};

std::unique_ptr<BatchPolicy> make_static_policy();
std::unique_ptr<BatchPolicy> make_orca_policy();
std::unique_ptr<BatchPolicy> make_vllm_policy();
// vLLM V1's running-first loop with other traits (Orca reuses it with a reservation).
std::unique_ptr<BatchPolicy> make_running_first_policy(PolicyTraits traits);
std::unique_ptr<BatchPolicy> make_sglang_policy();
std::unique_ptr<BatchPolicy> make_trtllm_policy();

// SGLang's current new_token_ratio (policy_sglang.cpp, rules 4-5); -1 for another policy. For tests
// and explanations.
double sglang_new_token_ratio(const BatchPolicy& policy);

// The policy of config.kind.
std::unique_ptr<BatchPolicy> make_batch_policy(const SchedulerConfig& config);

}  // namespace kvplan::sim::internal

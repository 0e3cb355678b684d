// vLLM V1, as vllm/v1/core/sched/scheduler.py (Scheduler.schedule) forms a step:
//  1. One token budget per step, max_num_batched_tokens (`token_budget =
//     self.max_num_scheduled_tokens`), and at most max_num_seqs running requests
//     (`max_num_running_reqs`). There is no prefill/decode phase: every request just has tokens to
//     compute, and a step may mix prefill chunks with decode tokens.
//  2. Running requests first, in admission order ("First, schedule the RUNNING requests"): each
//     gets min(its tokens left, the budget left); with chunked prefill a prompt that does not fit is
//     cut to the budget (a long prompt runs as several chunks over several steps).
//  3. When a running request's next KV block cannot be allocated, the lowest-priority running
//     request is preempted — under FCFS the last admitted (`self.running.pop()`) — its blocks freed
//     and the request put back at the head of the waiting queue to be recomputed
//     (`_preempt_request`: PreemptionMode RECOMPUTE; V1 has no swap; kvplan's --preemption swap is
//     vLLM V0's). If the request itself was the victim it is not scheduled this step.
//  4. Only if nothing was preempted this step ("Next, schedule the WAITING requests" runs under
//     `if not preempted_reqs`), waiting requests FCFS from the head while the budget and
//     max_num_seqs allow; without chunked prefill a prompt larger than the budget left stops the
//     scan (`if not self.scheduler_config.chunked_prefill_enabled and num_new_tokens > token_budget:
//     break`). A request whose blocks cannot be allocated stops it too (FCFS: the head blocks).
//  5. Async scheduling (vllm/v1/core/sched/async_scheduler.py; on by default from vLLM 0.14, PR
//     #27614, "enable async scheduling by default"): the scheduler runs one step ahead of the GPU
//     (SchedulerConfig::overlap, applied by the step loop in replica.cpp).
// The CUDA-graph mode of the steps this forms (full graphs for decode-only steps, piecewise for
// mixed ones) is the cost model's (CostOptions::mixed_step_graphs).
#include "internal/batch_policy.h"

#include <algorithm>

namespace kvplan::sim::internal {
namespace {

class VllmPolicy final : public BatchPolicy {
 public:
  explicit VllmPolicy(PolicyTraits traits) : BatchPolicy(traits) {}

  void plan_step(ReplicaCore& r, TimeNs now) override {
    int64_t budget = r.cfg().max_num_batched_tokens;
    const int64_t q = r.decode_query_tokens();
    const int64_t preemptions_before = r.stats.preemptions;
    // 2-3: running requests first.
    for (size_t i = 0; i < r.running.size() && budget > 0; ++i) {
      Seq& s = r.seqs[r.running[i]];
      int64_t tokens = q;
      const bool decode = !s.prefilling();
      if (!decode) {
        tokens = s.prefill_target - s.kv_tokens;
        if (r.cfg().chunked_prefill) {
          tokens = std::min(tokens, budget);
        } else if (tokens > budget) {
          continue;
        }
      } else if (tokens > budget) {
        continue;
      }
      if (!r.ensure_capacity(i, s.kv_tokens + tokens)) break;
      r.add(r.running[i], tokens, decode);
      budget -= tokens;
    }
    // 4: waiting requests only when nothing was preempted (swapped ones first: vLLM V0's swap).
    if (r.stats.preemptions != preemptions_before) return;
    r.swap_in(budget);
    if (r.swapped.empty()) r.admit_new(budget, now);
  }
};

}  // namespace

std::unique_ptr<BatchPolicy> make_vllm_policy() {
  return std::make_unique<VllmPolicy>(PolicyTraits{.reserves = false, .whole_batch = false});
}

std::unique_ptr<BatchPolicy> make_running_first_policy(PolicyTraits traits) {
  return std::make_unique<VllmPolicy>(traits);
}

}  // namespace kvplan::sim::internal

// TensorRT-LLM in-flight batching, as its batch manager forms a step: first the capacity scheduler
// picks the requests that may hold KV (cpp/tensorrt_llm/batch_manager/capacityScheduler.cpp), then
// the micro-batch scheduler fits them into one forward pass (microBatchScheduler.cpp); the PyTorch
// executor runs the loop (tensorrt_llm/_torch/pyexecutor/py_executor.py).
//  1. Capacity, GUARANTEED_NO_EVICT (the default, CapacitySchedulerPolicy): every request in
//     progress is kept and the KV it still needs to finish (prompt + max output) is set aside
//     (`reservedBlocks.decrementReservedBlocks` over the in-progress requests,
//     NoEvictScheduledBlocksManager); a new request is started only if the KV it needs to finish
//     fits in what is left (`enoughAvailableBlocks`: getRemainingBlocksToCompletion), in arrival
//     order; the first that does not fit stops the scan ("If one requests fails to be scheduled,
//     break"). Nothing is ever evicted.
//  2. Capacity, MAX_UTILIZATION: requests are started while their next step's KV fits
//     (MaxUtilizationScheduledBlocksManager); when a started one cannot get its next block, the last
//     started request is paused (`schedulingRemoveSequence`, its KV freed, recomputed later).
//  3. Micro-batch: at most max_batch_size requests (max_num_seqs here) and max_num_tokens tokens
//     (max_num_batched_tokens) per step; generation requests take one token each (k + 1 with
//     drafts); context requests take their prompt, or with chunked context (enable_chunked_prefill,
//     off by default in the LLM API) a chunk of the tokens left over once the generation requests
//     are counted (`setCtxRequestsChunkSize`, FIRST_COME_FIRST_SERVED). Without chunking a prompt
//     that does not fit the tokens left waits for a later step.
//  4. The overlap scheduler (py_executor.py `_executor_loop_overlap`, on unless
//     disable_overlap_scheduler): step n+1 is scheduled and launched before the results of step n
//     are processed (SchedulerConfig::overlap, applied by the step loop in replica.cpp).
#include "internal/batch_policy.h"

#include <algorithm>

#include "kvplan/core/kv_layout.h"

namespace kvplan::sim::internal {
namespace {

class TrtllmPolicy final : public BatchPolicy {
 public:
  TrtllmPolicy() : BatchPolicy(PolicyTraits{.reserves = false, .whole_batch = false}) {}

  void plan_step(ReplicaCore& r, TimeNs now) override {
    if (r.cfg().capacity == CapacityPolicy::kGuaranteedNoEvict) {
      plan_no_evict(r, now);
    } else {
      plan_max_utilization(r, now);
    }
  }

 private:
  // Bytes of KV the sequence still needs to reach its final length (rule 1's
  // getRemainingBlocksToCompletion, in bytes of the layout).
  static int64_t bytes_to_completion(const ReplicaCore& r, const Seq& s) {
    const int64_t final_bytes = r.setup.layout->request_bytes(s.spec.total_tokens());
    return std::max<int64_t>(0, final_bytes - r.setup.layout->request_bytes(std::max(s.capacity, s.kv_tokens)));
  }

  // Rule 3 for the requests already running: generation first, then context chunks in order.
  static void plan_running(ReplicaCore& r, int64_t& budget, bool may_preempt) {
    const int64_t q = r.decode_query_tokens();
    for (int pass = 0; pass < 2; ++pass) {  // 0: generation requests, 1: context requests
      for (size_t i = 0; i < r.running.size() && budget > 0; ++i) {
        Seq& s = r.seqs[r.running[i]];
        const bool decode = !s.prefilling();
        if (decode != (pass == 0)) continue;
        int64_t tokens = decode ? q : s.prefill_target - s.kv_tokens;
        if (!decode && r.cfg().chunked_prefill) tokens = std::min(tokens, budget);
        if (tokens > budget) continue;
        if (may_preempt) {
          if (!r.ensure_capacity(i, s.kv_tokens + tokens)) return;
        } else if (s.capacity < s.kv_tokens + tokens) {
          const int64_t cap = r.kv->grow(s.spec.id, s.kv_tokens + tokens);
          if (cap < 0) continue;  // cannot happen when rule 1 holds; the request waits a step
          s.capacity = cap;
        }
        r.add(r.running[i], tokens, decode);
        budget -= tokens;
      }
    }
  }

  void plan_no_evict(ReplicaCore& r, TimeNs now) {
    int64_t budget = r.cfg().max_num_batched_tokens;
    plan_running(r, budget, false);
    const KvLayout* layout = r.setup.layout;
    int64_t available = 0;
    if (layout != nullptr) {
      const KvUsage u = r.kv->usage();
      available = u.free_bytes + u.cached_bytes;
      for (int32_t slot : r.running) available -= bytes_to_completion(r, r.seqs[slot]);
    }
    while (!r.waiting.empty() && !r.at_seq_limit() && budget > 0 && r.visible(0)) {
      const Seq& w = r.seqs[r.waiting.front()];
      const int64_t need = layout != nullptr ? layout->request_bytes(w.spec.total_tokens()) : 0;
      if (layout != nullptr && need > available) {
        r.kv_blocked = true;
        break;
      }
      if (!r.admit_waiting(0, budget, now)) break;
      available -= need;
    }
  }

  void plan_max_utilization(ReplicaCore& r, TimeNs now) {
    int64_t budget = r.cfg().max_num_batched_tokens;
    const int64_t preemptions_before = r.stats.preemptions;
    plan_running(r, budget, true);
    if (r.stats.preemptions != preemptions_before) return;
    r.admit_new(budget, now);
  }
};

}  // namespace

std::unique_ptr<BatchPolicy> make_trtllm_policy() { return std::make_unique<TrtllmPolicy>(); }


}  // namespace kvplan::sim::internal

// Static batching, as Hugging Face `generate` does it: a batch of up to max_num_seqs waiting
// requests is prefilled together (prompts padded to the longest: PolicyTraits::whole_batch, costed
// in replica.cpp) and decoded until its longest member finishes; new arrivals wait for the next
// batch. Memory: contiguous max-length reservation (PolicyTraits::reserves).
#include <limits>

#include "internal/batch_policy.h"

namespace kvplan::sim::internal {
namespace {

class StaticPolicy final : public BatchPolicy {
 public:
  StaticPolicy() : BatchPolicy(PolicyTraits{.reserves = true, .whole_batch = true}) {}

  void plan_step(ReplicaCore& r, TimeNs now) override {
    if (!r.running.empty()) {
      for (int32_t slot : r.running) r.add(slot, 1, true);  // finished members still compute (padding)
      return;
    }
    int64_t budget = std::numeric_limits<int64_t>::max();
    while (!r.waiting.empty() && !r.at_seq_limit() && r.visible(0)) {
      if (!r.admit_waiting(0, budget, now)) break;
    }
  }
};

}  // namespace

std::unique_ptr<BatchPolicy> make_static_policy() { return std::make_unique<StaticPolicy>(); }

}  // namespace kvplan::sim::internal

// Orca (Yu et al., OSDI 2022, "Orca: A Distributed Serving System for Transformer-Based Generative
// Models", §3.1-3.2): iteration-level scheduling. Requests join and leave the batch at every step;
// running requests first, then waiting ones FCFS, within a token budget and max_num_seqs. That is
// vLLM V1's loop (policy_vllm.cpp) with two differences: a prompt is prefilled whole in one step (the
// config forbids chunking for orca), and admission reserves the request's maximum length
// (PolicyTraits::reserves), so a running request never runs out of KV and is never preempted.
#include "internal/batch_policy.h"

namespace kvplan::sim::internal {

std::unique_ptr<BatchPolicy> make_orca_policy() {
  return make_running_first_policy(PolicyTraits{.reserves = true, .whole_batch = false});
}

}  // namespace kvplan::sim::internal

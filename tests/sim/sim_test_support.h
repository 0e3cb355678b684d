// tests/sim/sim_test_support.h — shared pieces of the simulator tests: a step-time formula every
// timestamp of which can be checked by hand, a request builder, and the small engine the schedule
// tests run.
//
// FormulaTimer: 1 ms per step + 10 us per prefill token + 100 us per decode sequence. With
// Llama-3.1-8B in bf16 (131,072 bytes per token) a 16-token block is 2 MiB (kBlockBytes).
#pragma once

#include <cstdint>
#include <memory>

#include "kvplan/core/presets.h"
#include "kvplan/sim/request.h"
#include "kvplan/sim/simulation.h"
#include "kvplan/sim/step_timer.h"

namespace kvplan::sim::testing {

inline constexpr int64_t kBlockBytes = 16 * 131072;

class FormulaTimer : public StepTimer {
 public:
  TimeNs step_ns(const StepWork& w) override {
    int64_t prefill = 0;
    for (const PrefillChunk& c : w.prefill) prefill += c.new_tokens;
    swap_in_bytes += w.swap_in_bytes;
    swap_out_bytes += w.swap_out_bytes;
    return 1'000'000 + 10'000 * prefill + 100'000 * static_cast<int64_t>(w.decode_contexts.size());
  }
  int64_t swap_in_bytes = 0;   // totals over the run
  int64_t swap_out_bytes = 0;
};

inline RequestSpec request(int64_t id, TimeNs arrival, int32_t prompt, int32_t output) {
  RequestSpec r;
  r.id = id;
  r.arrival_ns = arrival;
  r.prompt_tokens = prompt;
  r.output_tokens = output;
  return r;
}

// Llama-3.1-8B on H100 with `blocks` KV blocks, at most 4 sequences and 64 tokens per step, prompts
// up to 1,024 tokens, timed by FormulaTimer, requests from a list. Scheduler kind and chunking are
// the defaults unless a test sets them.
inline SimulationConfig small_engine_config(int64_t blocks) {
  SimulationConfig c = default_simulation_config(resolve_model("llama-3.1-8b"), resolve_gpu("h100-sxm"));
  c.kv_capacity_bytes = blocks * kBlockBytes;
  c.scheduler.max_num_seqs = 4;
  c.scheduler.max_num_batched_tokens = 64;
  c.scheduler.max_model_len = 1024;
  c.step_timer = std::make_shared<FormulaTimer>();
  c.workload.kind = WorkloadKind::kList;
  return c;
}

}  // namespace kvplan::sim::testing

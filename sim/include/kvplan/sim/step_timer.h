// kvplan/sim/step_timer.h — what a replica asks to learn how long a step takes.
//
//   class Fixed : public StepTimer { TimeNs step_ns(const StepWork&) override { return 1'000'000; } };
//
// StepCostModel (cost_model.h) is the real one. Tests and what-if studies may substitute their own
// (e.g. golden tests use a formula whose every timestamp can be checked by hand). One virtual call
// per step, never per token.
#pragma once

#include <cstdint>
#include <span>

#include "kvplan/sim/time.h"

namespace kvplan::sim {

struct PrefillChunk {
  int64_t context_tokens = 0;  // tokens of this sequence already in the KV cache (cached prefix
                               // or earlier chunks): read by attention, not recomputed
  int64_t new_tokens = 0;      // tokens computed in this step
};

struct StepWork {
  std::span<const PrefillChunk> prefill;
  std::span<const int64_t> decode_contexts;  // per decode sequence: tokens in its KV cache before
                                             // this step (the new query tokens come on top)
  int32_t decode_query_tokens = 1;  // query tokens per decode sequence: k + 1 in speculative verify
  int64_t swap_in_bytes = 0;        // host -> device KV copies overlapping this step
  int64_t swap_out_bytes = 0;       // device -> host KV copies overlapping this step
};

class StepTimer {
 public:
  virtual ~StepTimer() = default;
  virtual TimeNs step_ns(const StepWork& work) = 0;
};

}  // namespace kvplan::sim

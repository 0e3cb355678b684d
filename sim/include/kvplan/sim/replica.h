// kvplan/sim/replica.h — one serving engine instance: its queues, its KV manager, its steps.
//
//   Replica r(setup, std::move(kv_manager), &cost_model);   // any StepTimer
//   r.enqueue(std::move(request), now);
//   TimeNs end = r.start_step(now);             // kNever when there is nothing to run
//   ... at `end`: r.finish_step(end, completions);
//
// The replica is driven by the simulation's event loop: it never reads a clock. One step is in
// flight at a time. Sequences live in a slot pool that is reused, so memory follows the number of
// active requests, not the length of the workload. Per step the work is O(sequences in the batch)
// plus one KV-manager call per sequence that crosses a block boundary.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <vector>

#include "kvplan/sim/step_timer.h"
#include "kvplan/sim/kv_manager.h"
#include "kvplan/sim/metrics.h"
#include "kvplan/sim/request.h"
#include "kvplan/sim/rng.h"
#include "kvplan/sim/scheduler_config.h"

namespace kvplan {
class KvLayout;
}

namespace kvplan::sim {

class HostOffloadTier;

enum class ReplicaRole { kUnified, kPrefill, kDecode };

struct ReplicaSetup {
  int32_t index = 0;
  ReplicaRole role = ReplicaRole::kUnified;
  SchedulerConfig scheduler;
  bool cache_prefixes = false;  // finished prompts stay in the prefix cache
  const KvLayout* layout = nullptr;  // exact token bytes for usage()
  uint64_t seed = 0;
  TimeNs step_overhead_ns = 0;  // engine CPU time per step, added once to every step (serving_overheads.h)
  double step_factor = 1.0;     // the engine's step time per cost-model step time (serving_overheads.h)
  double prefill_step_factor = 1.0;  // the same for the prefill part of a step (serving_overheads.h)
};

// Something a step produced that the simulation must act on.
struct Completion {
  enum class Kind {
    kFinished,   // the request emitted its last token
    kPrefilled,  // prefill replica: the prompt is done, its KV must move to a decode replica
    kRejected,   // can never fit on this replica, even into empty memory
  };
  Kind kind = Kind::kFinished;
  RequestRecord record;
  RequestSpec spec;          // kPrefilled: the request, handed on
  int64_t kv_tokens = 0;     // kPrefilled: tokens of KV to transfer
  int64_t kv_bytes = 0;      // kPrefilled: bytes of KV on this GPU
};

// A request arriving at a decode replica with its prompt's KV already computed elsewhere.
struct PrefilledRequest {
  RequestSpec spec;
  RequestRecord record;  // arrival, scheduled and first-token times so far
  int64_t kv_tokens = 0;
};

// One sequence's share of the step in flight (for event logs).
struct PlannedWork {
  int64_t request_id = 0;
  int64_t tokens = 0;   // tokens computed for it in this step
  bool decode = false;  // false: a prefill chunk
};

struct StepStats {
  int64_t steps = 0;
  int64_t batch_tokens = 0;  // last step
  int64_t batch_seqs = 0;    // last step
  int64_t preemptions = 0;   // cumulative
  int64_t swap_out_bytes = 0;
  int64_t swap_in_bytes = 0;
  // Which limit held the batch back, counted over steps (the binding constraint of a capacity
  // answer is judged from these). A step counts once, as the first that applies:
  //  - seq_limited_steps: requests waited while running sequences were at max_num_seqs;
  //  - kv_limited_steps: a running sequence was preempted for memory, or a waiting request was
  //    kept out because its KV did not fit (admission, swap-in, SGLang's headroom test).
  // A step held back only by the token budget (max_num_batched_tokens) counts in neither.
  int64_t seq_limited_steps = 0;
  int64_t kv_limited_steps = 0;
  int64_t peak_running = 0;            // most sequences running when a step started
  int64_t peak_kv_allocated_bytes = 0; // most KV held by live sequences when a step started
};

class Replica {
 public:
  Replica(ReplicaSetup setup, std::unique_ptr<KvManager> kv, StepTimer* timer,
          HostOffloadTier* offload);
  ~Replica();
  Replica(Replica&&) noexcept;
  Replica& operator=(Replica&&) noexcept;

  void enqueue(RequestSpec request, TimeNs now);
  void enqueue_prefilled(PrefilledRequest request, TimeNs now);
  // Plans and starts a step if the replica is idle and has work. Returns the step's end time, or
  // kNever when nothing can run (idle, or waiting for memory another replica cannot free).
  TimeNs start_step(TimeNs now);
  // Completes the step in flight at `now`; appends what it produced.
  void finish_step(TimeNs now, std::vector<Completion>& out);
  // Prefill replica: the KV of a handed-on request has reached its decode replica.
  void release_transferred(int64_t request_id);

  // The step in flight, in batch order.
  std::vector<PlannedWork> planned() const;
  bool busy() const;
  int64_t outstanding() const;  // queued + running + swapped + transferring
  int64_t running() const;
  int64_t waiting() const;
  int64_t swapped() const;
  int64_t match_prefix(const RequestSpec& request) const;
  const KvManager& kv() const;
  // The manager's usage with token_bytes made exact from each running sequence's KV length (the
  // manager only sees lengths at block boundaries); the difference is space granted but not yet
  // written, counted as reserved.
  KvUsage usage() const;
  const StepStats& stats() const;
  const ReplicaSetup& setup() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kvplan::sim

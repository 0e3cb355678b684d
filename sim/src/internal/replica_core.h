// sim/src/internal/replica_core.h — the state of one replica and the mechanics every batch-forming
// policy shares: the sequence slots and queues, KV admission and growth, preemption, swap-in.
//
//   ReplicaCore core(setup, std::move(kv), timer, offload);
//   policy.plan_step(core, now);   // fills core.plan (batch_policy.h)
//
// What differs per engine (which requests run together, in what order, under which budgets) lives
// in one file per policy (policy_*.cpp) behind BatchPolicy; the step loop (replica.cpp) is
// engine-neutral. Nothing here reads a clock; `now` comes from the event loop.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <unordered_map>
#include <vector>

#include "kvplan/sim/kv_manager.h"
#include "kvplan/sim/replica.h"
#include "kvplan/sim/rng.h"
#include "kvplan/sim/step_timer.h"

namespace kvplan::sim {

class HostOffloadTier;

namespace internal {

enum class SeqState : uint8_t { kFree, kWaiting, kRunning, kSwapped, kTransferring };

struct Seq {
  RequestSpec spec;
  RequestRecord record;
  SeqState state = SeqState::kFree;
  bool prefilled_elsewhere = false;  // decode replica: arrived with its prompt KV computed
  bool batch_done = false;           // static batching: finished, waiting for its batch to end
  int64_t kv_tokens = 0;             // tokens whose KV is cached on this replica
  int64_t prefill_target = 0;        // tokens to have in KV before decoding (prompt + recomputed)
  int64_t generated = 0;             // output tokens emitted
  int64_t capacity = 0;              // KV manager: may grow to this many tokens without a call
  TimeNs last_token_ns = 0;
  TimeNs enqueued_ns = 0;            // when it reached this replica's queue

  bool prefilling() const { return kv_tokens < prefill_target; }
};

struct Planned {
  int32_t slot = 0;
  int64_t tokens = 0;    // tokens computed for this sequence in the step
  bool decode = false;
};

// What a policy is, as data the engine-neutral step loop reads (never per token).
struct PolicyTraits {
  // Admission reserves the whole request (prompt + output) up front: static and Orca.
  bool reserves = false;
  // Static batching: the batch runs until its longest member finishes, prompts padded to the
  // longest; nothing joins a running batch.
  bool whole_batch = false;
};

struct ReplicaCore {
  ReplicaCore(ReplicaSetup s, std::unique_ptr<KvManager> k, StepTimer* c, HostOffloadTier* o);

  ReplicaSetup setup;
  std::unique_ptr<KvManager> kv;
  StepTimer* cost = nullptr;
  HostOffloadTier* offload = nullptr;
  Rng rng;
  PolicyTraits traits;

  std::vector<Seq> seqs;
  std::vector<int32_t> free_slots;
  std::deque<int32_t> waiting;
  std::vector<int32_t> running;  // admission order: the back is preempted first
  std::deque<int32_t> swapped;
  std::unordered_map<int64_t, int32_t> transferring;  // request id -> slot

  // The step being planned / in flight.
  std::vector<Planned> plan;
  int64_t swap_in_bytes = 0;
  int64_t swap_out_bytes = 0;
  StepStats stats;
  // Set while planning a step when KV memory kept a waiting or swapped request out (StepStats).
  bool kv_blocked = false;
  // Overlap scheduling (scheduler_config.h): the schedule of a step is formed while the previous
  // one runs, so only requests that reached the queue by then are seen. kNever: every queued one.
  TimeNs visible_until = kNever;

  const SchedulerConfig& cfg() const { return setup.scheduler; }
  int32_t decode_query_tokens() const { return 1 + cfg().spec.draft_tokens; }
  bool at_seq_limit() const { return static_cast<int32_t>(running.size()) >= cfg().max_num_seqs; }
  // Whether the schedule being formed can see waiting[pos] (overlap scheduling).
  bool visible(size_t pos) const { return seqs[waiting[pos]].enqueued_ns <= visible_until; }

  int32_t new_slot();
  void free_slot(int32_t slot);
  SeqKvRequest kv_request(const Seq& s, bool with_prefix) const;
  void add(int32_t slot, int64_t tokens, bool decode) { plan.push_back(Planned{slot, tokens, decode}); }

  // Preempts running sequence `slot` (already removed from `running`): swap to host memory when the
  // mode is swap and the tier has room, else recompute (KV dropped; the prompt and every generated
  // token prefilled again; back at the front of the queue).
  void preempt(int32_t slot);
  // Makes room for `tokens` tokens of running[index], preempting from the back of `running`.
  // False when the sequence itself had to be preempted.
  bool ensure_capacity(size_t index, int64_t tokens);
  // Admits waiting[pos] with at most `budget` tokens of prefill in this step (chunked when the
  // config allows). False (nothing changed) when it does not fit now.
  bool admit_waiting(size_t pos, int64_t& budget, TimeNs now);
  // FCFS admission from the head of the queue while a request fits (the head blocks the rest).
  void admit_new(int64_t& budget, TimeNs now);
  // Swapped sequences back in, oldest first, while they fit.
  void swap_in(int64_t& budget);
};

}  // namespace internal
}  // namespace kvplan::sim

// The mechanics every batch-forming policy shares (internal/replica_core.h): slots, KV admission
// and growth, preemption, swap-in. Which of them a policy calls, and in what order, is the policy's.
#include "internal/replica_core.h"

#include <algorithm>

#include "kvplan/sim/offload_tier.h"

namespace kvplan::sim::internal {

ReplicaCore::ReplicaCore(ReplicaSetup s, std::unique_ptr<KvManager> k, StepTimer* c, HostOffloadTier* o)
    : setup(std::move(s)), kv(std::move(k)), cost(c), offload(o),
      rng(Rng::stream(setup.seed, 0x5eed0000ULL + static_cast<uint64_t>(setup.index))) {}

int32_t ReplicaCore::new_slot() {
  if (!free_slots.empty()) {
    int32_t slot = free_slots.back();
    free_slots.pop_back();
    return slot;
  }
  seqs.emplace_back();
  return static_cast<int32_t>(seqs.size() - 1);
}

void ReplicaCore::free_slot(int32_t slot) {
  seqs[slot] = Seq{};
  free_slots.push_back(slot);
}

SeqKvRequest ReplicaCore::kv_request(const Seq& s, bool with_prefix) const {
  SeqKvRequest r;
  r.seq = s.spec.id;
  r.prompt_tokens = s.prefill_target;
  r.final_tokens = s.spec.total_tokens();
  if (with_prefix && !s.prefilled_elsewhere) {
    r.hash_block_tokens = s.spec.hash_block_tokens;
    r.prefix_hashes = s.spec.prefix_hashes;
    r.identity_tokens = s.spec.identity_tokens;
  }
  return r;
}

void ReplicaCore::preempt(int32_t slot) {
  Seq& s = seqs[slot];
  ++s.record.preemptions;
  ++stats.preemptions;
  if (cfg().preemption == PreemptionMode::kSwap && offload != nullptr) {
    int64_t bytes = kv->sequence_bytes(s.spec.id);
    if (offload->swap_out(s.spec.id, bytes)) {
      kv->release(s.spec.id, false);
      s.capacity = 0;
      s.state = SeqState::kSwapped;
      swapped.push_back(slot);
      swap_out_bytes += bytes;
      return;
    }
  }
  // Recompute: drop the KV; the prompt and every token generated so far are prefilled again.
  kv->release(s.spec.id, false);
  s.kv_tokens = 0;
  s.capacity = 0;
  s.prefill_target = s.spec.prompt_tokens + s.generated;
  s.state = SeqState::kWaiting;
  waiting.push_front(slot);
}

bool ReplicaCore::ensure_capacity(size_t index, int64_t tokens) {
  const int32_t slot = running[index];
  while (seqs[slot].capacity < tokens) {
    int64_t cap = kv->grow(seqs[slot].spec.id, tokens);
    if (cap >= 0) {
      seqs[slot].capacity = cap;
      return true;
    }
    int32_t victim = running.back();
    running.pop_back();
    preempt(victim);
    if (victim == slot) return false;
  }
  return true;
}

bool ReplicaCore::admit_waiting(size_t pos, int64_t& budget, TimeNs now) {
  const int32_t slot = waiting[pos];
  Seq& s = seqs[slot];
  if (s.prefilled_elsewhere) {
    const int64_t q = decode_query_tokens();
    if (budget < q) return false;
    AdmitResult a = kv->admit(kv_request(s, false), s.kv_tokens + q);
    if (!a.ok) {
      kv_blocked = true;
      return false;
    }
    s.capacity = a.capacity_tokens;
    s.state = SeqState::kRunning;
    waiting.erase(waiting.begin() + static_cast<std::ptrdiff_t>(pos));
    running.push_back(slot);
    add(slot, q, true);
    budget -= q;
    return true;
  }
  const bool use_prefix = setup.cache_prefixes;
  int64_t expected_cached = 0;
  if (use_prefix) {
    expected_cached = std::min<int64_t>(kv->match_prefix(s.spec.hash_block_tokens, s.spec.prefix_hashes),
                                        s.prefill_target - 1);
  }
  const int64_t remaining = s.prefill_target - expected_cached;
  if (!cfg().chunked_prefill && remaining > budget) return false;
  int64_t initial = std::min(s.prefill_target, expected_cached + budget);
  if (traits.reserves) initial = s.prefill_target;  // reservation covers the whole request anyway
  AdmitResult a = kv->admit(kv_request(s, use_prefix), initial);
  if (!a.ok) {
    kv_blocked = true;
    return false;
  }
  s.kv_tokens = a.cached_tokens;
  s.capacity = a.capacity_tokens;
  int64_t chunk = std::min(s.prefill_target - s.kv_tokens, budget);
  if (!cfg().chunked_prefill) chunk = s.prefill_target - s.kv_tokens;
  if (s.capacity < s.kv_tokens + chunk) {
    int64_t cap = kv->grow(s.spec.id, s.kv_tokens + chunk);
    if (cap < 0) {
      kv->release(s.spec.id, false);
      s.kv_tokens = 0;
      s.capacity = 0;
      kv_blocked = true;
      return false;
    }
    s.capacity = cap;
  }
  if (s.record.preemptions == 0 && s.generated == 0) s.record.cached_tokens = a.cached_tokens;
  if (s.record.scheduled_ns < 0) s.record.scheduled_ns = now;
  s.state = SeqState::kRunning;
  waiting.erase(waiting.begin() + static_cast<std::ptrdiff_t>(pos));
  running.push_back(slot);
  add(slot, chunk, false);
  budget -= chunk;
  return true;
}

void ReplicaCore::admit_new(int64_t& budget, TimeNs now) {
  while (!waiting.empty() && !at_seq_limit() && budget > 0 && visible(0)) {
    if (!admit_waiting(0, budget, now)) break;  // FCFS: the head blocks the rest
  }
}

void ReplicaCore::swap_in(int64_t& budget) {
  const int64_t q = decode_query_tokens();
  while (!swapped.empty() && !at_seq_limit() && budget >= q) {
    const int32_t slot = swapped.front();
    Seq& s = seqs[slot];
    int64_t need = s.prefilling() ? std::min(s.prefill_target, s.kv_tokens + budget) : s.kv_tokens + q;
    AdmitResult a = kv->admit(kv_request(s, false), need);
    if (!a.ok) {
      kv_blocked = true;
      return;
    }
    swapped.pop_front();
    swap_in_bytes += offload->swap_in(s.spec.id);
    s.capacity = a.capacity_tokens;
    s.state = SeqState::kRunning;
    running.push_back(slot);
    int64_t tokens = s.prefilling() ? need - s.kv_tokens : q;
    add(slot, tokens, !s.prefilling());
    budget -= tokens;
  }
}

}  // namespace kvplan::sim::internal

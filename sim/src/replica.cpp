// One serving engine instance: the engine-neutral step loop. A step is planned by the engine's
// batch-forming policy (internal/batch_policy.h, one file per engine), costed by the step timer, and
// at its end every planned sequence advances. Overlap scheduling (SchedulerConfig::overlap) is
// handled here, the same way for every engine that has it.
#include "kvplan/sim/replica.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <unordered_map>

#include "internal/batch_policy.h"
#include "kvplan/core/kv_layout.h"
#include "kvplan/sim/offload_tier.h"
#include "kvplan/sim/serving_overheads.h"

namespace kvplan::sim {

namespace internal {

std::unique_ptr<BatchPolicy> make_batch_policy(const SchedulerConfig& config) {
  switch (config.kind) {
    case SchedulerKind::kStatic: return make_static_policy();
    case SchedulerKind::kOrca: return make_orca_policy();
    case SchedulerKind::kVllm: return make_vllm_policy();
    case SchedulerKind::kSglang: return make_sglang_policy();
    case SchedulerKind::kTrtllm: return make_trtllm_policy();
  }
  return make_vllm_policy();
}

}  // namespace internal

using internal::Planned;
using internal::Seq;
using internal::SeqState;

struct Replica::Impl : internal::ReplicaCore {
  Impl(ReplicaSetup s, std::unique_ptr<KvManager> k, StepTimer* c, HostOffloadTier* o)
      : ReplicaCore(std::move(s), std::move(k), c, o), policy(internal::make_batch_policy(setup.scheduler)) {
    traits = policy->traits();
  }

  std::unique_ptr<internal::BatchPolicy> policy;

  // The step in flight.
  bool in_flight = false;
  TimeNs step_start_ns = 0;
  std::vector<PrefillChunk> chunks;
  std::vector<int64_t> decode_contexts;
  std::vector<Completion> rejected;  // requests that can never fit, reported at the next finish
  // Overlap scheduling: sequences that finished in the last step, whose KV is released only once
  // the next step has been formed (the engine processes a step's results after launching the next).
  std::vector<int32_t> finished_pending;
  bool overlap_window = false;  // a step just ended: the next one was formed while it ran
  int64_t idle_steps = 0;      // consecutive steps that emitted no token
  int64_t emitted_tokens = 0;  // cumulative

  void reject_unfittable(TimeNs now) {
    // Nothing runs and the head of the queue does not fit into empty memory: it never will.
    while (plan.empty() && running.empty() && swapped.empty() && finished_pending.empty() && !waiting.empty() &&
           visible(0)) {
      int32_t slot = waiting.front();
      int64_t budget = cfg().max_num_batched_tokens;
      if (traits.whole_batch) budget = std::numeric_limits<int64_t>::max();
      if (admit_waiting(0, budget, now)) break;
      waiting.pop_front();
      Completion c;
      c.kind = Completion::Kind::kRejected;
      c.record = seqs[slot].record;
      rejected.push_back(c);
      free_slot(slot);
    }
  }

  TimeNs cost_of_plan() {
    chunks.clear();
    decode_contexts.clear();
    int64_t static_pad = 0;
    if (traits.whole_batch) {
      for (const Planned& p : plan) {
        if (!p.decode) static_pad = std::max(static_pad, p.tokens);
      }
    }
    for (const Planned& p : plan) {
      const Seq& s = seqs[p.slot];
      if (p.decode) {
        decode_contexts.push_back(s.kv_tokens);
      } else {
        int64_t tokens = static_pad > 0 ? static_pad : p.tokens;  // static: padded prompts
        chunks.push_back(PrefillChunk{s.kv_tokens, tokens});
      }
    }
    StepWork work;
    work.prefill = chunks;
    work.decode_contexts = decode_contexts;
    work.decode_query_tokens = decode_query_tokens();
    work.swap_in_bytes = swap_in_bytes;
    work.swap_out_bytes = swap_out_bytes;
    TimeNs t = cost->step_ns(work);
    // The decodes alone (with the copies and drafts), when the prefill part is scaled apart: the
    // rest of the step is its prefill part (serving_overheads.h, prefill_step_factor).
    TimeNs decode_only = t;
    if (!chunks.empty() && setup.prefill_step_factor != setup.step_factor) {
      if (decode_contexts.empty() && swap_in_bytes == 0 && swap_out_bytes == 0) {
        decode_only = 0;
      } else {
        StepWork decodes = work;
        decodes.prefill = {};
        decode_only = cost->step_ns(decodes);
      }
    }
    if (cfg().spec.draft_tokens > 0 && !decode_contexts.empty()) {
      StepWork draft;
      draft.decode_contexts = decode_contexts;
      TimeNs one = cost->step_ns(draft);
      const TimeNs drafting = static_cast<TimeNs>(std::llround(static_cast<double>(one) * cfg().spec.draft_cost_ratio *
                                                               cfg().spec.draft_tokens));
      t += drafting;
      decode_only += drafting;
    }
    if (cfg().overlap) {
      // The engine's CPU work for the next step runs while this one is on the GPU: the step takes
      // the longer of the two, not their sum.
      const TimeNs gpu = engine_step_ns(t, decode_only, setup.step_factor, setup.prefill_step_factor, 0);
      return std::max(gpu, setup.step_overhead_ns);
    }
    return engine_step_ns(t, decode_only, setup.step_factor, setup.prefill_step_factor, setup.step_overhead_ns);
  }

  // ---- step end ---------------------------------------------------------------------------

  void emit(Seq& s, TimeNs now, int64_t tokens) {
    if (s.generated == 0) {
      s.record.first_token_ns = now;
    } else {
      s.record.max_gap_ns = std::max(s.record.max_gap_ns, now - s.last_token_ns);
    }
    s.last_token_ns = now;
    s.generated += tokens;
    emitted_tokens += tokens;
  }

  int64_t accepted_drafts() {
    int64_t a = 0;
    const int32_t k = cfg().spec.draft_tokens;
    while (a < k && rng.uniform01() < cfg().spec.acceptance_rate) ++a;
    return a;
  }

  // The request's completion record, without releasing its slot or KV.
  Completion finished_record(int32_t slot, TimeNs now) {
    Seq& s = seqs[slot];
    s.record.finish_ns = now;
    s.record.replica = setup.index;
    Completion c;
    c.kind = Completion::Kind::kFinished;
    c.record = s.record;
    return c;
  }

  void release_finished(int32_t slot) {
    kv->release(seqs[slot].spec.id, setup.cache_prefixes);
    free_slot(slot);
  }

  void finish_request(int32_t slot, TimeNs now, std::vector<Completion>& out) {
    out.push_back(finished_record(slot, now));
    release_finished(slot);
  }
};

Replica::Replica(ReplicaSetup setup, std::unique_ptr<KvManager> kv, StepTimer* cost,
                 HostOffloadTier* offload)
    : impl_(std::make_unique<Impl>(std::move(setup), std::move(kv), cost, offload)) {
  validate(impl_->setup.scheduler);
}
Replica::~Replica() = default;
Replica::Replica(Replica&&) noexcept = default;
Replica& Replica::operator=(Replica&&) noexcept = default;

void Replica::enqueue(RequestSpec request, TimeNs now) {
  Impl& m = *impl_;
  int32_t slot = m.new_slot();
  Seq& s = m.seqs[slot];
  s.record.id = request.id;
  s.record.user = request.user;
  s.record.turn = request.turn;
  s.record.prompt_tokens = request.prompt_tokens;
  s.record.output_tokens = request.output_tokens;
  s.record.arrival_ns = request.arrival_ns;
  s.record.scheduled_ns = -1;
  s.record.replica = m.setup.index;
  s.prefill_target = request.prompt_tokens;
  s.spec = std::move(request);
  s.state = SeqState::kWaiting;
  s.enqueued_ns = now;
  m.waiting.push_back(slot);
}

void Replica::enqueue_prefilled(PrefilledRequest request, TimeNs now) {
  Impl& m = *impl_;
  int32_t slot = m.new_slot();
  Seq& s = m.seqs[slot];
  s.record = request.record;
  s.record.replica = m.setup.index;
  s.spec = std::move(request.spec);
  s.kv_tokens = request.kv_tokens;
  s.prefill_target = request.kv_tokens;
  s.generated = 1;
  s.last_token_ns = s.record.first_token_ns;
  s.prefilled_elsewhere = true;
  s.state = SeqState::kWaiting;
  s.enqueued_ns = now;
  m.waiting.push_back(slot);
}

TimeNs Replica::start_step(TimeNs now) {
  Impl& m = *impl_;
  if (m.in_flight) return kNever;
  m.plan.clear();
  m.swap_in_bytes = 0;
  m.swap_out_bytes = 0;
  m.kv_blocked = false;
  const int64_t preemptions_before = m.stats.preemptions;
  // Overlap scheduling: right after a step ends, the step that follows was formed when that one
  // started, so it sees only the requests queued by then; an idle engine schedules at once.
  m.visible_until = m.cfg().overlap && m.overlap_window ? m.step_start_ns : kNever;
  m.overlap_window = false;  // only the step formed right after a step's end was formed early
  m.policy->plan_step(m, now);
  if (!m.finished_pending.empty()) {
    // The results of the last step are processed once this one is formed: its finished requests'
    // KV is free from now on. With nothing formed, the engine loops at once and sees it free.
    for (int32_t slot : m.finished_pending) m.release_finished(slot);
    m.finished_pending.clear();
    if (m.plan.empty()) m.policy->plan_step(m, now);
  }
  if (m.plan.empty() && m.visible_until != kNever) {
    // Nothing to run: the engine is idle and its loop schedules what is queued at once.
    m.visible_until = kNever;
    m.policy->plan_step(m, now);
  }
  // Read before reject_unfittable, whose admission tries are about requests that never fit.
  const bool kv_limited = m.kv_blocked || m.stats.preemptions != preemptions_before;
  const bool seq_limited =
      (!m.waiting.empty() || !m.swapped.empty()) && static_cast<int32_t>(m.running.size()) >= m.cfg().max_num_seqs;
  m.reject_unfittable(now);
  if (m.plan.empty()) {
    // Rejections still need reporting: a zero-length step delivers them.
    if (!m.rejected.empty()) {
      m.in_flight = true;
      return now;
    }
    return kNever;
  }
  m.in_flight = true;
  m.step_start_ns = now;
  ++m.stats.steps;
  if (seq_limited) {
    ++m.stats.seq_limited_steps;
  } else if (kv_limited) {
    ++m.stats.kv_limited_steps;
  }
  m.stats.peak_running = std::max(m.stats.peak_running, static_cast<int64_t>(m.running.size()));
  m.stats.peak_kv_allocated_bytes = std::max(m.stats.peak_kv_allocated_bytes, m.kv->usage().allocated_bytes());
  m.stats.batch_seqs = static_cast<int64_t>(m.plan.size());
  m.stats.batch_tokens = 0;
  for (const Planned& p : m.plan) m.stats.batch_tokens += p.tokens;
  m.stats.swap_in_bytes += m.swap_in_bytes;
  m.stats.swap_out_bytes += m.swap_out_bytes;
  return now + m.cost_of_plan();
}

void Replica::finish_step(TimeNs now, std::vector<Completion>& out) {
  Impl& m = *impl_;
  if (!m.in_flight) throw std::logic_error("Replica::finish_step without a step in flight");
  m.in_flight = false;
  m.overlap_window = true;
  for (Completion& c : m.rejected) out.push_back(std::move(c));
  m.rejected.clear();

  // Steps that emit no token are normal for a while (a long prompt in chunks); a million in a row
  // means the policy is stuck (e.g. prefilling and preempting the same request forever), and the
  // run stops with a clear error instead of spinning.
  const int64_t emitted_before = m.emitted_tokens;
  struct IdleCheck {
    Impl& m;
    int64_t before;
    ~IdleCheck() { m.idle_steps = m.emitted_tokens != before ? 0 : m.idle_steps + 1; }
  } idle_check{m, emitted_before};
  if (m.idle_steps > 1'000'000) {
    throw std::logic_error("replica " + std::to_string(m.setup.index) +
                           ": a million steps without emitting a token (scheduler livelock)");
  }
  bool any_finished = false;
  const bool is_static = m.traits.whole_batch;
  for (const Planned& p : m.plan) {
    Seq& s = m.seqs[p.slot];
    if (s.batch_done) continue;
    if (!p.decode) {
      s.kv_tokens += p.tokens;
      if (s.kv_tokens >= s.prefill_target) {
        if (m.setup.cache_prefixes) m.kv->publish_prefix(s.spec.id);
        m.emit(s, now, 1);
      }
    } else {
      int64_t accepted = m.cfg().spec.draft_tokens > 0 ? m.accepted_drafts() : 0;
      int64_t emitted = std::min<int64_t>(accepted + 1, s.spec.output_tokens - s.generated);
      s.kv_tokens += emitted;
      if (m.cfg().spec.draft_tokens > 0) s.capacity = m.kv->truncate(s.spec.id, s.kv_tokens);
      m.emit(s, now, emitted);
    }
    if (s.generated >= s.spec.output_tokens) {
      any_finished = true;
      if (is_static) {
        s.batch_done = true;
        s.record.finish_ns = now;
      }
    } else if (m.setup.role == ReplicaRole::kPrefill && s.generated >= 1) {
      // Prompt done: the KV moves to a decode replica; the blocks stay held until it arrives.
      Completion c;
      c.kind = Completion::Kind::kPrefilled;
      c.record = s.record;
      c.record.replica = m.setup.index;
      c.kv_tokens = s.kv_tokens;
      c.kv_bytes = m.kv->sequence_bytes(s.spec.id);
      c.spec = s.spec;
      out.push_back(std::move(c));
      s.state = SeqState::kTransferring;
      m.transferring.emplace(s.spec.id, p.slot);
      any_finished = true;
    }
  }
  if (!any_finished) return;
  if (is_static) {
    bool all_done = true;
    for (int32_t slot : m.running) all_done = all_done && m.seqs[slot].batch_done;
    if (!all_done) return;
    for (int32_t slot : m.running) {
      Seq& s = m.seqs[slot];
      TimeNs done = s.record.finish_ns;
      m.finish_request(slot, now, out);
      out.back().record.finish_ns = done;  // the caller saw its last token then
    }
    m.running.clear();
    return;
  }
  // Remove finished and handed-on sequences from `running`, keeping admission order.
  size_t keep = 0;
  for (size_t i = 0; i < m.running.size(); ++i) {
    const int32_t slot = m.running[i];
    Seq& s = m.seqs[slot];
    if (s.state == SeqState::kTransferring) continue;
    if (s.generated >= s.spec.output_tokens) {
      if (m.cfg().overlap) {
        out.push_back(m.finished_record(slot, now));
        m.finished_pending.push_back(slot);
      } else {
        m.finish_request(slot, now, out);
      }
      continue;
    }
    m.running[keep++] = slot;
  }
  m.running.resize(keep);
}

void Replica::release_transferred(int64_t request_id) {
  Impl& m = *impl_;
  auto it = m.transferring.find(request_id);
  if (it == m.transferring.end()) throw std::logic_error("Replica: unknown transfer");
  m.kv->release(request_id, m.setup.cache_prefixes);
  m.free_slot(it->second);
  m.transferring.erase(it);
}

std::vector<PlannedWork> Replica::planned() const {
  std::vector<PlannedWork> out;
  if (!impl_->in_flight) return out;
  for (const Planned& p : impl_->plan) {
    out.push_back(PlannedWork{impl_->seqs[p.slot].spec.id, p.tokens, p.decode});
  }
  return out;
}

bool Replica::busy() const { return impl_->in_flight; }
int64_t Replica::outstanding() const {
  const Impl& m = *impl_;
  return static_cast<int64_t>(m.waiting.size() + m.running.size() + m.swapped.size() + m.transferring.size());
}
int64_t Replica::running() const { return static_cast<int64_t>(impl_->running.size()); }
int64_t Replica::waiting() const { return static_cast<int64_t>(impl_->waiting.size()); }
int64_t Replica::swapped() const { return static_cast<int64_t>(impl_->swapped.size()); }
int64_t Replica::match_prefix(const RequestSpec& request) const {
  return impl_->kv->match_prefix(request.hash_block_tokens, request.prefix_hashes);
}
const KvManager& Replica::kv() const { return *impl_->kv; }

KvUsage Replica::usage() const {
  const Impl& m = *impl_;
  KvUsage u = m.kv->usage();
  if (m.setup.layout == nullptr) return u;
  int64_t exact = 0;
  auto add = [&](int32_t slot) { exact += m.setup.layout->request_bytes(m.seqs[slot].kv_tokens); };
  for (int32_t slot : m.running) add(slot);
  for (const auto& [id, slot] : m.transferring) add(slot);
  int64_t granted_unwritten = u.token_bytes - exact;
  // With shared prefix blocks the manager counts each block once and the sum above counts it per
  // sequence; then the manager's physical figure stands.
  if (granted_unwritten < 0) return u;
  u.token_bytes = exact;
  u.reserved_bytes += granted_unwritten;
  return u;
}
const StepStats& Replica::stats() const { return impl_->stats; }
const ReplicaSetup& Replica::setup() const { return impl_->setup; }

}  // namespace kvplan::sim

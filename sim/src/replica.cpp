// One serving engine instance. The scheduling policies (DESIGN §5, scheduler_config.h) share one
// step loop: plan a batch, cost it, and at its end advance every planned sequence.
#include "kvplan/sim/replica.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <unordered_map>

#include "kvplan/core/kv_layout.h"
#include "kvplan/sim/offload_tier.h"
#include "kvplan/sim/serving_overheads.h"

namespace kvplan::sim {

namespace {

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

  bool prefilling() const { return kv_tokens < prefill_target; }
};

struct Planned {
  int32_t slot = 0;
  int64_t tokens = 0;    // tokens computed for this sequence in the step
  bool decode = false;
};

// SGLang orders its waiting queue by longest prefix only while it is short.
constexpr size_t kLpmQueueLimit = 128;
// SGLang's defaults for the share of remaining output tokens kept free at admission.
constexpr double kInitialNewTokenRatio = 0.7;
constexpr double kMinNewTokenRatio = 0.1;
constexpr double kNewTokenRatioDecay = (kInitialNewTokenRatio - kMinNewTokenRatio) / 600;

}  // namespace

struct Replica::Impl {
  ReplicaSetup setup;
  std::unique_ptr<KvManager> kv;
  StepTimer* cost = nullptr;
  HostOffloadTier* offload = nullptr;
  Rng rng;

  std::vector<Seq> seqs;
  std::vector<int32_t> free_slots;
  std::deque<int32_t> waiting;
  std::vector<int32_t> running;  // admission order: the back is preempted first
  std::deque<int32_t> swapped;
  std::unordered_map<int64_t, int32_t> transferring;  // request id -> slot

  // The step in flight.
  bool in_flight = false;
  std::vector<Planned> plan;
  std::vector<PrefillChunk> chunks;
  std::vector<int64_t> decode_contexts;
  int64_t swap_in_bytes = 0;
  int64_t swap_out_bytes = 0;
  std::vector<Completion> rejected;  // requests that can never fit, reported at the next finish
  StepStats stats;
  double new_token_ratio = kInitialNewTokenRatio;  // SGLang admission headroom
  // Set while planning a step when KV memory kept a waiting or swapped request out (StepStats).
  bool kv_blocked = false;
  int64_t idle_steps = 0;      // consecutive steps that emitted no token
  int64_t emitted_tokens = 0;  // cumulative

  Impl(ReplicaSetup s, std::unique_ptr<KvManager> k, StepTimer* c, HostOffloadTier* o)
      : setup(std::move(s)), kv(std::move(k)), cost(c), offload(o),
        rng(Rng::stream(setup.seed, 0x5eed0000ULL + static_cast<uint64_t>(setup.index))) {}

  const SchedulerConfig& cfg() const { return setup.scheduler; }
  int32_t decode_query_tokens() const { return 1 + cfg().spec.draft_tokens; }
  bool reserves() const {
    return cfg().kind == SchedulerKind::kStatic || cfg().kind == SchedulerKind::kOrca;
  }

  int32_t new_slot() {
    if (!free_slots.empty()) {
      int32_t slot = free_slots.back();
      free_slots.pop_back();
      return slot;
    }
    seqs.emplace_back();
    return static_cast<int32_t>(seqs.size() - 1);
  }

  void free_slot(int32_t slot) {
    seqs[slot] = Seq{};
    free_slots.push_back(slot);
  }

  SeqKvRequest kv_request(const Seq& s, bool with_prefix) const {
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

  // ---- preemption -------------------------------------------------------------------------

  void preempt(int32_t slot) {
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

  // Makes room for `tokens` tokens of running[index], preempting from the back of `running`.
  // False when the sequence itself had to be preempted.
  bool ensure_capacity(size_t index, int64_t tokens) {
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

  void add(int32_t slot, int64_t tokens, bool decode) {
    plan.push_back(Planned{slot, tokens, decode});
  }

  // ---- admission --------------------------------------------------------------------------

  // Admits waiting[pos]. Returns false (nothing changed) when it does not fit now.
  bool admit_waiting(size_t pos, int64_t& budget, TimeNs now) {
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
      expected_cached = std::min<int64_t>(
          kv->match_prefix(s.spec.hash_block_tokens, s.spec.prefix_hashes), s.prefill_target - 1);
    }
    const int64_t remaining = s.prefill_target - expected_cached;
    if (!cfg().chunked_prefill && remaining > budget) return false;
    int64_t initial = std::min(s.prefill_target, expected_cached + budget);
    if (reserves()) initial = s.prefill_target;  // reservation covers the whole request anyway
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

  size_t pick_waiting() const {
    if (cfg().kind != SchedulerKind::kSglang || waiting.size() > kLpmQueueLimit || !setup.cache_prefixes) {
      return 0;
    }
    size_t best = 0;
    int64_t best_hit = -1;
    for (size_t i = 0; i < waiting.size(); ++i) {
      const Seq& s = seqs[waiting[i]];
      int64_t hit = s.prefilled_elsewhere ? 0 : kv->match_prefix(s.spec.hash_block_tokens, s.spec.prefix_hashes);
      if (hit > best_hit) {
        best_hit = hit;
        best = i;
      }
    }
    return best;
  }

  void admit_new(int64_t& budget, TimeNs now) {
    while (!waiting.empty() && static_cast<int32_t>(running.size()) < cfg().max_num_seqs && budget > 0) {
      if (!admit_waiting(pick_waiting(), budget, now)) break;  // FCFS: the head blocks the rest
    }
  }

  void swap_in(int64_t& budget) {
    const int64_t q = decode_query_tokens();
    while (!swapped.empty() && static_cast<int32_t>(running.size()) < cfg().max_num_seqs && budget >= q) {
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

  // ---- policies ---------------------------------------------------------------------------

  // vLLM and Orca: running sequences first, then swapped, then waiting.
  void plan_continuous(TimeNs now) {
    int64_t budget = cfg().max_num_batched_tokens;
    const int64_t q = decode_query_tokens();
    const int64_t preemptions_before = stats.preemptions;
    for (size_t i = 0; i < running.size() && budget > 0; ++i) {
      Seq& s = seqs[running[i]];
      int64_t tokens = q;
      bool decode = !s.prefilling();
      if (!decode) {
        tokens = s.prefill_target - s.kv_tokens;
        if (cfg().chunked_prefill) {
          tokens = std::min(tokens, budget);
        } else if (tokens > budget) {
          continue;
        }
      } else if (tokens > budget) {
        continue;
      }
      if (!ensure_capacity(i, s.kv_tokens + tokens)) break;
      add(running[i], tokens, decode);
      budget -= tokens;
    }
    if (stats.preemptions != preemptions_before) return;  // memory is short: admit nothing new
    swap_in(budget);
    if (swapped.empty()) admit_new(budget, now);
  }

  // SGLang's admission test: the new request plus `reserve` future tokens of the running ones fit
  // in free (or evictable cached) memory.
  bool fits_with_headroom(int64_t tokens, int64_t reserve) const {
    if (!kv->can_admit(tokens)) return false;
    if (setup.layout == nullptr) return true;
    KvUsage u = kv->usage();
    double need = static_cast<double>(tokens + reserve) * setup.layout->bytes_per_token();
    return need <= static_cast<double>(u.free_bytes + u.cached_bytes);
  }

  // SGLang: a prefill step whenever something can be admitted (or a chunked prefill continues),
  // otherwise a decode step over every running sequence. Admission keeps headroom for the running
  // requests' future tokens: remaining output tokens x new_token_ratio, which starts at 0.7, decays
  // to 0.1 over 600 decode steps and jumps back to 0.7 whenever decoding runs out of memory and
  // requests are retracted (SGLang's schedule_policy / retract_decode defaults).
  void plan_sglang(TimeNs now) {
    int64_t budget = cfg().max_num_batched_tokens;
    for (size_t i = 0; i < running.size() && budget > 0; ++i) {
      Seq& s = seqs[running[i]];
      if (!s.prefilling()) continue;
      int64_t tokens = std::min(s.prefill_target - s.kv_tokens, budget);
      if (s.capacity < s.kv_tokens + tokens) {
        int64_t cap = kv->grow(s.spec.id, s.kv_tokens + tokens);
        if (cap < 0) continue;  // wait for decodes to free memory; never preempt for a prefill
        s.capacity = cap;
      }
      add(running[i], tokens, false);
      budget -= tokens;
    }
    int64_t reserve = 0;
    for (int32_t slot : running) {
      const Seq& s = seqs[slot];
      reserve += static_cast<int64_t>(std::ceil(static_cast<double>(s.spec.output_tokens - s.generated) * new_token_ratio));
    }
    while (!waiting.empty() && static_cast<int32_t>(running.size()) < cfg().max_num_seqs && budget > 0) {
      const size_t pos = pick_waiting();
      const Seq& w = seqs[waiting[pos]];
      const int64_t need = w.prefilled_elsewhere ? w.kv_tokens + decode_query_tokens()
                                                 : std::min(w.prefill_target, budget);
      if (!fits_with_headroom(need, reserve)) {
        kv_blocked = true;
        break;
      }
      if (!admit_waiting(pos, budget, now)) break;
      const Seq& a = seqs[running.back()];
      reserve += static_cast<int64_t>(std::ceil(static_cast<double>(a.spec.output_tokens - a.generated) * new_token_ratio));
    }
    if (!plan.empty()) return;
    const int64_t q = decode_query_tokens();
    const int64_t preemptions_before = stats.preemptions;
    for (size_t i = 0; i < running.size(); ++i) {
      Seq& s = seqs[running[i]];
      const int64_t tokens = s.prefilling() ? std::min(s.prefill_target - s.kv_tokens, cfg().max_num_batched_tokens) : q;
      if (!ensure_capacity(i, s.kv_tokens + tokens)) break;
      add(running[i], tokens, !s.prefilling());
    }
    if (stats.preemptions != preemptions_before) {
      new_token_ratio = kInitialNewTokenRatio;
    } else {
      new_token_ratio = std::max(kMinNewTokenRatio, new_token_ratio - kNewTokenRatioDecay);
    }
  }

  // Hugging Face generate: fixed batches, prompts padded to the longest, decoded to the longest.
  void plan_static(TimeNs now) {
    if (!running.empty()) {
      for (int32_t slot : running) add(slot, 1, true);  // finished members still compute (padding)
      return;
    }
    int64_t budget = std::numeric_limits<int64_t>::max();
    while (!waiting.empty() && static_cast<int32_t>(running.size()) < cfg().max_num_seqs) {
      if (!admit_waiting(0, budget, now)) break;
    }
  }

  void reject_unfittable(TimeNs now) {
    // Nothing runs and the head of the queue does not fit into empty memory: it never will.
    while (plan.empty() && running.empty() && swapped.empty() && !waiting.empty()) {
      int32_t slot = waiting.front();
      int64_t budget = cfg().max_num_batched_tokens;
      if (cfg().kind == SchedulerKind::kStatic) budget = std::numeric_limits<int64_t>::max();
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
    if (cfg().kind == SchedulerKind::kStatic) {
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

  void finish_request(int32_t slot, TimeNs now, std::vector<Completion>& out) {
    Seq& s = seqs[slot];
    s.record.finish_ns = now;
    s.record.replica = setup.index;
    kv->release(s.spec.id, setup.cache_prefixes);
    Completion c;
    c.kind = Completion::Kind::kFinished;
    c.record = s.record;
    out.push_back(std::move(c));
    free_slot(slot);
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
  (void)now;
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
  (void)now;
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
  switch (m.cfg().kind) {
    case SchedulerKind::kStatic: m.plan_static(now); break;
    case SchedulerKind::kSglang: m.plan_sglang(now); break;
    case SchedulerKind::kOrca:
    case SchedulerKind::kVllm: m.plan_continuous(now); break;
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
  const bool is_static = m.cfg().kind == SchedulerKind::kStatic;
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
      m.finish_request(slot, now, out);
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

// SGLang, as python/sglang/srt/managers/scheduler.py (Scheduler.get_next_batch_to_run,
// get_new_batch_prefill, update_running_batch) and schedule_policy.py (SchedulePolicy,
// PrefillAdder) form a step:
//  1. A prefill batch whenever one can be formed, otherwise a decode batch of every running
//     request: prefill and decode run in separate steps (`new_batch = self.get_new_batch_prefill();
//     if new_batch is not None: ret = new_batch else: ret = self.update_running_batch(...)`).
//  2. With --enable-mixed-chunk the running decodes join the prefill batch in one step
//     (`if self.is_mixed_chunk and not self.running_batch.is_empty(): new_batch.mix_with_running`),
//     and the prefill budgets shrink by one token per running request (PrefillAdder:
//     `rem_input_tokens - num_mixed_decode_tokens`, `rem_chunk_tokens -= num_mixed_decode_tokens`).
//  3. Prefill budgets: chunked_prefill_size tokens per step (max_num_batched_tokens here; its
//     per-GPU default is set by the front end from server_args.py) and max_prefill_tokens
//     (PrefillAdder.rem_input_tokens, default 16384); the unfinished chunked request goes first
//     (`adder.add_chunked_req(self.chunked_req)`); a prompt longer than the chunk budget left is cut.
//  4. KV headroom at admission: a request is added only if its tokens plus, for every running
//     request, min(max_new_tokens - output so far, 4096) x new_token_ratio fit in free plus
//     evictable memory (PrefillAdder: `_get_running_request_total_token_offset`,
//     CLIP_MAX_NEW_TOKENS = 4096). new_token_ratio starts at 0.7 (`init_new_token_ratio`), falls by
//     (0.7 - 0.1) / 600 per decode step to 0.1 (`min_new_token_ratio`, `new_token_ratio_decay`).
//  5. Retraction: when a decode step cannot get KV for every running request, requests are retracted
//     (freed, back to the waiting queue, recomputed later) until it can (`retract_decode`), and
//     new_token_ratio becomes the survivors' estimate min(1, (tokens decoded + 20 x requests) /
//     (sum of max_new_tokens + 1)) (ScheduleBatch.retract_decode; RETRACT_DECODE_STEPS = 20).
//     kvplan retracts the most recently admitted first (SGLang sorts by fewest output tokens, then
//     longest prompt: the same request in a steady stream).
//  6. Schedule policy: "lpm" (the default) orders the waiting queue by longest cached prefix, but
//     only while it holds at most 128 requests and the radix cache is on; else FCFS
//     (SchedulePolicy._determine_active_policy, _validate_and_adjust_policy).
//  7. The overlap scheduler (event_loop_overlap; on unless --disable-overlap-schedule): the next
//     batch is formed while the current one runs (SchedulerConfig::overlap, in replica.cpp).
#include "internal/batch_policy.h"

#include <algorithm>
#include <cmath>

#include "kvplan/core/kv_layout.h"

namespace kvplan::sim::internal {
namespace {

constexpr size_t kLpmQueueLimit = 128;              // _determine_active_policy
constexpr double kInitialNewTokenRatio = 0.7;       // init_new_token_ratio (schedule_conservativeness 1)
constexpr double kMinNewTokenRatio = 0.1;           // min_new_token_ratio
constexpr double kNewTokenRatioDecay = (kInitialNewTokenRatio - kMinNewTokenRatio) / 600;  // decay steps 600
constexpr int64_t kClipMaxNewTokens = 4096;         // CLIP_MAX_NEW_TOKENS
constexpr int64_t kRetractDecodeSteps = 20;         // RETRACT_DECODE_STEPS

class SglangPolicy final : public BatchPolicy {
 public:
  SglangPolicy() : BatchPolicy(PolicyTraits{.reserves = false, .whole_batch = false}) {}

  void plan_step(ReplicaCore& r, TimeNs now) override {
    if (plan_prefill(r, now)) return;
    plan_decode(r);
  }

  double new_token_ratio() const { return new_token_ratio_; }

 private:
  // The headroom a running request keeps for its future tokens (rule 4).
  int64_t reserve_of(const Seq& s) const {
    const int64_t left = std::min<int64_t>(s.spec.output_tokens - s.generated, kClipMaxNewTokens);
    return static_cast<int64_t>(std::ceil(static_cast<double>(left) * new_token_ratio_));
  }

  // Rule 4's test: `tokens` more plus `reserve` fit in free or evictable memory.
  static bool fits_with_headroom(const ReplicaCore& r, int64_t tokens, int64_t reserve) {
    if (!r.kv->can_admit(tokens)) return false;
    if (r.setup.layout == nullptr) return true;
    KvUsage u = r.kv->usage();
    double need = static_cast<double>(tokens + reserve) * r.setup.layout->bytes_per_token();
    return need <= static_cast<double>(u.free_bytes + u.cached_bytes);
  }

  // Rule 6: the position in the waiting queue to admit next.
  static size_t pick_waiting(const ReplicaCore& r) {
    if (r.waiting.size() > kLpmQueueLimit || !r.setup.cache_prefixes) return 0;
    size_t best = 0;
    int64_t best_hit = -1;
    for (size_t i = 0; i < r.waiting.size(); ++i) {
      if (!r.visible(i)) continue;
      const Seq& s = r.seqs[r.waiting[i]];
      int64_t hit = s.prefilled_elsewhere ? 0 : r.kv->match_prefix(s.spec.hash_block_tokens, s.spec.prefix_hashes);
      if (hit > best_hit) {
        best_hit = hit;
        best = i;
      }
    }
    return best;
  }

  // Rules 1-4 and 6: the prefill batch (with the running decodes under rule 2). False when none.
  bool plan_prefill(ReplicaCore& r, TimeNs now) {
    int64_t decodes = 0;
    for (int32_t slot : r.running) decodes += r.seqs[slot].prefilling() ? 0 : 1;
    const int64_t mixed = r.cfg().mixed_chunk ? decodes * r.decode_query_tokens() : 0;
    int64_t budget = std::min(r.cfg().max_num_batched_tokens, r.cfg().max_prefill_tokens) - mixed;
    for (size_t i = 0; i < r.running.size() && budget > 0; ++i) {
      Seq& s = r.seqs[r.running[i]];
      if (!s.prefilling()) continue;
      int64_t tokens = std::min(s.prefill_target - s.kv_tokens, budget);
      if (s.capacity < s.kv_tokens + tokens) {
        int64_t cap = r.kv->grow(s.spec.id, s.kv_tokens + tokens);
        if (cap < 0) continue;  // wait for decodes to free memory; never preempt for a prefill
        s.capacity = cap;
      }
      r.add(r.running[i], tokens, false);
      budget -= tokens;
    }
    int64_t reserve = 0;
    for (int32_t slot : r.running) reserve += reserve_of(r.seqs[slot]);
    while (!r.waiting.empty() && !r.at_seq_limit() && budget > 0) {
      const size_t pos = pick_waiting(r);
      if (!r.visible(pos)) break;
      const Seq& w = r.seqs[r.waiting[pos]];
      const int64_t need = w.prefilled_elsewhere ? w.kv_tokens + r.decode_query_tokens()
                                                 : std::min(w.prefill_target, budget);
      if (!fits_with_headroom(r, need, reserve)) {
        r.kv_blocked = true;
        break;
      }
      if (!r.admit_waiting(pos, budget, now)) break;
      reserve += reserve_of(r.seqs[r.running.back()]);
    }
    if (r.plan.empty()) return false;
    if (r.cfg().mixed_chunk) {
      // Rule 2: every running decode joins; one that cannot get its next block waits (a mixed step
      // never retracts).
      const int64_t q = r.decode_query_tokens();
      for (int32_t slot : r.running) {
        Seq& s = r.seqs[slot];
        if (s.prefilling()) continue;
        if (s.capacity < s.kv_tokens + q) {
          const int64_t cap = r.kv->grow(s.spec.id, s.kv_tokens + q);
          if (cap < 0) continue;
          s.capacity = cap;
        }
        r.add(slot, q, true);
      }
    }
    return true;
  }

  // Rules 1 and 5: the decode batch.
  void plan_decode(ReplicaCore& r) {
    const int64_t q = r.decode_query_tokens();
    const int64_t preemptions_before = r.stats.preemptions;
    for (size_t i = 0; i < r.running.size(); ++i) {
      Seq& s = r.seqs[r.running[i]];
      const int64_t tokens =
          s.prefilling() ? std::min(s.prefill_target - s.kv_tokens, r.cfg().max_num_batched_tokens) : q;
      if (!r.ensure_capacity(i, s.kv_tokens + tokens)) break;
      r.add(r.running[i], tokens, !s.prefilling());
    }
    if (r.stats.preemptions != preemptions_before) {
      int64_t decoded = 0, max_new = 0;
      for (int32_t slot : r.running) {
        decoded += r.seqs[slot].generated;
        max_new += r.seqs[slot].spec.output_tokens;
      }
      new_token_ratio_ = std::min(1.0, static_cast<double>(decoded + kRetractDecodeSteps *
                                                                         static_cast<int64_t>(r.running.size())) /
                                           static_cast<double>(max_new + 1));
    } else {
      new_token_ratio_ = std::max(kMinNewTokenRatio, new_token_ratio_ - kNewTokenRatioDecay);
    }
  }

  double new_token_ratio_ = kInitialNewTokenRatio;
};

}  // namespace

std::unique_ptr<BatchPolicy> make_sglang_policy() { return std::make_unique<SglangPolicy>(); }

double sglang_new_token_ratio(const BatchPolicy& policy) {
  const auto* p = dynamic_cast<const SglangPolicy*>(&policy);
  return p != nullptr ? p->new_token_ratio() : -1.0;
}

}  // namespace kvplan::sim::internal

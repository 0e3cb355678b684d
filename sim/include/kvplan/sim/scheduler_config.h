// kvplan/sim/scheduler_config.h — how a replica batches requests.
//
//   SchedulerConfig s{.kind = SchedulerKind::kVllm, .max_num_seqs = 256,
//                     .max_num_batched_tokens = 8192, .chunked_prefill = true};
//   s.spec = SpecDecodeConfig{.draft_tokens = 4, .acceptance_rate = 0.7};
//
// Policies (DESIGN §5):
//  - static: Hugging Face generate. A batch of up to max_num_seqs waiting requests is prefilled
//    together (prompts padded to the longest) and decoded until its longest member finishes; new
//    arrivals wait for the next batch. Memory: contiguous max-length reservation.
//  - orca: iteration-level batching with per-request reservation. Requests join and leave at every
//    step; a prompt is prefilled whole in one step; admission needs the reservation to fit.
//  - vllm: paged continuous batching. Running requests first (decodes, then unfinished prefill
//    chunks), then waiting requests FCFS, within max_num_batched_tokens and max_num_seqs; chunked
//    prefill splits prompts over steps; when a block cannot be allocated the most recently admitted
//    request is preempted (recompute: freed and re-queued at the front; swap: its KV is copied to
//    host memory and copied back before it resumes).
//  - sglang: paged (page size from the scheme) with the radix prefix cache; prefill and decode run
//    in separate steps (prefill first when anything can be admitted); the waiting queue is ordered
//    by longest cached prefix when it holds at most 128 requests, else FCFS (SGLang's rule).
//  - Speculative decoding (any continuous policy): each decode step verifies draft_tokens drafts
//    per sequence (k + 1 query tokens), KV is allocated for all of them and rolled back to the
//    accepted ones; each draft is accepted with probability acceptance_rate until the first
//    rejection (Leviathan et al. 2023), so a step emits 1..k+1 tokens. Drafting costs
//    k · draft_cost_ratio decode steps of the target model at the same batch.
#pragma once

#include <cstdint>
#include <string_view>

namespace kvplan::sim {

enum class SchedulerKind { kStatic, kOrca, kVllm, kSglang };
std::string_view scheduler_kind_name(SchedulerKind kind);
SchedulerKind parse_scheduler_kind(std::string_view text);  // static | orca | vllm | sglang

enum class PreemptionMode { kRecompute, kSwap };
std::string_view preemption_mode_name(PreemptionMode mode);
PreemptionMode parse_preemption_mode(std::string_view text);  // recompute | swap

struct SpecDecodeConfig {
  int32_t draft_tokens = 0;        // k; 0: off
  double acceptance_rate = 0.7;    // per draft token, in [0, 1]
  double draft_cost_ratio = 0.05;  // one draft step / one target decode step at the same batch
};

struct SchedulerConfig {
  SchedulerKind kind = SchedulerKind::kVllm;
  int32_t max_num_seqs = 256;
  int64_t max_num_batched_tokens = 8192;
  bool chunked_prefill = true;
  PreemptionMode preemption = PreemptionMode::kRecompute;
  int64_t max_model_len = 8192;    // longer requests are rejected
  SpecDecodeConfig spec;
};

// Throws ConfigError naming the field, the value and the rule.
void validate(const SchedulerConfig& config);

}  // namespace kvplan::sim

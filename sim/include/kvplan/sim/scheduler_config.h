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
//  - trtllm: TensorRT-LLM in-flight batching under max_num_tokens (max_num_batched_tokens) and
//    max_batch_size (max_num_seqs), generation requests first, then context (chunked only when
//    chunked_prefill is on); the capacity policy decides which requests may start (capacity).
//  - overlap: the engine forms step n+1 while step n runs (SGLang's overlap scheduler, TensorRT-LLM's
//    overlap scheduler, vLLM's async scheduling): the schedule sees only requests queued when step n
//    started, requests finished in step n release their KV after step n+1 is formed, and the
//    engine's CPU time per step hides behind the GPU's (a step takes max(GPU, CPU), not the sum).
//  - Speculative decoding (any continuous policy): each decode step verifies draft_tokens drafts
//    per sequence (k + 1 query tokens), KV is allocated for all of them and rolled back to the
//    accepted ones; each draft is accepted with probability acceptance_rate until the first
//    rejection (Leviathan et al. 2023), so a step emits 1..k+1 tokens. Drafting costs
//    k · draft_cost_ratio decode steps of the target model at the same batch.
#pragma once

#include <cstdint>
#include <string_view>

namespace kvplan::sim {

enum class SchedulerKind { kStatic, kOrca, kVllm, kSglang, kTrtllm };
std::string_view scheduler_kind_name(SchedulerKind kind);
SchedulerKind parse_scheduler_kind(std::string_view text);  // static | orca | vllm | sglang | trtllm

// TensorRT-LLM's capacity scheduler policy (CapacitySchedulerPolicy): start a request only when the
// KV it needs to finish is free (never evict), or start requests while their next step fits and
// pause the last started when memory runs out.
enum class CapacityPolicy { kGuaranteedNoEvict, kMaxUtilization };
std::string_view capacity_policy_name(CapacityPolicy policy);
CapacityPolicy parse_capacity_policy(std::string_view text);  // guaranteed_no_evict | max_utilization

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
  bool overlap = false;            // step n+1 formed while step n runs (see above)
  // SGLang: prefill tokens per step besides chunked_prefill_size (max_num_batched_tokens), and
  // whether running decodes join prefill steps (--enable-mixed-chunk).
  int64_t max_prefill_tokens = 16384;
  bool mixed_chunk = false;
  CapacityPolicy capacity = CapacityPolicy::kGuaranteedNoEvict;  // trtllm
  SpecDecodeConfig spec;
};

// Throws ConfigError naming the field, the value and the rule.
void validate(const SchedulerConfig& config);

}  // namespace kvplan::sim

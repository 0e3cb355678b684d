// kvplan/kernels/split_plan.h — how many splits (flash-decoding) a decode-attention launch should
// use, planned on the host from the batch shape and the SM count. Plain C++, no CUDA: the
// calibration sweeps and the simulator's cost model call the same function the launch path does.
//
//   SplitPlan plan = plan_decode_splits({.num_seqs = 1, .num_kv_heads = 8, .max_context_len = 32768,
//                                        .total_context_tokens = 32768, .num_sms = 132});
//   params.num_splits = plan.num_splits;   // 17 here: 136 CTAs, about one wave
#pragma once

#include <cstdint>
#include <string_view>

namespace kvplan::kernels {

struct SplitPlanInput {
  int num_seqs = 0;
  int num_kv_heads = 0;                // per GPU (the decode kernel runs one CTA per sequence and KV head)
  int64_t max_context_len = 0;         // tokens of the longest sequence in the batch
  int64_t total_context_tokens = 0;    // sum of context lengths over the batch
  int num_sms = 0;                     // DeviceInfo::num_sms
};

enum class SplitReason : uint8_t {
  kEmpty,              // no tokens: nothing to split
  kBalancedWithout,    // the longest sequence already takes no longer than the balanced share
  kSplitToBalance,     // split so the longest sequence's pieces match the balanced share
  kLimitedByMinTokens, // wanted more splits, but each split must keep kMinTokensPerSplit tokens
  kLimitedByMaxSplits, // wanted more splits than kMaxDecodeSplits
};
std::string_view split_reason_name(SplitReason r);

struct SplitPlan {
  int num_splits = 1;
  // Tokens of one KV head the busiest SM must read with this plan, as the planner estimates it:
  // max(ceil(max_context_len / num_splits), balanced_tokens_per_sm). The simulator's cost model
  // uses it as the critical path of the attention step.
  int64_t critical_tokens = 0;
  // ceil(total_context_tokens * num_kv_heads / num_sms): each SM's share of the KV rows if the
  // work were spread perfectly; no plan does better.
  int64_t balanced_tokens_per_sm = 0;
  SplitReason reason = SplitReason::kEmpty;
};

// A split shorter than this costs more in its fixed parts (CTA start, query load, writing and
// re-reading an fp32 partial of head_dim + 1 values per query head) than its tokens save.
inline constexpr int64_t kMinTokensPerSplit = 256;
// Upper bound on splits: bounds the fp32 workspace and the combine kernel's reads per output.
inline constexpr int kMaxDecodeSplits = 64;

// Throws nothing; inputs <= 0 give num_splits 1 (reason kEmpty when there are no tokens).
SplitPlan plan_decode_splits(const SplitPlanInput& in);

}  // namespace kvplan::kernels

// Split-KV planning for decode attention. The reasoning, in the units the decode kernel works in
// ("token rows": one token's K and V row of one KV head, read once by one CTA):
//
// 1. Without splitting, the kernel runs one CTA per (sequence, KV head). The CTA of the longest
//    sequence reads max_context_len rows and nothing can finish before it does; meanwhile the whole
//    batch reads total_context_tokens * num_kv_heads rows, which spread over num_sms SMs is at best
//    `balanced = ceil(total * num_kv_heads / num_sms)` rows per SM. Decode attention is bound by
//    memory bandwidth, so step time ~ max(max_context_len, balanced) rows.
// 2. With s splits the longest CTA reads ceil(max_context_len / s) rows; the balanced share does
//    not change (splitting adds no KV reads). So splitting helps exactly while
//    max_context_len / s > balanced, and the natural choice is s = ceil(max_context_len / balanced):
//    the longest sequence's pieces become no longer than an SM's fair share. This uses both the
//    max and the total, so it handles
//      - batch 1, 8 KV heads, 32K tokens, 132 SMs: balanced = ceil(262144 / 132) = 1986,
//        s = ceil(32768 / 1986) = 17 -> 136 CTAs, about one wave;
//      - a large uniform batch (256 x 4K, 8 heads): balanced = 63,550 >= 4,096 -> 1 split, the CTAs
//        already fill the machine many times over;
//      - a large batch with one very long sequence: that sequence alone is split, as far as needed
//        to stop it from being the critical path.
// 3. Limits: each split keeps at least kMinTokensPerSplit tokens of the longest sequence (below that
//    the fixed per-CTA cost and the fp32 partial round trip outweigh the saved rows; it also means a
//    split never exceeds what the context can fill), and at most kMaxDecodeSplits.
// 4. Splitting for a gain under 1.2x is not worth the combine kernel and the workspace traffic:
//    when max_context_len < 1.2 * balanced we keep 1 split.
#include "kvplan/kernels/split_plan.h"

#include <algorithm>

namespace kvplan::kernels {

namespace {
constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
}  // namespace

std::string_view split_reason_name(SplitReason r) {
  switch (r) {
    case SplitReason::kEmpty: return "empty";
    case SplitReason::kBalancedWithout: return "balanced without splitting";
    case SplitReason::kSplitToBalance: return "split to balance";
    case SplitReason::kLimitedByMinTokens: return "limited by min tokens per split";
    case SplitReason::kLimitedByMaxSplits: return "limited by max splits";
  }
  return "?";
}

SplitPlan plan_decode_splits(const SplitPlanInput& in) {
  SplitPlan plan;
  if (in.num_seqs <= 0 || in.num_kv_heads <= 0 || in.max_context_len <= 0 || in.total_context_tokens <= 0 ||
      in.num_sms <= 0) {
    plan.reason = SplitReason::kEmpty;
    plan.critical_tokens = std::max<int64_t>(in.max_context_len, 0);
    return plan;
  }
  const int64_t total = std::max(in.total_context_tokens, in.max_context_len);  // total includes the max
  plan.balanced_tokens_per_sm = ceil_div(total * in.num_kv_heads, in.num_sms);
  const int64_t balanced = plan.balanced_tokens_per_sm;

  // Step 4: no worthwhile gain (10 * max < 12 * balanced is max < 1.2 * balanced, in integers).
  int64_t splits = 1;
  if (10 * in.max_context_len < 12 * balanced) {
    plan.reason = SplitReason::kBalancedWithout;
  } else {
    splits = ceil_div(in.max_context_len, balanced);  // step 2
    plan.reason = SplitReason::kSplitToBalance;
    const int64_t by_tokens = std::max<int64_t>(1, in.max_context_len / kMinTokensPerSplit);  // step 3
    if (splits > by_tokens) {
      splits = by_tokens;
      plan.reason = SplitReason::kLimitedByMinTokens;
    }
    if (splits > kMaxDecodeSplits) {
      splits = kMaxDecodeSplits;
      plan.reason = SplitReason::kLimitedByMaxSplits;
    }
    if (splits <= 1) {
      splits = 1;
    }
  }
  plan.num_splits = static_cast<int>(splits);
  plan.critical_tokens = std::max(ceil_div(in.max_context_len, splits), balanced);
  return plan;
}

}  // namespace kvplan::kernels

// Split-KV planning: hand-computed cases (balanced = ceil(total * num_kv_heads / num_sms),
// wanted = ceil(max / balanced), then the min-tokens and max-splits limits), and properties over a
// sweep of shapes.
#include "kvplan/kernels/split_plan.h"

#include <algorithm>

#include <gtest/gtest.h>

#include "kvplan/kernels/decode_attention.h"

namespace kvplan::kernels {
namespace {

SplitPlanInput uniform(int num_seqs, int num_kv_heads, int64_t context_len, int num_sms) {
  return {num_seqs, num_kv_heads, context_len, context_len * num_seqs, num_sms};
}

TEST(SplitPlan, Batch1LongContextFillsTheSms) {
  // balanced = ceil(32768 * 8 / 132) = 1986; wanted = ceil(32768 / 1986) = 17 -> 8 * 17 = 136 CTAs >= 132 SMs.
  const SplitPlan plan = plan_decode_splits(uniform(1, 8, 32768, 132));
  EXPECT_EQ(plan.balanced_tokens_per_sm, 1986);
  EXPECT_EQ(plan.num_splits, 17);
  EXPECT_EQ(plan.reason, SplitReason::kSplitToBalance);
  EXPECT_GE(8 * plan.num_splits, 132);
  EXPECT_EQ(plan.critical_tokens, 1986);  // max(ceil(32768 / 17) = 1928, 1986)
}

TEST(SplitPlan, LargeBatchDoesNotSplit) {
  // balanced = ceil(256 * 4096 * 8 / 132) = 63551 >= 4096: the CTAs already cover the SMs many times.
  const SplitPlan plan = plan_decode_splits(uniform(256, 8, 4096, 132));
  EXPECT_EQ(plan.num_splits, 1);
  EXPECT_EQ(plan.reason, SplitReason::kBalancedWithout);
  EXPECT_EQ(plan.balanced_tokens_per_sm, 63551);
  EXPECT_EQ(plan.critical_tokens, 63551);
}

TEST(SplitPlan, SmallGainIsNotWorthASplit) {
  // 16 x 8 = 128 CTAs on 132 SMs: balanced = ceil(262144 / 132) = 1986; 2048 < 1.2 * 1986.
  const SplitPlan plan = plan_decode_splits(uniform(16, 8, 2048, 132));
  EXPECT_EQ(plan.num_splits, 1);
  EXPECT_EQ(plan.reason, SplitReason::kBalancedWithout);
}

TEST(SplitPlan, SplitsKeepTheMinimumTokens) {
  // balanced = ceil(8000 / 132) = 61, wanted 17, but 1000 / 256 = 3 splits at most.
  const SplitPlan plan = plan_decode_splits(uniform(1, 8, 1000, 132));
  EXPECT_EQ(plan.num_splits, 3);
  EXPECT_EQ(plan.reason, SplitReason::kLimitedByMinTokens);
  EXPECT_EQ(plan.critical_tokens, 334);  // ceil(1000 / 3)
  // Shorter than two minimum splits: no split at all.
  const SplitPlan short_plan = plan_decode_splits(uniform(1, 8, 300, 132));
  EXPECT_EQ(short_plan.num_splits, 1);
  EXPECT_EQ(short_plan.reason, SplitReason::kLimitedByMinTokens);
  EXPECT_EQ(short_plan.critical_tokens, 300);
}

TEST(SplitPlan, SplitsAreCappedAtTheMaximum) {
  // 1 KV head, 1M tokens: balanced = ceil(1e6 / 132) = 7576, wanted 132 -> capped at 64.
  const SplitPlan plan = plan_decode_splits(uniform(1, 1, 1000000, 132));
  EXPECT_EQ(plan.num_splits, kMaxDecodeSplits);
  EXPECT_EQ(plan.reason, SplitReason::kLimitedByMaxSplits);
  EXPECT_EQ(plan.critical_tokens, 15625);  // 1e6 / 64
}

TEST(SplitPlan, OneLongSequenceInALargeBatchIsSplit) {
  // 32768 + 255 x 100 = 58268 tokens, 8 heads: balanced = ceil(466144 / 132) = 3532; the uniform
  // rule "2048 CTAs >= 132 SMs, don't split" would leave the 32K sequence as a 9x critical path.
  const SplitPlan plan = plan_decode_splits({256, 8, 32768, 32768 + 255 * 100, 132});
  EXPECT_EQ(plan.balanced_tokens_per_sm, 3532);
  EXPECT_EQ(plan.num_splits, 10);  // ceil(32768 / 3532)
  EXPECT_EQ(plan.critical_tokens, 3532);
}

TEST(SplitPlan, EmptyOrInvalidInputGivesOneSplit) {
  EXPECT_EQ(plan_decode_splits({0, 8, 0, 0, 132}).num_splits, 1);
  EXPECT_EQ(plan_decode_splits({0, 8, 0, 0, 132}).reason, SplitReason::kEmpty);
  EXPECT_EQ(plan_decode_splits({1, 8, 4096, 4096, 0}).num_splits, 1);
  EXPECT_EQ(split_reason_name(SplitReason::kSplitToBalance), "split to balance");
}

TEST(SplitPlan, PropertiesOverASweep) {
  for (int num_sms : {1, 80, 108, 132}) {
    for (int num_seqs : {1, 2, 7, 64, 512}) {
      for (int heads : {1, 2, 8, 32}) {
        for (int64_t len : {1, 255, 256, 511, 512, 4096, 33000, 131072}) {
          const SplitPlan plan = plan_decode_splits(uniform(num_seqs, heads, len, num_sms));
          SCOPED_TRACE(::testing::Message() << num_sms << " SMs, " << num_seqs << " x " << len << ", " << heads << " heads");
          ASSERT_GE(plan.num_splits, 1);
          ASSERT_LE(plan.num_splits, kMaxDecodeSplits);
          if (plan.num_splits > 1) {
            // Never a split shorter than the minimum, never an empty split of the longest sequence.
            EXPECT_GE((len + plan.num_splits - 1) / plan.num_splits, kMinTokensPerSplit);
            const DecodeSplitRange last = decode_split_range(static_cast<int>(len), plan.num_splits, plan.num_splits - 1);
            EXPECT_GT(last.end - last.begin, 0);
            // Splitting only when it buys at least the 1.2x the planner asks for.
            EXPECT_GE(10 * len, 12 * plan.balanced_tokens_per_sm);
          }
          // Splitting never leaves the longest piece longer than it was.
          EXPECT_LE(plan.critical_tokens, std::max(len, plan.balanced_tokens_per_sm));
          EXPECT_GE(plan.critical_tokens, plan.balanced_tokens_per_sm);
        }
      }
    }
  }
}

TEST(SplitPlan, SplitRangesCoverTheContextOnce) {
  for (int len : {0, 1, 2, 15, 16, 17, 1000, 33000}) {
    for (int splits : {1, 2, 3, 7, 16, 64}) {
      int next = 0;
      for (int s = 0; s < splits; ++s) {
        const DecodeSplitRange r = decode_split_range(len, splits, s);
        EXPECT_EQ(r.begin, next) << len << " / " << splits << " split " << s;
        EXPECT_LE(r.begin, r.end);
        EXPECT_LE(r.end - r.begin, (len + splits - 1) / splits);
        next = r.end;
      }
      EXPECT_EQ(next, len) << len << " / " << splits;
    }
  }
  // 10 tokens in 4 splits: 3, 3, 3, 1; 2 tokens in 4: 1, 1, then two empty splits.
  EXPECT_EQ(decode_split_range(10, 4, 3).begin, 9);
  EXPECT_EQ(decode_split_range(10, 4, 3).end, 10);
  EXPECT_EQ(decode_split_range(2, 4, 2).begin, 2);
  EXPECT_EQ(decode_split_range(2, 4, 3).end, 2);
}

}  // namespace
}  // namespace kvplan::kernels

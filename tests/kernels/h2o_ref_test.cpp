// CPU references of H2O (h2o.h): decode attention + accumulated mass on a two-token case by hand,
// the heavy-hitter + recent selection on a hand-made score vector with a tie, per-head compaction.
#include "kvplan/kernels/reference/h2o_ref.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "kvplan/kernels/numeric.h"

namespace kvplan::kernels {
namespace {

TEST(H2ORef, KeptPositionsHeavyHittersPlusRecentTieToLowerPosition) {
  // len 7, budget 5, recent 2: keep 5, 6; candidates 0..4 with scores 0.5 0.9 0.1 0.5 0.7; the top 3
  // are 1 (0.9), 4 (0.7), then 0 and 3 tie at 0.5: the lower position, 0, wins.
  const std::vector<float> s = {0.5f, 0.9f, 0.1f, 0.5f, 0.7f, 0.0f, 0.0f};
  EXPECT_EQ(h2o_kept_positions(s.data(), 7, 5, 2), (std::vector<int>{0, 1, 4, 5, 6}));
  // Recent tokens are kept whatever their score; budget 3, recent 2: only the best candidate, 1.
  EXPECT_EQ(h2o_kept_positions(s.data(), 7, 3, 2), (std::vector<int>{1, 5, 6}));
  // recent == budget: the last budget tokens.
  EXPECT_EQ(h2o_kept_positions(s.data(), 7, 3, 3), (std::vector<int>{4, 5, 6}));
  // recent 0, budget 2: 1 and 4.
  EXPECT_EQ(h2o_kept_positions(s.data(), 7, 2, 0), (std::vector<int>{1, 4}));
  // len <= budget: everything.
  EXPECT_EQ(h2o_kept_positions(s.data(), 4, 5, 2), (std::vector<int>{0, 1, 2, 3}));
  // All equal: the lowest positions win the heavy slots.
  const std::vector<float> flat(6, 1.0f);
  EXPECT_EQ(h2o_kept_positions(flat.data(), 6, 3, 1), (std::vector<int>{0, 1, 5}));
}

TEST(H2ORef, EvictCompactsPerHeadPreservingOrder) {
  // 1 sequence, 2 KV heads, head_dim 8, max_tokens 8, len 7, budget 4, recent 1. Row t of head h
  // holds value 10 h + t in every channel, so the kept positions can be read back.
  const int H = 2, D = 8, T = 8;
  std::vector<uint16_t> k(static_cast<size_t>(H) * T * D), v(k.size());
  for (int h = 0; h < H; ++h)
    for (int t = 0; t < T; ++t)
      for (int c = 0; c < D; ++c) {
        k[(static_cast<size_t>(h) * T + t) * D + c] = float_to_bf16(float(10 * h + t));
        v[(static_cast<size_t>(h) * T + t) * D + c] = float_to_bf16(float(-10 * h - t));
      }
  // head 0 prefers 2, 5, 0; head 1 prefers 3, 5, then 1 and 4 tie at 0.5: 1 (lower position) wins.
  const std::vector<float> scores = {0.3f, 0.1f, 0.9f, 0.0f, 0.2f, 0.8f, 0.0f, 0.f,
                                     0.0f, 0.5f, 0.1f, 0.7f, 0.5f, 0.6f, 0.0f, 0.f};
  const std::vector<int32_t> lens = {7};
  H2OEvictParams p;
  p.num_seqs = 1;
  p.num_kv_heads = H;
  p.head_dim = D;
  p.max_tokens = T;
  p.budget_tokens = 4;
  p.recent_tokens = 1;
  p.k_in = k.data();
  p.v_in = v.data();
  p.scores_in = scores.data();
  p.context_lens = lens.data();
  const H2OEvictRef r = h2o_evict_ref(p);
  ASSERT_EQ(r.new_context_lens, std::vector<int32_t>{4});
  const std::vector<std::vector<int>> want = {{0, 2, 5, 6}, {1, 3, 5, 6}};
  for (int h = 0; h < H; ++h) {
    for (int j = 0; j < 4; ++j) {
      const int t = want[h][j];
      EXPECT_EQ(bf16_to_float(r.k[(static_cast<size_t>(h) * T + j) * D + 3]), float(10 * h + t)) << h << "," << j;
      EXPECT_EQ(bf16_to_float(r.v[(static_cast<size_t>(h) * T + j) * D + 7]), float(-10 * h - t)) << h << "," << j;
      EXPECT_EQ(r.scores[static_cast<size_t>(h) * T + j], scores[static_cast<size_t>(h) * T + t]);
    }
  }
}

TEST(H2ORef, DecodeOutputAndMassByHand) {
  // One sequence, one KV head, two query heads (group 2), head_dim 2, 2 tokens: k0 = [1, 0],
  // k1 = [0, 1], v0 = [1, 2], v1 = [3, -1]; q0 = [1, 0] (scores 1, 0), q1 = [0, 1] (scores 0, 1).
  // w = 1 / (1 + e): head 0 weights (1 - w, w), head 1 (w, 1 - w). Mass: each token 1 - w + w = 1.
  const std::vector<uint16_t> q = {float_to_bf16(1), float_to_bf16(0), float_to_bf16(0), float_to_bf16(1)};
  const std::vector<uint16_t> k = {float_to_bf16(1), float_to_bf16(0), float_to_bf16(0), float_to_bf16(1),
                                   float_to_bf16(9), float_to_bf16(9)};  // slot 2: beyond len, unread
  const std::vector<uint16_t> v = {float_to_bf16(1), float_to_bf16(2), float_to_bf16(3), float_to_bf16(-1),
                                   float_to_bf16(9), float_to_bf16(9)};
  std::vector<float> acc = {0.25f, 0.5f, 7.0f};
  const std::vector<int32_t> lens = {2};
  H2ODecodeParams p;
  p.dtype = ElemType::kBF16;
  p.num_seqs = 1;
  p.num_q_heads = 2;
  p.num_kv_heads = 1;
  p.head_dim = 2;
  p.max_tokens = 3;
  p.softmax_scale = 1.f;
  p.q = q.data();
  p.k_cache = k.data();
  p.v_cache = v.data();
  p.context_lens = lens.data();
  p.acc_scores = acc.data();
  const H2ODecodeRef r = h2o_decode_attention_ref(p);
  const double w = 1 / (1 + std::exp(1.0));
  EXPECT_NEAR(r.out[0], (1 - w) * 1 + w * 3, 1e-12);
  EXPECT_NEAR(r.out[1], (1 - w) * 2 - w, 1e-12);
  EXPECT_NEAR(r.out[2], w * 1 + (1 - w) * 3, 1e-12);
  EXPECT_NEAR(r.out[3], w * 2 - (1 - w), 1e-12);
  EXPECT_NEAR(r.acc_scores[0], 0.25 + 1.0, 1e-12);
  EXPECT_NEAR(r.acc_scores[1], 0.5 + 1.0, 1e-12);
  EXPECT_EQ(r.acc_scores[2], 7.0);  // beyond len: untouched
  // One query head only (group 1 view of the same data): masses 1 - w and w.
  p.num_q_heads = 1;
  const H2ODecodeRef r1 = h2o_decode_attention_ref(p);
  EXPECT_NEAR(r1.acc_scores[0], 0.25 + (1 - w), 1e-12);
  EXPECT_NEAR(r1.acc_scores[1], 0.5 + w, 1e-12);
}

// Randomized invariants of the selection: min(len, budget) positions, increasing, the recent window
// included, and no evicted candidate outranks a kept one (score, then lower position).
TEST(H2ORef, KeptPositionsInvariantsOnRandomScores) {
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 500; ++trial) {
    const int len = int(rng() % 40), budget = 1 + int(rng() % 20), recent = int(rng() % (budget + 1));
    std::vector<float> s(size_t(len) + 1);
    for (float& x : s) x = 0.25f * float(rng() % 6);  // many ties
    const std::vector<int> kept = h2o_kept_positions(s.data(), len, budget, recent);
    ASSERT_EQ(int(kept.size()), std::min(len, budget));
    ASSERT_TRUE(std::is_sorted(kept.begin(), kept.end()));
    if (len <= budget) continue;
    std::vector<bool> in(size_t(len), false);
    for (int t : kept) in[size_t(t)] = true;
    for (int t = len - recent; t < len; ++t) ASSERT_TRUE(in[size_t(t)]);
    for (int a = 0; a < len - recent; ++a) {
      for (int b = 0; b < len - recent; ++b) {
        if (in[size_t(a)] && !in[size_t(b)]) {
          ASSERT_TRUE(s[a] > s[b] || (s[a] == s[b] && a < b)) << "trial " << trial << ": kept " << a << ", evicted " << b;
        }
      }
    }
  }
}

}  // namespace
}  // namespace kvplan::kernels

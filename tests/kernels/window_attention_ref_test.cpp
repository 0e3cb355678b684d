// CPU reference of sliding-window / StreamingLLM decode (window_attention.h) on hand-made cases: the
// token-span arithmetic, a window of 2 over 5 tokens equal to full attention over the last 2 (with
// the unattended block's table entry -1), StreamingLLM sinks 1 + window 2 over 6 tokens with the
// rotary at cache positions 0, 1, 2 worked out by hand.
#include "kvplan/kernels/reference/window_attention_ref.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "kernel_test_support.h"
#include "kvplan/kernels/numeric.h"
#include "kvplan/kernels/reference/decode_attention_ref.h"

namespace kvplan::kernels {
namespace {

TEST(WindowAttentionRef, SpanArithmetic) {
  WindowSpan s = window_span(6, 1, 2);  // sink 0, window 4..5
  EXPECT_EQ(s.sinks, 1);
  EXPECT_EQ(s.window_begin, 4);
  EXPECT_EQ(s.count, 3);
  EXPECT_EQ(window_token(s, 0), 0);
  EXPECT_EQ(window_token(s, 1), 4);
  EXPECT_EQ(window_token(s, 2), 5);
  s = window_span(3, 4, 2);  // shorter than the sinks: everything, in order
  EXPECT_EQ(s.sinks, 3);
  EXPECT_EQ(s.window_begin, 3);
  EXPECT_EQ(s.count, 3);
  s = window_span(3, 1, 2);  // exactly S + W: sinks and window meet, nothing dropped
  EXPECT_EQ(s.count, 3);
  EXPECT_EQ(window_token(s, 1), 1);
  s = window_span(5, 0, 2);  // plain sliding window
  EXPECT_EQ(s.window_begin, 3);
  EXPECT_EQ(s.count, 2);
  EXPECT_EQ(window_span(0, 4, 8).count, 0);
  EXPECT_EQ(window_span(100, 4, 8).count, 12);
}

TEST(WindowAttentionRef, RotaryByHand) {
  // head_dim 4, rotary_dim 4, theta 100: w_0 = 1, w_1 = 100^(-2/4) = 0.1. Pairs (x0, x2), (x1, x3).
  double x[4] = {1, 2, 3, 4};
  rotary_ref(x, 4, 100.0, 2.0);
  EXPECT_NEAR(x[0], 1 * std::cos(2.0) - 3 * std::sin(2.0), 1e-12);
  EXPECT_NEAR(x[2], 3 * std::cos(2.0) + 1 * std::sin(2.0), 1e-12);
  EXPECT_NEAR(x[1], 2 * std::cos(0.2) - 4 * std::sin(0.2), 1e-12);
  EXPECT_NEAR(x[3], 4 * std::cos(0.2) + 2 * std::sin(0.2), 1e-12);
}

// A paged cache of head_dim 2, one KV head, tokens_per_block 2; token t of sequence 0 in block
// table[t / 2]. Values set per token.
struct Paged {
  std::vector<uint16_t> q, k, v;
  std::vector<int32_t> table, lens;
  WindowDecodeParams p;
  Paged(int len, const std::vector<float>& kv_k, const std::vector<float>& kv_v, std::vector<float> q_vals) {
    const int tpb = 2;
    const int blocks = (len + tpb - 1) / tpb;
    for (float x : q_vals) q.push_back(float_to_fp16(x));
    k.assign(static_cast<size_t>(blocks) * tpb * 2, float_to_fp16(0.f));
    v = k;
    for (int b = 0; b < blocks; ++b) table.push_back(blocks - 1 - b);  // reversed: the reference must follow the table
    for (int t = 0; t < len; ++t) {
      const size_t row = (static_cast<size_t>(table[t / tpb]) * tpb + t % tpb) * 2;
      for (int c = 0; c < 2; ++c) {
        k[row + c] = float_to_fp16(kv_k[static_cast<size_t>(t) * 2 + c]);
        v[row + c] = float_to_fp16(kv_v[static_cast<size_t>(t) * 2 + c]);
      }
    }
    lens = {len};
    p.dtype = ElemType::kFP16;
    p.num_seqs = 1;
    p.num_q_heads = 1;
    p.num_kv_heads = 1;
    p.head_dim = 2;
    p.num_blocks = blocks;
    p.tokens_per_block = tpb;
    p.max_blocks_per_seq = blocks;
    p.softmax_scale = 1.f;
    p.q = q.data();
    p.k_cache = k.data();
    p.v_cache = v.data();
    p.block_table = table.data();
    p.context_lens = lens.data();
  }
};

TEST(WindowAttentionRef, WindowOfTwoEqualsFullAttentionOverTheLastTwo) {
  const std::vector<float> k = {9, 9, -9, 9, 5, -5, 1, 0, 0, 1};  // tokens 0..2 would dominate if attended
  const std::vector<float> v = {7, 7, 7, 7, 7, 7, 1, 2, 3, -1};
  Paged c(5, k, v, {1, 0});
  c.p.window_tokens = 2;
  c.table[0] = -1;  // entry of tokens 0, 1: freed, never read
  const std::vector<double> got = window_decode_attention_ref(c.p);
  // Tokens 3, 4: k = [1, 0], [0, 1], v = [1, 2], [3, -1]; scores 1, 0 (the decode reference's case).
  const double w = 1 / (1 + std::exp(1.0));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_NEAR(got[0], 1 + 2 * w, 1e-12);
  EXPECT_NEAR(got[1], 2 - 3 * w, 1e-12);
}

TEST(WindowAttentionRef, WindowCoveringEverythingEqualsPagedDecode) {
  const std::vector<float> k = {0.5f, -1, 0.25f, 2, -1.5f, 0.75f};
  const std::vector<float> v = {1, 2, -3, 0.5f, 2, 2};
  Paged c(3, k, v, {0.75f, -0.5f});
  c.p.window_tokens = 3;
  PagedDecodeAttentionParams d;
  d.dtype = c.p.dtype;
  d.num_seqs = 1;
  d.num_q_heads = 1;
  d.num_kv_heads = 1;
  d.head_dim = 2;
  d.num_blocks = c.p.num_blocks;
  d.tokens_per_block = 2;
  d.max_blocks_per_seq = c.p.max_blocks_per_seq;
  d.softmax_scale = 1.f;
  d.q = c.p.q;
  d.k_cache = c.p.k_cache;
  d.v_cache = c.p.v_cache;
  d.block_table = c.p.block_table;
  d.context_lens = c.p.context_lens;
  const std::vector<double> want = paged_decode_attention_ref(d);
  for (int window : {3, 4, 100}) {
    c.p.window_tokens = window;
    const std::vector<double> got = window_decode_attention_ref(c.p);
    for (size_t i = 0; i < want.size(); ++i) EXPECT_DOUBLE_EQ(got[i], want[i]) << "window " << window;
  }
}

TEST(WindowAttentionRef, StreamingLlmSinkOneWindowTwoOverSixTokensRotaryAtCachePositions) {
  // Kept: token 0 (sink, cache position 0), tokens 4, 5 (window, cache positions 1, 2); the query is
  // at cache position 2. head_dim = rotary_dim = 2: one pair, w_0 = 1, so rotation by angle = position:
  // R(a)(x, y) = (x cos a - y sin a, y cos a + x sin a), and R(a)u . R(b)w = u . R(b - a)w.
  // q = [1, 0]; k0 = [1, 0] -> score q . R(0 - 2)k0 = cos(-2) = cos 2;
  // k4 = [0, 1] -> q . R(1 - 2)[0, 1] = -sin(-1) = sin 1;  k5 = [1, 0] -> q . R(0)k5 = 1.
  // Tokens 1..3 carry large keys and values: attending to any of them changes the answer.
  const std::vector<float> k = {1, 0, 8, 8, -8, 8, 8, -8, 0, 1, 1, 0};
  const std::vector<float> v = {1, 2, 50, 50, 50, 50, 50, 50, 3, -1, -2, 4};
  Paged c(6, k, v, {1, 0});
  c.p.window_tokens = 2;
  c.p.sink_tokens = 1;
  c.p.rotary_dim = 2;
  c.p.rope_theta = 10000.f;
  c.table[1] = -1;  // block of tokens 2, 3 (entry 1): freed, never read
  const std::vector<double> got = window_decode_attention_ref(c.p);
  const double s[3] = {std::cos(2.0), std::sin(1.0), 1.0};
  const double e[3] = {std::exp(s[0]), std::exp(s[1]), std::exp(s[2])};
  const double sum = e[0] + e[1] + e[2];
  ASSERT_EQ(got.size(), 2u);
  EXPECT_NEAR(got[0], (e[0] * 1 + e[1] * 3 + e[2] * -2) / sum, 1e-12);
  EXPECT_NEAR(got[1], (e[0] * 2 + e[1] * -1 + e[2] * 4) / sum, 1e-12);
  // With original text positions (0, 4, 5; query at 5) the scores would be cos 5, sin 1, 1: different.
  EXPECT_GT(std::fabs(std::cos(5.0) - s[0]), 0.5);
}

// Random shapes: the window reference equals plain decode over a contiguous cache that holds just
// the attended tokens, in order, with keys (and the query) rotated by rotary_ref at cache positions
// beforehand — the definition of window_attention.h restated through another reference.
TEST(WindowAttentionRef, EqualsDecodeOverGatheredPreRotatedTokens) {
  std::mt19937_64 rng(11);
  const ElemType t = ElemType::kFP16;
  for (int trial = 0; trial < 20; ++trial) {
    const int H = 1 + int(rng() % 3), group = 1 + int(rng() % 3), D = 16 * (1 + int(rng() % 2)), tpb = 4;
    const int rotary = trial % 2 == 0 ? 0 : 16;
    const int sinks = int(rng() % 4), window = 1 + int(rng() % 9);
    const std::vector<int32_t> lens = {int(rng() % 30), 1 + int(rng() % 30)};
    const int max_blocks = 8, num_blocks = 2 * max_blocks;
    WindowDecodeParams p;
    p.dtype = t;
    p.num_seqs = 2;
    p.num_q_heads = H * group;
    p.num_kv_heads = H;
    p.head_dim = D;
    p.num_blocks = num_blocks;
    p.tokens_per_block = tpb;
    p.max_blocks_per_seq = max_blocks;
    p.softmax_scale = 0.3f;
    p.window_tokens = window;
    p.sink_tokens = sinks;
    p.rotary_dim = rotary;
    p.rope_theta = 500.f;
    const std::vector<uint16_t> q = testing::random_bits(t, size_t(2) * H * group * D, rng, -2.f, 2.f);
    const std::vector<uint16_t> k = testing::random_bits(t, size_t(num_blocks) * H * tpb * D, rng);
    const std::vector<uint16_t> v = testing::random_bits(t, k.size(), rng);
    std::vector<int32_t> table(static_cast<size_t>(num_blocks));
    std::iota(table.begin(), table.end(), 0);
    std::shuffle(table.begin(), table.end(), rng);
    p.q = q.data();
    p.k_cache = k.data();
    p.v_cache = v.data();
    p.block_table = table.data();
    p.context_lens = lens.data();
    const std::vector<double> got = window_decode_attention_ref(p);
    for (int s = 0; s < 2; ++s) {
      const WindowSpan span = window_span(lens[s], sinks, window);
      // Gathered, rotated rows in double; the decode reference takes 16-bit inputs, so compare
      // against a direct double softmax instead (same formula as decode_attention_ref).
      for (int qh = 0; qh < H * group; ++qh) {
        const int kvh = qh / group;
        std::vector<double> qd(static_cast<size_t>(D));
        for (int c = 0; c < D; ++c) qd[c] = from_bits(t, q[(size_t(s) * H * group + qh) * D + c]);
        if (rotary) rotary_ref(qd.data(), rotary, 500.0, std::max(span.count - 1, 0));
        std::vector<double> scores, out(size_t(D), 0.0);
        std::vector<std::vector<double>> vs;
        for (int i = 0; i < span.count; ++i) {
          const int tok = window_token(span, i);
          const size_t row = ((size_t(table[size_t(s) * max_blocks + tok / tpb]) * H + kvh) * tpb + tok % tpb) * D;
          std::vector<double> kd(static_cast<size_t>(D)), vd(static_cast<size_t>(D));
          for (int c = 0; c < D; ++c) {
            kd[c] = from_bits(t, k[row + c]);
            vd[c] = from_bits(t, v[row + c]);
          }
          if (rotary) rotary_ref(kd.data(), rotary, 500.0, i);
          scores.push_back(0.3f * std::inner_product(qd.begin(), qd.end(), kd.begin(), 0.0));
          vs.push_back(vd);
        }
        double mx = -1e300, sum = 0;
        for (double x : scores) mx = std::max(mx, x);
        for (size_t i = 0; i < scores.size(); ++i) {
          const double w = std::exp(scores[i] - mx);
          sum += w;
          for (int c = 0; c < D; ++c) out[c] += w * vs[i][c];
        }
        for (int c = 0; c < D; ++c) {
          const double want = sum > 0 ? out[c] / sum : 0.0;
          ASSERT_NEAR(got[(size_t(s) * H * group + qh) * D + c], want, 1e-9) << "trial " << trial << " seq " << s;
        }
      }
    }
  }
}

}  // namespace
}  // namespace kvplan::kernels

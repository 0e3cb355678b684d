// CPU reference of causal (chunked) prefill attention against hand-computed cases, and the
// properties the GPU test relies on: causality, chunked prefill == the last rows of a full prefill,
// GQA head mapping, independence of packed sequences.
#include "kvplan/kernels/reference/prefill_attention_ref.h"

#include <cmath>
#include <numeric>
#include <random>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

#include "kernel_test_support.h"
#include "kvplan/kernels/numeric.h"

namespace kvplan::kernels {
namespace {

using testing::random_bits;

std::vector<uint16_t> bits(ElemType t, const std::vector<float>& v) {
  std::vector<uint16_t> out;
  for (float x : v) out.push_back(to_bits(t, x));
  return out;
}

// One sequence of new tokens, no prefix.
PrefillAttentionParams single(const std::vector<uint16_t>& q, const std::vector<uint16_t>& k, const std::vector<uint16_t>& v,
                              const std::vector<int32_t>& cu, int hq, int hkv, int d, float scale) {
  PrefillAttentionParams p;
  p.dtype = ElemType::kBF16;
  p.q = q.data();
  p.k = k.data();
  p.v = v.data();
  p.out = reinterpret_cast<uint16_t*>(1);  // ignored by the reference, must be non-null
  p.cu_seqlens = cu.data();
  p.num_seqs = static_cast<int>(cu.size()) - 1;
  p.total_q_tokens = cu.back();
  p.max_seqlen_q = 0;
  for (size_t s = 0; s + 1 < cu.size(); ++s) p.max_seqlen_q = std::max(p.max_seqlen_q, cu[s + 1] - cu[s]);
  p.num_q_heads = hq;
  p.num_kv_heads = hkv;
  p.head_dim = d;
  p.softmax_scale = scale;
  return p;
}

TEST(PrefillAttentionRef, TwoTokensByHand) {
  // head_dim 2, one head, scale 1. q0=[1,0] q1=[0,1]; k0=[1,0] k1=[1,1]; v0=[1,2] v1=[3,-1].
  const ElemType t = ElemType::kBF16;
  const auto q = bits(t, {1, 0, 0, 1});
  const auto k = bits(t, {1, 0, 1, 1});
  const auto v = bits(t, {1, 2, 3, -1});
  const std::vector<int32_t> cu = {0, 2};
  const std::vector<double> out = prefill_attention_ref(single(q, k, v, cu, 1, 1, 2, 1.f));
  ASSERT_EQ(out.size(), 4u);
  // Token 0 sees only itself: its output is v0.
  EXPECT_DOUBLE_EQ(out[0], 1.0);
  EXPECT_DOUBLE_EQ(out[1], 2.0);
  // Token 1: scores q1.k0 = 0, q1.k1 = 1, weights 1/(1+e) and e/(1+e).
  const double e = std::exp(1.0);
  EXPECT_NEAR(out[2], (1 + 3 * e) / (1 + e), 1e-12);
  EXPECT_NEAR(out[3], (2 - e) / (1 + e), 1e-12);
}

TEST(PrefillAttentionRef, SoftmaxScaleByHand) {
  // Same tokens, scale 0.5: token 1 weights 1/(1+e^0.5), e^0.5/(1+e^0.5).
  const ElemType t = ElemType::kFP16;
  const auto q = bits(t, {1, 0, 0, 1});
  const auto k = bits(t, {1, 0, 1, 1});
  const auto v = bits(t, {1, 2, 3, -1});
  const std::vector<int32_t> cu = {0, 2};
  PrefillAttentionParams p = single(q, k, v, cu, 1, 1, 2, 0.5f);
  p.dtype = t;
  const std::vector<double> out = prefill_attention_ref(p);
  const double e = std::exp(0.5);
  EXPECT_NEAR(out[2], (1 + 3 * e) / (1 + e), 1e-12);
  EXPECT_NEAR(out[3], (2 - e) / (1 + e), 1e-12);
}

TEST(PrefillAttentionRef, GqaMapsQueryHeadsToTheirKvHead) {
  // 4 query heads, 2 KV heads, head_dim 1, one token: each output is its KV head's value.
  const ElemType t = ElemType::kBF16;
  const auto q = bits(t, {0.5f, -1, 2, 0.25f});
  const auto k = bits(t, {1, -1});
  const auto v = bits(t, {10, -3});
  const std::vector<int32_t> cu = {0, 1};
  const std::vector<double> out = prefill_attention_ref(single(q, k, v, cu, 4, 2, 1, 1.f));
  EXPECT_EQ(out, (std::vector<double>{10, 10, -3, -3}));
}

TEST(PrefillAttentionRef, EachHeadWeighsWithItsOwnKeys) {
  // 2 query heads, 2 KV heads, head_dim 1, q = 1 everywhere, two tokens: head h's weights come from
  // KV head h's keys. KV head 0 keys (0, 0): equal weights; KV head 1 keys (0, 1): 1/(1+e), e/(1+e).
  const ElemType t = ElemType::kBF16;
  const auto q = bits(t, {1, 1, 1, 1});                // [2 tokens, 2 heads, 1]
  const auto k = bits(t, {0, 0, 0, 1});                // token 0: heads (0, 0); token 1: heads (0, 1)
  const auto v = bits(t, {2, 4, 6, 8});                // token 0: (2, 4); token 1: (6, 8)
  const std::vector<int32_t> cu = {0, 2};
  const std::vector<double> out = prefill_attention_ref(single(q, k, v, cu, 2, 2, 1, 1.f));
  const double e = std::exp(1.0);
  EXPECT_DOUBLE_EQ(out[0], 2.0);
  EXPECT_DOUBLE_EQ(out[1], 4.0);
  EXPECT_NEAR(out[2], (2.0 + 6.0) / 2, 1e-12);
  EXPECT_NEAR(out[3], (4.0 + 8.0 * e) / (1 + e), 1e-12);
}

// A random sequence of `len` tokens; the chunk after `prefix` tokens, its prefix placed in a paged
// cache (tokens_per_block 2, blocks scattered), must give exactly the full prefill's last rows.
TEST(PrefillAttentionRef, ChunkedPrefillEqualsFullPrefillsLastRows) {
  std::mt19937_64 rng(7);
  const ElemType t = ElemType::kBF16;
  const int hq = 4, hkv = 2, d = 8, len = 7, tpb = 2;
  for (int prefix : {1, 2, 3, 6}) {
    const auto q = random_bits(t, static_cast<size_t>(len) * hq * d, rng);
    const auto k = random_bits(t, static_cast<size_t>(len) * hkv * d, rng);
    const auto v = random_bits(t, static_cast<size_t>(len) * hkv * d, rng);
    const std::vector<int32_t> cu_full = {0, len};
    const std::vector<double> full = prefill_attention_ref(single(q, k, v, cu_full, hq, hkv, d, 0.3f));

    // Paged prefix: logical block b of the sequence lives in physical block table[b]; other blocks
    // hold garbage that must not be read.
    const int num_blocks = 6;
    const std::vector<int32_t> table = {4, 1, 5, 0};
    std::vector<uint16_t> k_cache = random_bits(t, static_cast<size_t>(num_blocks) * hkv * tpb * d, rng);
    std::vector<uint16_t> v_cache = random_bits(t, k_cache.size(), rng);
    for (int pos = 0; pos < prefix; ++pos)
      for (int h = 0; h < hkv; ++h)
        for (int c = 0; c < d; ++c) {
          const size_t dst = ((static_cast<size_t>(table[pos / tpb]) * hkv + h) * tpb + pos % tpb) * d + c;
          const size_t src = (static_cast<size_t>(pos) * hkv + h) * d + c;
          k_cache[dst] = k[src];
          v_cache[dst] = v[src];
        }
    const int n = len - prefix;
    const std::vector<uint16_t> q_new(q.begin() + static_cast<long>(prefix) * hq * d, q.end());
    const std::vector<uint16_t> k_new(k.begin() + static_cast<long>(prefix) * hkv * d, k.end());
    const std::vector<uint16_t> v_new(v.begin() + static_cast<long>(prefix) * hkv * d, v.end());
    const std::vector<int32_t> cu = {0, n};
    const std::vector<int32_t> prefix_lens = {prefix};
    PrefillAttentionParams p = single(q_new, k_new, v_new, cu, hq, hkv, d, 0.3f);
    p.prefix_lens = prefix_lens.data();
    p.k_cache = k_cache.data();
    p.v_cache = v_cache.data();
    p.block_table = table.data();
    p.num_blocks = num_blocks;
    p.tokens_per_block = tpb;
    p.max_blocks_per_seq = static_cast<int>(table.size());
    const std::vector<double> chunk = prefill_attention_ref(p);
    ASSERT_EQ(chunk.size(), static_cast<size_t>(n) * hq * d);
    for (size_t i = 0; i < chunk.size(); ++i)
      ASSERT_NEAR(chunk[i], full[static_cast<size_t>(prefix) * hq * d + i], 1e-12) << "prefix " << prefix << " elem " << i;
  }
}

// Perturbing the K and V of token j changes no output row before j, and does change row j.
TEST(PrefillAttentionRef, NoQueryAttendsToAFutureToken) {
  std::mt19937_64 rng(11);
  const ElemType t = ElemType::kFP16;
  const int hq = 3, hkv = 3, d = 4, len = 9;
  const auto q = random_bits(t, static_cast<size_t>(len) * hq * d, rng);
  const auto k = random_bits(t, static_cast<size_t>(len) * hkv * d, rng);
  const auto v = random_bits(t, static_cast<size_t>(len) * hkv * d, rng);
  const std::vector<int32_t> cu = {0, len};
  PrefillAttentionParams p = single(q, k, v, cu, hq, hkv, d, 0.5f);
  p.dtype = t;
  const std::vector<double> base = prefill_attention_ref(p);
  const size_t row = static_cast<size_t>(hq) * d;
  for (int j = 1; j < len; ++j) {
    auto k2 = k, v2 = v;
    for (size_t c = 0; c < static_cast<size_t>(hkv) * d; ++c) {
      k2[j * static_cast<size_t>(hkv) * d + c] = to_bits(t, 0.75f);
      v2[j * static_cast<size_t>(hkv) * d + c] = to_bits(t, -0.875f);
    }
    PrefillAttentionParams p2 = p;
    p2.k = k2.data();
    p2.v = v2.data();
    const std::vector<double> out = prefill_attention_ref(p2);
    for (size_t i = 0; i < static_cast<size_t>(j) * row; ++i) ASSERT_EQ(out[i], base[i]) << "token " << j << " leaked into elem " << i;
    bool changed = false;
    for (size_t i = j * row; i < (j + 1) * row; ++i) changed |= out[i] != base[i];
    EXPECT_TRUE(changed) << "token " << j << " does not see itself";
  }
}

// Two packed sequences give the same rows as each sequence alone: no attention across sequences.
TEST(PrefillAttentionRef, PackedSequencesAreIndependent) {
  std::mt19937_64 rng(13);
  const ElemType t = ElemType::kBF16;
  const int hq = 2, hkv = 1, d = 4, a = 3, b = 5;
  const auto q = random_bits(t, static_cast<size_t>(a + b) * hq * d, rng);
  const auto k = random_bits(t, static_cast<size_t>(a + b) * hkv * d, rng);
  const auto v = random_bits(t, static_cast<size_t>(a + b) * hkv * d, rng);
  const std::vector<int32_t> cu = {0, a, a + b};
  const std::vector<double> both = prefill_attention_ref(single(q, k, v, cu, hq, hkv, d, 0.5f));

  const std::vector<int32_t> cu_b = {0, b};
  const std::vector<uint16_t> qb(q.begin() + a * hq * d, q.end()), kb(k.begin() + a * hkv * d, k.end()),
      vb(v.begin() + a * hkv * d, v.end());
  const std::vector<double> alone = prefill_attention_ref(single(qb, kb, vb, cu_b, hq, hkv, d, 0.5f));
  for (size_t i = 0; i < alone.size(); ++i) ASSERT_EQ(alone[i], both[static_cast<size_t>(a) * hq * d + i]);
  // The first token of the second sequence sees only itself: its output is its own value row.
  for (int h = 0; h < hq; ++h)
    for (int c = 0; c < d; ++c)
      EXPECT_DOUBLE_EQ(both[(static_cast<size_t>(a) * hq + h) * d + c], from_bits(t, v[static_cast<size_t>(a) * hkv * d + c]));
}

TEST(PrefillAttentionRef, RejectsBadParams) {
  std::vector<uint16_t> x(16, to_bits(ElemType::kBF16, 0.5f));
  const std::vector<int32_t> cu = {0, 2};
  PrefillAttentionParams ok = single(x, x, x, cu, 2, 1, 2, 1.f);
  EXPECT_NO_THROW(prefill_attention_ref(ok));
  PrefillAttentionParams p = ok;
  p.num_kv_heads = 3;
  EXPECT_THROW(prefill_attention_ref(p), std::invalid_argument);
  p = ok;
  p.max_seqlen_q = 1;  // a sequence has 2 tokens
  EXPECT_THROW(prefill_attention_ref(p), std::invalid_argument);
  p = ok;
  p.total_q_tokens = 3;
  EXPECT_THROW(prefill_attention_ref(p), std::invalid_argument);

  // A prefix through a block table with an id outside the cache.
  const std::vector<int32_t> prefix = {2}, table = {7};
  p = ok;
  p.prefix_lens = prefix.data();
  p.k_cache = x.data();
  p.v_cache = x.data();
  p.block_table = table.data();
  p.num_blocks = 2;
  p.tokens_per_block = 2;
  p.max_blocks_per_seq = 1;
  EXPECT_THROW(prefill_attention_ref(p), std::out_of_range);
  p.block_table = nullptr;
  EXPECT_THROW(prefill_attention_ref(p), std::invalid_argument);
  const std::vector<int32_t> long_prefix = {3};  // 3 tokens > 1 block of 2
  p.block_table = table.data();
  p.prefix_lens = long_prefix.data();
  EXPECT_THROW(prefill_attention_ref(p), std::invalid_argument);
}

}  // namespace
}  // namespace kvplan::kernels

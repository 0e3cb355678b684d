// CPU references of decode attention: hand-computed tiny cases (softmax weights by hand), GQA head
// mapping, empty contexts, paged (permuted block table) == contiguous, split + combine == unsplit.
#include "kvplan/kernels/reference/decode_attention_ref.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "kernel_test_support.h"

namespace kvplan::kernels {
namespace {

using testing::random_bits;

std::vector<uint16_t> bits(ElemType t, std::initializer_list<float> values) {
  std::vector<uint16_t> v;
  for (float x : values) v.push_back(to_bits(t, x));
  return v;
}

// One sequence, two cached tokens, head_dim 2 (the reference takes any head_dim; the kernels 64+).
// k0 = [1, 0], k1 = [0, 1], v0 = [1, 2], v1 = [3, -1]. Query head 0: q = [1, 0], scale 1: scores
// 1 and 0, weights e/(1+e) and w = 1/(1+e) = 0.26894142137, out = [1 + 2w, 2 - 3w].
// Query head 1 (same KV head, GQA group 2): q = [0, 2], scale 0.5 -> the same scores swapped.
struct TinyCase {
  std::vector<uint16_t> q, k, v;
  std::vector<int32_t> lens{2};
  DecodeAttentionParams p;
  explicit TinyCase(ElemType t, int num_q_heads, float scale) {
    q = num_q_heads == 1 ? bits(t, {1, 0}) : bits(t, {1, 0, 0, 2});
    k = bits(t, {1, 0, 0, 1});
    v = bits(t, {1, 2, 3, -1});
    p.dtype = t;
    p.num_seqs = 1;
    p.num_q_heads = num_q_heads;
    p.num_kv_heads = 1;
    p.head_dim = 2;
    p.max_seq_len = 2;
    p.softmax_scale = scale;
    p.q = q.data();
    p.k_cache = k.data();
    p.v_cache = v.data();
    p.context_lens = lens.data();
  }
};

constexpr double kW = 0.2689414213699951;  // 1 / (1 + e)

TEST(DecodeAttentionRef, TwoTokensByHand) {
  for (ElemType t : {ElemType::kBF16, ElemType::kFP16}) {
    TinyCase c(t, 1, 1.0f);
    const std::vector<double> out = decode_attention_ref(c.p);
    ASSERT_EQ(out.size(), 2u);
    EXPECT_NEAR(out[0], 1 + 2 * kW, 1e-12);  // 1.53788284274
    EXPECT_NEAR(out[1], 2 - 3 * kW, 1e-12);  // 1.19317573589
    // lse of the single split: log(e^1 + e^0).
    c.p.num_splits = 1;
    const DecodePartialsRef parts = decode_attention_partials_ref(c.p);
    EXPECT_NEAR(parts.lse[0], std::log(std::exp(1.0) + 1.0), 1e-12);
  }
}

TEST(DecodeAttentionRef, GqaGroupSharesTheKvHeadAndScaleApplies) {
  TinyCase c(ElemType::kBF16, 2, 0.5f);  // q0 . k = [0.5, 0] after scale; q1 . k = [0, 1]
  const std::vector<double> out = decode_attention_ref(c.p);
  ASSERT_EQ(out.size(), 4u);
  const double w_half = 1 / (1 + std::exp(0.5));  // head 0: scores 0.5 and 0
  EXPECT_NEAR(out[0], (1 - w_half) * 1 + w_half * 3, 1e-12);
  EXPECT_NEAR(out[1], (1 - w_half) * 2 - w_half, 1e-12);
  EXPECT_NEAR(out[2], kW * 1 + (1 - kW) * 3, 1e-12);   // head 1: weights swapped, 2.46211715726
  EXPECT_NEAR(out[3], kW * 2 - (1 - kW), 1e-12);       // -0.19317573589
}

TEST(DecodeAttentionRef, OneTokenReturnsItsValue) {
  TinyCase c(ElemType::kFP16, 1, 1.0f);
  c.lens[0] = 1;
  const std::vector<double> out = decode_attention_ref(c.p);
  EXPECT_EQ(out[0], 1.0);
  EXPECT_EQ(out[1], 2.0);
}

TEST(DecodeAttentionRef, EmptyContextGivesZeroAndEmptySplitsMinusInfinity) {
  TinyCase c(ElemType::kBF16, 1, 1.0f);
  c.lens[0] = 0;
  const std::vector<double> out = decode_attention_ref(c.p);
  EXPECT_EQ(out[0], 0.0);
  EXPECT_EQ(out[1], 0.0);
  c.lens[0] = 2;
  c.p.num_splits = 4;  // tokens 0 and 1 in splits 0 and 1; splits 2, 3 empty
  const DecodePartialsRef parts = decode_attention_partials_ref(c.p);
  ASSERT_EQ(parts.lse.size(), 4u);
  EXPECT_NEAR(parts.lse[0], 1.0, 1e-12);  // only token 0: score 1
  EXPECT_NEAR(parts.lse[1], 0.0, 1e-12);  // only token 1: score 0
  EXPECT_EQ(parts.lse[2], -std::numeric_limits<double>::infinity());
  EXPECT_EQ(parts.lse[3], -std::numeric_limits<double>::infinity());
  EXPECT_EQ(parts.out[0], 1.0);  // split 0 = v0
  EXPECT_EQ(parts.out[3], -1.0);  // split 1 = v1
  EXPECT_EQ(parts.out[4], 0.0);
  EXPECT_EQ(parts.out[7], 0.0);
}

// Random contiguous problem and the same K/V scattered into a pool through a permuted block table.
struct RandomProblem {
  static constexpr int kNumSeqs = 3;
  static constexpr int kQHeads = 6, kKvHeads = 2, kHeadDim = 8, kTokensPerBlock = 4;
  std::vector<int32_t> lens{9, 1, 12};
  int max_seq_len = 13;
  int max_blocks = 4;  // ceil(13 / 4)
  int num_blocks = kNumSeqs * 4 + 2;
  std::vector<uint16_t> q, k, v, k_pool, v_pool;
  std::vector<int32_t> table;
  DecodeAttentionParams p;
  PagedDecodeAttentionParams pp;

  explicit RandomProblem(ElemType t, uint64_t seed) {
    std::mt19937_64 rng(seed);
    q = random_bits(t, size_t{kNumSeqs} * kQHeads * kHeadDim, rng, -2.f, 2.f);
    k = random_bits(t, size_t{kNumSeqs} * max_seq_len * kKvHeads * kHeadDim, rng);
    v = random_bits(t, k.size(), rng);
    const size_t block_elems = size_t{kKvHeads} * kTokensPerBlock * kHeadDim;
    k_pool = random_bits(t, block_elems * num_blocks, rng);  // unused slots hold noise, never zeros
    v_pool = random_bits(t, block_elems * num_blocks, rng);
    std::vector<int32_t> perm(static_cast<size_t>(num_blocks));
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    table.resize(size_t{kNumSeqs} * max_blocks);
    for (size_t i = 0; i < table.size(); ++i) table[i] = perm[i];
    for (int s = 0; s < kNumSeqs; ++s) {
      for (int tok = 0; tok < max_seq_len; ++tok) {
        const int32_t block = table[size_t(s) * max_blocks + tok / kTokensPerBlock];
        for (int h = 0; h < kKvHeads; ++h) {
          const size_t src = ((size_t(s) * max_seq_len + tok) * kKvHeads + h) * kHeadDim;
          const size_t dst = ((size_t(block) * kKvHeads + h) * kTokensPerBlock + tok % kTokensPerBlock) * kHeadDim;
          std::copy_n(k.begin() + src, kHeadDim, k_pool.begin() + dst);
          std::copy_n(v.begin() + src, kHeadDim, v_pool.begin() + dst);
        }
      }
    }
    p.dtype = pp.dtype = t;
    p.num_seqs = pp.num_seqs = kNumSeqs;
    p.num_q_heads = pp.num_q_heads = kQHeads;
    p.num_kv_heads = pp.num_kv_heads = kKvHeads;
    p.head_dim = pp.head_dim = kHeadDim;
    p.softmax_scale = pp.softmax_scale = 0.7f;
    p.q = pp.q = q.data();
    p.context_lens = pp.context_lens = lens.data();
    p.max_seq_len = max_seq_len;
    p.k_cache = k.data();
    p.v_cache = v.data();
    pp.num_blocks = num_blocks;
    pp.tokens_per_block = kTokensPerBlock;
    pp.max_blocks_per_seq = max_blocks;
    pp.k_cache = k_pool.data();
    pp.v_cache = v_pool.data();
    pp.block_table = table.data();
  }
};

TEST(DecodeAttentionRef, PagedThroughPermutedBlocksEqualsContiguous) {
  for (ElemType t : {ElemType::kBF16, ElemType::kFP16}) {
    RandomProblem r(t, 7);
    const std::vector<double> want = decode_attention_ref(r.p);
    const std::vector<double> got = paged_decode_attention_ref(r.pp);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) EXPECT_DOUBLE_EQ(got[i], want[i]) << i;
    // The same K/V in a different pool order must give the same answer, and a different problem
    // a different one (the comparison can fail).
    RandomProblem other(t, 8);
    EXPECT_NE(decode_attention_ref(other.p), want);
  }
}

TEST(DecodeAttentionRef, OutputIsAConvexCombinationOfValues) {
  RandomProblem r(ElemType::kBF16, 11);
  const std::vector<double> out = decode_attention_ref(r.p);
  for (double x : out) {
    EXPECT_LE(std::fabs(x), 1.0);  // values lie in [-1, 1)
  }
}

TEST(DecodeAttentionRef, SplitThenCombineEqualsUnsplit) {
  for (ElemType t : {ElemType::kBF16, ElemType::kFP16}) {
    RandomProblem r(t, 21);
    const std::vector<double> want = decode_attention_ref(r.p);
    for (int splits : {1, 2, 3, 5, 13}) {  // 13 > every length: empty splits for each sequence
      r.p.num_splits = splits;
      r.pp.num_splits = splits;
      const DecodePartialsRef parts = decode_attention_partials_ref(r.p);
      const DecodePartialsRef paged_parts = paged_decode_attention_partials_ref(r.pp);
      ASSERT_EQ(parts.out.size(), decode_partial_out_elems(3, splits, 6, 8));
      ASSERT_EQ(parts.lse.size(), decode_partial_lse_elems(3, splits, 6));
      EXPECT_EQ(parts.lse, paged_parts.lse);
      EXPECT_EQ(parts.out, paged_parts.out);
      // The combine takes fp32 partials, as the GPU writes them.
      std::vector<float> out_f(parts.out.begin(), parts.out.end());
      std::vector<float> lse_f(parts.lse.begin(), parts.lse.end());
      DecodeCombineParams c;
      c.dtype = t;
      c.num_seqs = 3;
      c.num_splits = splits;
      c.num_q_heads = 6;
      c.head_dim = 8;
      c.partial_out = out_f.data();
      c.partial_lse = lse_f.data();
      const std::vector<double> got = decode_attention_combine_ref(c);
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << "splits " << splits << " at " << i;
      // Sequence 1 has one token: every split but the first is empty.
      for (int sp = 1; sp < splits; ++sp) {
        EXPECT_EQ(parts.lse[(size_t(1) * splits + sp) * 6], -std::numeric_limits<double>::infinity());
      }
    }
  }
}

TEST(DecodeAttentionRef, CombineOfAllEmptySplitsIsZero) {
  std::vector<float> out(2 * 8, 123.f);  // never read: weights of empty splits are 0
  std::vector<float> lse(2, -std::numeric_limits<float>::infinity());
  DecodeCombineParams c;
  c.num_seqs = 1;
  c.num_splits = 2;
  c.num_q_heads = 1;
  c.head_dim = 8;
  c.partial_out = out.data();
  c.partial_lse = lse.data();
  for (double x : decode_attention_combine_ref(c)) EXPECT_EQ(x, 0.0);
}

}  // namespace
}  // namespace kvplan::kernels
